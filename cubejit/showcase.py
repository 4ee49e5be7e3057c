"""The example suite ``cubejit demo`` compiles and runs: one kernel for each part of the language.

Each :class:`Example` is a kernel, the specialisation it is compiled for, a maker of random
inputs (awkward sizes, never zeros) and the numpy reference it is checked against, so that any
backend can run the suite: :func:`check` uploads the inputs through the client, launches, reads
the outputs back and compares them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import cubejit as cj

N = 100_003
"""Elements of the one-dimensional examples: not a multiple of any cube."""
ROWS, COLS = 300, 257
"""The shape of the two-dimensional example."""
DEGREE = 6
"""The comptime degree of the unrolled polynomial."""


@cj.kernel
def saxpy(a: cj.f32, x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


@cj.kernel
def tanh_chain(
    a: cj.f32,
    x: cj.Array[cj.f32],
    y: cj.Array[cj.f32],
    z: cj.Array[cj.f32],
    out: cj.Array[cj.f32],
):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = cj.tanh(a * x[i] + y[i]) * z[i]


@cj.kernel
def floor_div_mod(
    a: cj.Array[cj.i32], b: cj.Array[cj.i32], q: cj.Array[cj.i32], r: cj.Array[cj.i32]
):
    i = cj.ABSOLUTE_POS
    if i < q.len():
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]


@cj.kernel
def transpose(src: cj.Array[cj.f32], dst: cj.Array[cj.f32], rows: cj.u32, cols: cj.u32):
    col = cj.ABSOLUTE_POS_X
    row = cj.ABSOLUTE_POS_Y
    if row < rows and col < cols:
        dst[col * rows + row] = src[row * cols + col]


@cj.kernel
def polynomial(x: cj.Array[cj.f32], out: cj.Array[cj.f32], degree: cj.Comptime[int]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        v = x[i]
        acc = cj.f32(0.0)
        for k in cj.unroll(range(degree)):
            acc = acc * v + cj.f32(k + 1)
        out[i] = acc


@cj.function
def smoothstep(edge0: cj.f32, edge1: cj.f32, v: cj.f32) -> cj.f32:
    t = cj.min(cj.max((v - edge0) / (edge1 - edge0), 0.0), 1.0)
    return t * t * (3.0 - 2.0 * t)


@cj.kernel
def smooth(x: cj.Array[cj.f32], out: cj.Array[cj.f32], edge0: cj.f32, edge1: cj.f32):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = smoothstep(edge0, edge1, x[i])


@cj.kernel
def blur3(x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    n = out.len()
    if i < n:
        if i == 0 or i + 1 == n:
            out[i] = x[i]
        else:
            out[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]


@cj.kernel
def casts(
    x: cj.Array[cj.f32],
    k: cj.Array[cj.i32],
    truncated: cj.Array[cj.i32],
    halves: cj.Array[cj.f64],
    wrapped: cj.Array[cj.u32],
):
    i = cj.ABSOLUTE_POS
    if i < truncated.len():
        truncated[i] = cj.i32(x[i] * 100.0)
        halves[i] = cj.f64(k[i]) * 0.5
        wrapped[i] = cj.u32(k[i])


@dataclass(frozen=True, slots=True)
class Case:
    """One launch of an example: its grid, its arguments (numpy arrays and Python scalars, in
    signature order) and what the outputs must hold afterwards."""

    cube_count: int | tuple[int, ...]
    args: tuple[Any, ...]
    expected: dict[int, np.ndarray]
    """Argument index -> the array that argument must hold after the launch."""
    rtol: float = 0.0
    atol: float = 0.0


@dataclass(frozen=True, slots=True)
class Example:
    """A kernel of the suite, the specialisation it runs as, and how to check it."""

    name: str
    kernel: cj.Kernel
    cube_dim: int | tuple[int, ...]
    make: Callable[[np.random.Generator], Case]
    comptime: dict[str, Any] = field(default_factory=dict)

    def spec(self) -> cj.KernelSpec:
        return self.kernel.specialize(self.cube_dim, **self.comptime)


@dataclass(frozen=True, slots=True)
class Check:
    """How an example's outputs compared with numpy's."""

    passed: bool
    max_error: float

    def __str__(self) -> str:
        verdict = "ok" if self.passed else "WRONG"
        return f"{verdict} (max error {self.max_error:.1e})"


def _floats(rng: np.random.Generator, n: int, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    return rng.uniform(low, high, n).astype(np.float32)


def _garbage(rng: np.random.Generator, n: int, dtype: Any) -> np.ndarray:
    """An output's starting content: random, so a kernel that writes nothing is caught."""
    return rng.integers(1, 100, n).astype(dtype)


def _saxpy(rng: np.random.Generator) -> Case:
    a, x, y = np.float32(1.75), _floats(rng, N), _floats(rng, N)
    return Case(
        cj.cdiv(N, 256),
        (a, x, y, _garbage(rng, N, np.float32)),
        {3: a * x + y},
        rtol=1e-6,
        atol=1e-6,
    )


def _tanh_chain(rng: np.random.Generator) -> Case:
    a, x, y, z = np.float32(0.5), _floats(rng, N), _floats(rng, N), _floats(rng, N)
    out = _garbage(rng, N, np.float32)
    return Case(
        cj.cdiv(N, 256), (a, x, y, z, out), {4: np.tanh(a * x + y) * z}, rtol=1e-5, atol=1e-6
    )


def _floor_div_mod(rng: np.random.Generator) -> Case:
    a = rng.integers(-1000, 1000, N).astype(np.int32)
    b = rng.choice(np.r_[-17:0, 1:18], N).astype(np.int32)
    q, r = _garbage(rng, N, np.int32), _garbage(rng, N, np.int32)
    return Case(cj.cdiv(N, 256), (a, b, q, r), {2: a // b, 3: a % b})


def _transpose(rng: np.random.Generator) -> Case:
    src = _floats(rng, ROWS * COLS)
    dst = _garbage(rng, ROWS * COLS, np.float32)
    expected = src.reshape(ROWS, COLS).T.copy().reshape(-1)
    grid = (cj.cdiv(COLS, 16), cj.cdiv(ROWS, 16))
    return Case(grid, (src, dst, ROWS, COLS), {1: expected})


def _polynomial(rng: np.random.Generator) -> Case:
    x = _floats(rng, N, -1.0, 1.0)
    expected = np.polyval(np.arange(1, DEGREE + 1, dtype=np.float32), x).astype(np.float32)
    return Case(
        cj.cdiv(N, 256), (x, _garbage(rng, N, np.float32)), {1: expected}, rtol=1e-5, atol=1e-5
    )


def _smooth(rng: np.random.Generator) -> Case:
    x = _floats(rng, N)
    e0, e1 = np.float32(-1.0), np.float32(1.5)
    t = np.clip((x - e0) / (e1 - e0), np.float32(0), np.float32(1))
    expected = t * t * (np.float32(3) - np.float32(2) * t)
    return Case(
        cj.cdiv(N, 256),
        (x, _garbage(rng, N, np.float32), e0, e1),
        {1: expected},
        rtol=1e-5,
        atol=1e-6,
    )


def _blur3(rng: np.random.Generator) -> Case:
    x = _floats(rng, N)
    expected = x.copy()
    expected[1:-1] = (
        np.float32(0.25) * x[:-2] + np.float32(0.5) * x[1:-1] + np.float32(0.25) * x[2:]
    )
    return Case(
        cj.cdiv(N, 256), (x, _garbage(rng, N, np.float32)), {1: expected}, rtol=1e-6, atol=1e-6
    )


def _casts(rng: np.random.Generator) -> Case:
    x = _floats(rng, N, -5.0, 5.0)
    k = rng.integers(-(2**31), 2**31 - 1, N, dtype=np.int64).astype(np.int32)
    outputs = (
        _garbage(rng, N, np.int32),
        _garbage(rng, N, np.float64),
        _garbage(rng, N, np.uint32),
    )
    expected: dict[int, np.ndarray] = {
        2: (x * np.float32(100.0)).astype(np.int32),
        3: k.astype(np.float64) * 0.5,
        4: k.astype(np.uint32),
    }
    return Case(cj.cdiv(N, 256), (x, k, *outputs), expected)


def examples() -> list[Example]:
    """The suite, in the order the demo shows it."""
    return [
        Example("saxpy", saxpy, 256, _saxpy),
        Example("tanh chain", tanh_chain, 256, _tanh_chain),
        Example("floor // and %", floor_div_mod, 256, _floor_div_mod),
        Example("2-D transpose", transpose, (16, 16), _transpose),
        Example("unrolled polynomial", polynomial, 256, _polynomial, {"degree": DEGREE}),
        Example("@cj.function call", smooth, 256, _smooth),
        Example("3-point stencil", blur3, 256, _blur3),
        Example("casts", casts, 256, _casts),
    ]


def check(example: Example, client: Any, rng: np.random.Generator) -> Check:
    """Launches ``example`` on ``client`` with fresh random inputs and compares every output
    with numpy's."""
    case = example.make(rng)
    args = [client.to_device(a) if isinstance(a, np.ndarray) else a for a in case.args]
    example.kernel.launch(client, case.cube_count, example.cube_dim, *args, **example.comptime)
    client.sync()
    passed, worst = True, 0.0
    for index, expected in case.expected.items():
        got = np.asarray(client.read(args[index]))
        if got.shape != expected.shape:
            return Check(False, float("inf"))
        error = np.abs(got.astype(np.float64) - expected.astype(np.float64))
        worst = max(worst, float(error.max(initial=0.0)))
        bound = case.atol + case.rtol * np.abs(expected.astype(np.float64))
        passed = passed and bool(np.all(error <= bound))
    return Check(passed, worst)
