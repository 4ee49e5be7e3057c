"""A fleet warming one program: C compiler runs and wall time, with and without a shared store.

Four hosts (processes, each with its own empty local environment) warm the same 40 kernels at
once, twice: each host alone with its local environment, then all behind one Redis server with
single flight. Prints the compiler runs summed over the hosts and the wall time from the start
signal to the last host done. Targets: 40 runs instead of 160, and a wall no worse.

    python benchmarks/fleet.py [--hosts 4] [--kernels 40]

Needs ``redis-server`` on the PATH (``apt-get install redis-server``) and the ``redis`` package.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

N = 4096


def host(first: int, count: int) -> None:
    """One host: warm the kernels in one batch when told to, launch and check each."""
    import numpy as np

    import cubejit as cj
    from cubejit.backends.cpu import compiler as cpu_compiler

    @cj.kernel
    def poly(x: cj.Array[cj.f32], out: cj.Array[cj.f32], k: cj.Comptime[int]):
        i = cj.ABSOLUTE_POS
        if i < out.len():
            v = x[i]
            acc = v * 0.0
            for j in cj.unroll(range(8)):
                acc = acc * v + (k + j)
            out[i] = acc

    client = cj.client("cpu")
    print("ready", flush=True)
    sys.stdin.readline()
    for k in range(first, first + count):
        poly.prepare(client, 64, k=k)
    client.compile_queued()
    x = np.random.default_rng(first).random(N, dtype=np.float32)
    on_device = client.to_device(x)
    right = True
    for k in range(first, first + count):
        out = client.empty(N, cj.f32)
        poly.launch(client, cj.cdiv(N, 64), 64, on_device, out, k=k)
        expected = np.zeros(N, dtype=np.float32)
        for j in range(8):
            expected = expected * x + np.float32(k + j)
        right = right and bool(np.allclose(client.read(out), expected, rtol=1e-5))
    print(json.dumps({"runs": cpu_compiler.compiler_runs.count, "right": right}), flush=True)


def run_hosts(hosts: int, kernels: int, first: int, store: str | None) -> tuple[int, float, bool]:
    """Starts ``hosts`` processes, each with an empty local environment, and lets them warm at
    once; the compiler runs summed, the wall from the start signal to the last one done, and
    whether every result was right."""
    with tempfile.TemporaryDirectory(prefix="cubejit-fleet-") as folder:
        processes = []
        for index in range(hosts):
            env = dict(os.environ, CUBEJIT_CACHE_DIR=str(Path(folder) / f"host{index}"))
            env.pop("CUBEJIT_STORE", None)
            if store is not None:
                env.update(CUBEJIT_STORE=store, CUBEJIT_SIGNING_KEY="the fleet's secret")
            processes.append(
                subprocess.Popen(
                    [sys.executable, __file__, "--host", str(first), str(kernels)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    env=env,
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
    return sum(r["runs"] for r in reports), wall, all(r["right"] for r in reports)


def redis_server(folder: str) -> tuple[subprocess.Popen[str], str]:
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("redis-server is not installed: apt-get install redis-server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            folder,
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert server.stdout is not None
    for line in server.stdout:
        if "Ready to accept connections" in line:
            break
    threading.Thread(target=server.stdout.read, daemon=True).start()
    return server, f"redis://127.0.0.1:{port}/0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--kernels", type=int, default=40)
    parser.add_argument("--host", type=int, nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.host:
        host(*args.host)
        return
    first = int(time.time()) % 100_000 * 100
    with tempfile.TemporaryDirectory(prefix="cubejit-redis-") as folder:
        server, url = redis_server(folder)
        try:
            local = run_hosts(args.hosts, args.kernels, first, None)
            fleet = run_hosts(args.hosts, args.kernels, first, url)
        finally:
            server.kill()
            server.wait()
    print(f"{args.hosts} hosts x {args.kernels} kernels, {os.cpu_count()} CPUs")
    print(f"{'':26}{'compiler runs':>15}{'wall (s)':>10}{'right':>7}")
    for name, (runs, wall, right) in (
        ("local environments only", local),
        ("Redis + single flight", fleet),
    ):
        print(f"{name:26}{runs:>15}{wall:>10.2f}{right!s:>7}")
    print(f"{'ratio (Redis / local)':26}{fleet[0] / local[0]:>15.2f}{fleet[1] / local[1]:>10.2f}")


if __name__ == "__main__":
    main()
