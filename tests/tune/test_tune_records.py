"""Tuning sessions in the records of the environment they tuned into."""

from __future__ import annotations

import numpy as np
from tune_kernels import plus_one_tuner

import cubejit as cj
from cubejit import config
from cubejit.tune import records


def test_each_key_tuned_is_recorded_with_what_was_timed_and_for_how_long():
    client = cj.client("cpu")
    tuner = plus_one_tuner("recorded")
    tuner.launch(client, np.random.default_rng(0).random(500, dtype=np.float32))
    tuner.launch(client, np.random.default_rng(1).random(510, dtype=np.float32))
    (tuning,) = [r for r in records.read() if r.tuner == "recorded"]
    decision = tuner.decision(np.empty(500, np.float32))
    assert (tuning.key, tuning.winner, tuning.timed_runs) == (
        [512],
        decision.winner,
        tuner.timed_runs,
    )
    assert [(c["name"], c["runs"]) for c in tuning.candidates] == [
        (c.name, len(c.times_ns)) for c in decision.candidates
    ]
    assert 0 < tuning.timing_s <= tuning.tuning_s
    assert sum(c["timed_s"] for c in tuning.candidates) <= tuning.timing_s


def test_no_tuning_is_recorded_with_the_record_level_off():
    before = config.settings().record_level
    config.override(record_level="off")
    try:
        plus_one_tuner("unrecorded").launch(cj.client("cpu"), np.ones(20, np.float32))
    finally:
        config.override(record_level=before)
    assert not [r for r in records.read() if r.tuner == "unrecorded"]
