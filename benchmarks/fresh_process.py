"""A benchmark's script run in a fresh interpreter, the way the warm-start benchmarks time a
process: its report is the JSON object on the last line it prints.

The interpreter gets this process's environment without ``PYTHONDONTWRITEBYTECODE`` (the
peers' bytecode was compiled when they were installed, so cubejit's must be cached too for a
fair import) and without ``CUBEJIT_COMPILATION_CACHE`` (a warm start needs the store), plus
the benchmark's own variables and cubejit on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

SAXPY = """
@cj.kernel
def saxpy(a: cj.f32, x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32],
          k: cj.Comptime[int]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i] + cj.f32(k)
"""
"""The stored kernel of the warm-start scripts: a saxpy plus the constant ``k``, so that each
``k`` is a specialisation of its own."""


@dataclass
class Ran:
    """What one fresh process did."""

    report: dict[str, Any] | None
    """Its last line's JSON object; ``None`` when it failed."""
    failure: str
    """Its last line on stderr when it failed, else empty."""
    stderr: str
    seconds: float
    """Its wall time, from start to exit, seen by the parent."""


def environment(**variables: str) -> dict[str, str]:
    """The environment of a fresh process (see the module's text) with ``variables``."""
    dropped = ("PYTHONDONTWRITEBYTECODE", "CUBEJIT_COMPILATION_CACHE")
    environ = {k: v for k, v in os.environ.items() if k not in dropped}
    return {**environ, **variables, "PYTHONPATH": str(ROOT)}


def run_fresh(script: str, variables: dict[str, str], timeout: float = 600) -> Ran:
    """Runs ``script`` in a fresh interpreter with ``variables`` in its environment."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(script)
    try:
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, f.name],
            env=environment(**variables),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        seconds = time.perf_counter() - began
    finally:
        os.unlink(f.name)
    if done.returncode != 0:
        failure = (done.stderr.strip().splitlines() or ["failed"])[-1]
        return Ran(None, failure, done.stderr, seconds)
    return Ran(json.loads(done.stdout.strip().splitlines()[-1]), "", done.stderr, seconds)
