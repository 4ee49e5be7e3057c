"""sum, max, min and mean against numpy on random inputs of awkward shapes, strided views, NaN and
infinities, on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from std_devices import Device

import cubejit.std as cs
from cubejit.errors import LaunchError

FLOATS = [np.float32, np.float16, np.float64]
PEERS = {"sum": np.sum, "max": np.fmax.reduce, "min": np.fmin.reduce, "mean": np.mean}


def _tolerance(dtype: type) -> float:
    return {np.float16: 2e-2, np.float32: 2e-5, np.float64: 1e-12}[dtype]


def _expect(what: str, x: np.ndarray, axis: int | None) -> np.ndarray:
    wide = x.astype(np.float64)
    if what in ("max", "min"):
        return PEERS[what](wide.ravel() if axis is None else wide, axis=0 if axis is None else axis)
    return PEERS[what](wide, axis=axis)


def _check(device: Device, what: str, x: np.ndarray, axis: int | None) -> None:
    got = device.get(getattr(cs, what)(device.put(x), axis=axis))
    expected = _expect(what, x, axis)
    tol = _tolerance(x.dtype.type)
    magnitude = np.abs(x.astype(np.float64))
    scale = {"sum": magnitude.sum(axis=axis), "mean": magnitude.mean(axis=axis)}.get(
        what, np.abs(expected)
    )
    assert got.dtype == x.dtype
    error = np.abs(got.reshape(np.shape(expected)).astype(np.float64) - expected)
    assert np.all(error <= tol * (1 + scale))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("what", ["sum", "max", "min", "mean"])
@pytest.mark.parametrize("n", [1, 7, 4099])
def test_a_reduction_over_every_element_matches_numpy(
    device: Device, what: str, dtype: type, n: int
) -> None:
    x = np.random.default_rng(n).standard_normal(n).astype(dtype)
    _check(device, what, x, None)


@pytest.mark.parametrize("what", ["sum", "max", "min", "mean"])
def test_a_reduction_of_a_million_and_three_elements_matches_numpy(
    device: Device, what: str
) -> None:
    x = np.random.default_rng(3).random(1_000_003, dtype=np.float32)
    _check(device, what, x, None)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("what", ["sum", "max", "mean"])
@pytest.mark.parametrize("row", [1, 33, 1025])
def test_a_reduction_along_rows_matches_numpy(
    device: Device, what: str, dtype: type, row: int
) -> None:
    x = np.random.default_rng(row).standard_normal((5, row)).astype(dtype)
    _check(device, what, x, 1)
    _check(device, what, x, 0)


@pytest.mark.parametrize("what", ["sum", "min"])
def test_a_reduction_of_rows_of_8193_matches_numpy(device: Device, what: str) -> None:
    x = np.random.default_rng(8193).standard_normal((3, 8193)).astype(np.float32)
    _check(device, what, x, -1)


@pytest.mark.parametrize("axis", [0, 1, 2, None])
def test_a_reduction_reads_transposed_and_sliced_inputs_in_place(
    device: Device, axis: int | None
) -> None:
    base = np.random.default_rng(1).standard_normal((9, 14, 33)).astype(np.float32)
    x = base.transpose(2, 0, 1)[::2, 1:, ::3]
    for what in ("sum", "max", "mean"):
        _check(device, what, x, axis)


def test_max_and_min_skip_nans_and_keep_infinities(device: Device) -> None:
    x = np.random.default_rng(5).standard_normal((4, 50)).astype(np.float32)
    x[0, 3] = np.nan
    x[1, :] = np.nan
    x[2, 7] = np.inf
    x[3, 9] = -np.inf
    got_max = device.get(cs.max(device.put(x), axis=1))
    got_min = device.get(cs.min(device.put(x), axis=1))
    np.testing.assert_array_equal(got_max, np.fmax.reduce(x, axis=1))
    np.testing.assert_array_equal(got_min, np.fmin.reduce(x, axis=1))
    assert np.isnan(got_max[1]) and got_max[2] == np.inf and got_min[3] == -np.inf


def test_a_sum_with_a_nan_is_nan(device: Device) -> None:
    x = np.random.default_rng(6).standard_normal(100).astype(np.float32)
    x[17] = np.nan
    assert np.isnan(device.get(cs.sum(device.put(x))))


def test_a_reduction_writes_into_out_and_returns_it() -> None:
    x = np.random.default_rng(7).standard_normal((6, 40)).astype(np.float32)
    out = np.full(6, 99.0, np.float32)
    assert cs.sum(x, axis=1, out=out) is out
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5)


def test_out_of_another_shape_or_type_and_integer_inputs_are_refused() -> None:
    x = np.ones((6, 4), np.float32)
    with pytest.raises(LaunchError, match="out has shape"):
        cs.sum(x, axis=1, out=np.empty(4, np.float32))
    with pytest.raises(LaunchError, match="out holds f64"):
        cs.sum(x, axis=1, out=np.empty(6, np.float64))
    with pytest.raises(LaunchError, match="floating-point"):
        cs.sum(np.ones(3, np.int32))
    with pytest.raises(LaunchError, match="axis 2 is out of range"):
        cs.max(x, axis=2)
