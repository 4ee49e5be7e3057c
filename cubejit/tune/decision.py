"""A tuning decision: which candidate won for one tuning key, and what every candidate measured.

A decision is a store entry like an artifact, in the value encoding of
:mod:`cubejit.environment.value` (never pickle): an empty payload and a JSON header holding
``{"kind": "cubejit-tune-decision", "version": 1, "tuner", "key", "checksum", "winner",
"candidates": [...], "session": {...}}``. Each candidate keeps its identity (what it launches,
see :mod:`cubejit.tune.identity`), its outcome, and every timed run in nanoseconds; the session
says where and when it was tuned and how long the timings took. A header of another kind or
version is not a decision: it is dropped and the key tuned again.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

KIND = "cubejit-tune-decision"
VERSION = 1


class Outcome(enum.Enum):
    """What became of one candidate when its key was tuned."""

    WON = "won"
    """The lowest median: the candidate every launch of the key runs."""
    TIMED = "timed"
    """Timed until its median was known (or its share of the budget spent); slower."""
    DROPPED = "dropped"
    """Stopped early: its best run was already slower than the leader's median."""
    FAILED = "failed"
    """It failed to compile or raised; its error is kept."""


@dataclass(frozen=True, slots=True)
class CandidateTimes:
    """One candidate's part of a decision."""

    name: str
    outcome: Outcome
    times_ns: tuple[int, ...]
    """Every timed run, in nanoseconds, in the order they ran (the warm-up is not among them)."""
    identity: dict[str, Any]
    """Its identity's parts: ``name``, ``kernels`` and ``code`` digests."""
    error: str | None = None
    """For a failed candidate, ``"ErrorType: message"``."""
    launched: tuple[str, ...] = ()
    """The kernels its first run launched, as ``str(KernelId)`` prints them."""

    @property
    def median_s(self) -> float | None:
        """The median run in seconds; ``None`` without timed runs."""
        if not self.times_ns:
            return None
        ordered = sorted(self.times_ns)
        middle = len(ordered) // 2
        if len(ordered) % 2:
            return ordered[middle] / 1e9
        return (ordered[middle - 1] + ordered[middle]) / 2e9

    @property
    def best_s(self) -> float | None:
        """The fastest run in seconds; ``None`` without timed runs."""
        return min(self.times_ns) / 1e9 if self.times_ns else None

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "outcome": self.outcome.value,
            "times_ns": list(self.times_ns),
            "identity": self.identity,
            "error": self.error,
            "launched": list(self.launched),
        }


@dataclass(frozen=True, slots=True)
class Decision:
    """Which candidate a tuner runs for one tuning key on one kind of device."""

    tuner: str
    """The tuner's name."""
    key: Any
    """The tuning key, as JSON holds it (tuples become lists)."""
    checksum: str
    """The digest of the candidate set it was tuned with (names and what they launch)."""
    winner: str
    """The winning candidate's name."""
    candidates: tuple[CandidateTimes, ...]
    """Every candidate, in the tuner's order."""
    session: dict[str, Any]
    """Where and when it was tuned: ``host``, ``pid``, ``started_at`` (Unix time),
    ``tuning_s`` (wall time of the whole tuning), ``timed_runs``, ``budget_s``, ``device``,
    and ``build``, the build id of the cubejit that tuned it (absent in decisions of before)."""

    def times(self) -> dict[str, tuple[float, ...]]:
        """Every candidate's timed runs in seconds, by name."""
        return {c.name: tuple(t / 1e9 for t in c.times_ns) for c in self.candidates}

    def candidate(self, name: str) -> CandidateTimes:
        """The candidate called ``name``. KeyError when there is none."""
        for c in self.candidates:
            if c.name == name:
                return c
        raise KeyError(name)

    def encode(self) -> bytes:
        """The decision as a store value."""
        header = {
            "kind": KIND,
            "version": VERSION,
            "tuner": self.tuner,
            "key": self.key,
            "checksum": self.checksum,
            "winner": self.winner,
            "candidates": [c.as_json() for c in self.candidates],
            "session": self.session,
        }
        from cubejit.environment.value import encode

        return encode(b"", header)

    @staticmethod
    def decode(value: bytes) -> Decision:
        """The decision in ``value``; :class:`DamagedValueError` when it is not an intact one
        of this version."""
        from cubejit.environment.value import DamagedValueError, decode

        header = decode(value).header
        if header.get("kind") != KIND or header.get("version") != VERSION:
            raise DamagedValueError(
                f"not a tuning decision of version {VERSION}: kind {header.get('kind')!r}, "
                f"version {header.get('version')!r}"
            )
        try:
            candidates = tuple(
                CandidateTimes(
                    name=str(c["name"]),
                    outcome=Outcome(c["outcome"]),
                    times_ns=tuple(int(t) for t in c["times_ns"]),
                    identity=dict(c["identity"]),
                    error=None if c.get("error") is None else str(c["error"]),
                    launched=tuple(str(k) for k in c.get("launched", ())),
                )
                for c in header["candidates"]
            )
            decision = Decision(
                tuner=str(header["tuner"]),
                key=header["key"],
                checksum=str(header["checksum"]),
                winner=str(header["winner"]),
                candidates=candidates,
                session=dict(header["session"]),
            )
            decision.candidate(decision.winner)
        except (KeyError, TypeError, ValueError) as e:
            raise DamagedValueError(f"tuning decision is malformed: {e!r}") from None
        return decision
