"""One batch of the loader: every kernel of it ends loaded or failed.

The phases of a :class:`Batch`, on the thread calling the loader (which alone touches the
target): one look-up of every kernel in the store; a claim on each missing one, which never
waits; worker threads lowering and finalizing this host's kernels while the found ones load;
each finished job handled as it arrives (sources shared within the batch finalized once); the
parts of a linking compiler joined once the jobs are done; last, the kernels another host was
compiling, waited for. See :mod:`cubejit.compile.loader`.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from cubejit import config
from cubejit.compile.id import ArtifactId
from cubejit.compile.protocols import CompilationTarget, Flight, Kernel, LinkingCompiler
from cubejit.compile.recording import (
    BatchRecord,
    CompilationRecording,
    Outcome,
    ServerLogger,
    publish,
)
from cubejit.compile.workers import Workers, timed
from cubejit.errors import CompilationError

V = TypeVar("V")
A = TypeVar("A")
L = TypeVar("L")

_FINALIZE, _LOWER = 0, 1
"""Job priorities: a finalize runs before the next lowering, so the platform compiler (which
releases the GIL) works alongside the lowering of the next kernel (which holds it)."""


class _Done(enum.Enum):
    """What a worker's finished job tells the calling thread."""

    LOWERED = enum.auto()
    """Lowered to a source that may be reused: the calling thread decides who finalizes."""
    LOWER_FAILED = enum.auto()
    FINALIZED = enum.auto()
    FINALIZE_FAILED = enum.auto()


@dataclass(slots=True)
class Trip(Generic[V]):
    """One kernel's trip through a batch, owned by the calling thread between jobs."""

    id: ArtifactId[V]
    kernel: Kernel
    recording: CompilationRecording
    lowered: Any = None
    source: str | None = None


@dataclass(slots=True)
class _SourceGroup(Generic[V]):
    """The kernels of a batch that lowered to one source while its first kernel finalizes."""

    waiting: list[Trip[V]] = field(default_factory=list)


class Batch(Generic[V, A, L]):
    """One batch: every kernel of it ends loaded or failed. Runs on the calling thread, which
    alone touches the target; workers lower and finalize.

    Its phases: one look-up of every kernel in the store; a claim on each missing one, which
    never waits (a store shared by hosts says whether this host or another compiles it); the
    workers set on this host's kernels while the found ones load here, and each finished job
    handled as it comes; when more than one kernel compiles here and the compiler links
    (:class:`~cubejit.compile.protocols.LinkingCompiler`), each is finalized into a part and
    the parts are linked together once the jobs are done, then loaded and stored; last, once
    this host's own kernels are done (and its claims given back), a wait for each kernel
    another host is compiling, compiled here if that fails.
    """

    def __init__(self, target: CompilationTarget[V, A, L], parallelism: int, logger: ServerLogger):
        self.target = target
        self.compiler = target.compiler()
        self.persists = bool(target.persists())
        self.parallelism = parallelism
        self.logger = logger
        level = config.settings().record_level
        self.publishing = level != "off"
        self.keep_text = level == "full"
        self.origin = time.perf_counter()
        self.results: dict[ArtifactId[V], L | BaseException] = {}
        self.trips: list[Trip[V]] = []
        self.by_source: dict[str, _SourceGroup[V] | tuple[A] | BaseException] = {}
        self.workers: Workers[tuple[_Done, Trip[V], Any]] | None = None
        self.pending = 0
        self.linker: LinkingCompiler[V, Any, A] | None = None
        """The compiler, when it links and more than one kernel compiles here: then kernels are
        finalized into parts, linked once the jobs are done."""
        self.parts: list[tuple[Trip[V], A]] = []

    def run(self, jobs: dict[ArtifactId[V], Kernel]) -> dict[ArtifactId[V], L | BaseException]:
        """Looks every kernel up in the store at once, claims the missing ones, sets the
        workers on those left and loads the found ones while they work."""
        started_at = time.time()
        self.trips = [
            Trip(id, kernel, CompilationRecording.for_artifact(id, self.keep_text))
            for id, kernel in jobs.items()
        ]
        found = self._stored_many()
        here: list[Trip[V]] = []
        elsewhere: list[Trip[V]] = []
        for trip in self.trips:
            if trip.id in found:
                continue
            claimed = self._claim(trip)
            if claimed is Flight.HERE:
                here.append(trip)
            elif claimed is Flight.ELSEWHERE:
                elsewhere.append(trip)
            else:
                found[trip.id] = claimed
        if len(here) > 1 and isinstance(self.compiler, LinkingCompiler):
            self.linker = self.compiler
        finished = False
        try:
            self._lower_all(here)
            for trip in self.trips:
                artifact = found.get(trip.id)
                if artifact is not None and not self._load_stored(trip, artifact):
                    self._lower_all([trip])
            self._drain()
            for trip in elsewhere:
                artifact = self._wait_for(trip)
                if artifact is None or not self._load_stored(trip, artifact):
                    self._lower_all([trip])
            self._drain()
            finished = True
        finally:
            if self.workers is not None:
                self.workers.stop(cancel=not finished)
            self._abandon_unfinished()
        self._report(started_at)
        return self.results

    def _stored_many(self) -> dict[ArtifactId[V], A]:
        try:
            return self.target.stored_many([trip.id for trip in self.trips])
        except Exception as e:
            self.logger.logger.warning("the store cannot be read, so the batch compiles: %s", e)
            return {}

    def _claim(self, trip: Trip[V]) -> A | Flight:
        try:
            return self.target.claim(trip.id)
        except Exception as e:
            self.logger.debug("%s: cannot be claimed, so it is compiled here: %s", trip.id, e)
            return Flight.HERE

    def _wait_for(self, trip: Trip[V]) -> A | None:
        """Last in a batch, when this host's own kernels are done and its claims given back:
        the artifact another host was compiling, or ``None`` (compile it here)."""
        try:
            return self.target.wait_for(trip.id)
        except Exception as e:
            self.logger.debug("%s: cannot be waited for, so it is compiled here: %s", trip.id, e)
            return None

    def _abandon_unfinished(self) -> None:
        """Tells the target which kernels of the batch it will not store, so that another
        host of a shared store waiting for them compiles them."""
        for trip in self.trips:
            if isinstance(self.results.get(trip.id, _MISSING), BaseException | _Missing):
                self.target.abandon(trip.id)

    def _load_stored(self, trip: Trip[V], artifact: A) -> bool:
        try:
            self._finish(trip, artifact, Outcome.LOADED, store=False)
        except Exception as e:
            self.logger.logger.warning(
                "%s: the stored artifact cannot be loaded, so it is dropped and compiled again: %s",
                trip.id,
                e,
            )
            self.target.discard(trip.id, None, f"the device refused it: {e}")
            trip.recording.load = None
            return False
        return True

    def _lower_all(self, trips: list[Trip[V]]) -> None:
        """Queues the lowering of ``trips``, starting the workers on the first call:
        ``min(parallelism, len(trips))`` of them."""
        if not trips:
            return
        if self.workers is None:
            self.workers = Workers(min(self.parallelism, len(trips)))
        for trip in trips:
            self._submit(_LOWER, self._lower, trip)

    def _drain(self) -> None:
        """Handles each finished job as it arrives, until no job is left."""
        while self.pending:
            assert self.workers is not None
            done, trip, value = self.workers.done.get()
            self.pending -= 1
            self._handle(done, trip, value)
        if self.parts:
            self._link()

    def _link(self) -> None:
        """Joins the parts finalized so far, then loads and stores each as if it had just been
        finalized (the kernels waiting on its source with it). Parts that do not link together
        are linked each alone: one that fails then fails only its own kernels."""
        assert self.linker is not None
        parts, self.parts = self.parts, []
        began = time.perf_counter()
        linked: list[A | BaseException]
        try:
            linked = list(self.linker.link([(trip.id, part) for trip, part in parts]))
        except Exception as e:
            if len(parts) == 1:
                linked = [_naming(parts[0][0].id, e)]
            else:
                self.logger.debug(
                    "%d kernels do not link together, so each alone: %s", len(parts), e
                )
                linked = [self._link_alone(trip, part) for trip, part in parts]
        self.logger.logger.debug(
            "linked %d kernels in %.1f ms", len(parts), 1e3 * (time.perf_counter() - began)
        )
        for (trip, _), artifact in zip(parts, linked, strict=True):
            if isinstance(artifact, BaseException):
                self._handle(_Done.FINALIZE_FAILED, trip, artifact)
            else:
                self._finalized(trip, artifact)

    def _link_alone(self, trip: Trip[V], part: A) -> A | BaseException:
        assert self.linker is not None
        try:
            [artifact] = self.linker.link([(trip.id, part)])
        except Exception as e:
            return _naming(trip.id, e)
        return artifact

    def _submit(
        self, priority: int, job: Callable[[Trip[V]], tuple[_Done, Trip[V], Any]], trip: Trip[V]
    ) -> None:
        assert self.workers is not None
        self.pending += 1
        self.workers.submit(priority, lambda: job(trip))

    def _lower(self, trip: Trip[V]) -> tuple[_Done, Trip[V], Any]:
        """On a worker: lower, then finalize here unless the source may be reused."""
        try:
            trip.lowered, trip.recording.lower = timed(
                lambda: self.compiler.lower(trip.kernel, trip.id, trip.recording, self.logger),
                self.origin,
            )
            trip.source = self.compiler.source(trip.lowered)
        except BaseException as e:
            return _Done.LOWER_FAILED, trip, e
        if trip.source is not None and self.persists:
            return _Done.LOWERED, trip, None
        return self._finalize(trip)

    def _finalize(self, trip: Trip[V]) -> tuple[_Done, Trip[V], Any]:
        finalize = self.compiler.finalize if self.linker is None else self.linker.finalize_part
        try:
            artifact, trip.recording.finalize = timed(
                lambda: finalize(trip.id, trip.lowered), self.origin
            )
        except BaseException as e:
            return _Done.FINALIZE_FAILED, trip, e
        finally:
            trip.lowered = None
        return _Done.FINALIZED, trip, artifact

    def _handle(self, done: _Done, trip: Trip[V], value: Any) -> None:
        """On the calling thread: what a worker's finished job leads to."""
        if done is _Done.LOWERED:
            self._lowered(trip)
        elif done is _Done.FINALIZED and self.linker is not None:
            self.parts.append((trip, value))
        elif done is _Done.FINALIZED:
            self._finalized(trip, value)
        elif done is _Done.FINALIZE_FAILED:
            self.results[trip.id] = value
            self._settle(trip.source, value)
        else:
            self.results[trip.id] = value

    def _finalized(self, trip: Trip[V], artifact: A) -> None:
        outcome = self._finish_or_fail(trip, artifact, Outcome.COMPILED)
        if trip.source is not None and trip.recording.outcome is Outcome.COMPILED:
            self.logger.dump_source(trip.id, trip.source)
        self._settle(trip.source, outcome)

    def _lowered(self, trip: Trip[V]) -> None:
        """A kernel whose source may be reused: from this batch, from the store, or finalized
        by it alone while later kernels of the same source wait for it."""
        assert trip.source is not None
        known = self.by_source.get(trip.source)
        if isinstance(known, _SourceGroup):
            known.waiting.append(trip)
        elif isinstance(known, tuple):
            self._finish_or_fail(trip, known[0], Outcome.REKEYED)
        elif known is not None:
            self.results[trip.id] = known
        else:
            try:
                artifact = self.target.stored_for_source(trip.source)
                if artifact is not None:
                    self._finish(trip, artifact, Outcome.REKEYED, store=True)
                    self.by_source[trip.source] = (artifact,)
                    return
            except Exception as e:
                self.logger.debug(
                    "%s: the artifact stored for its source cannot be loaded, "
                    "so it is dropped and finalized: %s",
                    trip.id,
                    e,
                )
                self.target.discard(None, trip.source, f"the device refused it: {e}")
                trip.recording.load = None
            self.by_source[trip.source] = _SourceGroup()
            self._submit(_FINALIZE, self._finalize, trip)

    def _settle(self, source: str | None, outcome: tuple[A] | BaseException) -> None:
        """The kernel finalizing ``source`` is done: its waiters take the artifact, or fail
        with its error."""
        if source is None or not self.persists:
            return
        group = self.by_source.get(source)
        self.by_source[source] = outcome
        if isinstance(group, _SourceGroup):
            for waiting in group.waiting:
                if isinstance(outcome, tuple):
                    self._finish_or_fail(waiting, outcome[0], Outcome.REKEYED)
                else:
                    self.results[waiting.id] = outcome

    def _finish_or_fail(
        self, trip: Trip[V], artifact: A, outcome: Outcome
    ) -> tuple[A] | BaseException:
        try:
            self._finish(trip, artifact, outcome, store=True)
        except Exception as e:
            self.results[trip.id] = e
            return e
        return (artifact,)

    def _finish(self, trip: Trip[V], artifact: A, outcome: Outcome, store: bool) -> None:
        """Loads ``artifact`` for ``trip`` and, when ``store``, keeps it under its id (and
        source) once the device took it. A store that raises is logged and the run goes on:
        the cost is compiling again next time."""
        loaded, trip.recording.load = timed(
            lambda: self.target.load(trip.id, artifact), self.origin
        )
        if store:
            try:
                self.target.store(trip.id, artifact, trip.source)
            except Exception as e:
                self.logger.logger.warning("%s: the store refused it: %s", trip.id, e)
        trip.recording.outcome = outcome
        self.results[trip.id] = loaded
        self.logger.kernel(trip.recording)

    def _report(self, started_at: float) -> None:
        recorded = tuple(t.recording for t in self.trips if t.recording.outcome is not None)
        outcomes = [r.outcome for r in recorded]
        record = BatchRecord(
            started_at=started_at,
            wall_s=time.perf_counter() - self.origin,
            kernels_asked=len(self.trips),
            compiled=outcomes.count(Outcome.COMPILED),
            from_store=outcomes.count(Outcome.LOADED),
            rekeyed=outcomes.count(Outcome.REKEYED),
            failed=len(self.trips) - len(recorded),
            threads=self.workers.count if self.workers is not None else 0,
            kernels=recorded,
        )
        self.logger.batch(record)
        if self.publishing:
            publish(record)


def _naming(id: ArtifactId[Any], error: Exception) -> Exception:
    """``error``, a CompilationError naming no kernel made to name ``id``'s."""
    if isinstance(error, CompilationError) and error.kernel is None:
        name = id.kernel.name
        return CompilationError(
            f"kernel {name}: {error}", kernel=name, log=error.log, source=error.source
        )
    return error


class _Missing:
    """No result: the batch ended (raised) before the kernel's trip did."""


_MISSING = _Missing()
