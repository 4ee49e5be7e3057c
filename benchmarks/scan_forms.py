"""The CUDA scan's forms beside ``torch.cumsum``: the single pass and reduce-then-scan.

``cubejit.std.scan`` scans rows of adjacent elements on CUDA in the form its tuner chooses among
``cubejit.std.scan.LINED["cuda"]`` (``lined_scan.FORMS``): for ``f32`` sums the single-pass
decoupled look-back (``LinedScan(single_pass=True)``: one read and one write) in tiles of
``units * lines`` lines, or reduce-then-scan (``lined_scan.CONFIG``: three passes over memory).
This script times the tuned ``cumsum``, then each of those forms and a few more alone, checking
``cumsum`` of ``2**26`` f32 against float64 sums; each with CUDA events over ``--calls`` calls of
the standard function unreplayed (every call runs as written, so each form takes effect), the
median of ``--rounds`` rounds; ``torch.cumsum`` is timed the same way. Bandwidth counts one read
and one write of the array; the ratio is torch's time over the form's (above 1: faster).

    python benchmarks/scan_forms.py [--size-log2 26] [--calls 20] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

import cubejit.std as cs
from cubejit.std import lined_scan, scan
from cubejit.std.lined_scan import LinedScan

MORE = ((256, 4), (512, 4), (64, 16), (64, 32))
"""Single-pass forms timed beside the tuner's: units per cube, lines per unit."""


def main() -> None:
    try:
        import torch
    except ImportError:
        raise SystemExit("scan_forms.py needs PyTorch, with a CUDA GPU") from None
    if not torch.cuda.is_available():
        raise SystemExit("scan_forms.py needs a CUDA GPU")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-log2", type=int, default=26)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    n = 1 << args.size_log2
    x = torch.rand(n, device="cuda", generator=torch.Generator(device="cuda").manual_seed(0))
    out = torch.empty_like(x)
    want = torch.cumsum(x.double(), 0)

    def timed(run: Callable[[], object]) -> float:
        """Microseconds a call, by CUDA events."""
        for _ in range(3):
            run()
        torch.cuda.synchronize()
        rounds = []
        for _ in range(args.rounds):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(args.calls):
                run()
            end.record()
            torch.cuda.synchronize()
            rounds.append(start.elapsed_time(end) / args.calls * 1e3)
        return statistics.median(rounds)

    peer = timed(lambda: torch.cumsum(x, 0))
    as_written = cs.cumsum.__wrapped__  # type: ignore[attr-defined]
    forms = [*lined_scan.FORMS, *(LinedScan(u, r, 1, single_pass=True) for u, r in MORE)]
    print(f"cumsum of 2**{args.size_log2} f32 on CUDA, CUDA events, median of {args.rounds}")
    print(f"{'form':34s} {'µs':>8s} {'GB/s':>7s} {'ratio':>9s} {'max rel err':>12s}")
    print(f"{'torch.cumsum':34s} {peer:8.1f} {8 * n / peer / 1e3:7.0f} {1.0:9.2f}")

    def row(name: str) -> None:
        as_written(x, out=out)
        torch.cuda.synchronize()
        error = ((out.double() - want).abs() / want.abs().clamp(min=1)).max().item()
        took = timed(lambda: as_written(x, out=out))
        rate = 8 * n / took / 1e3
        print(f"{name:34s} {took:8.1f} {rate:7.0f} {peer / took:9.2f} {error:12.1e}")

    tuned = scan.LINED["cuda"]
    row("tuned")
    try:
        for form in forms:
            scan.LINED["cuda"] = (form,)
            kind = "single pass" if form.single_pass else "reduce-then-scan"
            row(
                f"{kind} {form.units}x{form.lines}"
                + ("" if form.single_pass else f"x{form.rounds}")
            )
    finally:
        scan.LINED["cuda"] = tuned


if __name__ == "__main__":
    main()
