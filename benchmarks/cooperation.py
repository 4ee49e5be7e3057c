"""Cooperation beside its peers: a cube-wide sum and a privatised histogram, on the CPU and CUDA.

- Sum of ``2**28`` f32, read as a tensor of rows of ``CUBE_DIM`` lines: a launch of a few
  cubes per core or multiprocessor takes the rows grid-stride, each unit its line of ``rows``
  rows a round (16-byte loads on CUDA) into a line of accumulators; its planes reduce with
  ``plane_sum``, their first lanes meet in shared memory, and one atomic per cube adds the
  cube's total. Against ``numpy.sum`` on the CPU and ``torch.sum`` on CUDA, as bandwidth.
- A 256-bin histogram of ``2**28`` u32, counted in shared memory (atomics there) and added to
  the global bins once per cube. Against ``numpy.bincount`` and ``torch.bincount``.
- On the CPU, the region-split sum beside the same sum written without barriers: one unit per
  cube running a serial loop over the cube's run.

Prints one table with every backend this machine has, side by side: time (median of the runs,
contenders taking turns), bandwidth, and the ratio to the peer (above 1: cubejit is faster).
Kernels compile and results are checked against the peer before timing.

    python benchmarks/cooperation.py [--size-log2 28] [--repeat 9] [--backend cpu|cuda|both]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import cubejit as cj
from cubejit.errors import BackendUnavailableError

BINS = 256


@cj.kernel
def cube_sum(
    x: cj.Tensor[cj.Line[cj.f32], 2],
    out: cj.Array[cj.Atomic[cj.f32]],
    K: cj.Comptime[int],
):
    """``x`` as rows of ``CUBE_DIM`` lines, taken grid-stride: in each round cube ``c`` sums
    rows ``c``, ``c + CUBE_COUNT``... (``K`` of them, loads independent of one another), unit
    ``u`` line ``u`` of each, into one line of accumulators; then the lanes, the plane, the
    cube, and one atomic per cube."""
    partial = cj.SharedMemory[cj.f32](cj.CUBE_DIM // cj.PLANE_DIM + 1)
    u = cj.UNIT_POS
    rows = x.shape(0)
    cubes = cj.CUBE_COUNT
    acc = cj.line(cj.f32(0.0), x.line_size())
    rounds = rows // (cubes * K)
    for r in range(rounds):
        first = r * (cubes * K) + cj.CUBE_POS
        for k in cj.unroll(range(K)):
            acc += x[first + cj.u32(k) * cubes, u]
    for row in range(rounds * (cubes * K) + cj.CUBE_POS, rows, cubes):
        acc += x[row, u]
    own = cj.f32(0.0)
    for k in cj.unroll(range(x.line_size())):
        own += acc[k]
    total = cj.plane_sum(own)
    if cj.UNIT_POS_PLANE == 0:
        partial[u // cj.PLANE_DIM] = total
    cj.sync_cube()
    if cj.UNIT_POS < cj.PLANE_DIM:
        planes = cj.cdiv(cj.CUBE_DIM, cj.PLANE_DIM)
        w = cj.f32(0.0)
        for p in range(u, planes, cj.PLANE_DIM):
            w += partial[p]
        s = cj.plane_sum(w)
        if u == 0:
            out[0].fetch_add(s)


@cj.kernel
def serial_sum(x: cj.Array[cj.f32], out: cj.Array[cj.Atomic[cj.f32]], C: cj.Comptime[int]):
    base = cj.CUBE_POS * C
    n = x.len()
    acc = 0.0
    for k in range(C):
        i = base + cj.u32(k)
        if i < n:
            acc += x[i]
    out[0].fetch_add(acc)


@cj.kernel
def histogram(x: cj.Array[cj.u32], bins: cj.Array[cj.Atomic[cj.u32]], R: cj.Comptime[int]):
    local = cj.SharedMemory[cj.Atomic[cj.u32]](256)
    u = cj.UNIT_POS
    for j in range(u, 256, cj.CUBE_DIM):
        local[j].store(0)
    cj.sync_cube()
    n = x.len()
    base = cj.CUBE_POS * cj.CUBE_DIM * R
    if base + cj.CUBE_DIM * R <= n:
        for r in range(R):
            local[x[base + cj.u32(r) * cj.CUBE_DIM + u] & 255].fetch_add(1)
    else:
        for r in range(R):
            i = base + cj.u32(r) * cj.CUBE_DIM + u
            if i < n:
                local[x[i] & 255].fetch_add(1)
    cj.sync_cube()
    for j in range(u, 256, cj.CUBE_DIM):
        count = local[j].load()
        if count > 0:
            bins[j].fetch_add(count)


SETTINGS = {
    "cpu": {"dim": 256, "hist": 64, "serial": 65536},
    "cuda": {"dim": 256, "hist": 64},
}
"""Cube size and the histogram's elements per unit, the serial sum's elements per cube."""

SUM_SETTINGS = {
    "cpu": {"units": 1024, "cubes": 128, "rows": 4, "lanes": 1},
    "cuda": {"units": 1024, "cubes per SM": 1, "rows": 8, "lanes": 4},
}
"""The sum's units per cube, cubes (on CUDA per multiprocessor, enough to keep every one
busy), rows a round and lanes per line: 16-byte loads on CUDA; on the CPU one lane, so that
units are adjacent elements, which the C compiler vectorises across."""


def sum_view(x: Any, units: int, lanes: int) -> Any:
    """``x`` (a numpy array or torch tensor whose length ``units * lanes`` divides) as rows of
    ``units`` lines of ``lanes``."""
    return cj.lined(x.reshape(-1, units * lanes), lanes)


def interleaved_medians(
    runs: dict[str, Callable[[], object]], repeat: int, sync: Callable[[], None]
) -> dict[str, float]:
    """The median time of each of ``runs``, taking turns (``sync`` waiting for the device around
    each), so that load from other processes falls on every contender alike."""
    times: dict[str, list[float]] = {who: [] for who in runs}
    for _ in range(repeat):
        for who, run in runs.items():
            sync()
            start = time.perf_counter()
            run()
            sync()
            times[who].append(time.perf_counter() - start)
    return {who: statistics.median(t) for who, t in times.items()}


Row = tuple[str, str, str, float, float, float]


def cpu_rows(n: int, repeat: int) -> list[Row]:
    client = cj.client("cpu")
    s = SETTINGS["cpu"]
    dim = s["dim"]
    rng = np.random.default_rng(0)
    x = rng.random(n, dtype=np.float32)
    values = rng.integers(0, BINS, n, dtype=np.uint32)
    out = np.zeros(1, np.float32)
    t = SUM_SETTINGS["cpu"]
    rows = sum_view(x, t["units"], t["lanes"])
    serial_cubes = cj.cdiv(n, s["serial"])
    bins = np.zeros(BINS, np.uint32)
    hist_cubes = cj.cdiv(n, dim * s["hist"])

    def cj_sum() -> None:
        cube_sum.launch(client, t["cubes"], t["units"], rows, out, K=t["rows"])

    def cj_serial() -> None:
        serial_sum.launch(client, serial_cubes, 1, x, out, C=s["serial"])

    def cj_hist() -> None:
        histogram.launch(client, hist_cubes, dim, values, bins, R=s["hist"])

    want = float(x.sum(dtype=np.float64))
    for run in (cj_sum, cj_serial):
        out[0] = 0
        run()
        np.testing.assert_allclose(out[0], want, rtol=1e-3)
    cj_hist()
    np.testing.assert_array_equal(bins, np.bincount(values, minlength=BINS))
    sums = interleaved_medians(
        {"numpy.sum": lambda: x.sum(), "cubejit": cj_sum, "serial": cj_serial},
        repeat,
        lambda: None,
    )
    hists = interleaved_medians(
        {"numpy.bincount": lambda: np.bincount(values, minlength=BINS), "cubejit": cj_hist},
        repeat,
        lambda: None,
    )
    gb = n * 4 / 1e9
    return [
        (
            "cpu",
            f"sum 2**{n.bit_length() - 1} f32",
            "numpy.sum",
            sums["cubejit"],
            sums["numpy.sum"],
            gb,
        ),
        (
            "cpu",
            "256-bin histogram u32",
            "numpy.bincount",
            hists["cubejit"],
            hists["numpy.bincount"],
            gb,
        ),
        (
            "cpu",
            "region-split sum",
            "one unit per cube, serial",
            sums["cubejit"],
            sums["serial"],
            gb,
        ),
    ]


def cuda_rows(n: int, repeat: int) -> list[Row]:
    import torch

    client = cj.client("cuda")
    s = SETTINGS["cuda"]
    dim = s["dim"]
    rng = np.random.default_rng(0)
    host_x = rng.random(n, dtype=np.float32)
    host_values = rng.integers(0, BINS, n, dtype=np.uint32)
    values = client.to_device(host_values)
    out = client.to_device(np.zeros(1, np.float32))
    bins = client.to_device(np.zeros(BINS, np.uint32))
    t = SUM_SETTINGS["cuda"]
    # One buffer seen by both: torch reads the client's memory without a copy, and each
    # library launches on its own arrays, through its own launch path.
    x = client.to_device(host_x.reshape(-1, t["units"] * t["lanes"]))
    tx = torch.as_tensor(x, device="cuda").reshape(-1)
    tv = torch.from_numpy(host_values.astype(np.int32)).cuda()
    rows = cj.lined(x, t["lanes"])
    sum_cubes = t["cubes per SM"] * torch.cuda.get_device_properties(0).multi_processor_count
    hist_cubes = cj.cdiv(n, dim * s["hist"])

    def cj_sum() -> None:
        cube_sum.launch(client, sum_cubes, t["units"], rows, out, K=t["rows"])

    def cj_hist() -> None:
        histogram.launch(client, hist_cubes, dim, values, bins, R=s["hist"])

    def sync() -> None:
        client.sync()
        torch.cuda.synchronize()

    cj_sum()
    np.testing.assert_allclose(client.read(out)[0], host_x.sum(dtype=np.float64), rtol=1e-3)
    cj_hist()
    np.testing.assert_array_equal(client.read(bins), np.bincount(host_values, minlength=BINS))
    sums = interleaved_medians({"torch.sum": lambda: tx.sum(), "cubejit": cj_sum}, repeat, sync)
    hists = interleaved_medians(
        {"torch.bincount": lambda: torch.bincount(tv, minlength=BINS), "cubejit": cj_hist},
        repeat,
        sync,
    )
    gb = n * 4 / 1e9
    return [
        (
            "cuda",
            f"sum 2**{n.bit_length() - 1} f32",
            "torch.sum",
            sums["cubejit"],
            sums["torch.sum"],
            gb,
        ),
        (
            "cuda",
            "256-bin histogram u32",
            "torch.bincount",
            hists["cubejit"],
            hists["torch.bincount"],
            gb,
        ),
    ]


def print_table(rows: list[Row]) -> None:
    header = (
        "backend",
        "case",
        "peer",
        "cubejit ms",
        "peer ms",
        "cubejit GB/s",
        "peer GB/s",
        "ratio",
    )
    lines = [header]
    for backend, case, peer, ours, theirs, gb in rows:
        lines.append(
            (
                backend,
                case,
                peer,
                f"{ours * 1e3:.2f}",
                f"{theirs * 1e3:.2f}",
                f"{gb / ours:.1f}",
                f"{gb / theirs:.1f}",
                f"{theirs / ours:.2f}x",
            )
        )
    widths = [max(len(line[k]) for line in lines) for k in range(len(header))]
    for line in lines:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-log2", type=int, default=28)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--backend", choices=("cpu", "cuda", "both"), default="both")
    options = parser.parse_args()
    n = 2**options.size_log2
    rows: list[Row] = []
    if options.backend in ("cpu", "both"):
        rows += cpu_rows(n, options.repeat)
    if options.backend in ("cuda", "both"):
        try:
            rows += cuda_rows(n, options.repeat)
        except (BackendUnavailableError, ImportError) as e:
            if options.backend == "cuda":
                raise
            print(f"(no CUDA rows: {e})")
    print_table(rows)


if __name__ == "__main__":
    main()
