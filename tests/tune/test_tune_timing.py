"""The rules of timing: when a median is known, when a candidate is dropped, what is copied."""

from __future__ import annotations

import itertools

import numpy as np

import cubejit as cj
from cubejit.tune.timing import MIN_RUNS, MIN_RUNS_TO_DROP, copy_argument, measure, median_known


class Replay:
    """A clock that answers the given times in turn, and counts the runs."""

    def __init__(self, times):
        self.times = itertools.cycle(times)
        self.runs = 0

    def time_ns(self, run):
        run()
        self.runs += 1
        return next(self.times)


def test_a_median_is_known_once_its_interval_is_within_five_percent():
    assert not median_known([100] * (MIN_RUNS - 1))
    assert median_known([100] * MIN_RUNS)
    assert not median_known(sorted([100, 200] * 5))
    assert median_known(sorted([99, 100, 101] * 20 + [500, 900]))


def test_steady_runs_stop_at_the_minimum_and_noisy_ones_at_the_budget():
    steady = Replay([1000])
    assert len(measure(steady, lambda: None, 10.0, float("inf")).times_ns) == MIN_RUNS
    noisy = measure(Replay([1000, 3000, 500, 8000]), lambda: None, 0.01, float("inf"))
    assert MIN_RUNS <= len(noisy.times_ns) and not noisy.dropped


def test_a_candidate_whose_best_run_is_slower_than_the_leaders_median_is_dropped():
    measured = measure(Replay([2000, 2100, 2050]), lambda: None, 10.0, leader=1000.0)
    assert measured.dropped
    assert len(measured.times_ns) == MIN_RUNS_TO_DROP


def test_a_numpy_copy_keeps_the_offset_from_a_cache_line_so_the_cpu_variant_is_the_same():
    raw = np.zeros(1000, np.float32)
    for start in (0, 1, 3, 4):
        original = raw[start : start + 100]
        original[:] = np.arange(100)
        copy = copy_argument(cj.client("cpu"), original)
        assert copy is not original
        assert copy.ctypes.data % 64 == original.ctypes.data % 64
        np.testing.assert_array_equal(copy, original)


def test_numbers_are_passed_as_they_are_and_buffers_copied():
    client = cj.client("cpu")
    assert copy_argument(client, 2.5) == 2.5
    buffer = client.to_device(np.arange(10, dtype=np.float32))
    copy = copy_argument(client, buffer)
    assert copy is not buffer and copy.address != buffer.address
    np.testing.assert_array_equal(client.read(copy), client.read(buffer))
