"""Starting ``tune_host.py`` processes: each with a local environment of its own, optionally
sharing a fleet's Redis store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HOST = Path(__file__).with_name("tune_host.py")
BUDGET_S = "0.2"
"""Seconds of timed runs per key in the tests (the default is 2)."""
SECRET = "the fleet's tuning secret"


class Host:
    """One host process; :meth:`go` starts its launches, :meth:`report` waits for their end."""

    def __init__(self, folder: Path, sizes: list[int], url: str | None, *options: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CUBEJIT_")}
        env.update(
            CUBEJIT_CACHE_DIR=str(folder),
            CUBEJIT_TUNE_BUDGET=BUDGET_S,
            CUBEJIT_COMPILE_PARALLELISM="1",
        )
        if url is not None:
            env.update(CUBEJIT_STORE=url, CUBEJIT_SIGNING_KEY=SECRET)
        self.process = subprocess.Popen(
            [sys.executable, str(HOST), *map(str, sizes), *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.line("ready")

    def line(self, expected: str) -> None:
        assert self.process.stdout is not None
        text = self.process.stdout.readline().strip()
        if text != expected:
            _, errors = self.process.communicate()
            pytest.fail(f"host said {text!r}, expected {expected!r}:\n{errors}")

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def report(self) -> dict:
        output, errors = self.process.communicate(timeout=240)
        assert self.process.returncode == 0, errors
        return json.loads(output.splitlines()[-1])


def run_hosts(folder: Path, count: int, sizes: list[int], url: str | None) -> list[dict]:
    """``count`` hosts launched at once; their reports."""
    hosts = [Host(folder / f"host{i}", sizes, url) for i in range(count)]
    for host in hosts:
        host.go()
    return [host.report() for host in hosts]
