"""The kernel suite: every ``cubejit.std`` kernel beside the best peer on the same machine.

On CUDA the peers are PyTorch and Triton (where installed), on the CPU numpy and Numba. Each
case checks cubejit's result against the peer's first, then times the contenders in turns
(median of ``--repeat`` runs each, after a warm-up) and prints one table: time, throughput
(GB/s of memory each kernel must move, or TFLOP/s), the ratio to the peer the target names
(above 1: cubejit is faster) and the target, judged on one call waited for (its host work
counts whole). The last column is the ratio when each contender's calls are queued 20 back to
back (a program that does not wait for each result: host work overlaps the device's). One
process; ``--only softmax,sum`` runs a subset.

    python benchmarks/suite.py [--backend cpu|cuda] [--only NAMES] [--repeat 15]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from cooperation import interleaved_medians

import cubejit as cj
import cubejit.std as cs

Run = Callable[[], object]


@dataclass
class Case:
    """One row of the table, ready to time."""

    name: str
    work: float
    """Bytes moved (for GB/s) or floating-point operations (for TFLOP/s)."""
    unit: str
    cubejit: Run
    peers: dict[str, Run]
    target: float
    """The ratio cubejit must reach against the fastest of ``peers``."""
    check: Callable[[], None]


@dataclass
class Outcome:
    case: Case
    times: dict[str, float]
    """Each contender's median time of one call, waited for (what the target is judged on)."""
    queued: dict[str, float]
    """Each contender's median time per call of :data:`QUEUED` calls queued back to back, waited
    for once: a call's host work then overlaps the device's work of the call before."""


QUEUED = 20


def medians(runs: dict[str, Run], repeat: int, sync: Callable[[], None]) -> dict[str, float]:
    """Each contender's median time, after one warm-up run each."""
    for run in runs.values():
        run()
    sync()
    return interleaved_medians(runs, repeat, sync)


def queued_medians(runs: dict[str, Run], repeat: int, sync: Callable[[], None]) -> dict[str, float]:
    """Each contender's median time per call of :data:`QUEUED` calls made back to back."""

    def queue(run: Run) -> Run:
        def calls() -> None:
            for _ in range(QUEUED):
                run()

        return calls

    totals = interleaved_medians({who: queue(run) for who, run in runs.items()}, repeat, sync)
    return {who: t / QUEUED for who, t in totals.items()}


def _close(got: Any, want: Any, rtol: float, atol: float) -> None:
    np.testing.assert_allclose(
        np.asarray(got, np.float64), np.asarray(want, np.float64), rtol, atol
    )


def cpu_cases(only: set[str]) -> list[Case]:
    rng = np.random.default_rng(0)
    cases: list[Case] = []
    if "sum" in only:
        xs = rng.random(2**26, dtype=np.float32)
        total = np.empty((), np.float32)
        cases.append(
            Case(
                "sum 2**26 f32",
                xs.nbytes,
                "GB/s",
                lambda: cs.sum(xs, out=total),
                {"numpy": lambda: xs.sum()},
                1.0,
                lambda: _close(cs.sum(xs), xs.sum(dtype=np.float64), 1e-4, 0),
            )
        )
    if "softmax" in only:
        for rows, cols in ((2048, 1024), (512, 8192)):
            cases.append(_cpu_softmax(rng, rows, cols))
    if "layer_norm" in only:
        cases.append(_cpu_layer_norm(rng, 2048, 4096))
    if "cumsum" in only:
        xc = rng.random(2**24, dtype=np.float32)
        running = np.empty_like(xc)
        cases.append(
            Case(
                "cumsum 2**24 f32",
                2 * xc.nbytes,
                "GB/s",
                lambda: cs.cumsum(xc, out=running),
                {"numpy": lambda: np.cumsum(xc)},
                1.0,
                lambda: _close(cs.cumsum(xc), np.cumsum(xc, dtype=np.float64), 1e-4, 1e-2),
            )
        )
    if "histogram" in only:
        values = rng.integers(0, 256, 2**25, dtype=np.uint32)
        counts = np.empty(256, np.int64)
        cases.append(
            Case(
                "histogram 256 bins of 2**25 u32",
                values.nbytes,
                "GB/s",
                lambda: cs.histogram(values, 256, (0, 256), out=counts),
                {"numpy.bincount": lambda: np.bincount(values, minlength=256)},
                1.0,
                lambda: np.testing.assert_array_equal(
                    cs.histogram(values, 256, (0, 256)), np.bincount(values, minlength=256)
                ),
            )
        )
    if "matmul" in only:
        cases.extend(_cpu_matmul(rng, 1024))
    return cases


def _cpu_softmax(rng: np.random.Generator, rows: int, cols: int) -> Case:
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    out = np.empty_like(x)

    def numpy_softmax() -> np.ndarray:
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return Case(
        f"softmax rows f32 {rows}x{cols}",
        2 * x.nbytes,
        "GB/s",
        lambda: cs.softmax(x, out=out),
        {"numpy": numpy_softmax},
        2.0,
        lambda: _close(cs.softmax(x), numpy_softmax(), 1e-4, 1e-7),
    )


def _cpu_layer_norm(rng: np.random.Generator, rows: int, cols: int) -> Case:
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w = rng.standard_normal(cols).astype(np.float32)
    b = rng.standard_normal(cols).astype(np.float32)
    out = np.empty_like(x)

    def numpy_layer_norm() -> np.ndarray:
        mean = x.mean(axis=1, keepdims=True)
        return (x - mean) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5) * w + b

    return Case(
        f"layer_norm f32 {rows}x{cols}",
        2 * x.nbytes,
        "GB/s",
        lambda: cs.layer_norm(x, w, b, 1e-5, out=out),
        {"numpy": numpy_layer_norm},
        2.0,
        lambda: _close(cs.layer_norm(x, w, b, 1e-5), numpy_layer_norm(), 1e-3, 1e-3),
    )


def _cpu_matmul(rng: np.random.Generator, n: int) -> list[Case]:
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    out = np.empty((n, n), np.float32)
    peers: dict[str, Run] = {}
    try:
        numba_matmul = _numba_matmul()
    except ImportError:
        numba_matmul = None
    if numba_matmul is not None:
        nb_out = np.empty_like(out)
        peers["numba parallel"] = lambda: numba_matmul(a, b, nb_out)
    blas: dict[str, Run] = {"numpy (BLAS)": lambda: a @ b}
    check = lambda: _close(cs.matmul(a, b), a.astype(np.float64) @ b, 1e-3, 1e-3)  # noqa: E731
    cases = [
        Case(
            f"matmul f32 {n}^3",
            2 * n**3,
            "TFLOP/s",
            lambda: cs.matmul(a, b, out=out),
            blas,
            0.0,
            check,
        )
    ]
    if peers:
        cases.insert(
            0,
            Case(
                f"matmul f32 {n}^3",
                2 * n**3,
                "TFLOP/s",
                lambda: cs.matmul(a, b, out=out),
                peers,
                1.0,
                check,
            ),
        )
    return cases


def _numba_matmul() -> Callable[[np.ndarray, np.ndarray, np.ndarray], None]:
    import numba

    @numba.njit(parallel=True, fastmath=True, cache=False)
    def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        m, k = a.shape
        n = b.shape[1]
        for i in numba.prange(m):
            for j in range(n):
                out[i, j] = 0.0
            for p in range(k):
                aip = a[i, p]
                for j in range(n):
                    out[i, j] += aip * b[p, j]

    return matmul


def cuda_cases(only: set[str]) -> list[Case]:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    triton = _triton_softmax()
    gen = torch.Generator(device="cuda").manual_seed(0)
    cases: list[Case] = []

    def rand(*shape: int) -> Any:
        return torch.rand(*shape, device="cuda", generator=gen)

    if "sum" in only:
        xs = rand(2**28)
        total = torch.empty(1, device="cuda")
        cases.append(
            Case(
                "sum 2**28 f32",
                xs.numel() * 4,
                "GB/s",
                lambda: cs.sum(xs, out=total),
                {"torch": lambda: torch.sum(xs)},
                0.95,
                lambda: _close(_host(cs.sum(xs)), xs.double().sum().item(), 1e-4, 0),
            )
        )
    if "softmax" in only:
        for rows, cols in ((8192, 1024), (4096, 8192)):
            x = torch.randn(rows, cols, device="cuda", generator=gen)
            out = torch.empty_like(x)
            peers: dict[str, Run] = {"torch": lambda x=x: torch.softmax(x, dim=-1)}
            if triton is not None:
                peers["triton"] = lambda x=x: triton(x)
            cases.append(
                Case(
                    f"softmax rows f32 {rows}x{cols}",
                    2 * x.numel() * 4,
                    "GB/s",
                    lambda x=x, out=out: cs.softmax(x, out=out),
                    peers,
                    1.0,
                    lambda x=x: _close(
                        _host(cs.softmax(x)), torch.softmax(x, -1).cpu(), 1e-4, 1e-7
                    ),
                )
            )
    if "layer_norm" in only:
        xl = torch.randn(8192, 4096, device="cuda", generator=gen)
        w, bias = rand(4096), rand(4096)
        normed = torch.empty_like(xl)

        def torch_layer_norm() -> Any:
            return torch.nn.functional.layer_norm(xl, (4096,), w, bias, 1e-5)

        cases.append(
            Case(
                "layer_norm f32 8192x4096",
                2 * xl.numel() * 4,
                "GB/s",
                lambda: cs.layer_norm(xl, w, bias, 1e-5, out=normed),
                {"torch": torch_layer_norm},
                1.2,
                lambda: _close(
                    _host(cs.layer_norm(xl, w, bias, 1e-5)), torch_layer_norm().cpu(), 1e-3, 1e-3
                ),
            )
        )
    if "cumsum" in only:
        xc = rand(2**26)
        running = torch.empty_like(xc)
        cases.append(
            Case(
                "cumsum 2**26 f32",
                2 * xc.numel() * 4,
                "GB/s",
                lambda: cs.cumsum(xc, out=running),
                {"torch": lambda: torch.cumsum(xc, 0)},
                0.8,
                lambda: _close(
                    _host(cs.cumsum(xc)), torch.cumsum(xc.double(), 0).cpu(), 1e-4, 1e-2
                ),
            )
        )
    if "histogram" in only:
        values = torch.randint(0, 256, (2**28,), device="cuda", generator=gen, dtype=torch.int32)
        counts = torch.empty(256, device="cuda", dtype=torch.int64)
        cases.append(
            Case(
                "histogram 256 bins of 2**28 i32",
                values.numel() * 4,
                "GB/s",
                lambda: cs.histogram(values, 256, (0, 256), out=counts),
                {"torch.bincount": lambda: torch.bincount(values, minlength=256)},
                2.0,
                lambda: np.testing.assert_array_equal(
                    _host(cs.histogram(values, 256, (0, 256))),
                    torch.bincount(values, minlength=256).cpu().numpy(),
                ),
            )
        )
    if "matmul" in only:
        n = 4096
        ma, mb = rand(n, n), rand(n, n)
        product = torch.empty(n, n, device="cuda")
        cases.append(
            Case(
                f"matmul f32 {n}^3 (TF32 off)",
                2 * n**3,
                "TFLOP/s",
                lambda: cs.matmul(ma, mb, out=product),
                {"cuBLAS": lambda: torch.mm(ma, mb)},
                0.5,
                lambda: _close(
                    _host(cs.matmul(ma, mb)), (ma.double() @ mb.double()).cpu(), 1e-4, 1e-3
                ),
            )
        )
    return cases


def _host(result: Any) -> np.ndarray:
    if hasattr(result, "cpu"):
        return result.cpu().numpy()
    return cj.client("cuda").read(result)


def _triton_softmax() -> Callable[[Any], Any] | None:
    """The softmax of Triton's tutorial (one program per row, the row in one block)."""
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        row = tl.program_id(0)
        offsets = tl.arange(0, BLOCK)
        mask = offsets < n_cols
        x = tl.load(in_ptr + row * in_stride + offsets, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(out_ptr + row * out_stride + offsets, e / tl.sum(e, axis=0), mask=mask)

    def softmax(x: Any) -> Any:
        rows, cols = x.shape
        out = torch.empty_like(x)
        block = triton.next_power_of_2(cols)
        warps = 4 if block < 2048 else (8 if block < 4096 else 16)
        softmax_kernel[(rows,)](
            out, x, x.stride(0), out.stride(0), cols, BLOCK=block, num_warps=warps
        )
        return out

    return softmax


def print_table(backend: str, outcomes: list[Outcome]) -> None:
    header = ("backend", "case", "peer", "cubejit", "peer's", "ratio", "target", "met", "queued")
    lines = [header]
    for o in outcomes:
        c = o.case
        peer = min(c.peers, key=lambda p: o.times[p])
        scale = 1e9 if c.unit == "GB/s" else 1e12
        mine, theirs = c.work / o.times["cubejit"] / scale, c.work / o.times[peer] / scale
        ratio = o.times[peer] / o.times["cubejit"]
        met = "-" if c.target == 0 else ("yes" if ratio >= c.target else "no")
        queued_peer = min(c.peers, key=lambda p: o.queued[p])
        lines.append(
            (
                backend,
                c.name,
                peer,
                f"{mine:.3g} {c.unit}",
                f"{theirs:.3g} {c.unit}",
                f"{ratio:.2f}x",
                f"{c.target:.2f}x" if c.target else "(ratio only)",
                met,
                f"{o.queued[queued_peer] / o.queued['cubejit']:.2f}x",
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)))


ALL = ("sum", "softmax", "layer_norm", "cumsum", "histogram", "matmul")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--only", default=",".join(ALL), help=f"a subset of {','.join(ALL)}")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    only = {name.strip() for name in args.only.split(",") if name.strip()}
    unknown = only - set(ALL)
    if unknown:
        parser.error(f"no case named {', '.join(sorted(unknown))}; the cases are {', '.join(ALL)}")
    if args.backend == "cuda":
        import torch

        cases = cuda_cases(only)
        sync: Callable[[], None] = torch.cuda.synchronize
    else:
        cases = cpu_cases(only)
        sync = lambda: None  # noqa: E731
    outcomes = []
    for case in cases:
        case.check()
        runs = {"cubejit": case.cubejit, **case.peers}
        times = medians(runs, args.repeat, sync)
        outcomes.append(Outcome(case, times, queued_medians(runs, args.repeat, sync)))
    print_table(args.backend, outcomes)


if __name__ == "__main__":
    main()
