"""A warm process's first launches, on either backend: what a stored kernel costs from
``kernel.launch(...)`` to its result, before anything of it is in memory.

One process fills a fresh store (a saxpy plus a constant, 101 specialisations); then each of
``--runs`` fresh processes times, with ``time.perf_counter()`` and ``time.process_time()``:

- ``first``: the first launch of the saxpy, synchronised (its source read, its id, the store's
  query, the module load, the launcher);
- ``many``: ``--kernels`` other specialisations prepared, compiled as one batch (all from the
  store) and launched once each, synchronised;

and prints each measure's median and minimum. ``--profile first`` or ``--profile many`` prints
the cProfile of one more warm process's measure instead (sorted by ``--sort``).

    python benchmarks/warm_first_launch.py [--backend cpu|cuda] [--runs 9] [--kernels 100]
        [--profile first|many] [--sort cumulative|tottime]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from fresh_process import SAXPY, run_fresh

CHILD = """
import json, os, sys, time
import numpy as np
import cubejit as cj

client = cj.client({backend!r})

{saxpy}

n, kernels, profile = {n}, {kernels}, {profile!r}
host = np.random.default_rng(0).random(n, dtype=np.float32)
x, y, out = client.to_device(host), client.to_device(host), client.empty(n, cj.f32)
client.sync()
profiler = None


def start(name):
    global profiler
    if profile == name:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    return time.perf_counter(), time.process_time()


def stop(name, began):
    wall, cpu = time.perf_counter() - began[0], time.process_time() - began[1]
    if profile == name:
        import pstats

        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats({sort!r}).print_stats(40)
    return wall, cpu


began = start("first")
saxpy.launch(client, n // 256, 256, 2.0, x, y, out, k=0)
client.sync()
first = stop("first", began)
assert np.allclose(client.read(out), 3 * host)
began = start("many")
for k in range(1, kernels + 1):
    saxpy.prepare(client, 256, k=k)
client.compile_queued()
for k in range(1, kernels + 1):
    saxpy.launch(client, n // 256, 256, 2.0, x, y, out, k=k)
client.sync()
many = stop("many", began)
assert np.allclose(client.read(out), 3 * host + kernels)
print(json.dumps({{
    "first_ms": first[0] * 1e3, "first_cpu_ms": first[1] * 1e3,
    "many_ms": many[0] * 1e3, "many_cpu_ms": many[1] * 1e3,
}}))
"""


def run(script: str, store: Path) -> tuple[dict[str, float], str]:
    """One fresh process's measures, and what it wrote to stderr (a profile)."""
    ran = run_fresh(script, {"CUBEJIT_CACHE_DIR": str(store)})
    if ran.report is None:
        raise SystemExit(f"a process failed:\n{ran.stderr}")
    return ran.report, ran.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--kernels", type=int, default=100)
    parser.add_argument("--profile", choices=("first", "many"))
    parser.add_argument("--sort", choices=("cumulative", "tottime"), default="cumulative")
    options = parser.parse_args()
    n = 1 << 20 if options.backend == "cuda" else 1 << 12

    def script(profile: str | None) -> str:
        return CHILD.format(
            saxpy=SAXPY,
            backend=options.backend,
            n=n,
            kernels=options.kernels,
            profile=profile,
            sort=options.sort,
        )

    with tempfile.TemporaryDirectory(prefix="cubejit-warm-first-") as work:
        store = Path(work)
        run(script(None), store)
        if options.profile:
            _, profile = run(script(options.profile), store)
            print(profile)
            return
        found = [run(script(None), store)[0] for _ in range(options.runs)]
    print(
        f"{options.backend}: warm first launches, {options.runs} fresh processes "
        f"({options.kernels} distinct kernels in 'many')"
    )
    for key in ("first_ms", "first_cpu_ms", "many_ms", "many_cpu_ms"):
        values = sorted(f[key] for f in found)
        print(f"  {key:<13} median {statistics.median(values):8.2f}   min {values[0]:8.2f}")


if __name__ == "__main__":
    main()
