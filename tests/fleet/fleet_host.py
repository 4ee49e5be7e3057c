"""One host of a fleet, as a process of its own: warms a range of kernels through the CPU backend,
launches each on random data, checks it against numpy, and prints what happened as one JSON line.

Run by the fleet tests and benchmark: ``python fleet_host.py FIRST COUNT [options]``, with the
host's own ``CUBEJIT_CACHE_DIR`` and the fleet's ``CUBEJIT_STORE`` in its environment. It prints
``ready`` once imported and waits for a line on stdin before warming, so that several hosts start
at once; ``--kill-after N PID`` kills the process ``PID`` (the fleet's redis-server) once N
kernels of the batch are done; ``--hang-in-compile`` never finishes a compile (a host about to be
killed); ``--second-batch`` warms the next COUNT kernels after another line on stdin.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time

import numpy as np

import cubejit as cj
from cubejit.backends.cpu import compiler as cpu_compiler
from cubejit.compile import recent_records
from cubejit.environment import fleet

N = 1000


@cj.kernel
def scale_add(x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32], k: cj.Comptime[int]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * k + y[i]


class Counting(logging.Handler):
    """Keeps the WARNING lines of cubejit's store, and kills a process after N kernels."""

    def __init__(self, kill_after: int | None, kill_pid: int | None) -> None:
        super().__init__(logging.DEBUG)
        self.warnings: list[str] = []
        self.kernels = 0
        self.kill_after = kill_after
        self.kill_pid = kill_pid

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == "cubejit.environment" and record.levelno >= logging.WARNING:
            self.warnings.append(record.getMessage())
        if record.name == "cubejit.compilation" and record.levelno == logging.DEBUG:
            self.kernels += 1
            if self.kill_pid is not None and self.kernels == self.kill_after:
                os.kill(self.kill_pid, signal.SIGKILL)
                self.kill_pid = None


def warm(client, first: int, count: int) -> dict[str, object]:
    """Warms kernels ``first .. first+count`` as one batch, then launches and checks each."""
    runs_before = cpu_compiler.compiler_runs.count
    records_before = len(recent_records())
    started = time.perf_counter()
    for k in range(first, first + count):
        scale_add.prepare(client, 64, k=k)
    client.compile_queued()
    wall = time.perf_counter() - started
    compiled = [
        recording.artifact
        for batch in recent_records()[records_before:]
        for recording in batch.kernels
        if recording.outcome == "compiled"
    ]
    rng = np.random.default_rng(first)
    right = True
    for k in range(first, first + count):
        x = rng.random(N, dtype=np.float32)
        y = rng.random(N, dtype=np.float32)
        out = client.empty(N, cj.f32)
        scale_add.launch(
            client, cj.cdiv(N, 64), 64, client.to_device(x), client.to_device(y), out, k=k
        )
        expected = x * np.float32(k) + y
        right = right and bool(np.allclose(client.read(out), expected, rtol=1e-6))
    return {
        "compiler_runs": cpu_compiler.compiler_runs.count - runs_before,
        "compiled": sorted(compiled),
        "right": right,
        "wall_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("first", type=int)
    parser.add_argument("count", type=int)
    parser.add_argument("--kill-after", type=int, nargs=2, metavar=("N", "PID"))
    parser.add_argument("--hang-in-compile", action="store_true")
    parser.add_argument("--second-batch", action="store_true")
    args = parser.parse_args()
    handler = Counting(*(args.kill_after or (None, None)))
    for name in ("cubejit.environment", "cubejit.compilation"):
        logging.getLogger(name).addHandler(handler)
        logging.getLogger(name).setLevel(logging.DEBUG)
    if args.hang_in_compile:
        saying = threading.Lock()

        def hang(self, id, lowered):  # type: ignore[no-untyped-def]
            with saying:  # each worker's line whole: print writes the text and its end apart
                print("compiling", flush=True)
            threading.Event().wait()

        cpu_compiler.CpuCompiler.finalize = hang  # type: ignore[method-assign]
        cpu_compiler.CpuCompiler.finalize_part = hang  # type: ignore[method-assign]
    client = cj.client("cpu")
    print("ready", flush=True)
    sys.stdin.readline()
    report = {"batches": [warm(client, args.first, args.count)]}
    if args.second_batch:
        print(json.dumps({"first_batch_done": True}), flush=True)
        sys.stdin.readline()
        fleet.shared(os.environ["CUBEJIT_STORE"]).storage.link.retry_every = 0.0
        report["batches"].append(warm(client, args.first + args.count, args.count))
    report["warnings"] = handler.warnings
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
