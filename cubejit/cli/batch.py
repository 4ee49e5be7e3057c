"""Compiling what was queued as one batch, with a live progress bar: used by ``demo`` and
``warm``.

The loader tells a :class:`~cubejit.compile.recording.ServerLogger` about each kernel as its
trip ends (on the calling thread, as results arrive), each failure, and the batch; this module's
logger is one that also advances a progress bar and keeps what it was told, so the command can
print each kernel's outcome and work after the batch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from cubejit.compile.id import ArtifactId, KernelId
from cubejit.compile.recording import BatchRecord, CompilationRecording, ServerLogger


@dataclass(slots=True)
class BatchResult:
    """What one batch did, as its logger heard it."""

    recordings: dict[str, CompilationRecording] = field(default_factory=dict)
    """Each kernel's trip, by ``str(KernelId)``."""
    failures: dict[str, BaseException] = field(default_factory=dict)
    """Each failed kernel's error, by ``str(KernelId)``."""
    record: BatchRecord | None = None
    wall_s: float = 0.0
    """Seconds the batch took, measured around it (whatever the record level)."""

    def outcome(self, id: KernelId) -> str:
        """``compiled``, ``loaded``, ``rekeyed``, ``failed``, or ``in memory`` for a kernel
        this process had loaded already (the batch did not need it)."""
        key = str(id)
        if key in self.failures:
            return "failed"
        recording = self.recordings.get(key)
        return "in memory" if recording is None else str(recording.outcome)

    def work_s(self, id: KernelId) -> float:
        """The kernel's own lower, finalize and load time; 0 when the batch did not take it."""
        recording = self.recordings.get(str(id))
        return 0.0 if recording is None else recording.work_s

    def count(self, outcome: str) -> int:
        if outcome == "failed":
            return len(self.failures)
        return sum(r.outcome == outcome for r in self.recordings.values())

    @property
    def threads(self) -> int:
        return 0 if self.record is None else self.record.threads


class ProgressLogger(ServerLogger):
    """The compilation log, also advancing ``task`` of ``progress`` once per kernel."""

    def __init__(self, progress: Progress, task: TaskID, result: BatchResult) -> None:
        super().__init__()
        self._progress = progress
        self._task = task
        self._result = result

    def kernel(self, recording: CompilationRecording) -> None:
        super().kernel(recording)
        self._result.recordings[recording.kernel] = recording
        self._progress.update(self._task, advance=1, status=recording.name.rsplit(".", 1)[-1])

    def failed(self, id: ArtifactId[Any], error: BaseException) -> None:
        super().failed(id, error)
        self._result.failures[str(id.kernel)] = error
        self._progress.update(self._task, advance=1)

    def batch(self, record: BatchRecord) -> None:
        super().batch(record)
        self._result.record = record


def compile_queued(client: Any, kernels: int, description: str, out: Console) -> BatchResult:
    """Compiles what ``client`` has queued as one batch, showing a bar out of ``kernels``."""
    result = BatchResult()
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[status]}"),
    )
    with Progress(*columns, console=out, transient=False) as progress:
        task = progress.add_task(description, total=kernels, status="")
        logger = ProgressLogger(progress, task, result)
        start = time.perf_counter()
        client.loader.compile_queued(logger)
        result.wall_s = time.perf_counter() - start
        progress.update(task, completed=kernels, status="done")
    return result
