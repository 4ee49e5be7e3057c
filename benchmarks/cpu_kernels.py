"""cubejit's CPU backend beside numpy and Numba: saxpy, a fused chain, 2-D tensors, launches.

The lined rows (``cj lined``) run the same saxpy and chain on ``cj.Line[cj.f32]`` arrays, one
line of 4 lanes (16 bytes) per unit.

Prints one table: the median time of each contender and its ratio to numpy (above 1 means
faster than numpy). Numba's ``@njit(parallel=True)`` joins when it is installed. The 2-D cases
run ``out = a * x + y`` on square tensors of as many elements as the 1-D saxpy, ``x`` contiguous
or transposed (a view, no copy; numpy computes ``a * x.T + y``); a last line gives the
contiguous 2-D case against the 1-D saxpy, and another the bounds-checked saxpy
(``cj checked``, a client with ``check_bounds=True``) against the unchecked one. Kernels are
compiled (and Numba's functions jitted) before timing starts; within a case the contenders take
turns, so load from other processes falls on each alike.

    python benchmarks/cpu_kernels.py [--size-log2 24] [--repeat 15]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from cooperation import interleaved_medians

import cubejit as cj
from cubejit.showcase import saxpy, tanh_chain


@cj.kernel
def saxpy_2d(a: cj.f32, x: cj.Tensor[cj.f32], y: cj.Tensor[cj.f32], out: cj.Tensor[cj.f32]):
    c = cj.ABSOLUTE_POS_X
    r = cj.ABSOLUTE_POS_Y
    if c < out.shape(1):
        out[r, c] = a * x[r, c] + y[r, c]


CONTIGUOUS_CUBE = (256, 1)
"""Cubes of a row each: the contiguous tensor is read as the 1-D saxpy reads its arrays."""
TRANSPOSED_CUBE = (8, 32)
"""Tiles of 8 columns by 32 rows: the transposed reads of a cube stay in a few cache lines."""


@cj.kernel
def touch(x: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i] + 1.0


@cj.kernel
def lined_saxpy(
    a: cj.f32,
    x: cj.Array[cj.Line[cj.f32]],
    y: cj.Array[cj.Line[cj.f32]],
    out: cj.Array[cj.Line[cj.f32]],
):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


@cj.kernel
def lined_tanh_chain(
    a: cj.f32,
    x: cj.Array[cj.Line[cj.f32]],
    y: cj.Array[cj.Line[cj.f32]],
    z: cj.Array[cj.Line[cj.f32]],
    out: cj.Array[cj.Line[cj.f32]],
):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = cj.tanh(a * x[i] + y[i]) * z[i]


CHECKED = "cj checked"
"""The contender running saxpy's bounds-checked variant on a checked client."""


def _no_sync() -> None:
    pass


def numba_versions() -> dict[str, Callable[..., object]] | None:
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(parallel=True, fastmath=False)
    def nb_saxpy(a, x, y, out):
        for i in numba.prange(out.size):
            out[i] = a * x[i] + y[i]

    @numba.njit(parallel=True, fastmath=False)
    def nb_chain(a, x, y, z, out):
        for i in numba.prange(out.size):
            out[i] = np.tanh(a * x[i] + y[i]) * z[i]

    @numba.njit
    def nb_touch(x):
        for i in range(x.size):
            x[i] = x[i] + 1.0

    return {"saxpy": nb_saxpy, "chain": nb_chain, "touch": nb_touch}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-log2", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=15)
    options = parser.parse_args()
    n = 2**options.size_log2
    client = cj.client("cpu")
    rng = np.random.default_rng(0)
    x, y, z = (rng.random(n, dtype=np.float32) for _ in range(3))
    out = np.empty(n, np.float32)
    a = np.float32(2.0)
    cubes = cj.cdiv(n, 256)
    rows: list[tuple[str, str, float]] = []

    def cj_saxpy() -> None:
        saxpy.launch(client, cubes, 256, a, x, y, out)

    checked = cj.client("cpu", check_bounds=True)

    def cj_saxpy_checked() -> None:
        saxpy.launch(checked, cubes, 256, a, x, y, out)

    def cj_chain() -> None:
        tanh_chain.launch(client, cubes, 256, a, x, y, z, out)

    line_cubes = cj.cdiv(n // 4, 256)

    def cj_lined_saxpy() -> None:
        lined_saxpy.launch(client, line_cubes, 256, a, x, y, out)

    def cj_lined_chain() -> None:
        lined_tanh_chain.launch(client, line_cubes, 256, a, x, y, z, out)

    cj_saxpy_checked()
    np.testing.assert_allclose(out, a * x + y, rtol=1e-6)
    out[...] = 0.0
    cj_saxpy()
    np.testing.assert_allclose(out, a * x + y, rtol=1e-6)
    cj_chain()
    np.testing.assert_allclose(out, np.tanh(a * x + y) * z, rtol=1e-5, atol=1e-6)
    out[:] = 0
    cj_lined_saxpy()
    np.testing.assert_allclose(out, a * x + y, rtol=1e-6)
    out[:] = 0
    cj_lined_chain()
    np.testing.assert_allclose(out, np.tanh(a * x + y) * z, rtol=1e-5, atol=1e-6)
    jitted = numba_versions()
    saxpy_runs: dict[str, Callable[[], object]] = {
        "numpy": lambda: a * x + y,
        "cubejit": cj_saxpy,
        CHECKED: cj_saxpy_checked,
        "cj lined": cj_lined_saxpy,
    }
    chain_runs: dict[str, Callable[[], object]] = {
        "numpy": lambda: np.tanh(a * x + y) * z,
        "cubejit": cj_chain,
        "cj lined": cj_lined_chain,
    }
    side = 2 ** (options.size_log2 // 2)
    grid = client.empty((side, side), cj.f32).array
    grid[...] = rng.random((side, side), dtype=np.float32)
    x2, y2, out2 = grid, x[: side * side].reshape(side, side), np.empty((side, side), np.float32)
    x2t = x2.T

    def cj_2d(source: np.ndarray, cube: tuple[int, int]) -> None:
        count = (cj.cdiv(side, cube[0]), cj.cdiv(side, cube[1]))
        saxpy_2d.launch(client, count, cube, a, source, y2, out2)

    cj_2d(x2, CONTIGUOUS_CUBE)
    np.testing.assert_allclose(out2, a * x2 + y2, rtol=1e-6)
    cj_2d(x2t, TRANSPOSED_CUBE)
    np.testing.assert_allclose(out2, a * x2t + y2, rtol=1e-6)
    contiguous_runs: dict[str, Callable[[], object]] = {
        "numpy": lambda: a * x2 + y2,
        "cubejit": lambda: cj_2d(x2, CONTIGUOUS_CUBE),
    }
    transposed_runs: dict[str, Callable[[], object]] = {
        "numpy": lambda: a * x2t + y2,
        "cubejit": lambda: cj_2d(x2t, TRANSPOSED_CUBE),
    }
    small = np.zeros(16, np.float32)
    touch.launch(client, 1, 16, small)
    launch_runs: dict[str, Callable[[], object]] = {
        "cubejit": lambda: touch.launch(client, 1, 16, small)
    }
    if jitted is not None:
        jitted["saxpy"](a, x, y, out)
        jitted["chain"](a, x, y, z, out)
        jitted["touch"](small)
        saxpy_runs["numba"] = lambda: jitted["saxpy"](a, x, y, out)
        chain_runs["numba"] = lambda: jitted["chain"](a, x, y, z, out)
        launch_runs["numba"] = lambda: jitted["touch"](small)
    launches = 20_000
    for case, runs, repeat in (
        ("saxpy", saxpy_runs, options.repeat),
        ("chain", chain_runs, options.repeat),
        ("2-D contiguous", contiguous_runs, options.repeat),
        ("2-D transposed", transposed_runs, options.repeat),
        ("launch, 16 elements", launch_runs, launches),
    ):
        rows += [(case, who, t) for who, t in interleaved_medians(runs, repeat, _no_sync).items()]

    print(
        f"float32, n = 2**{options.size_log2} (2-D: {side}x{side}), "
        f"median of {options.repeat} runs "
        f"(launch: median of {launches}); ratio = numpy time / contender time"
    )
    print(f"{'case':<22}{'contender':<11}{'median':>12}{'vs numpy':>10}")
    baseline = {case: seconds for case, who, seconds in rows if who == "numpy"}
    order = {
        "saxpy": 0,
        "chain": 1,
        "2-D contiguous": 2,
        "2-D transposed": 3,
        "launch, 16 elements": 4,
    }
    for case, who, seconds in sorted(rows, key=lambda r: (order[r[0]], r[1] != "numpy")):
        shown = f"{seconds * 1e6:.2f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"
        ratio = f"{baseline[case] / seconds:.2f}x" if case in baseline else ""
        print(f"{case:<22}{who:<11}{shown:>12}{ratio:>10}")
    ours = {case: seconds for case, who, seconds in rows if who == "cubejit"}
    lined = {case: seconds for case, who, seconds in rows if who == "cj lined"}
    print(
        f"lined tanh chain against the unlined one: {ours['chain'] / lined['chain']:.2f}x, "
        f"against numpy: {baseline['chain'] / lined['chain']:.2f}x "
        f"(targets: >= 1.00x and >= 2.00x)"
    )
    print(
        f"2-D contiguous ({side}x{side}) against the 1-D saxpy: "
        f"{ours['saxpy'] / ours['2-D contiguous']:.2f}x (1.00 = as fast)"
    )
    checked_s = next(s for case, who, s in rows if case == "saxpy" and who == CHECKED)
    print(
        f"checked saxpy (CUBEJIT_CHECK_BOUNDS) against the unchecked one: "
        f"{checked_s / ours['saxpy']:.2f}x the time (1.00 = as fast)"
    )


if __name__ == "__main__":
    main()
