"""The lined forms (the CUDA launch's for contiguous data: 16-byte lines, rows kept in
registers, a bounded grid-stride sum) against numpy, on the CPU with those forms chosen as CUDA
chooses them, and on CUDA itself: awkward lengths, unaligned and sliced rows, -inf and NaN."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator

import numpy as np
import pytest
from std_devices import Device
from test_std_reductions import _check
from test_std_rows import TOLERANCE, _layer_norm, _softmax, check_softmax_of_infinities_and_nans

import cubejit as cj
import cubejit.std as cs
from cubejit.std import lined_rows, reductions, rows
from cubejit.std.views import operand


@pytest.fixture(autouse=True)
def lined(device: Device, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The lined forms on the CPU too, with small cubes so that a test's arrays span many."""
    monkeypatch.setitem(lined_rows.LINED, "cpu", True)
    monkeypatch.setitem(reductions.LINES, "cpu", ((64, 3, 2),))
    yield


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("row", [1, 33, 1024, 1025, 4100, 8192])
def test_softmax_and_layer_norm_of_contiguous_rows_in_lines_match_numpy(
    device: Device, dtype: type, row: int
) -> None:
    rng = np.random.default_rng(row)
    x = (3 * rng.standard_normal((5, row))).astype(dtype)
    w = rng.standard_normal(row).astype(dtype)
    b = rng.standard_normal(row).astype(dtype)
    got = device.get(cs.softmax(device.put(x)))
    np.testing.assert_allclose(got, _softmax(x), rtol=0, atol=TOLERANCE[dtype])
    got = device.get(cs.layer_norm(device.put(x), device.put(w), device.put(b), 1e-5))
    expected = _layer_norm(x, w.astype(np.float64), b.astype(np.float64), 1e-5)
    tol = 200 * TOLERANCE[dtype] if dtype is not np.float64 else 1e-10
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=tol, atol=tol)


def test_rows_of_aligned_contiguous_floats_take_16_byte_lines_and_strided_rows_do_not() -> None:
    def lined(x: np.ndarray, n: int, outer: tuple[int, ...], step: int = 1) -> object:
        op = operand(x)
        return rows._lined("softmax", cj.f32, n, [(op, outer), (op, outer)], [step, step])

    x = np.zeros((4, 1028), np.float32)
    assert x.ctypes.data % 16 == 0
    assert lined(x[:, :1024], 1024, (0, 1028)) == 4
    assert lined(x[:, 2:1026], 1024, (0, 1028)) == 2
    assert lined(x[:, :1024], 1024, (0, 1026)) == 2
    assert lined(x[:, 1:], 1027, (0, 1028)) == 1
    assert lined(x.T, 4, (0, 1), 1028) is None
    assert lined(np.zeros((1, 32768), np.float32), 32768, (0, 0)) == 4
    assert lined(np.zeros((1, 32772), np.float32), 32772, (0, 0)) is None


def test_sliced_and_unaligned_rows_in_lines_match_numpy(device: Device) -> None:
    rng = np.random.default_rng(7)
    base = rng.standard_normal((6, 2051)).astype(np.float32)
    for x in (base[:, 1:], base[:, 3:1027], base[::2, :1024], base[1:4, 2:34]):
        np.testing.assert_allclose(
            device.get(cs.softmax(device.put(x))), _softmax(x), rtol=0, atol=2e-6
        )
        n = x.shape[-1]
        w, b = base[0, :n].copy(), base[1, 1 : n + 1].copy()
        np.testing.assert_allclose(
            device.get(cs.layer_norm(device.put(x), device.put(w), device.put(b))),
            _layer_norm(x, w, b, 1e-5),
            rtol=2e-4,
            atol=2e-4,
        )


def test_softmax_in_lines_of_rows_with_infinities_and_nans_follows_numpys_formula(
    device: Device,
) -> None:
    check_softmax_of_infinities_and_nans(device, 1028)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("what", ["sum", "max", "min", "mean"])
@pytest.mark.parametrize("n", [65, 1000, 1000003])
def test_a_reduction_over_every_contiguous_element_in_lines_matches_numpy(
    device: Device, what: str, dtype: type, n: int
) -> None:
    x = np.random.default_rng(n).standard_normal(n).astype(dtype)
    _check(device, what, x, None)


def test_a_reduction_in_lines_of_an_unaligned_slice_and_of_nans_matches_numpy(
    device: Device,
) -> None:
    x = np.random.default_rng(9).standard_normal(200003).astype(np.float32)
    for what in ("sum", "max", "min", "mean"):
        _check(device, what, x[1:], None)
        _check(device, what, x[3:100003].reshape(1000, 100), None)
    y = x.copy()
    y[::7] = np.nan
    _check(device, "max", y, None)
    _check(device, "min", y, None)
    assert np.isnan(device.get(cs.sum(device.put(y))))
    y[:] = np.nan
    assert np.isnan(device.get(cs.max(device.put(y))))


def test_sums_from_several_threads_on_one_client_each_get_their_own_total(
    device: Device,
) -> None:
    rng = np.random.default_rng(11)
    arrays = [rng.standard_normal(300007).astype(np.float32) + k for k in range(4)]
    placed = [device.put(x) for x in arrays]

    def total(k: int) -> list[float]:
        return [np.asarray(device.get(cs.sum(placed[k]))).item() for _ in range(5)]

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(total, range(4)))
    for x, got in zip(arrays, results, strict=True):
        expected = x.astype(np.float64).sum()
        assert all(abs(g - expected) <= 1e-4 * np.abs(x).sum() for g in got)
