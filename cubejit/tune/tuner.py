"""``cj.Tuner``: chooses among candidate launch functions once per tuning key and device.

A launch computes the tuning key from the arguments and looks up the winner in memory: once a
key is decided, :meth:`Tuner.launch` costs the key function and one dict lookup more than
calling the winner. The first launch of a key on a device looks for a decision in the active
environment (and the fleet's store); only when there is none does it tune: every candidate runs
on copies of the array arguments (:mod:`cubejit.tune.timing`), the fastest median wins, the
decision is stored (:mod:`cubejit.tune.store`), and the winner runs once on the real arguments.
A candidate that fails to compile or raises is skipped, its error kept in the decision. A key
whose arguments find no room for their copies runs its first candidate, untuned, for the rest
of the process (one WARNING): a call that fits memory never fails for want of room to tune.

On a fleet, a key another host is tuning runs the first candidate (the first one that does not
fail) on the real arguments; every :data:`POLL_S` seconds a launch of that key asks again, and
takes the decision once it landed, or the lease once its holder is gone.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from cubejit.errors import CubejitError, TuneError
from cubejit.tune.decision import CandidateTimes, Decision, Outcome
from cubejit.tune.timing import clock_for, copy_arguments, measure

if TYPE_CHECKING:
    import logging

    from cubejit.tune.identity import CandidateIdentity, LaunchRecorder
    from cubejit.tune.store import Decisions


def _log() -> logging.Logger:
    """The ``cubejit.tune`` logger. A tuner made at import (a module's ``cj.Tuner(...)``) imports
    nothing of what tuning needs: the settings, the identities, ``logging``."""
    import logging

    return logging.getLogger("cubejit.tune")


POLL_S = 0.05
"""Seconds between two looks at the fleet's store for a key another host is tuning."""


class Tunable:
    """One candidate of a :class:`Tuner`: a name (part of the decision's key) and a launch
    function ``fn(client, *args)``. ``kernels`` may declare kernels ``fn`` launches that its
    code does not name itself (see :mod:`cubejit.tune.identity`)."""

    __slots__ = ("fn", "kernels", "name")

    def __init__(self, name: str, fn: Callable[..., object], kernels: Iterable[Any] = ()) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"a Tunable's name is a non-empty string, not {name!r}")
        if not callable(fn):
            raise TypeError(f"Tunable {name!r}: fn must be callable as fn(client, *args)")
        self.name = name
        self.fn = fn
        self.kernels = tuple(kernels)

    def __repr__(self) -> str:
        return f"Tunable({self.name!r})"


def _nothing() -> object:
    return None


class _NoRoom(Exception):
    """The arguments could not be copied to time candidates on (memory ran out)."""


@dataclass(slots=True)
class _Waiting:
    """A key another host is tuning: when to look again."""

    store_key: bytes
    next_look: float


class Tuner:
    """Chooses among ``candidates`` for each tuning key ``key(*args)`` (sizes bucketed by
    :func:`anchor`, dtypes, ranks: ints, floats, strings, bools, dtypes and cubejit types,
    in tuples); the first candidate is the default. See the module docstring."""

    def __init__(
        self,
        name: str,
        key: Callable[..., Any],
        candidates: Sequence[Tunable],
    ) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"a Tuner's name is a non-empty string, not {name!r}")
        if not callable(key):
            raise TypeError(f"Tuner {name!r}: key must be callable as key(*args)")
        candidates = tuple(candidates)
        if not candidates or not all(isinstance(c, Tunable) for c in candidates):
            raise TypeError(f"Tuner {name!r}: candidates must be a non-empty list of cj.Tunable")
        names = [c.name for c in candidates]
        if len(set(names)) != len(names):
            raise ValueError(f"Tuner {name!r}: candidate names must differ; got {names}")
        self.name = name
        self.key = key
        self.candidates = candidates
        self.timed_runs = 0
        """Candidate runs this process timed for this tuner (warm-ups not counted)."""
        self.tunings = 0
        """Keys this process tuned for this tuner."""
        self._lock = threading.RLock()
        self._winners: dict[tuple[Any, Any], Callable[..., object]] = {}
        self._decisions: dict[tuple[Any, Any], Decision] = {}
        self._waiting: dict[tuple[Any, Any], _Waiting] = {}
        self._no_room: set[tuple[Any, Any]] = set()
        self._stores: dict[Any, Decisions] = {}
        self._identities: tuple[CandidateIdentity, ...] | None = None
        self._checksum: str | None = None
        self._last_client: Any = None
        self._warned: set[tuple[str, str]] = set()

    def __repr__(self) -> str:
        return f"<cj.Tuner {self.name} ({len(self.candidates)} candidates)>"

    def launch(self, client: Any, *args: Any) -> object:
        """Runs the winner for ``args``' tuning key on ``client``, tuning the key first when no
        decision is known; what the candidate returns."""
        key = self.key(*args)
        try:
            winner = self._winners[client, key]
        except (KeyError, TypeError):
            return self._undecided(client, key, args)
        return winner(client, *args)

    def decision(self, *args: Any, client: Any = None) -> Decision | None:
        """The decision for ``args``' tuning key on ``client`` (default: the client this
        tuner last launched on, else the CPU's), from memory or the stores; ``None`` when the
        key was never tuned there. Tunes nothing."""
        if client is None:
            client = self._last_client
        if client is None:
            from cubejit.runtime import client as client_of

            client = client_of("cpu")
        key = self._hashable(self.key(*args))
        with self._lock:
            found = self._decisions.get((client, key))
            if found is not None:
                return found
            store_key = self._store_key(key)
            stored = self._store(client).get(store_key)
            if stored is not None and self._adopt(client, key, stored):
                return stored
        return None

    def checksum(self) -> str:
        """The digest of the candidate set: each candidate's name, the kernels it launches and
        its launch function's code. A change to any of them keys decisions anew (a re-tune)."""
        if self._checksum is None:
            from cubejit.compile.id import stable_digest

            self._checksum = stable_digest("candidates", [i.digest() for i in self.identities()])
        return self._checksum

    def identities(self) -> tuple[CandidateIdentity, ...]:
        """Each candidate's identity (see :mod:`cubejit.tune.identity`), in order."""
        if self._identities is None:
            from cubejit.tune.identity import identify

            self._identities = tuple(identify(c.name, c.fn, c.kernels) for c in self.candidates)
        return self._identities

    # The first launches of a key.

    def _undecided(self, client: Any, key: Any, args: tuple[Any, ...]) -> object:
        with self._lock:
            self._last_client = client
            key = self._hashable(key)
            winner = self._winners.get((client, key))
            if winner is None and (client, key) not in self._no_room:
                winner = self._resolve(client, key, args)
        if winner is None:
            return self._default(client, args)
        return winner(client, *args)

    def _resolve(
        self, client: Any, key: Any, args: tuple[Any, ...]
    ) -> Callable[..., object] | None:
        """The winner for ``key``, tuning it here if this process may; ``None`` while another
        host tunes it."""
        waiting = self._waiting.get((client, key))
        now = time.monotonic()
        if waiting is not None and now < waiting.next_look:
            return None
        from cubejit.tune.store import Claim

        store = self._store(client)
        store_key = waiting.store_key if waiting is not None else self._store_key(key)
        found = store.get(store_key)
        if found is None and store.claim(store_key) is Claim.ELSEWHERE:
            self._waiting[(client, key)] = _Waiting(store_key, now + POLL_S)
            return None
        self._waiting.pop((client, key), None)
        if found is None:
            found = store.get(store_key)
            if found is not None:
                store.abandon(store_key)
        if found is None or not self._adopt(client, key, found):
            from cubejit.tune import records

            try:
                tuned = self._tune(client, key, args, store)
                found = store.put(store_key, tuned)
            except _NoRoom as e:
                store.abandon(store_key)
                self._no_room.add((client, key))
                _log().warning(
                    "tuner %s: no room to copy the arguments of key %r for timing (%s); this "
                    "process runs its first candidate for that key, untuned",
                    self.name,
                    key,
                    e,
                )
                return None
            except BaseException:
                store.abandon(store_key)
                raise
            records.record(tuned)
            if not self._adopt(client, key, found):
                self._adopt(client, key, tuned)
        return self._winners[(client, key)]

    def _default(self, client: Any, args: tuple[Any, ...]) -> object:
        """The first candidate that does not fail, on the real arguments (while another host
        tunes the key)."""
        error: CubejitError | None = None
        for candidate in self.candidates:
            try:
                return candidate.fn(client, *args)
            except CubejitError as e:
                error = error or e
        assert error is not None
        raise error

    def _adopt(self, client: Any, key: Any, decision: Decision) -> bool:
        """Makes ``decision`` the one launches of ``key`` run; False when its winner is none of
        this tuner's candidates (then it is not used)."""
        for candidate in self.candidates:
            if candidate.name == decision.winner:
                self._decisions[(client, key)] = decision
                self._winners[(client, key)] = candidate.fn
                return True
        return False

    # Tuning.

    def _tune(self, client: Any, key: Any, args: tuple[Any, ...], store: Decisions) -> Decision:
        import socket

        from cubejit import config
        from cubejit.environment.build import build_id
        from cubejit.tune.identity import LaunchRecorder
        from cubejit.tune.keys import jsonable_key

        budget = max(0.0, config.settings().tune_budget)
        started_at = time.time()
        started = time.perf_counter()
        clock = clock_for(client)
        spent = 0.0
        leader = float("inf")
        results: list[CandidateTimes] = []
        identities = {i.name: i for i in self.identities()}
        runs_before = self.timed_runs
        run: Callable[[], object]
        for index, candidate in enumerate(self.candidates):
            # The last candidate's copies go before this one's are made: one set at a time.
            copies: tuple[Any, ...] = ()
            run = _nothing
            try:
                copies = copy_arguments(client, args)
            except (MemoryError, CubejitError) as e:
                raise _NoRoom(f"{type(e).__name__}: {e}") from None
            identity = identities[candidate.name]
            recorder = LaunchRecorder(client)
            run = functools.partial(candidate.fn, client, *copies)
            try:
                candidate.fn(recorder, *copies)
                client.sync()
                share = max(0.0, budget - spent) / (len(self.candidates) - index)
                timing_started = time.perf_counter()
                measured = measure(clock, run, share, leader)
                spent += time.perf_counter() - timing_started
            except Exception as e:  # a candidate that fails is skipped, its error kept
                _log().info("tuner %s: candidate %r failed: %s", self.name, candidate.name, e)
                error = f"{type(e).__name__}: {e}"
                results.append(
                    CandidateTimes(candidate.name, Outcome.FAILED, (), identity.as_json(), error)
                )
                continue
            self._check_launched(identity, recorder)
            self.timed_runs += len(measured.times_ns)
            if not measured.dropped:
                leader = min(leader, measured.median)
            results.append(
                CandidateTimes(
                    candidate.name,
                    Outcome.DROPPED if measured.dropped else Outcome.TIMED,
                    tuple(measured.times_ns),
                    identity.as_json(),
                    launched=tuple(str(k) for k in recorder.launched),
                )
            )
        timed = [c for c in results if c.outcome is Outcome.TIMED and c.times_ns]
        if not timed:
            errors = "; ".join(f"{c.name}: {c.error or 'dropped'}" for c in results)
            raise TuneError(f"tuner {self.name}: every candidate failed for key {key!r}: {errors}")
        winner = min(timed, key=lambda c: c.median_s or 0.0).name
        self.tunings += 1
        candidates = tuple(
            replace(c, outcome=Outcome.WON) if c.name == winner else c for c in results
        )
        tuning_s = time.perf_counter() - started
        decision = Decision(
            tuner=self.name,
            key=jsonable_key(self._canonical_key(key)),
            checksum=self.checksum(),
            winner=winner,
            candidates=candidates,
            session={
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "started_at": started_at,
                "tuning_s": tuning_s,
                "timing_s": spent,
                "timed_runs": self.timed_runs - runs_before,
                "budget_s": budget,
                "device": store.device,
                "build": build_id(),
            },
        )
        _log().info(
            "tuner %s: %r won for key %r on %s (%d candidates, %d timed runs, %.3f s)",
            self.name,
            winner,
            decision.key,
            store.device,
            len(candidates),
            decision.session["timed_runs"],
            tuning_s,
        )
        return decision

    def _check_launched(self, identity: CandidateIdentity, recorder: LaunchRecorder) -> None:
        """Warns once per candidate about a kernel it launched that its identity does not
        count: a change to that kernel would not tune again."""
        known = {name for name, _ in identity.kernels}
        for kernel_id in recorder.launched:
            if kernel_id.name not in known and (identity.name, kernel_id.name) not in self._warned:
                self._warned.add((identity.name, kernel_id.name))
                _log().warning(
                    "tuner %s: candidate %r launched kernel %s, which its launch function does "
                    "not name; declare it (cj.Tunable(..., kernels=[...])) so that a change to "
                    "it makes the tuner tune again",
                    self.name,
                    identity.name,
                    kernel_id.name,
                )

    # Keys and stores.

    def _hashable(self, key: Any) -> Any:
        try:
            hash(key)
        except TypeError:
            return self._canonical_key(key)
        return key

    def _canonical_key(self, key: Any) -> Any:
        from cubejit.tune.keys import canonical_key

        return canonical_key(self.name, key)

    def _store_key(self, key: Any) -> bytes:
        from cubejit.tune.store import decision_key

        return decision_key(self.name, self.checksum(), self._canonical_key(key))

    def _store(self, client: Any) -> Decisions:
        store = self._stores.get(client)
        if store is None:
            from cubejit.environment.manager import ENVIRONMENTS
            from cubejit.tune.store import Decisions, device_fingerprint

            if not self._stores:
                ENVIRONMENTS.watch(self._forget)
            store = self._stores[client] = Decisions(device_fingerprint(client))
        return store

    def _forget(self) -> None:
        """An environment switch: decisions read from the old environment no longer hold."""
        self._winners = {}
        self._decisions = {}
        self._waiting = {}
        self._no_room = set()
