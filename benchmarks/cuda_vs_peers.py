"""cubejit's CUDA backend side by side with CuPy's RawKernel and Triton, on one GPU.

Run from the repository root on a machine with an NVIDIA GPU (CuPy and Triton optional)::

    PYTHONPATH=. python benchmarks/cuda_vs_peers.py

It measures, and prints as one table with ratios:

- **cold**: compiling, loading and first launching a saxpy in a fresh process with an empty
  cache (each library its own fresh cache directory); **warm**: the same in a fresh process
  whose cache the cold run filled. Timed inside the process from after imports, device set-up
  and the kernel's definition to the end of the first launch (a synchronisation).
- **launch overhead**: host time of one launch of a loaded saxpy on 4096 floats, the median of
  20,000 (each timed alone, the device synchronised every 1,000 outside the timing), through
  ``kernel.launch`` and through the client alone, beside a bare ``cuLaunchKernel`` through
  ``cuda.bindings`` (Python argument tuples, and a prebuilt argument array) and through
  ``ctypes`` with a prebuilt argument array; and ``kernel.launch`` on PyTorch tensors beside
  Triton's launch, which takes the same tensors.
- **parallel compile**: 32 distinct heavy kernels (NVRTC-bound) compiled by a loader with
  ``parallelism=1``, then 32 others with ``parallelism=16``.
- **generated code**: saxpy on 2**28 float32, bytes moved per second against a device-to-device
  copy of the same size, both timed with CUDA events on the client's stream: LANGUAGE.md's
  saxpy (one element per unit) with 256 and 1024 units per cube, which runs in its coarsened
  no-alias form (four cubes per CUDA thread, all loads before any store); the same with ``out``
  passed as ``y`` too, which takes the plain form (one unit per thread: too few bytes in flight
  to fill HBM3e); and a saxpy written with four elements per unit (a quarter of the launch
  apart, so accesses stay coalesced), loading all eight before storing. The 2-D cases run
  ``out = a * x + y`` on 16384x16384 ``cj.Tensor`` arguments (as many elements as the 1-D
  saxpy), ``x`` contiguous (cubes of one row of 256 units) or a transposed view of a buffer
  (``__cuda_array_interface__`` strides, no copy; cubes of 32x32 and 32x8 units). The
  bounds-checked saxpy (a client with ``check_bounds=True``, which reads its record after each
  launch, so each launch waits for the one before) runs beside the unchecked one.

- **lines**: saxpy on 2**28 ``cj.Line[cj.f32]`` and ``cj.Line[cj.f16]`` elements written
  naturally (one line per unit: the launch chooses 4 lanes of f32 or 8 of f16, 16 bytes each),
  bytes moved per second against a device-to-device copy in the same run, beside Triton's
  vector add (``out = x + y``, 1024 elements per program) on the same sizes.
- **warm start**: a fresh process's phases beside CuPy's, every kernel stored (see
  ``benchmarks/warm_start_cuda.py``): ``import``, client or device set-up, the first launch,
  the whole process to the first result, 100 distinct stored kernels, the cold first launch.

``--only bandwidth`` (or any sections) runs just those sections; ``--skip`` leaves some out.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from fresh_process import run_fresh

N_FIRST = 1 << 20
N_OVERHEAD = 4096

CUBEJIT_FIRST = """
import json, time, numpy as np
import cubejit as cj
client = cj.client("cuda")
n = {n}
x_host = np.random.rand(n).astype(np.float32)
x, y, out = client.to_device(x_host), client.to_device(x_host), client.empty(n, cj.f32)

@cj.kernel
def saxpy(a: cj.f32, x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]

client.sync()
start = time.perf_counter()
saxpy.launch(client, n // 256, 256, 2.0, x, y, out)
client.sync()
seconds = time.perf_counter() - start
assert np.allclose(client.read(out), 3 * x_host)
print(json.dumps({{"seconds": seconds, "compiles": client.compiler.compilations}}))
"""

CUPY_SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out,
                                 unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""

CUPY_FIRST = """
import json, time, numpy as np, cupy as cp
n = {n}
x = cp.random.rand(n, dtype=cp.float32)
out = cp.empty(n, cp.float32)
cp.cuda.Device().synchronize()
start = time.perf_counter()
kernel = cp.RawKernel({source!r}, "saxpy")
kernel((n // 256,), (256,), (cp.float32(2.0), x, x, out, cp.uint32(n)))
cp.cuda.Device().synchronize()
seconds = time.perf_counter() - start
assert cp.allclose(out, 3 * x)
print(json.dumps({{"seconds": seconds}}))
"""

TRITON_FIRST = """
import json, time, torch, triton, triton.language as tl
n = {n}
x = torch.rand(n, device="cuda")
out = torch.empty(n, device="cuda")

@triton.jit
def saxpy(a, x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, a * tl.load(x_ptr + offsets, mask=mask)
             + tl.load(y_ptr + offsets, mask=mask), mask=mask)

torch.cuda.synchronize()
start = time.perf_counter()
saxpy[(n // 1024,)](2.0, x, x, out, n, BLOCK=1024)
torch.cuda.synchronize()
seconds = time.perf_counter() - start
assert torch.allclose(out, 3 * x)
print(json.dumps({{"seconds": seconds}}))
"""


def first_launch(script: str, cache: dict[str, str]) -> dict[str, Any] | str:
    """Runs ``script`` in a fresh process with ``cache`` in its environment; its JSON line,
    or why it failed."""
    ran = run_fresh(script, cache, timeout=300)
    return ran.failure if ran.report is None else ran.report


def cold_and_warm(work: Path) -> dict[str, tuple[Any, Any]]:
    peers = {
        "cubejit": (CUBEJIT_FIRST.format(n=N_FIRST), "CUBEJIT_CACHE_DIR"),
        "CuPy": (CUPY_FIRST.format(n=N_FIRST, source=CUPY_SOURCE), "CUPY_CACHE_DIR"),
        "Triton": (TRITON_FIRST.format(n=N_FIRST), "TRITON_CACHE_DIR"),
    }
    results = {}
    for name, (script, variable) in peers.items():
        cache = {variable: str(work / f"cache-{name}")}
        cold = first_launch(script, cache)
        warm = first_launch(script, cache)
        results[name] = (cold, warm)
    return results


def per_call_median(call: Callable[[], Any], sync: Callable[[], Any], count: int) -> float:
    """The median host time of ``call`` in microseconds, each call timed alone."""
    clock = time.perf_counter_ns
    samples = []
    for done in range(count):
        if done % 1000 == 0:
            sync()
        start = clock()
        call()
        samples.append(clock() - start)
    sync()
    return statistics.median(samples) / 1e3


def launch_overheads(count: int) -> dict[str, float | str]:
    import cubejit as cj
    from cubejit.compile.id import ArtifactId
    from cubejit.showcase import saxpy

    client = cj.client("cuda")
    n = N_OVERHEAD
    x = client.to_device(np.random.rand(n).astype(np.float32))
    out = client.empty(n, cj.f32)
    cubes = n // 256
    saxpy.launch(client, cubes, 256, 2.0, x, x, out)
    spec = saxpy.specialize(256)
    args = (2.0, x, x, out)
    results: dict[str, float | str] = {
        "cubejit": per_call_median(
            lambda: saxpy.launch(client, cubes, 256, 2.0, x, x, out), client.sync, count
        ),
        "cubejit client.launch(spec, ...) alone": per_call_median(
            lambda: client.launch(spec, cubes, args), client.sync, count
        ),
    }
    from cuda.bindings import driver

    handle = client.loader.get(ArtifactId(spec.id(), None))
    function, stream = handle.function, driver.CUstream(client.stream_handle)
    values = (ctypes.c_uint64 * 7)(0, x.ptr, n, x.ptr, n, out.ptr, n)
    ctypes.c_float.from_address(ctypes.addressof(values)).value = 2.0
    pointers = (ctypes.c_void_p * 7)(*(ctypes.addressof(values) + 8 * i for i in range(7)))
    address = ctypes.addressof(pointers)
    p, u = ctypes.c_void_p, ctypes.c_uint
    types = (ctypes.c_float, p, u, p, u, p, u)
    results["cuda.bindings, argument tuples"] = per_call_median(
        lambda: driver.cuLaunchKernel(
            function,
            cubes,
            1,
            1,
            256,
            1,
            1,
            0,
            stream,
            ((2.0, x.ptr, n, x.ptr, n, out.ptr, n), types),
            0,
        ),
        client.sync,
        count,
    )
    results["cuda.bindings, prebuilt arguments"] = per_call_median(
        lambda: driver.cuLaunchKernel(function, cubes, 1, 1, 256, 1, 1, 0, stream, address, 0),
        client.sync,
        count,
    )
    launch = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
    launch.restype = ctypes.c_int
    f, s, a = p(int(handle.function)), p(client.stream_handle), p(address)
    results["ctypes, prebuilt arguments"] = per_call_median(
        lambda: launch(f, cubes, 1, 1, 256, 1, 1, 0, s, a, None), client.sync, count
    )
    try:
        import torch

        tx = torch.rand(n, device="cuda")
        tout = torch.empty_like(tx)
        saxpy.launch(client, cubes, 256, 2.0, tx, tx, tout)
        results["cubejit, PyTorch tensors"] = per_call_median(
            lambda: saxpy.launch(client, cubes, 256, 2.0, tx, tx, tout), client.sync, count
        )
    except ImportError as e:
        results["cubejit, PyTorch tensors"] = f"n/a ({type(e).__name__})"
    results.update(peer_overheads(count))
    return results


def peer_overheads(count: int) -> dict[str, float | str]:
    results: dict[str, float | str] = {}
    try:
        import cupy as cp

        kernel = cp.RawKernel(CUPY_SOURCE, "saxpy")
        x = cp.random.rand(N_OVERHEAD, dtype=cp.float32)
        out = cp.empty_like(x)
        args = (cp.float32(2.0), x, x, out, cp.uint32(N_OVERHEAD))
        grid = (N_OVERHEAD // 256,)
        kernel(grid, (256,), args)
        sync = cp.cuda.Device().synchronize
        results["CuPy"] = per_call_median(lambda: kernel(grid, (256,), args), sync, count)
    except Exception as e:
        results["CuPy"] = f"n/a ({type(e).__name__})"
    try:
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def saxpy(a, x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            x = tl.load(x_ptr + offsets, mask=mask)
            tl.store(out_ptr + offsets, a * x + tl.load(y_ptr + offsets, mask=mask), mask=mask)

        x = torch.rand(N_OVERHEAD, device="cuda")
        out = torch.empty_like(x)
        grid = (N_OVERHEAD // 1024,)
        saxpy[grid](2.0, x, x, out, N_OVERHEAD, BLOCK=1024)
        results["Triton"] = per_call_median(
            lambda: saxpy[grid](2.0, x, x, out, N_OVERHEAD, BLOCK=1024),
            torch.cuda.synchronize,
            count,
        )
    except Exception as e:
        results["Triton"] = f"n/a ({type(e).__name__})"
    return results


def parallel_compile(kernels: int, steps: int) -> dict[str, float]:
    import cubejit as cj
    from cubejit.compile.loader import KernelLoader

    @cj.kernel
    def heavy(
        x: cj.Array[cj.f32], out: cj.Array[cj.f32], steps: cj.Comptime[int], seed: cj.Comptime[int]
    ):
        i = cj.ABSOLUTE_POS
        if i < x.len():
            acc = x[i]
            for k in cj.unroll(range(steps)):
                acc = cj.sin(acc) * cj.erf(acc + cj.f32(seed)) + cj.pow(
                    cj.abs(acc), cj.f32(k % 3 + 1)
                ) / cj.f32(k + 1)
            out[i] = acc

    client = cj.client("cuda")
    results = {}
    for parallelism, first_seed in ((1, 0), (16, 1000)):
        loader = KernelLoader(client.loader.target, parallelism=parallelism)
        before = client.compiler.compilations
        for seed in range(first_seed, first_seed + kernels):
            loader.enqueue(heavy.specialize(256, steps=steps, seed=seed), None)
        start = time.perf_counter()
        loader.compile_queued()
        results[f"p={parallelism}"] = time.perf_counter() - start
        assert client.compiler.compilations - before == kernels
    return results


CHECKED_SAXPY = "saxpy, 256 units per cube, bounds-checked"
"""The row of the checked saxpy (CUBEJIT_CHECK_BOUNDS), beside the unchecked one."""


def bandwidth() -> dict[str, float]:
    from cuda.bindings import driver

    import cubejit as cj
    from cubejit.showcase import saxpy

    @cj.kernel
    def saxpy4(a: cj.f32, x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32]):
        units = cj.CUBE_COUNT * cj.CUBE_DIM
        i = cj.ABSOLUTE_POS
        if i + 3 * units < out.len():
            x0 = x[i]
            x1 = x[i + units]
            x2 = x[i + 2 * units]
            x3 = x[i + 3 * units]
            y0 = y[i]
            y1 = y[i + units]
            y2 = y[i + 2 * units]
            y3 = y[i + 3 * units]
            out[i] = a * x0 + y0
            out[i + units] = a * x1 + y1
            out[i + 2 * units] = a * x2 + y2
            out[i + 3 * units] = a * x3 + y3
        else:
            for k in cj.unroll(range(4)):
                j = i + cj.u32(k) * units
                if j < out.len():
                    out[j] = a * x[j] + y[j]

    @cj.kernel
    def saxpy_2d(a: cj.f32, x: cj.Tensor[cj.f32], y: cj.Tensor[cj.f32], out: cj.Tensor[cj.f32]):
        c = cj.ABSOLUTE_POS_X
        r = cj.ABSOLUTE_POS_Y
        if c < out.shape(1):
            out[r, c] = a * x[r, c] + y[r, c]

    class Transposed:
        """A square buffer seen transposed, as another library's strided view would be."""

        def __init__(self, buffer: Any, side: int) -> None:
            self.__cuda_array_interface__ = {
                **buffer.__cuda_array_interface__,
                "shape": (side, side),
                "strides": (4, 4 * side),
            }

    client = cj.client("cuda")
    n = 1 << 28
    host = np.random.rand(n).astype(np.float32)
    x, y, out = client.to_device(host), client.to_device(host), client.empty(n, cj.f32)
    stream = driver.CUstream(client.stream_handle)
    _, start = driver.cuEventCreate(0)
    _, end = driver.cuEventCreate(0)

    def timed(run: Callable[[], Any], reps: int = 10) -> float:
        run()
        client.sync()
        driver.cuEventRecord(start, stream)
        for _ in range(reps):
            run()
        driver.cuEventRecord(end, stream)
        driver.cuEventSynchronize(end)
        _, ms = driver.cuEventElapsedTime(start, end)
        return ms / 1e3 / reps

    rates = {}
    for name, kernel, dim, count in (
        ("saxpy, 256 units per cube", saxpy, 256, n // 256),
        ("saxpy, 1024 units per cube", saxpy, 1024, n // 1024),
        ("saxpy, 4 elements per unit", saxpy4, 256, n // 1024),
    ):
        seconds = timed(lambda k=kernel, d=dim, c=count: k.launch(client, c, d, 2.0, x, y, out))
        assert np.allclose(client.read(out)[-1000:], 3 * host[-1000:])
        rates[name] = 12 * n / seconds
    seconds = timed(lambda: saxpy.launch(client, n // 256, 256, 2.0, x, out, out))
    rates["saxpy, 256 units per cube, out is y (plain form)"] = 12 * n / seconds
    checked = cj.client("cuda", check_bounds=True)
    cx, cy, cout = checked.to_device(host), checked.to_device(host), checked.empty(n, cj.f32)
    seconds = timed(lambda: saxpy.launch(checked, n // 256, 256, 2.0, cx, cy, cout))
    assert np.allclose(checked.read(cout)[-1000:], 3 * host[-1000:])
    rates[CHECKED_SAXPY] = 12 * n / seconds
    side = 1 << 14
    shaped = (side, side)
    x2, y2 = client.to_device(host.reshape(shaped)), client.to_device(host.reshape(shaped))
    out2 = client.empty(shaped, cj.f32)
    xt = Transposed(x2, side)
    for name, source, cube in (
        ("2-D saxpy, contiguous, 256x1 cubes", x2, (256, 1)),
        ("2-D saxpy, x transposed, 32x32 cubes", xt, (32, 32)),
        ("2-D saxpy, x transposed, 32x8 cubes", xt, (32, 8)),
    ):
        count = (side // cube[0], side // cube[1])
        seconds = timed(
            lambda s=source, c=cube, k=count: saxpy_2d.launch(client, k, c, 2.0, s, y2, out2)
        )
        expected = 2 * host.reshape(shaped)[:64, :64] + host.reshape(shaped)[:64, :64]
        if source is xt:
            expected = 2 * host.reshape(shaped)[:64, :64].T + host.reshape(shaped)[:64, :64]
        assert np.allclose(client.read(out2)[:64, :64], expected)
        rates[name] = 12 * n / seconds
    copy_s = timed(lambda: driver.cuMemcpyDtoDAsync(out.ptr, x.ptr, 4 * n, stream))
    rates["device-to-device copy"] = 8 * n / copy_s
    return rates


def show(value: Any, unit: str, scale: float = 1.0) -> str:
    if isinstance(value, dict):
        value = value["seconds"]
    if isinstance(value, str):
        return value
    return f"{value * scale:.3g} {unit}"


Row = tuple[str, str, str, str, str]


def first_launch_rows(work: Path) -> list[Row]:
    first = cold_and_warm(work)
    rows: list[Row] = []
    for label, index in (("cold first launch", 0), ("warm first launch", 1)):
        ours, cupy, triton = (first[k][index] for k in ("cubejit", "CuPy", "Triton"))
        ratio = "-"
        if isinstance(ours, dict) and isinstance(cupy, dict):
            ratio = f"{cupy['seconds'] / ours['seconds']:.2f}x CuPy's speed"
        ms = [show(v, "ms", 1e3) for v in (ours, cupy, triton)]
        rows.append((label, *ms, ratio))
    runs = " / ".join(
        str(c.get("compiles")) if isinstance(c, dict) else "-" for c in first["cubejit"]
    )
    rows.append(("  NVRTC runs (cold, warm)", runs, "", "", "warm must be 0"))
    return rows


def launch_rows(count: int) -> list[Row]:
    overhead = launch_overheads(count)
    ours = overhead.pop("cubejit")
    cupy, triton = overhead.pop("CuPy"), overhead.pop("Triton")
    times = [show(v, "us") for v in (ours, cupy, triton)]
    rows: list[Row] = [("launch overhead (median)", *times, "target <= 6 us")]
    with_torch = overhead.pop("cubejit, PyTorch tensors")
    ratio = ""
    if isinstance(with_torch, float) and isinstance(triton, float):
        ratio = f"{with_torch / triton:.2f}x Triton's (its launch takes PyTorch tensors)"
    rows.append(("  the same with PyTorch tensors", show(with_torch, "us"), "", times[2], ratio))
    for name, value in overhead.items():
        label = name if name.startswith("cubejit") else f"bare cuLaunchKernel: {name}"
        rows.append((f"  {label}", show(value, "us"), "", "", ""))
    return rows


def compile_rows(kernels: int, steps: int) -> list[Row]:
    times = parallel_compile(kernels, steps)
    speedup = times["p=1"] / times["p=16"]
    return [
        (
            f"compile {kernels} heavy kernels, p=1",
            show(times["p=1"], "s"),
            "",
            "",
            f"{times['p=1'] / kernels:.2f} s per kernel",
        ),
        (
            f"compile {kernels} heavy kernels, p=16",
            show(times["p=16"], "s"),
            "",
            "",
            f"{speedup:.1f}x faster (target >= 8x)",
        ),
    ]


def lines_bandwidth() -> dict[str, float]:
    from cuda.bindings import driver

    import cubejit as cj

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
    def lined_half_saxpy(
        a: cj.f16,
        x: cj.Array[cj.Line[cj.f16]],
        y: cj.Array[cj.Line[cj.f16]],
        out: cj.Array[cj.Line[cj.f16]],
    ):
        i = cj.ABSOLUTE_POS
        if i < out.len():
            out[i] = a * x[i] + y[i]

    client = cj.client("cuda")
    n = 1 << 28
    stream = driver.CUstream(client.stream_handle)
    _, start = driver.cuEventCreate(0)
    _, end = driver.cuEventCreate(0)

    def timed(run: Callable[[], Any], reps: int = 10) -> float:
        run()
        client.sync()
        driver.cuEventRecord(start, stream)
        for _ in range(reps):
            run()
        driver.cuEventRecord(end, stream)
        driver.cuEventSynchronize(end)
        _, ms = driver.cuEventElapsedTime(start, end)
        return ms / 1e3 / reps

    rates: dict[str, float] = {}
    for name, kernel, dtype, lanes in (
        ("f32", lined_saxpy, np.float32, 4),
        ("f16", lined_half_saxpy, np.float16, 8),
    ):
        host = np.random.rand(n).astype(dtype)
        x, y = client.to_device(host), client.to_device(host)
        out = client.empty(n, cj.f32 if dtype is np.float32 else cj.f16)
        count = n // lanes // 256
        seconds = timed(
            lambda k=kernel, x=x, y=y, o=out, c=count: k.launch(client, c, 256, 2.0, x, y, o)
        )
        check = client.read(out)[-1000:].astype(np.float32)
        assert np.allclose(check, 3 * host[-1000:].astype(np.float32), rtol=1e-2)
        item = np.dtype(dtype).itemsize
        rates[f"lined {name} saxpy"] = 3 * item * n / seconds
        size = item * n
        copy_s = timed(lambda o=out, x=x, b=size: driver.cuMemcpyDtoDAsync(o.ptr, x.ptr, b, stream))
        rates[f"{name} device-to-device copy"] = 2 * item * n / copy_s
        del x, y, out
    rates.update(triton_vector_add(n))
    return rates


def triton_vector_add(n: int) -> dict[str, float]:
    """Triton's vector add (its tutorial's kernel) on ``n`` f32 and f16 elements, bytes per
    second timed with CUDA events on PyTorch's stream; empty without Triton."""
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError:
        return {}

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(
            out_ptr + offsets, tl.load(x_ptr + offsets, mask) + tl.load(y_ptr + offsets, mask), mask
        )

    rates = {}
    for name, dtype in (("f32", torch.float32), ("f16", torch.float16)):
        x = torch.rand(n, device="cuda", dtype=dtype)
        y, out = torch.rand_like(x), torch.empty_like(x)
        grid = (triton.cdiv(n, 1024),)
        add[grid](x, y, out, n, BLOCK=1024)
        torch.cuda.synchronize()
        begin, finish = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(10):
            add[grid](x, y, out, n, BLOCK=1024)
        finish.record()
        finish.synchronize()
        seconds = begin.elapsed_time(finish) / 1e3 / 10
        rates[f"Triton {name} vector add"] = 3 * x.element_size() * n / seconds
        del x, y, out
    return rates


def lines_rows() -> list[Row]:
    rates = lines_bandwidth()
    rows: list[Row] = []
    for name in ("f32", "f16"):
        copy = rates[f"{name} device-to-device copy"]
        ours = rates[f"lined {name} saxpy"]
        triton = rates.get(f"Triton {name} vector add")
        ratio = f"{ours / copy:.1%} of copy (target >= 95%)"
        if triton is not None:
            ratio += f"; Triton add {triton / copy:.1%}"
        peer = show(triton, "GB/s", 1e-9) if triton is not None else "n/a"
        rows.append((f"2**28 {name} lined saxpy", show(ours, "GB/s", 1e-9), "", peer, ratio))
        rows.append((f"2**28 {name} device-to-device copy", show(copy, "GB/s", 1e-9), "", "", ""))
    return rows


def bandwidth_rows() -> list[Row]:
    rates = bandwidth()
    copy = rates.pop("device-to-device copy")
    rows: list[Row] = []
    flat = rates["saxpy, 256 units per cube"]
    for name, rate in rates.items():
        ratio = f"{rate / copy:.1%} of copy (target >= 90%)"
        if name.startswith("2-D saxpy, x transposed"):
            ratio = f"{rate / copy:.1%} of copy (target >= 50%)"
        elif name.startswith("2-D saxpy, contiguous"):
            ratio = f"{rate / flat:.1%} of the 1-D saxpy (target >= 95%)"
        elif name == CHECKED_SAXPY:
            ratio = f"{flat / rate:.2f}x the unchecked saxpy's time"
        rows.append((f"2**28 f32 {name}", show(rate, "GB/s", 1e-9), "", "", ratio))
    rows.append(("2**28 f32 device-to-device copy", show(copy, "GB/s", 1e-9), "", "", ""))
    return rows


def warm_start_rows() -> list[Row]:
    import warm_start_cuda

    return [(m, ours, cupy, "", ratio) for m, ours, cupy, _, ratio in warm_start_cuda.rows()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=20_000)
    parser.add_argument("--kernels", type=int, default=32)
    parser.add_argument("--steps", type=int, default=24, help="unrolled steps of a heavy kernel")
    sections = ("first", "warm", "launch", "compile", "bandwidth", "lines")
    parser.add_argument("--skip", nargs="*", default=(), choices=sections)
    parser.add_argument("--only", nargs="*", default=sections, choices=sections)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cubejit-bench-"))
    os.environ["CUBEJIT_CACHE_DIR"] = str(work / "cache-main")
    makers: dict[str, Callable[[], list[Row]]] = {
        "first": lambda: first_launch_rows(work),
        "warm": warm_start_rows,
        "launch": lambda: launch_rows(options.launches),
        "compile": lambda: compile_rows(options.kernels, options.steps),
        "bandwidth": bandwidth_rows,
        "lines": lines_rows,
    }
    rows: list[Row] = []
    for name in sections:
        if name in options.skip or name not in options.only:
            continue
        try:
            rows += makers[name]()
        except Exception as e:
            rows.append((f"{name}: failed", f"{type(e).__name__}: {e}"[:60], "", "", ""))
    header = ("measure", "cubejit", "CuPy", "Triton", "ratio / target")
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(5)]
    for row in (header, tuple("-" * w for w in widths), *rows):
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
