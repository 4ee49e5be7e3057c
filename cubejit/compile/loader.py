"""The one path that loads kernels: many at once, once per machine, never twice for one text.

A :class:`KernelLoader` keeps the kernels loaded on one device and a queue of kernels asked for
ahead of time. ``get`` answers from memory, on every launch. ``load`` compiles what is missing
in one batch with everything queued: each kernel is taken from the store when it holds the
artifact, otherwise lowered and finalized on a pool of worker threads. Between the two halves
the backend source is looked up, so kernels that lower to one text are finalized once, or not at
all when the store has it (re-keyed). The target is touched only on the thread calling ``load``
(store lookups, loads, stores, in the order results arrive); the compiler's ``lower`` and
``finalize`` run on the workers.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Generic, TypeVar

from cubejit import config
from cubejit.compile.batch import Batch
from cubejit.compile.id import ArtifactId
from cubejit.compile.mirror import Mirror
from cubejit.compile.protocols import CompilationTarget, Kernel
from cubejit.compile.recording import ServerLogger

V = TypeVar("V")
A = TypeVar("A")
L = TypeVar("L")


def default_parallelism() -> int:
    """``CUBEJIT_COMPILE_PARALLELISM``, else one worker per CPU."""
    return config.settings().parallelism or os.cpu_count() or 1


class KernelLoader(Generic[V, A, L]):
    """Loads kernels for one target, compiling what it must, many at once.

    A *kernel* is any object with ``id() -> KernelId``; only the target's compiler looks
    further. The loader is used from one thread, the one owning the device. The loaded kernels
    of a persisting target are a :class:`~cubejit.compile.mirror.Mirror` of its store: when
    its generation changes (an environment switch), every loaded kernel is dropped and loads
    again; :meth:`generation` binds a client's own mirrors the same way.
    """

    def __init__(self, target: CompilationTarget[V, A, L], parallelism: int | None = None) -> None:
        self.target = target
        self.parallelism = max(1, parallelism if parallelism is not None else default_parallelism())
        self._generation: Callable[[], int] = (
            target.generation if target.persists() else _never_changes
        )
        self._loaded: Mirror[ArtifactId[V], L] = Mirror(self._generation)
        self._queue: dict[ArtifactId[V], Kernel] = {}
        self._failed: dict[ArtifactId[V], BaseException] = {}
        self._logger: ServerLogger | None = None

    def generation(self) -> int:
        """The generation this loader's kernels are bound to now: a
        :class:`~cubejit.compile.mirror.Mirror` made with this method as its source is emptied
        whenever the loaded kernels are (for what a client builds on them, such as launch
        functions). Constant for a target that does not persist."""
        return self._generation()

    def get(self, id: ArtifactId[V]) -> L | None:
        """The loaded kernel for ``id``, or ``None``. On every launch's path: one dict lookup,
        and one generation read for a persisting target."""
        return self._loaded.get(id)

    def load(self, kernel: Kernel, id: ArtifactId[V], logger: ServerLogger) -> L:
        """The loaded kernel for ``id``, after compiling the queue and, when missing, ``kernel``
        with it in one batch. Raises what compiling ``kernel`` raised, as itself; a failure of
        a queued kernel is kept for its own next ``load``, which raises it without compiling
        again (the one after tries again)."""
        loaded = self.get(id)
        if loaded is not None and not self._queue:
            return loaded
        failure = self._failed.pop(id, None)
        jobs = self._queue
        self._queue = {}
        if loaded is None and failure is None:
            jobs[id] = kernel
        results = self._compile(jobs, logger, asked=id) if jobs else {}
        if failure is not None:
            raise failure
        if loaded is not None:
            return loaded
        result = results[id]
        if isinstance(result, BaseException):
            raise result
        return result

    def enqueue(self, kernel: Kernel, variant: V) -> None:
        """Asks for ``kernel`` with ``variant`` ahead of time: nothing compiles until the next
        ``load`` or ``compile_queued``. A kernel loaded, queued already, or failed and not yet
        told is not queued again."""
        id = ArtifactId(kernel.id(), variant)
        if id not in self._failed and self.get(id) is None:
            self._queue[id] = kernel

    def compile_queued(self, logger: ServerLogger | None = None) -> None:
        """Compiles the queue now, in one batch. Failures are logged and kept for each failed
        kernel's next ``load``."""
        if not self._queue:
            return
        if logger is None:
            if self._logger is None:
                self._logger = ServerLogger()
            logger = self._logger
        jobs = self._queue
        self._queue = {}
        self._compile(jobs, logger, asked=None)

    def _compile(
        self, jobs: dict[ArtifactId[V], Kernel], logger: ServerLogger, asked: ArtifactId[V] | None
    ) -> dict[ArtifactId[V], L | BaseException]:
        """Runs one batch and keeps what it loaded. A kernel loaded while the generation
        changed is kept too: the next ``get`` sees the change and drops it with the rest."""
        self._loaded.follow()
        results = Batch(self.target, self.parallelism, logger).run(jobs)
        for id, result in results.items():
            if not isinstance(result, BaseException):
                self._loaded.put(id, result)
            elif id != asked:
                self._failed[id] = result
                logger.failed(id, result)
        return results


def _never_changes() -> int:
    return 0
