"""``cubejit demo``: the example suite compiled as one batch, run, and checked against numpy.

The first run in an empty environment compiles every kernel of :mod:`cubejit.showcase` at once
on the worker threads, with a live progress bar; a table then gives each kernel's outcome, the
work its compilation cost and its check. When something was compiled, the demo runs itself
again in a fresh interpreter, as the next run of a program would: everything comes from the
store, and the speedup is printed. A run that compiled nothing compares itself with the last
recorded demo batch that did.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import Any

import numpy as np

import cubejit as cj
from cubejit import environment
from cubejit.cli.batch import BatchResult, compile_queued
from cubejit.cli.console import console, seconds_text, table
from cubejit.environment import records

LABEL = "demo"
"""The session label of demo runs, by which a warm run finds the cold one it compares with."""


def register(commands: Any) -> None:
    command = commands.add_parser(
        "demo",
        help="compile, run and check the example suite (the main job of `make demo`)",
        description="Compiles the example suite as one batch with a live progress bar, runs "
        "each kernel and checks it against numpy, and prints a table: kernel, outcome, "
        "compile work, check. When it compiled anything it runs again in a fresh process, "
        "where everything is loaded from the store, and prints the speedup.",
    )
    command.add_argument(
        "--backend",
        choices=("cpu", "cuda"),
        default="cpu",
        help="where the kernels run (default: cpu)",
    )
    command.add_argument("--once", action="store_true", help="do not run again in a fresh process")
    command.add_argument("--cold-batch", type=float, default=None, help=argparse.SUPPRESS)
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cubejit import showcase

    out = console()
    records.label(LABEL)
    client = cj.client(args.backend)
    examples = showcase.examples()
    specs = [example.spec() for example in examples]
    for spec in specs:
        client.prepare(spec)
    result = compile_queued(client, len(examples), f"{len(examples)} kernels ({args.backend})", out)
    rng = np.random.default_rng(20240601)
    rows, passed = [], not result.failures
    for example, spec in zip(examples, specs, strict=True):
        id = spec.id()
        error = result.failures.get(str(id))
        if error is not None:
            check = f"not run: {type(error).__name__}: {str(error).splitlines()[0]}"
        else:
            verdict = showcase.check(example, client, rng)
            passed = passed and verdict.passed
            check = str(verdict)
        rows.append((example.name, result.outcome(id), seconds_text(result.work_s(id)), check))
    title = f"cubejit demo on {args.backend} (environment {environment.active()})"
    out.print(table(title, ("kernel", "outcome", "compile work", "check"), rows))
    batch_s = result.record.wall_s if result.record is not None else result.wall_s
    out.print(_summary(result, batch_s))
    if args.cold_batch is not None:
        if result.count("compiled"):
            out.print(
                "the store did not serve these kernels: is the compilation cache off "
                "(CUBEJIT_COMPILATION_CACHE=0), or the root read-only?"
            )
        else:
            out.print(_speedup(args.cold_batch, batch_s, "the first run"))
    elif result.count("compiled") or result.count("rekeyed"):
        if not args.once:
            passed = _run_again(args.backend, batch_s, out) and passed
    else:
        cold = _last_cold_batch()
        if cold is not None:
            out.print(_speedup(cold, batch_s, "the last demo run that compiled them"))
    return 0 if passed else 1


def _summary(result: BatchResult, batch_s: float) -> str:
    threads = f" on {result.threads} worker threads" if result.threads else ""
    return (
        f"one batch of {len(result.recordings) + len(result.failures)} kernels in "
        f"{seconds_text(batch_s)}{threads}: {result.count('compiled')} compiled, "
        f"{result.count('loaded')} from the store, {result.count('rekeyed')} rekeyed, "
        f"{result.count('failed')} failed"
    )


def _speedup(cold_s: float, warm_s: float, cold_name: str) -> str:
    return (
        f"[bold]{cold_s / max(warm_s, 1e-9):.0f}x faster[/bold] than {cold_name} "
        f"({seconds_text(warm_s)} instead of {seconds_text(cold_s)}), "
        f"because nothing was compiled twice"
    )


def _run_again(backend: str, cold_s: float, out: Any) -> bool:
    out.print("\n[bold]Second run, in a fresh process: every kernel comes from the store[/bold]")
    out.file.flush()
    command = [
        sys.executable,
        "-m",
        "cubejit",
        "demo",
        "--backend",
        backend,
        "--cold-batch",
        repr(cold_s),
    ]
    return subprocess.run(command, env=dict(os.environ), check=False).returncode == 0


def _last_cold_batch() -> float | None:
    """The wall time of the latest recorded demo batch that compiled something."""
    demo_sessions = {s.id for s in records.read("sessions") if s.label == LABEL}
    cold = [
        b
        for b in records.read("batches")
        if b.session in demo_sessions and b.compiled and b.kernels_asked > 1
    ]
    return cold[-1].wall_s if cold else None
