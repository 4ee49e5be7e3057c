"""The CPU's forms over long runs (a reduction over all elements, running sums, histograms)
against numpy: lengths that allow lines of 4, 2 and 1, several levels of partials, several
blocks per row, integers binned by subtraction, and matmul tiles of one unit per cube."""

from __future__ import annotations

import numpy as np
import pytest

import cubejit.std as cs
from cubejit.std import cpu_runs


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("size", [1, 7, 1026, 1000003])
def test_a_sum_over_all_in_runs_matches_numpy(dtype: type, size: int) -> None:
    scale = 0.01 if dtype is np.float16 else 1.0
    x = (scale * np.random.default_rng(size).random(size + 1)).astype(dtype)[1:]
    want = x.astype(np.float64).sum()
    rtol = 1e-3 if dtype is np.float16 else (1e-5 if dtype is np.float32 else 1e-12)
    np.testing.assert_allclose(float(cs.sum(x)), want, rtol=rtol)
    np.testing.assert_allclose(float(cs.mean(x)), want / size, rtol=rtol)


def test_max_and_min_in_runs_let_nans_lose_to_numbers() -> None:
    x = np.random.default_rng(2).standard_normal(300007).astype(np.float32)
    x[::7] = np.nan
    assert cs.max(x) == np.nanmax(x)
    assert cs.min(x) == np.nanmin(x)
    assert np.isnan(cs.max(np.full(9, np.nan, np.float32)))


@pytest.mark.parametrize("exclusive", [False, True])
def test_running_sums_over_several_blocks_of_several_rows_match_numpy(exclusive: bool) -> None:
    x = np.random.default_rng(4).random((3, 2 * cpu_runs.SCAN_BLOCKS[0] + 5)).astype(np.float32)
    scan = cs.exclusive_cumsum if exclusive else cs.cumsum
    for axis in (None, 1):
        want = np.cumsum(x.astype(np.float64), axis=axis)
        if exclusive:
            flat = want.reshape(-1) if axis is None else want
            want = (flat - (x.reshape(-1) if axis is None else x)).reshape(flat.shape)
        np.testing.assert_allclose(scan(x, axis=axis), want, rtol=1e-5, atol=1e-2)


@pytest.mark.parametrize(
    ("dtype", "bins", "lo", "hi"),
    [(np.uint32, 256, 0, 256), (np.int32, 40, -20, 20), (np.int16, 16, 0, 64)],
)
def test_integers_binned_by_subtraction_count_what_numpy_counts(
    dtype: type, bins: int, lo: int, hi: int
) -> None:
    rng = np.random.default_rng(bins)
    x = rng.integers(lo - 5, hi + 5, 200003).astype(dtype)
    x[:3] = hi
    got = cs.histogram(x, bins, (lo, hi))
    want, _ = np.histogram(x, bins, (lo, hi))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("m", "k", "n"), [(1, 1, 1), (9, 5, 7), (33, 70, 96), (70, 33, 130)])
def test_a_matmul_in_tiles_of_one_unit_matches_numpy_for_any_widths(m: int, k: int, n: int) -> None:
    rng = np.random.default_rng(m * n)
    a = rng.standard_normal((k, m)).astype(np.float32).T
    b = rng.standard_normal((k, n + 3)).astype(np.float32)[:, 2 : n + 2]
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(cs.matmul(a, b), want, rtol=1e-4, atol=1e-4)
    wide = cs.matmul(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(wide, want, rtol=1e-12, atol=1e-12)
