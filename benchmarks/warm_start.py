"""A warm start: what a second process pays for kernels the first one compiled.

Three fresh interpreters share one environment under a temporary root:

- A compiles 50 distinct kernels as one batch into the empty environment and launches each once;
- B does the same against the environment A filled (target: B at least 300x faster than A),
  ``--runs`` times (default 5) in fresh processes, its median compared (a noisy machine moves
  a single 20 ms process by half);
- C does the same as another build of cubejit (a new build id, as after an upgrade): every
  kernel's C text is unchanged, so each is re-keyed and the C compiler must not run (target 0).

Each process times itself from the first load (queuing the batch) to the last launch done;
importing cubejit (over numpy) and creating the client come before and are printed apart.
Compiles are counted by :data:`cubejit.backends.cpu.compiler_runs`. The environment's size is
printed beside what the artifacts' bytes take once, uncompressed (the store keeps one copy of
each, compressed).

``--import-runs N`` (default 10) times ``import cubejit`` over ``import numpy`` in N fresh
interpreters with bytecode caches warm, and defining a kernel after it, and prints the medians
(``--import-only`` prints only that row).

``--cuda`` prints instead the GPU's warm start phase by phase beside CuPy's (see
``benchmarks/warm_start_cuda.py``): ``import``, client, first launch, the whole process,
100 distinct stored kernels, and the cold first launch.

    python benchmarks/warm_start.py [--kernels 50] [--profile B] [--cuda] [--import-only]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

START = time.perf_counter()

import numpy as np  # noqa: E402

NUMPY_AT = time.perf_counter()

import cubejit as cj  # noqa: E402

IMPORTED_AT = time.perf_counter()

N = 4096
CUBE = 128
TERMS = 6
"""The terms ``wave`` unrolls."""


@cj.kernel
def wave(x: cj.Array[cj.f32], out: cj.Array[cj.f32], seed: cj.Comptime[int]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        v = x[i]
        acc = cj.f32(seed)
        for t in cj.unroll(range(6)):
            acc = acc + cj.sin(v * cj.f32(t + seed)) * cj.exp(v - cj.f32(t))
        out[i] = acc


def child(kernels: int, upgrade: bool, profile: bool) -> None:
    """One process's run: prints its measurements as one JSON line."""
    if upgrade:
        from cubejit.environment import build

        build.override_build_id("a-simulated-upgrade")
    from cubejit.backends.cpu import compiler_runs
    from cubejit.compile import recent_records

    before_client = time.perf_counter()
    client = cj.client("cpu")
    client_s = time.perf_counter() - before_client
    x_host = np.random.default_rng(0).random(N, dtype=np.float32)
    x = client.to_device(x_host)
    outs = [client.empty(N, cj.f32) for _ in range(kernels)]
    ready = time.perf_counter()

    batch_seconds: list[float] = []

    def run() -> None:
        for seed in range(kernels):
            wave.prepare(client, CUBE, seed=seed)
        began = time.perf_counter()
        client.compile_queued()
        batch_seconds.append(time.perf_counter() - began)
        for seed in range(kernels):
            wave.launch(client, cj.cdiv(N, CUBE), CUBE, x, outs[seed], seed=seed)

    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    if profiler is not None:
        import pstats

        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)

    seed = kernels - 1
    expected = np.float32(seed) + sum(
        np.sin(x_host * np.float32(t + seed)) * np.exp(x_host - np.float32(t)) for t in range(TERMS)
    )
    np.testing.assert_allclose(client.read(outs[seed]), expected, rtol=1e-4, atol=1e-4)
    outcomes: dict[str, int] = {}
    for batch in recent_records():
        for record in batch.kernels:
            outcomes[str(record.outcome)] = outcomes.get(str(record.outcome), 0) + 1
    report = {
        "seconds": seconds,
        "batch_s": batch_seconds[0],
        "setup_s": ready - START,
        "import_s": IMPORTED_AT - NUMPY_AT,
        "client_s": client_s,
        "compiler_runs": compiler_runs.count,
        "outcomes": outcomes,
    }
    print(json.dumps(report), flush=True)


IMPORT_CHILD = """
import json, time
import numpy
numpy_at = time.perf_counter()
import cubejit
imported_at = time.perf_counter()
import startup_kernel
defined_at = time.perf_counter()
print(json.dumps({"import": imported_at - numpy_at, "define": defined_at - imported_at}))
"""

STARTUP_KERNEL = """
import cubejit as cj


@cj.kernel
def saxpy(a: cj.f32, x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]
"""


def import_cost(runs: int) -> tuple[float, float]:
    """Medians, in seconds, of ``import cubejit`` after ``import numpy`` and of defining a module
    of one kernel after it, in ``runs`` fresh interpreters (one more first, to write the
    bytecode caches: an installed package has them)."""
    with tempfile.TemporaryDirectory(prefix="cubejit-import-") as work:
        (Path(work) / "startup_kernel.py").write_text(STARTUP_KERNEL)
        environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        root = str(Path(__file__).resolve().parents[1])
        environ["PYTHONPATH"] = os.pathsep.join((root, work))
        found = []
        for _ in range(runs + 1):
            done = subprocess.run(
                [sys.executable, "-c", IMPORT_CHILD],
                env=environ,
                capture_output=True,
                text=True,
                check=True,
            )
            found.append(json.loads(done.stdout.splitlines()[-1]))
    found = found[1:]
    return statistics.median(f["import"] for f in found), statistics.median(
        f["define"] for f in found
    )


def print_import_cost(runs: int) -> None:
    imported, defined = import_cost(runs)
    print(
        f"import cubejit over numpy: {imported * 1e3:.1f} ms, median of {runs} fresh processes "
        f"(target <= 30 ms on a CPU machine, <= 20 ms on the H200 host); "
        f"defining a kernel after it: {defined * 1e3:.2f} ms"
    )


def spawn(name: str, root: str, kernels: int, upgrade: bool, profile: bool) -> dict[str, object]:
    command = [sys.executable, __file__, "--child", "--kernels", str(kernels)]
    command += ["--upgrade"] * upgrade + ["--profile-me"] * profile
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environ.update(CUBEJIT_CACHE_DIR=root, CUBEJIT_ENV="warm-start")
    environ.pop("CUBEJIT_COMPILATION_CACHE", None)
    environ["CUBEJIT_RECORD_LEVEL"] = "basic"
    done = subprocess.run(command, env=environ, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"process {name} failed:\n{done.stderr}")
    if profile:
        print(f"--- profile of process {name} ---\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", type=int, default=50)
    parser.add_argument("--profile", choices=("A", "B", "C"), action="append", default=[])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--upgrade", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile-me", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cuda", action="store_true", help="the GPU's warm start beside CuPy's")
    parser.add_argument("--runs", type=int, default=5, help="warm processes (B's, or --cuda's)")
    parser.add_argument("--import-runs", type=int, default=10, help="fresh imports timed")
    parser.add_argument("--import-only", action="store_true", help="only time the import")
    options = parser.parse_args()
    if options.child:
        child(options.kernels, options.upgrade, options.profile_me)
        return
    if options.import_only:
        print_import_cost(options.import_runs)
        return
    if options.cuda:
        import warm_start_cuda

        warm_start_cuda.main_rows(options.runs, 100)
        return

    with tempfile.TemporaryDirectory(prefix="cubejit-warm-start-") as root:
        runs = {"A": spawn("A", root, options.kernels, False, "A" in options.profile)}
        warm = [
            spawn("B", root, options.kernels, False, "B" in options.profile)
            for _ in range(max(1, options.runs))
        ]
        runs["B"] = {
            **warm[0],
            "seconds": statistics.median(float(str(w["seconds"])) for w in warm),
            "batch_s": statistics.median(float(str(w["batch_s"])) for w in warm),
        }
        runs["C"] = spawn("C", root, options.kernels, True, "C" in options.profile)
        stored, once = environment_size(Path(root) / "warm-start.db")
    print(
        f"{options.kernels} kernels, one environment shared by three processes "
        f"(B: the median of {len(warm)}, from {min(float(str(w['seconds'])) for w in warm):.4f} "
        f"to {max(float(str(w['seconds'])) for w in warm):.4f} s)"
    )
    print(
        f"{'process':<34} {'load..last launch s':>19} {'batch s':>8} {'setup s':>8} "
        f"{'cc runs':>7}  outcomes"
    )
    labels = {
        "A": "A: empty environment",
        "B": "B: environment A filled",
        "C": "C: new build id (upgrade)",
    }
    for name, run in runs.items():
        print(
            f"{labels[name]:<34} {run['seconds']:>19.4f} {run['batch_s']:>8.4f} "
            f"{run['setup_s']:>8.3f} "
            f"{run['compiler_runs']:>7}  {run['outcomes']}"
        )
    ratio = float(runs["A"]["seconds"]) / float(runs["B"]["seconds"])  # type: ignore[arg-type]
    print(
        f"B is {ratio:.0f}x faster than A (target >= 300x: {'met' if ratio >= 300 else 'MISSED'})"
    )
    batches = float(str(runs["A"]["batch_s"])) / float(str(runs["B"]["batch_s"]))
    print(f"B's batch alone (the store's part, launches apart) is {batches:.0f}x faster than A's")
    c_runs = runs["C"]["compiler_runs"]
    print(f"C ran the C compiler {c_runs} time(s) (target 0: {'met' if c_runs == 0 else 'MISSED'})")
    import_ms, client_ms = (float(str(runs["B"][k])) * 1e3 for k in ("import_s", "client_s"))
    print(
        f"B: import cubejit over numpy {import_ms:.1f} ms (target <= 30 ms on a CPU machine), "
        f"cj.client('cpu') {client_ms:.1f} ms"
    )
    print_import_cost(options.import_runs)
    print(
        f"environment: {stored / 1024:.0f} KiB of entries for {once / 1024:.0f} KiB of "
        f"artifacts kept once uncompressed ({stored / once:.2f}x; two copies would be 2.00x)"
    )


def environment_size(database: Path) -> tuple[int, int]:
    """Bytes of every entry of the CPU namespaces, and bytes of the distinct artifacts they
    hold, uncompressed: what one copy of each takes."""
    from cubejit.environment.value import decode

    with closing(sqlite3.connect(database)) as db:
        rows = db.execute("SELECT value FROM entries WHERE namespace LIKE 'cpu/%'").fetchall()
    payloads = {decode(bytes(v)).payload for (v,) in rows}
    return sum(len(v) for (v,) in rows), sum(len(p) for p in payloads)


if __name__ == "__main__":
    main()
