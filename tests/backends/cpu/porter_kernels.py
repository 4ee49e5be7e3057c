"""Kernels of the constructs people porting Numba, Triton and CubeCL kernels reach for first,
each with a numpy reference: run on the CPU here, lowered for CUDA (and run on a GPU) by
``tests/backends/cuda/test_cuda_porter.py``, which imports this file by its path."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import cubejit as cj

SCALE = 1.5
OFFSET = 7
FLIP = True
EPS = np.float32(0.25)


@cj.kernel
def small_ints(
    a: cj.Array[cj.i8],
    b: cj.Array[cj.i8],
    c: cj.Array[cj.u8],
    d: cj.Array[cj.u16],
    e: cj.Array[cj.i16],
    s: cj.i8,
    out_i8: cj.Array[cj.i8],
    out_u8: cj.Array[cj.u8],
    out_u16: cj.Array[cj.u16],
    out_i16: cj.Array[cj.i16],
):
    i = cj.ABSOLUTE_POS
    if i < a.len():
        out_i8[i] = a[i] * b[i] + s - (a[i] >> 2)
        out_u8[i] = c[i] * c[i] + ~c[i]
        out_u16[i] = d[i] * d[i] - (d[i] << 3)
        out_i16[i] = e[i] * e[i] + -e[i] // 3 % 7


def small_ints_reference(a, b, c, d, e, s):
    with np.errstate(all="ignore"):
        return [
            a * b + np.int8(s) - (a >> np.int8(2)),
            c * c + ~c,
            d * d - (d << np.uint16(3)),
            e * e + (-e) // np.int16(3) % np.int16(7),
        ]


@cj.kernel
def bitcasts(
    x: cj.Array[cj.f32],
    y: cj.Array[cj.f64],
    h: cj.Array[cj.f16],
    p: cj.Array[cj.i8],
    bits32: cj.Array[cj.u32],
    signed32: cj.Array[cj.i32],
    bits64: cj.Array[cj.u64],
    bits16: cj.Array[cj.i16],
    negated: cj.Array[cj.f32],
    unsigned8: cj.Array[cj.u8],
):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        bits32[i] = cj.bitcast(x[i], cj.u32)
        signed32[i] = cj.bitcast(x[i], cj.i32)
        bits64[i] = cj.bitcast(y[i], cj.u64)
        bits16[i] = cj.bitcast(h[i], cj.i16)
        negated[i] = cj.bitcast(cj.bitcast(x[i], cj.u32) ^ 0x80000000, cj.f32)
        unsigned8[i] = cj.bitcast(p[i], cj.u8)


def bitcasts_reference(x, y, h, p):
    return [
        x.view(np.uint32),
        x.view(np.int32),
        y.view(np.uint64),
        h.view(np.int16),
        -x,
        p.view(np.uint8),
    ]


@cj.function
def every_new_math(x, y, out, base):
    out[base + 0] = cj.atan2(x, y)
    out[base + 1] = cj.asin(x)
    out[base + 2] = cj.acos(x)
    out[base + 3] = cj.atan(x)
    out[base + 4] = cj.sinh(x)
    out[base + 5] = cj.cosh(x)
    out[base + 6] = cj.asinh(y)
    out[base + 7] = cj.acosh(cj.abs(y) + 1.0)
    out[base + 8] = cj.atanh(x)
    out[base + 9] = cj.round(y * 4.0)
    out[base + 10] = cj.trunc(y * 4.0)
    out[base + 11] = cj.exp2(y)
    out[base + 12] = cj.log2(cj.abs(y) + 0.5)
    out[base + 13] = cj.hypot(x, y)


MATH_OUTPUTS = 14


@cj.kernel
def math_f32(
    x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32], tests: cj.Array[cj.i32]
):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        every_new_math(x[i], y[i], out, i * 14)
        tests[i] = cj.i32(cj.isnan(y[i])) + 2 * cj.i32(cj.isinf(y[i]))


@cj.kernel
def math_f64(
    x: cj.Array[cj.f64], y: cj.Array[cj.f64], out: cj.Array[cj.f64], tests: cj.Array[cj.i32]
):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        every_new_math(x[i], y[i], out, i * 14)
        tests[i] = cj.i32(cj.isnan(y[i])) + 2 * cj.i32(cj.isinf(y[i]))


def math_reference(x, y):
    one, half, four = (x.dtype.type(v) for v in (1.0, 0.5, 4.0))
    with np.errstate(all="ignore"):
        columns = [
            np.arctan2(x, y),
            np.arcsin(x),
            np.arccos(x),
            np.arctan(x),
            np.sinh(x),
            np.cosh(x),
            np.arcsinh(y),
            np.arccosh(np.abs(y) + one),
            np.arctanh(x),
            np.rint(y * four),
            np.trunc(y * four),
            np.exp2(y),
            np.log2(np.abs(y) + half),
            np.hypot(x, y),
        ]
    table = np.zeros((x.size, MATH_OUTPUTS), x.dtype)
    table[:, : len(columns)] = np.stack(columns, axis=1)
    tests = np.isnan(y).astype(np.int32) + 2 * np.isinf(y).astype(np.int32)
    return [table.reshape(-1), tests]


@cj.kernel
def captured(x: cj.Array[cj.f32], out: cj.Array[cj.f32], counts: cj.Array[cj.i32]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        v = x[i] * SCALE + math.pi
        if FLIP:
            v = -v
        out[i] = v + EPS
        counts[i] = cj.i32(i) * OFFSET


def captured_reference(x):
    v = -(x * np.float32(SCALE) + np.float32(math.pi))
    return [v + EPS, np.arange(x.size, dtype=np.int32) * OFFSET]


@cj.function
def first_above(x, n, limit) -> cj.i32:
    for j in range(n):
        if x[j] > limit:
            return j
    return -1


@cj.function
def first_pair_above(x, n, limit):
    for a in range(n):
        for b in range(a):
            if x[a] + x[b] > limit:
                return a * 1000 + b
    return -1


@cj.function
def first_unrolled_step(v):
    for k in cj.unroll(range(8)):
        if v < cj.f32(k) * 0.25:
            return k
    return 8


@cj.function
def halvings(v):
    count = 0
    while True:
        if v < 1.0:
            return count
        v = v * 0.5
        count += 1


@cj.kernel
def returns(x: cj.Array[cj.f32], n: cj.i32, out: cj.Array[cj.i32]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        limit = x[i] + 1.0
        out[i * 4] = first_above(x, n, limit)
        out[i * 4 + 1] = first_pair_above(x, cj.i32(16), limit + 1.0)
        out[i * 4 + 2] = first_unrolled_step(x[i])
        out[i * 4 + 3] = halvings(cj.abs(x[i]) * 100.0)


def returns_reference(x, n_x):
    n = x.size
    out = np.zeros((n, 4), np.int32)
    for i in range(n):
        limit = x[i] + np.float32(1.0)
        above = np.nonzero(x > limit)[0]
        out[i, 0] = above[0] if above.size else -1
        out[i, 1] = next(
            (
                a * 1000 + b
                for a in range(16)
                for b in range(a)
                if x[a] + x[b] > limit + np.float32(1.0)
            ),
            -1,
        )
        out[i, 2] = next((k for k in range(8) if x[i] < np.float32(k) * np.float32(0.25)), 8)
        v, count = np.abs(x[i]) * np.float32(100.0), 0
        while not v < 1.0:
            v, count = v * np.float32(0.5), count + 1
        out[i, 3] = count
    return [out.reshape(-1)]


@cj.kernel
def unrolled_jumps(x: cj.Array[cj.f32], out: cj.Array[cj.f32], taken: cj.Array[cj.i32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        acc = 0.0
        steps = 0
        for k in cj.unroll(range(8)):
            v = x[i * 8 + k]
            if k == 6:
                break
            if v < -1.0:
                break
            if v > 0.5:
                continue
            acc += v
            steps += 1
        out[i] = acc
        taken[i] = steps


def unrolled_jumps_reference(x):
    rows = x.reshape(-1, 8)
    out = np.zeros(rows.shape[0], np.float32)
    taken = np.zeros(rows.shape[0], np.int32)
    for i, row in enumerate(rows):
        acc, steps = np.float32(0.0), 0
        for k in range(6):
            if row[k] < -1.0:
                break
            if row[k] > 0.5:
                continue
            acc, steps = acc + row[k], steps + 1
        out[i], taken[i] = acc, steps
    return [out, taken]


@cj.kernel
def literal_typing(
    x: cj.Array[cj.f32],
    n: cj.i32,
    u: cj.Array[cj.u64],
    s: cj.Array[cj.i64],
    out: cj.Array[cj.f32],
    order: cj.Array[cj.i32],
):
    i = cj.ABSOLUTE_POS
    if i < n:
        acc = 0
        for j in range(n):
            acc += x[j] * x[i]
        out[i] = acc
        small = cj.u32(u[i] & 0xFFFFFFFF)
        signed = cj.i32(s[i] >> 40)
        order[i] = (
            cj.i32(u[i] < s[i])
            + 2 * cj.i32(u[i] == s[i])
            + 4 * cj.i32(s[i] <= u[i])
            + 8 * cj.i32(small < signed)
            + 16 * cj.i32(signed >= small)
        )


def literal_typing_reference(x, n, u, s):
    total = np.zeros(x.size, np.float32)
    for j in range(n):
        total += x[j] * x
    order = []
    for a, b in zip(u.tolist(), s.tolist(), strict=True):
        small, signed = a & 0xFFFFFFFF, b >> 40
        order.append(
            (a < b) + 2 * (a == b) + 4 * (b <= a) + 8 * (small < signed) + 16 * (signed >= small)
        )
    return [total, np.array(order, np.int32)]


@dataclass
class Case:
    """One kernel, its arguments and what numpy says its outputs hold."""

    name: str
    kernel: Any
    inputs: Callable[[np.random.Generator, int], list[Any]]
    outputs: Callable[[int], list[tuple[int, np.dtype]]]
    reference: Callable[..., list[np.ndarray]]
    cube_dim: int = 64
    units: Callable[[int], int] = lambda n: n
    rtol: float = 0.0
    comptime: dict[str, Any] = field(default_factory=dict)


def _small_ints(rng: np.random.Generator, n: int) -> list[Any]:
    return [
        rng.integers(-128, 128, n).astype(np.int8),
        rng.integers(-128, 128, n).astype(np.int8),
        rng.integers(0, 256, n).astype(np.uint8),
        rng.integers(0, 65536, n).astype(np.uint16),
        rng.integers(-32768, 32768, n).astype(np.int16),
        -77,
    ]


def _bitcasts(rng: np.random.Generator, n: int) -> list[Any]:
    x = rng.standard_normal(n).astype(np.float32)
    x[:3] = [np.nan, np.inf, -0.0][: min(3, n)]
    return [
        x,
        rng.standard_normal(n),
        rng.standard_normal(n).astype(np.float16),
        rng.integers(-128, 128, n).astype(np.int8),
    ]


def _math(dtype: type) -> Callable[[np.random.Generator, int], list[Any]]:
    def inputs(rng: np.random.Generator, n: int) -> list[Any]:
        x = rng.uniform(-0.95, 0.95, n).astype(dtype)
        y = rng.uniform(-3, 3, n).astype(dtype)
        y[: min(6, n)] = np.array([0.125, 0.375, -0.625, np.nan, np.inf, -np.inf])[: min(6, n)]
        return [x, y]

    return inputs


def _returns(rng: np.random.Generator, n: int) -> list[Any]:
    return [rng.standard_normal(max(n, 16)).astype(np.float32), max(n, 16)]


def _literal_typing(rng: np.random.Generator, n: int) -> list[Any]:
    u = rng.integers(0, 2**64, n, dtype=np.uint64)
    s = rng.integers(-(2**63), 2**63, n, dtype=np.int64)
    u[: n // 4] = s[: n // 4].astype(np.uint64)
    u[n // 4 : n // 2] = np.abs(s[n // 4 : n // 2]).astype(np.uint64)
    return [rng.standard_normal(n).astype(np.float32), n, u, s]


CASES = [
    Case(
        "small integer types",
        small_ints,
        _small_ints,
        lambda n: [(n, np.int8), (n, np.uint8), (n, np.uint16), (n, np.int16)],
        small_ints_reference,
    ),
    Case(
        "bitcasts",
        bitcasts,
        _bitcasts,
        lambda n: [
            (n, np.uint32),
            (n, np.int32),
            (n, np.uint64),
            (n, np.int16),
            (n, np.float32),
            (n, np.uint8),
        ],
        bitcasts_reference,
    ),
    Case(
        "math in f32",
        math_f32,
        _math(np.float32),
        lambda n: [(n * MATH_OUTPUTS, np.float32), (n, np.int32)],
        math_reference,
        rtol=2e-6,
    ),
    Case(
        "math in f64",
        math_f64,
        _math(np.float64),
        lambda n: [(n * MATH_OUTPUTS, np.float64), (n, np.int32)],
        math_reference,
        rtol=1e-14,
    ),
    Case(
        "module constants",
        captured,
        lambda rng, n: [rng.standard_normal(n).astype(np.float32)],
        lambda n: [(n, np.float32), (n, np.int32)],
        captured_reference,
        rtol=1e-6,
    ),
    Case(
        "returns from loops",
        returns,
        _returns,
        lambda n: [(4 * max(n, 16), np.int32)],
        returns_reference,
        units=lambda n: max(n, 16),
    ),
    Case(
        "break and continue in unrolled loops",
        unrolled_jumps,
        lambda rng, n: [rng.uniform(-1.5, 1.0, 8 * n).astype(np.float32)],
        lambda n: [(n, np.float32), (n, np.int32)],
        unrolled_jumps_reference,
        rtol=1e-6,
    ),
    Case(
        "literal typing and exact comparisons",
        literal_typing,
        _literal_typing,
        lambda n: [(n, np.float32), (n, np.int32)],
        literal_typing_reference,
        rtol=1e-4,
    ),
]


def run_case(client: Any, case: Case, n: int, rng: np.random.Generator) -> None:
    """Runs ``case`` on ``client`` for ``n`` elements and compares each output with numpy."""
    inputs = case.inputs(rng, n)
    outputs = [client.empty(size, dtype) for size, dtype in case.outputs(n)]
    args = [client.to_device(a) if isinstance(a, np.ndarray) else a for a in inputs]
    units = case.units(n)
    case.kernel.launch(
        client, cj.cdiv(units, case.cube_dim), case.cube_dim, *args, *outputs, **case.comptime
    )
    for got, want in zip((client.read(o) for o in outputs), case.reference(*inputs), strict=True):
        if case.rtol and want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.rtol)
        else:
            np.testing.assert_array_equal(got, want)
