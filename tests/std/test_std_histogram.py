"""histogram against numpy.histogram on random inputs: every element counted in numpy's bin,
elements outside the range and NaNs left out, shared-memory and global counting, on every
backend."""

from __future__ import annotations

import numpy as np
import pytest
from std_devices import Device

import cubejit.std as cs
from cubejit.errors import LaunchError
from cubejit.std import histograms, integer_bins
from cubejit.std.integer_bins import CONFIG, IntegerBins
from cubejit.std.views import operand


def _numpy(x: np.ndarray, bins: int, range_: tuple[float, float] | None) -> np.ndarray:
    wide = x.astype(np.float32) if x.dtype == np.float16 else x
    return np.histogram(wide, bins, range_)[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("n", [1, 7, 4099])
@pytest.mark.parametrize(("bins", "range_"), [(7, None), (256, (-2.0, 2.0))])
def test_histogram_counts_what_numpy_counts(
    device: Device, dtype: type, n: int, bins: int, range_: tuple[float, float] | None
) -> None:
    x = np.random.default_rng(n).standard_normal(n).astype(dtype)
    got = device.get(cs.histogram(device.put(x), bins, range_))
    np.testing.assert_array_equal(got, _numpy(x, bins, range_))


@pytest.mark.parametrize(("bins", "range_"), [(256, None), (6000, (-3.0, 3.5))])
def test_histogram_of_a_million_and_three_elements_counts_what_numpy_counts(
    device: Device, bins: int, range_: tuple[float, float] | None
) -> None:
    x = np.random.default_rng(3).standard_normal(1_000_003).astype(np.float32)
    got = device.get(cs.histogram(device.put(x), bins, range_))
    np.testing.assert_array_equal(got, _numpy(x, bins, range_))


def test_histogram_of_integers_is_bincount(device: Device) -> None:
    x = np.random.default_rng(4).integers(0, 256, 70_001).astype(np.uint32)
    got = device.get(cs.histogram(device.put(x), 256, (0, 256)))
    np.testing.assert_array_equal(got, np.bincount(x, minlength=256))


def test_histogram_leaves_out_nans_and_elements_past_the_range(device: Device) -> None:
    x = np.random.default_rng(5).standard_normal(5000).astype(np.float32)
    x[::7] = np.nan
    x[1::11] = np.inf
    x[2::13] = -np.inf
    x[3] = 1.0
    got = device.get(cs.histogram(device.put(x), 10, (-1.0, 1.0)))
    np.testing.assert_array_equal(got, np.histogram(x[~np.isnan(x)], 10, (-1.0, 1.0))[0])


def test_histogram_reads_transposed_and_sliced_inputs(device: Device) -> None:
    x = np.random.default_rng(6).standard_normal((40, 30, 5)).astype(np.float32)
    view = x.transpose(1, 2, 0)[::3, 1:, 2:]
    got = device.get(cs.histogram(device.put(view), 16, (-2.0, 2.0)))
    np.testing.assert_array_equal(got, np.histogram(view, 16, (-2.0, 2.0))[0])


def test_histogram_writes_into_out_and_refuses_bad_arguments() -> None:
    x = np.random.default_rng(7).random(1000).astype(np.float32)
    out = np.full(4, 77, np.int64)
    assert cs.histogram(x, 4, (0.0, 1.0), out=out) is out
    np.testing.assert_array_equal(out, np.histogram(x, 4, (0.0, 1.0))[0])
    with pytest.raises(LaunchError, match="bins is a whole number"):
        cs.histogram(x, 0)
    with pytest.raises(LaunchError, match="not a finite interval"):
        cs.histogram(x, 4, (1.0, 0.0))
    with pytest.raises(LaunchError, match="integers needs range"):
        cs.histogram(np.arange(5, dtype=np.int32), 4)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int8, np.uint16])
@pytest.mark.parametrize("n", [1, 7, 70_003])
def test_the_integer_form_cuda_counts_with_matches_numpy_on_a_small_grid(
    monkeypatch: pytest.MonkeyPatch, device: Device, dtype: type, n: int
) -> None:
    units = 8 if device.backend == "cpu" else 64
    form = IntegerBins(units=units, lines=2, copies=3, cubes=5)
    monkeypatch.setitem(histograms.INTEGER_BINS, device.backend, (form,))
    info = np.iinfo(dtype)
    x = np.random.default_rng(n).integers(info.min, info.max, n, endpoint=True).astype(dtype)
    lo = -40 if info.min < 0 else 3
    x[: min(n, 4)] = np.array([lo, lo + 100, lo - 1, lo + 101][: min(n, 4)]).astype(dtype)
    narrow = (x.astype(np.int64) % 150 + lo).astype(dtype)
    for values in (x, narrow, narrow.reshape(-1, 1)[::1]):
        got = device.get(cs.histogram(device.put(values), 100, (lo, lo + 100)))
        np.testing.assert_array_equal(got, np.histogram(values, 100, (lo, lo + 100))[0])
    assert integer_bins.applies(operand(narrow), 100, float(lo), float(lo + 100), CONFIG)
    if n > 1:
        assert not integer_bins.applies(operand(narrow[::2]), 100, float(lo), lo + 100.0, CONFIG)
    assert not integer_bins.applies(operand(narrow), 100, lo + 0.5, lo + 100.5, CONFIG)
