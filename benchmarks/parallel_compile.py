"""Many kernels at once: one batch on one worker thread, then on two, and shared C text.

Each case starts from an empty store of its own (a fresh temporary root), so every kernel is
really compiled. Prints one table:

- 16 distinct kernels that give the C compiler real work (a comptime-unrolled body of math,
  distinct through a comptime seed), queued and compiled as one batch with ``parallelism=1``,
  then with ``parallelism=2``: both walls and their ratio (target on 2 cores: <= 0.6);
- 16 kernels with different ids that lower to the same C text: how many times the C compiler
  ran (target: once).

Compiles are counted by :data:`cubejit.backends.cpu.compiler_runs`, not guessed from time.

    python benchmarks/parallel_compile.py [--kernels 16] [--terms 32]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cubejit as cj
from cubejit import config, environment
from cubejit.backends.cpu import CpuClient, CpuCompiler, CpuTarget, compiler_runs
from cubejit.backends.cpu.launcher import MAX_ALIGN
from cubejit.compile import (
    ArtifactId,
    BatchRecord,
    CompilationRecording,
    KernelLoader,
    ServerLogger,
    recent_records,
)

CUBE = 64
LOADER = "distinct kernels, one batch (loader)"
ALONE = "the C compiler alone (no loader)"


@cj.kernel
def heavy(
    x: cj.Array[cj.f32], out: cj.Array[cj.f32], seed: cj.Comptime[int], terms: cj.Comptime[int]
):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        v = x[i]
        acc = cj.f32(0.0)
        for t in cj.unroll(range(terms)):
            acc = acc + cj.sin(v * cj.f32(t + seed)) * cj.exp(v - cj.f32(t))
        out[i] = acc


@cj.kernel
def twin(
    x: cj.Array[cj.f32], out: cj.Array[cj.f32], tag: cj.Comptime[int], terms: cj.Comptime[int]
):
    # ``tag`` makes each kernel id distinct and appears nowhere in the C text.
    i = cj.ABSOLUTE_POS
    if i < out.len():
        v = x[i]
        acc = cj.f32(0.0)
        for t in cj.unroll(range(terms)):
            acc = acc + cj.sin(v * cj.f32(t + 1)) * cj.exp(v - cj.f32(t))
        out[i] = acc


def fresh_client(parallelism: int, under: str) -> CpuClient:
    """A CPU client whose loader has ``parallelism`` workers, over an empty store in a new
    folder under ``under``."""
    root = Path(tempfile.mkdtemp(prefix="store-", dir=under))
    config.override(cache_dir=root)
    environment.set_root(root)
    target = CpuTarget()
    return CpuClient(target=target, loader=KernelLoader(target, parallelism=parallelism))


def one_batch(client: CpuClient, specs: list[object]) -> tuple[float, int, BatchRecord]:
    """Queues ``specs``, compiles them as one batch: its wall time, C compiler runs, record."""
    before = compiler_runs.count
    for spec in specs:
        client.prepare(spec)
    start = time.perf_counter()
    client.compile_queued()
    wall = time.perf_counter() - start
    return wall, compiler_runs.count - before, recent_records()[-1]


def compiler_alone(specs: list[object], threads: int) -> float:
    """The wall time of the C compiler alone on ``specs`` (lowered beforehand) on a plain pool
    of ``threads``, without the loader or the store: what this machine allows right now."""
    compiler = CpuCompiler()
    lowered = []
    for spec in specs:
        id = ArtifactId(spec.id(), MAX_ALIGN)  # type: ignore[attr-defined]
        recording = CompilationRecording.for_artifact(id, keep_text=False)
        lowered.append((id, compiler.lower(spec, id, recording, ServerLogger())))
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda job: compiler.finalize(*job), lowered))
    return time.perf_counter() - start


def heavy_specs(count: int, terms: int, first_seed: int) -> list[object]:
    return [
        heavy.specialize(CUBE, seed=s, terms=terms) for s in range(first_seed, first_seed + count)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", type=int, default=16)
    parser.add_argument("--terms", type=int, default=32, help="unrolled terms per kernel")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the best wall is kept")
    options = parser.parse_args()
    count, terms = options.kernels, options.terms
    config.override(record_level="basic")
    with tempfile.TemporaryDirectory(prefix="cubejit-parallel-compile-") as under:
        report(count, terms, options.repeat, under)


def report(count: int, terms: int, repeat: int, under: str) -> None:
    """Runs every case with stores under ``under`` and prints the table."""
    one_batch(fresh_client(1, under), heavy_specs(1, terms, first_seed=-1))
    walls: dict[tuple[str, int], list[float]] = {}
    finalize_s: list[float] = []
    seed = 0
    for round in range(repeat):
        order = (1, 2) if round % 2 == 0 else (2, 1)
        for parallelism in order:
            wall, runs, record = one_batch(
                fresh_client(parallelism, under), heavy_specs(count, terms, seed)
            )
            assert runs == count and record.threads == parallelism, (runs, record.threads)
            seed += count
            walls.setdefault((LOADER, parallelism), []).append(wall)
            if parallelism == 1:
                finalize_s += [r.finalize.seconds for r in record.kernels if r.finalize is not None]
        for threads in order:
            wall = compiler_alone(heavy_specs(count, terms, seed), threads)
            seed += count
            walls.setdefault((ALONE, threads), []).append(wall)
    specs = [twin.specialize(CUBE, tag=t, terms=terms) for t in range(count)]
    twin_wall, twin_runs, record = one_batch(fresh_client(2, under), specs)

    print(f"{count} kernels per case, best and median of {repeat} rounds")
    print(f"{'case':<34} {'threads':>7} {'best s':>8} {'median s':>8} {'cc runs':>7}")
    for (name, threads), seconds in sorted(walls.items()):
        best, median = min(seconds), statistics.median(seconds)
        print(f"{name:<34} {threads:>7} {best:>8.3f} {median:>8.3f} {count:>7}")
    twin_name = "same C text, distinct ids (loader)"
    print(f"{twin_name:<34} {record.threads:>7} {twin_wall:>8.3f} {'':>8} {twin_runs:>7}")
    ratio = min(walls[LOADER, 2]) / min(walls[LOADER, 1])
    alone = min(walls[ALONE, 2]) / min(walls[ALONE, 1])
    verdict = "met" if ratio <= 0.6 else "MISSED"
    print(f"ratio parallelism 2 / 1 (best walls): {ratio:.2f} (target <= 0.60: {verdict})")
    print(f"the C compiler alone, 2 / 1 threads:  {alone:.2f} (what this machine allowed)")
    print(f"one kernel's C compile: median {statistics.median(finalize_s):.3f} s (target >= 0.050)")
    verdict = "met" if twin_runs == 1 else "MISSED"
    print(f"same C text: the C compiler ran {twin_runs} time(s) (target 1: {verdict})")


if __name__ == "__main__":
    main()
