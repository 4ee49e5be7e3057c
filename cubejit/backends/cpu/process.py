"""Running the C compiler as a subprocess that cannot outlive its timeout.

The compiler runs in a process group of its own, its output going to an unnamed temporary file
rather than a pipe: a helper it leaves behind (a grandchild still holding the output open, or
one that left the group) can neither keep the caller waiting for an end of file nor outlive
the run in the group. When the compiler exits, or runs past the timeout, the whole group is
killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path


class RunCount:
    """A thread-safe count of runs of a program since the process started: tests and benchmarks
    count compiles (and compiler probes) with it, never by timing."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    @property
    def count(self) -> int:
        return self._count

    def increment(self) -> None:
        with self._lock:
            self._count += 1


@dataclass(frozen=True, slots=True)
class Finished:
    """How one run of a compiler ended."""

    returncode: int | None
    """Its exit status; ``None`` when it ran past the timeout and was killed."""
    log: str
    """What it wrote to standard output and standard error, in order."""


def run_bounded(command: list[str], cwd: Path | None, timeout: float) -> Finished:
    """Runs ``command`` for at most ``timeout`` seconds. Raises :class:`OSError` when it cannot
    be started."""
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            returncode: int | None = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        output.seek(0)
        log = output.read().decode("utf-8", "replace")
    return Finished(returncode, log)
