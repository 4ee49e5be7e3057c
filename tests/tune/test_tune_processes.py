"""Decisions outlive the process that tuned them: a later process reads them and tunes
nothing."""

from __future__ import annotations

from tune_hosts import run_hosts


def test_a_second_process_runs_zero_tuning_timings(tmp_path):
    sizes = [100, 1000]
    (first,) = run_hosts(tmp_path, 1, sizes, url=None)
    assert first["right"]
    assert first["timed_runs"] > 0
    assert first["tuned"] == [128, 1024]

    (second,) = run_hosts(tmp_path, 1, sizes, url=None)
    assert second["right"]
    assert second["timed_runs"] == 0
    assert second["tuned"] == []
    assert second["winners"] == first["winners"]
