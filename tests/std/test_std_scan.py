"""cumsum and exclusive_cumsum against numpy on awkward lengths (one block and many), along each
axis of strided views and over all elements, on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from std_devices import Device

import cubejit.std as cs
from cubejit.errors import LaunchError
from cubejit.std import scan
from cubejit.std.lined_scan import LinedScan

EPS = {np.float32: 1.2e-7, np.float16: 1e-3, np.float64: 2.3e-16}


def _check(got: np.ndarray, x: np.ndarray, axis: int | None, exclusive: bool) -> None:
    wide = x.astype(np.float64)
    expected = np.cumsum(wide, axis=axis)
    bound = np.cumsum(np.abs(wide), axis=axis)
    if exclusive:
        expected = expected - (wide.ravel() if axis is None else wide)
    assert got.dtype == x.dtype and got.shape == expected.shape
    terms = np.sqrt(np.cumsum(np.ones_like(wide), axis=axis))
    assert np.all(np.abs(got - expected) <= 4 * EPS[x.dtype.type] * terms * (bound + 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("n", [1, 7, 4099])
@pytest.mark.parametrize("exclusive", [False, True])
def test_a_scan_of_a_vector_matches_numpy(
    device: Device, dtype: type, n: int, exclusive: bool
) -> None:
    x = np.random.default_rng(n).random(n).astype(dtype)
    scan = cs.exclusive_cumsum if exclusive else cs.cumsum
    _check(device.get(scan(device.put(x))), x, None, exclusive)


@pytest.mark.parametrize("exclusive", [False, True])
def test_a_scan_of_a_million_and_three_elements_spans_many_blocks(
    device: Device, exclusive: bool
) -> None:
    x = np.random.default_rng(3).standard_normal(1_000_003).astype(np.float32)
    scan = cs.exclusive_cumsum if exclusive else cs.cumsum
    got = device.get(scan(device.put(x)))
    _check(got, x, None, exclusive)
    if exclusive:
        assert got[0] == 0.0


@pytest.mark.parametrize("axis", [0, 1, 2, None])
def test_a_scan_along_each_axis_of_a_strided_view_matches_numpy(
    device: Device, axis: int | None
) -> None:
    base = np.random.default_rng(4).standard_normal((5, 33, 20000)).astype(np.float32)
    x = base.transpose(2, 0, 1)[::3, :, 1:]
    _check(device.get(cs.cumsum(device.put(x), axis=axis)), x, axis, False)
    _check(device.get(cs.exclusive_cumsum(device.put(x), axis=axis)), x, axis, True)


def test_a_scan_writes_into_out_and_checks_its_shape() -> None:
    x = np.random.default_rng(5).random((4, 9)).astype(np.float32)
    out = np.empty((4, 9), np.float32)
    assert cs.cumsum(x, axis=1, out=out) is out
    np.testing.assert_allclose(out, np.cumsum(x, axis=1), rtol=1e-6)
    with pytest.raises(LaunchError, match="out has shape"):
        cs.cumsum(x, out=out)


@pytest.mark.parametrize("single_pass", [False, True], ids=["reduce-then-scan", "look-back"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_the_lined_forms_cuda_scans_with_match_numpy_in_small_cubes(
    monkeypatch: pytest.MonkeyPatch, device: Device, dtype: type, single_pass: bool
) -> None:
    units = 4 if device.backend == "cpu" else 64
    form = LinedScan(units=units, lines=2, rounds=3, single_pass=single_pass)
    monkeypatch.setitem(scan.LINED, device.backend, (form,))
    for n in (1, 7, 4099, 100_003):
        x = np.random.default_rng(n).standard_normal(n).astype(dtype)
        _check(device.get(cs.cumsum(device.put(x))), x, None, False)
        _check(device.get(cs.exclusive_cumsum(device.put(x))), x, None, True)
    base = np.random.default_rng(6).standard_normal((5, 33, 2000)).astype(dtype)
    x = base.transpose(2, 0, 1)[::3, :, 1:]
    for axis in (0, 1, 2, None):
        _check(device.get(cs.cumsum(device.put(x), axis=axis)), x, axis, False)
        _check(device.get(cs.exclusive_cumsum(device.put(x), axis=axis)), x, axis, True)
