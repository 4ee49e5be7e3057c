"""Autotune: decisions kept, shared by a fleet, and explained.

A :class:`Tuner` chooses among candidate launch functions (:class:`Tunable`) once per tuning
key and kind of device, and keeps the :class:`Decision` in the active environment, beside the
artifacts; :func:`anchor` buckets sizes so that nearby ones share a key. See README.md.
"""

from __future__ import annotations

from cubejit.tune.decision import CandidateTimes, Decision, Outcome
from cubejit.tune.keys import anchor
from cubejit.tune.tuner import Tunable, Tuner

__all__ = ["CandidateTimes", "Decision", "Outcome", "Tunable", "Tuner", "anchor"]
