"""The compile threads of one batch, and the clock their phases are timed by.

:class:`Workers` runs jobs on a few threads taking from one priority queue; the loader decides
what a job is and in what order they matter. :func:`timed` measures one phase of a kernel's
trip on whichever thread runs it, against the batch's clock, so that a timeline of the batch can
be drawn from its records.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from cubejit.compile.recording import Phase

T = TypeVar("T")

_STOP = 1 << 62
"""The priority of a thread's stop: after every job queued before it."""


class Workers(Generic[T]):
    """``count`` threads that each take the next job of one shared queue until stopped; a job
    of lower priority runs first, jobs of one priority in the order submitted.

    Every job submitted yields exactly one message (what it returned) on :attr:`done`, so the
    caller knows how many to wait for; the caller blocks on that queue, never polls.
    """

    def __init__(self, count: int) -> None:
        self.done: queue.SimpleQueue[T] = queue.SimpleQueue()
        self._jobs: queue.PriorityQueue[tuple[int, int, Callable[[], T] | None]] = (
            queue.PriorityQueue()
        )
        self._order = itertools.count()
        self._cancelled = threading.Event()
        self.count = count
        self._threads = [
            threading.Thread(target=self._work, name=f"cubejit-compile-{i}", daemon=True)
            for i in range(count)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, priority: int, job: Callable[[], T]) -> None:
        self._jobs.put((priority, next(self._order), job))

    def stop(self, cancel: bool) -> None:
        """Ends every thread once the jobs before it are done, or at once when ``cancel``."""
        if cancel:
            self._cancelled.set()
        for _ in self._threads:
            self._jobs.put((_STOP, next(self._order), None))
        for thread in self._threads:
            thread.join()

    def _work(self) -> None:
        while True:
            _, _, job = self._jobs.get()
            if job is None:
                return
            if not self._cancelled.is_set():
                self.done.put(job())


def timed(run: Callable[[], Any], origin: float) -> tuple[Any, Phase]:
    """What ``run()`` returns, and the phase it took on this thread, in seconds since
    ``origin`` (a ``time.perf_counter()`` reading)."""
    start = time.perf_counter() - origin
    value = run()
    end = time.perf_counter() - origin
    return value, Phase(threading.current_thread().name, start, end)
