"""softmax and layer_norm against numpy on rows of awkward lengths (both the one-pass and the
two-pass forms), strided views, -inf and NaN, on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from std_devices import Device

import cubejit.std as cs
from cubejit.errors import LaunchError

TOLERANCE = {np.float16: 4e-3, np.float32: 2e-6, np.float64: 1e-13}


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    wide = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(wide - wide.max(axis, keepdims=True))
        return e / e.sum(axis, keepdims=True)


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    wide = x.astype(np.float64)
    mean = wide.mean(-1, keepdims=True)
    return (wide - mean) / np.sqrt(wide.var(-1, keepdims=True) + eps) * w + b


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("row", [1, 33, 1025])
def test_softmax_of_rows_matches_numpy(device: Device, dtype: type, row: int) -> None:
    x = (3 * np.random.default_rng(row).standard_normal((6, row))).astype(dtype)
    got = device.get(cs.softmax(device.put(x)))
    assert got.dtype == x.dtype
    np.testing.assert_allclose(got, _softmax(x), rtol=0, atol=TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("row", [1, 33, 1025])
def test_layer_norm_of_rows_matches_numpy(device: Device, dtype: type, row: int) -> None:
    rng = np.random.default_rng(row)
    x = (2 + rng.standard_normal((6, row))).astype(dtype)
    w = rng.standard_normal(row).astype(dtype)
    b = rng.standard_normal(row).astype(dtype)
    got = device.get(cs.layer_norm(device.put(x), device.put(w), device.put(b), 1e-5))
    expected = _layer_norm(x, w.astype(np.float64), b.astype(np.float64), 1e-5)
    tol = 200 * TOLERANCE[dtype] if dtype is not np.float64 else 1e-10
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=tol, atol=tol)


def test_rows_of_8193_take_the_two_pass_form_and_match_numpy(device: Device) -> None:
    rng = np.random.default_rng(8193)
    x = (4 * rng.standard_normal((3, 8193))).astype(np.float32)
    x[1, 100] = -np.inf
    w = rng.standard_normal(8193).astype(np.float32)
    b = rng.standard_normal(8193).astype(np.float32)
    np.testing.assert_allclose(
        device.get(cs.softmax(device.put(x[[0, 2]]))), _softmax(x[[0, 2]]), atol=1e-7
    )
    got = device.get(cs.softmax(device.put(x)))
    assert got[1, 100] == 0.0
    np.testing.assert_allclose(got, _softmax(x), rtol=0, atol=1e-7)
    y = x[[0, 2]]
    np.testing.assert_allclose(
        device.get(cs.layer_norm(device.put(y), device.put(w), device.put(b))),
        _layer_norm(y, w, b, 1e-5),
        rtol=1e-4,
        atol=1e-4,
    )


@pytest.mark.parametrize("row", [40, 9000])
def test_softmax_of_infinities_and_nans_follows_numpys_formula(device: Device, row: int) -> None:
    check_softmax_of_infinities_and_nans(device, row)


def check_softmax_of_infinities_and_nans(device: Device, row: int) -> None:
    """Rows of ``row`` elements holding -inf (softmax 0 there), only -inf, or a NaN (NaN)."""
    x = np.random.default_rng(row).standard_normal((4, row)).astype(np.float32)
    x[0, 3] = -np.inf
    x[1, :] = -np.inf
    x[2, 5] = np.nan
    got = device.get(cs.softmax(device.put(x)))
    assert got[0, 3] == 0.0
    assert np.isnan(got[1]).all() and np.isnan(got[2]).all()
    np.testing.assert_allclose(got[[0, 3]], _softmax(x[[0, 3]]), rtol=0, atol=1e-7)


def test_softmax_and_layer_norm_read_transposed_and_sliced_inputs(device: Device) -> None:
    base = np.random.default_rng(2).standard_normal((50, 9, 8)).astype(np.float32)
    x = base.transpose(1, 2, 0)[::2, 1:, 3:]
    np.testing.assert_allclose(device.get(cs.softmax(device.put(x))), _softmax(x), atol=1e-7)
    np.testing.assert_allclose(
        device.get(cs.softmax(device.put(x), axis=0)), _softmax(x, axis=0), atol=1e-7
    )
    ones, zeros = np.ones(47, np.float32), np.zeros(47, np.float32)
    np.testing.assert_allclose(
        device.get(cs.layer_norm(device.put(x))), _layer_norm(x, ones, zeros, 1e-5), atol=2e-5
    )


def test_softmax_writes_into_out_and_layer_norm_checks_its_weight() -> None:
    x = np.random.default_rng(3).standard_normal((5, 12)).astype(np.float32)
    out = np.empty((5, 12), np.float32)
    assert cs.softmax(x, out=out) is out
    np.testing.assert_allclose(out, _softmax(x), atol=1e-7)
    with pytest.raises(LaunchError, match=r"weight has shape \(11,\), expected \(12,\)"):
        cs.layer_norm(x, np.ones(11, np.float32))
