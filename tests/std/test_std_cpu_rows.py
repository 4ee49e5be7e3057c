"""The CPU's form of softmax and layer_norm (one unit per cube walking its row in lines) against
numpy: rows whose lengths allow lines of 4, 2 and 1, rows not aligned to a line, and rows too
long for one block of the sum."""

from __future__ import annotations

import numpy as np
import pytest

import cubejit.std as cs
from cubejit.ir.types import f32
from cubejit.std import cpu_rows


def _softmax(x: np.ndarray) -> np.ndarray:
    wide = x.astype(np.float64)
    e = np.exp(wide - wide.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("row", [1, 7, 34, 1024, 20000])
def test_softmax_walking_rows_matches_numpy(dtype: type, row: int) -> None:
    x = (4 * np.random.default_rng(row).standard_normal((5, row))).astype(dtype)
    got = cs.softmax(x)
    atol = 1e-7 if dtype is np.float32 else 1e-15
    np.testing.assert_allclose(got, _softmax(x), rtol=1e-5, atol=atol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("row", [1, 7, 34, 1024, 20000])
def test_layer_norm_walking_rows_matches_numpy(dtype: type, row: int) -> None:
    rng = np.random.default_rng(row)
    x = (3 + rng.standard_normal((5, row))).astype(dtype)
    w, b = rng.standard_normal(row).astype(dtype), rng.standard_normal(row).astype(dtype)
    wide = x.astype(np.float64)
    mean = wide.mean(-1, keepdims=True)
    want = (wide - mean) / np.sqrt(wide.var(-1, keepdims=True) + 1e-5) * w + b
    tol = 1e-4 if dtype is np.float32 else 1e-10
    np.testing.assert_allclose(cs.layer_norm(x, w, b, 1e-5), want, rtol=tol, atol=tol)


def test_rows_starting_off_a_line_boundary_are_walked_one_element_a_line() -> None:
    x = np.random.default_rng(3).standard_normal((4, 65)).astype(np.float32)
    rows = x[:, 1:]
    view = np.lib.stride_tricks.as_strided(rows, (1, 4, 64), (0, *rows.strides))
    assert cpu_rows.lanes_of(f32, view) == 1
    np.testing.assert_allclose(cs.softmax(rows), _softmax(rows), rtol=1e-5, atol=1e-7)


def test_a_row_with_minus_infinity_and_a_row_of_it_walk_as_numpys_formula() -> None:
    x = np.random.default_rng(5).standard_normal((3, 64)).astype(np.float32)
    x[0, 3] = -np.inf
    x[1] = -np.inf
    x[2, 9] = np.nan
    got = cs.softmax(x)
    assert got[0, 3] == 0.0
    np.testing.assert_allclose(got[0], _softmax(x[:1])[0], rtol=1e-5, atol=1e-7)
    assert np.isnan(got[1]).all() and np.isnan(got[2]).all()
