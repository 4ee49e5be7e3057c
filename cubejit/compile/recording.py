"""What a compilation tells about itself: records of kernel trips and batches, and the log.

The loader makes one :class:`CompilationRecording` per kernel trip (a kernel it loads from the
store, re-keys or compiles) and hands it to the compiler's ``lower``, which tells it the kernel's
IR and source. The loader fills in the rest: the outcome, and where and when each phase ran, so
a timeline of a batch can be drawn from the records alone. Each batch ends in one
:class:`BatchRecord` holding its kernels' recordings, published to every record sink: the
in-memory one behind :func:`recent_records`, and any added with :func:`add_record_sink`.
In-memory hits and failures are not recorded. ``config.settings().record_level`` decides how
much is kept: ``full`` keeps IR and source text, ``basic`` neither, ``off`` publishes nothing.

:class:`ServerLogger` is the ``cubejit.compilation`` logger: one INFO line per batch, one DEBUG
line per kernel, and each compiled source written to ``dump_dir`` when that is set.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from cubejit import config
from cubejit.compile.id import ArtifactId


class Outcome(enum.StrEnum):
    """How a kernel's trip ended. A ``str`` too (``"compiled"``…), as records keep it."""

    COMPILED = "compiled"
    """Lowered and finalized in this trip."""
    LOADED = "loaded"
    """The store held the artifact for this id."""
    REKEYED = "rekeyed"
    """Lowered, then served by an artifact finalized from the same source (by another id in
    the store, or by another kernel of the same batch)."""


OUTCOMES = tuple(o.value for o in Outcome)
"""The outcomes' texts, in order."""

RECENT_LIMIT = 256
"""How many batch records :func:`recent_records` keeps."""

LOGGER_NAME = "cubejit.compilation"


@dataclass(frozen=True, slots=True)
class Phase:
    """One phase of a kernel trip: the thread it ran on and when, in seconds since the start
    of its batch (:attr:`BatchRecord.started_at` places the batch in wall-clock time)."""

    thread: str
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def as_dict(self) -> dict[str, Any]:
        return {"thread": self.thread, "start": self.start, "end": self.end}


@dataclass(slots=True)
class CompilationRecording:
    """The record of one kernel's trip through the loader.

    The compiler calls :meth:`defined` and :meth:`source` from ``lower``; the loader sets the
    other fields. ``ir`` and ``source_text`` stay ``None`` unless the record level is ``full``;
    ``source_hash`` is kept at every level, so records show which kernels shared a source.
    """

    kernel: str
    """The kernel id, as ``str(KernelId)`` prints it."""
    name: str
    """The kernel's qualified name."""
    artifact: str
    """``ArtifactId.stable_hash()``: the same in every process."""
    variant: str
    """``repr`` of the artifact id's variant."""
    keep_text: bool = False
    """Whether IR and source text are kept (record level ``full``)."""
    outcome: Outcome | None = None
    """How the trip ended; ``None`` until it does."""
    lower: Phase | None = None
    finalize: Phase | None = None
    load: Phase | None = None
    source_hash: str | None = None
    """SHA-256 of the backend source, when the compiler told one."""
    ir: str | None = None
    source_text: str | None = None

    @classmethod
    def for_artifact(cls, id: ArtifactId[Any], keep_text: bool) -> CompilationRecording:
        return cls(
            kernel=str(id.kernel),
            name=id.kernel.name,
            artifact=id.stable_hash(),
            variant=repr(id.variant),
            keep_text=keep_text,
        )

    def defined(self, ir_text: str) -> None:
        """The compiler's report of the kernel's IR, printed."""
        if self.keep_text:
            self.ir = ir_text

    def source(self, text: str) -> None:
        """The compiler's report of the backend source the kernel lowered to."""
        self.source_hash = hashlib.sha256(text.encode()).hexdigest()
        if self.keep_text:
            self.source_text = text

    @property
    def work_s(self) -> float:
        """What this kernel cost: its own lower, finalize and load time, in seconds."""
        return sum(p.seconds for p in (self.lower, self.finalize, self.load) if p is not None)

    def as_dict(self) -> dict[str, Any]:
        """Plain values only, for a sink that persists records."""
        phases = {"lower": self.lower, "finalize": self.finalize, "load": self.load}
        return {
            "kernel": self.kernel,
            "name": self.name,
            "artifact": self.artifact,
            "variant": self.variant,
            "outcome": self.outcome,
            "work_s": self.work_s,
            **{k: (p.as_dict() if p is not None else None) for k, p in phases.items()},
            "source_hash": self.source_hash,
            "ir": self.ir,
            "source": self.source_text,
        }


@dataclass(frozen=True, slots=True)
class BatchTotals:
    """What one batch was asked, what it came to and what it cost, counted: the part of a
    batch's record that a sink persisting records keeps as it is."""

    started_at: float
    """Wall-clock time (``time.time()``) the batch started; phases count from it."""
    wall_s: float
    kernels_asked: int
    """Kernels the batch had to provide (queued ones and the one a load asked for)."""
    compiled: int
    from_store: int
    rekeyed: int
    failed: int
    threads: int
    """Worker threads the batch ran: ``min(parallelism, kernels the store did not hold)``."""

    def totals(self) -> tuple[Any, ...]:
        """The values of the fields above, in their order."""
        return tuple(getattr(self, f.name) for f in fields(BatchTotals))


@dataclass(frozen=True, slots=True)
class BatchRecord(BatchTotals):
    """One batch: its totals, and what each kernel's trip came to."""

    kernels: tuple[CompilationRecording, ...] = ()
    """The recordings of the kernels that made it, in the order they were asked."""

    def as_dict(self) -> dict[str, Any]:
        """Plain values only, for a sink that persists records."""
        names = [f.name for f in fields(BatchTotals)]
        return {
            **dict(zip(names, self.totals(), strict=True)),
            "kernels": [k.as_dict() for k in self.kernels],
        }


RecordSink = Callable[[BatchRecord], None]

_recent: deque[BatchRecord] = deque(maxlen=RECENT_LIMIT)
_sinks: list[RecordSink] = [_recent.append]
_sinks_lock = threading.Lock()


def recent_records() -> list[BatchRecord]:
    """The last :data:`RECENT_LIMIT` batch records of this process, oldest first."""
    return list(_recent)


def add_record_sink(sink: RecordSink) -> None:
    """Hands every later batch record to ``sink`` as well. A sink that raises is logged and
    ignored: records never fail a compilation."""
    with _sinks_lock:
        _sinks.append(sink)


def remove_record_sink(sink: RecordSink) -> None:
    """Stops handing records to ``sink``; one never added is ignored."""
    with _sinks_lock:
        if sink in _sinks:
            _sinks.remove(sink)


def publish(record: BatchRecord) -> None:
    """Hands ``record`` to every sink (the loader calls this once per batch)."""
    with _sinks_lock:
        sinks = list(_sinks)
    for sink in sinks:
        try:
            sink(record)
        except Exception:
            logging.getLogger(LOGGER_NAME).exception("a compilation record sink failed")


def _phase_text(label: str, phase: Phase | None) -> str:
    return "" if phase is None else f" {label} {phase.seconds:.3f} s on {phase.thread};"


class ServerLogger:
    """The compilation log: the ``cubejit.compilation`` logger, plus source dumps.

    Shared by every worker of a batch; logging is thread-safe and dumps write distinct files.
    """

    def __init__(self) -> None:
        self.logger = logging.getLogger(LOGGER_NAME)

    def debug(self, message: str, *args: object) -> None:
        """A detail of a compilation, for a compiler to tell (DEBUG)."""
        self.logger.debug(message, *args)

    def kernel(self, recording: CompilationRecording) -> None:
        """One DEBUG line for a kernel's finished trip."""
        if self.logger.isEnabledFor(logging.DEBUG):
            phases = "".join(
                _phase_text(label, phase)
                for label, phase in (
                    ("lower", recording.lower),
                    ("finalize", recording.finalize),
                    ("load", recording.load),
                )
            )
            self.logger.debug(
                "%s %s in %.3f s:%s",
                recording.outcome,
                recording.kernel,
                recording.work_s,
                phases.rstrip(";"),
            )

    def failed(self, id: ArtifactId[Any], error: BaseException) -> None:
        """A queued kernel failed; its next load raises ``error`` (WARNING)."""
        self.logger.warning(
            "%s failed to compile; its next load raises %s: %s", id, type(error).__name__, error
        )

    def batch(self, record: BatchRecord) -> None:
        """The INFO line of one batch."""
        self.logger.info(
            "compilation batch: %d kernels asked, %d compiled, %d from the store, %d rekeyed, "
            "%d failed, %d threads, %.3f s",
            record.kernels_asked,
            record.compiled,
            record.from_store,
            record.rekeyed,
            record.failed,
            record.threads,
            record.wall_s,
        )

    def dump_source(self, id: ArtifactId[Any], text: str) -> None:
        """Writes a compiled source to ``dump_dir`` when that is set, as
        ``<kernel name>.<artifact hash>.txt``; a failed write is logged, never raised."""
        folder = config.settings().dump_dir
        if folder is None:
            return
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", id.kernel.name)
        path = folder / f"{name}.{id.stable_hash()[:16]}.txt"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        except OSError as e:
            self.logger.warning("cannot write %s to the dump folder: %s", path, e)
