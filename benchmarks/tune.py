"""A fleet tuning one program: tunings, timed candidate runs and wall time, with and without a
shared store; and what ``tuner.launch`` costs over a direct launch once decided.

Four hosts (processes, each with its own empty local environment) launch the same tuner for
ten tuning keys (saxpy on 2^10 .. 2^19 elements) with four candidates (cube_dim 32, 64, 128,
256) until every key is decided: first each host alone, then all behind one Redis server,
where one host tunes each key and the others run the first candidate until the decision lands.
Prints the tunings and timed runs summed over the hosts, the wall time from the start signal to
the last host done, and on how many keys every host ended with the same winner. Targets: 10
tunings instead of 40, every host agreeing. Then, in this process, the launch overhead of a
decided tuner over launching its winner's kernel directly (target: at most 2 µs).

    python benchmarks/tune.py [--backend cpu|cuda] [--hosts 4] [--keys 10] [--budget 0.25]
    python benchmarks/tune.py --overhead-only [--backend cpu|cuda]

Needs ``redis-server`` on the PATH (``apt-get install redis-server``) and the ``redis`` package.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from fleet import redis_server

import cubejit as cj
import cubejit.environment as cj_environment

CUBE_DIMS = (32, 64, 128, 256)


@cj.kernel
def saxpy(a: cj.f32, x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


def candidate(cube_dim: int) -> cj.Tunable:
    def launch(client, a, x, y, out):  # type: ignore[no-untyped-def]
        return saxpy.launch(client, cj.cdiv(len(out), cube_dim), cube_dim, a, x, y, out)

    return cj.Tunable(f"cube_dim {cube_dim}", launch)


def saxpy_tuner(candidates: int) -> cj.Tuner:
    return cj.Tuner(
        "benchmark saxpy",
        key=lambda a, x, y, out: (cj.anchor(len(out)),),
        candidates=[candidate(d) for d in CUBE_DIMS[:candidates]],
    )


def sizes(keys: int) -> list[int]:
    return [(1 << (10 + k)) - 100 for k in range(keys)]


def host(backend: str, keys: int, candidates: int) -> None:
    """One host: launches the tuner for every key until every key is decided, when told to."""
    client = cj.client(backend)
    tuner = saxpy_tuner(candidates)
    rng = np.random.default_rng(os.getpid())
    arrays = []
    for n in sizes(keys):
        x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        arrays.append((x, y, client.to_device(x), client.to_device(y), client.empty(n, cj.f32)))
    for _, _, dx, dy, out in arrays:  # compile every candidate before the clock starts
        for c in tuner.candidates:
            c.fn(client, np.float32(2), dx, dy, out)
    client.sync()
    print("ready", flush=True)
    sys.stdin.readline()
    right = True
    while True:
        for x, y, dx, dy, out in arrays:
            tuner.launch(client, np.float32(2), dx, dy, out)
            right = right and bool(np.allclose(client.read(out), 2 * x + y, rtol=1e-6))
        decisions = [tuner.decision(np.float32(2), *a[2:], client=client) for a in arrays]
        if all(d is not None for d in decisions):
            break
    report = {
        "tunings": tuner.tunings,
        "timed_runs": tuner.timed_runs,
        "winners": [d.winner for d in decisions if d is not None],
        "right": right,
    }
    print(json.dumps(report), flush=True)


def run_hosts(args: argparse.Namespace, store: str | None) -> dict[str, object]:
    """Starts the hosts, each with an empty local environment, and lets them go at once."""
    import subprocess

    with tempfile.TemporaryDirectory(prefix="cubejit-tune-") as folder:
        processes = []
        for index in range(args.hosts):
            env = {k: v for k, v in os.environ.items() if not k.startswith("CUBEJIT_")}
            env.update(
                CUBEJIT_CACHE_DIR=str(Path(folder) / f"host{index}"),
                CUBEJIT_TUNE_BUDGET=str(args.budget),
            )
            if store is not None:
                env.update(CUBEJIT_STORE=store, CUBEJIT_SIGNING_KEY="the fleet's secret")
            command = [sys.executable, __file__, "--host", "--backend", args.backend]
            command += ["--keys", str(args.keys), "--candidates", str(args.candidates)]
            processes.append(
                subprocess.Popen(
                    command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
                )
            )
        for process in processes:
            assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        started = time.perf_counter()
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        reports = [json.loads(p.communicate()[0].splitlines()[-1]) for p in processes]
        wall = time.perf_counter() - started
    winners = [r["winners"] for r in reports]
    agreeing = sum(len({w[k] for w in winners}) == 1 for k in range(args.keys))
    return {
        "tunings": sum(r["tunings"] for r in reports),
        "timed_runs": sum(r["timed_runs"] for r in reports),
        "wall": wall,
        "agreeing": agreeing,
        "right": all(r["right"] for r in reports),
    }


def overhead(
    backend: str, candidates: int, repeats: int = 50, launches: int = 2_000
) -> dict[str, tuple[float, float]]:
    """Per-launch seconds of launching the winner's kernel directly (as the winner does) and
    of ``tuner.launch`` once decided: the best of ``repeats`` loops of ``launches``, by the wall
    clock and by the launching thread's CPU time (which a loaded machine disturbs less)."""
    client = cj.client(backend)
    tuner = saxpy_tuner(candidates)
    n = 256
    x, y = client.to_device(np.ones(n, np.float32)), client.to_device(np.ones(n, np.float32))
    out = client.empty(n, cj.f32)
    a = np.float32(2)
    tuner.launch(client, a, x, y, out)
    decision = tuner.decision(a, x, y, out, client=client)
    assert decision is not None
    cube_dim = int(decision.winner.split()[-1])

    def direct() -> None:
        for _ in range(launches):
            saxpy.launch(client, cj.cdiv(len(out), cube_dim), cube_dim, a, x, y, out)

    def tuned() -> None:
        for _ in range(launches):
            tuner.launch(client, a, x, y, out)

    best = {"direct": [float("inf")] * 2, "tuned": [float("inf")] * 2}
    for _ in range(repeats):
        for name, loop in (("direct", direct), ("tuned", tuned)):
            wall, cpu = time.perf_counter(), time.thread_time()
            loop()
            client.sync()
            spent = (time.perf_counter() - wall, time.thread_time() - cpu)
            best[name] = [min(b, s / launches) for b, s in zip(best[name], spent, strict=True)]
    return {name: (wall, cpu) for name, (wall, cpu) in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--keys", type=int, default=10)
    parser.add_argument("--candidates", type=int, default=4, choices=range(1, 5))
    parser.add_argument("--budget", type=float, default=0.25, help="seconds per key")
    parser.add_argument("--overhead-only", action="store_true", help="skip the fleet rows")
    parser.add_argument("--host", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.host:
        host(args.backend, args.keys, args.candidates)
        return
    if not args.overhead_only:
        fleet_rows(args)
    print_overhead(args)


def fleet_rows(args: argparse.Namespace) -> None:
    """The hosts alone, then behind one Redis server: the table of tunings and wall time."""
    with tempfile.TemporaryDirectory(prefix="cubejit-redis-") as folder:
        server, url = redis_server(folder)
        try:
            alone = run_hosts(args, None)
            fleet = run_hosts(args, url)
        finally:
            server.kill()
            server.wait()
    print(
        f"{args.hosts} hosts x {args.keys} keys x {args.candidates} candidates, "
        f"budget {args.budget} s per key, {args.backend}, {os.cpu_count()} CPUs"
    )
    print(f"{'':28}{'tunings':>9}{'timed runs':>12}{'wall (s)':>10}{'agreeing':>10}{'right':>7}")
    for name, row in (("hosts tuning alone", alone), ("Redis, one tuner per key", fleet)):
        agreeing = f"{row['agreeing']}/{args.keys}"
        print(
            f"{name:28}{row['tunings']:>9}{row['timed_runs']:>12}{row['wall']:>10.2f}"
            f"{agreeing:>10}{row['right']!s:>7}"
        )
    ratios = [
        fleet[k] / alone[k] if alone[k] else float("nan") for k in ("tunings", "timed_runs", "wall")
    ]
    print(f"{'ratio (Redis / alone)':28}{ratios[0]:>9.2f}{ratios[1]:>12.2f}{ratios[2]:>10.2f}")


def print_overhead(args: argparse.Namespace) -> None:
    """The table of one process's launch costs, with a store of its own."""
    with tempfile.TemporaryDirectory(prefix="cubejit-tune-") as folder:
        cj_environment.set_root(folder)
        costs = overhead(args.backend, args.candidates)
    (direct_wall, direct_cpu), (tuned_wall, tuned_cpu) = costs["direct"], costs["tuned"]
    print()
    print(f"{'one process, decided (µs)':28}{'per launch':>12}{'thread CPU':>12}")
    print(f"{'direct kernel launch':28}{direct_wall * 1e6:>12.2f}{direct_cpu * 1e6:>12.2f}")
    print(f"{'tuner.launch':28}{tuned_wall * 1e6:>12.2f}{tuned_cpu * 1e6:>12.2f}")
    overhead_wall, overhead_cpu = (tuned_wall - direct_wall) * 1e6, (tuned_cpu - direct_cpu) * 1e6
    print(f"{'overhead':28}{overhead_wall:>12.2f}{overhead_cpu:>12.2f}")


if __name__ == "__main__":
    main()
