"""One meaning for every operation (README.md, "One meaning for every operation"): run-time
code on the CPU, constants folded by the frontend and numpy give the same answers, IEEE ones
for floats (NaN, infinities, signed zeros), numpy's for integer shifts, ``//``, ``%`` and
overflow, saturation for float-to-integer conversions."""

from __future__ import annotations

import numpy as np
import pytest
from meaning_kernels import (
    CONVERSION_VALUES,
    EXACT_FLOAT_OPS,
    FLOAT_OPS,
    FLOAT_PAIRS,
    HALF_FACTOR,
    INT_OPS,
    INT_PAIRS,
    conversion_reference,
    convert,
    float_ops_f32,
    float_ops_f64,
    folded_convert,
    folded_f32,
    folded_f64,
    folded_i32,
    half_scale,
    int_ops_i8,
    int_ops_i32,
    int_ops_i64,
    int_ops_u32,
    int_reference,
    thirds,
)

from cubejit.backends.cpu.client import CpuClient


def assert_same_floats(got: np.ndarray, want: np.ndarray, exact_columns: int, width: int) -> None:
    """Bit for bit in the first ``exact_columns`` of each row of ``width`` (NaN matching any
    NaN), within a few ulps in the others (NaN, infinities and zeros' signs still exact)."""
    got, want = got.reshape(-1, width), want.reshape(-1, width)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    numbers = ~np.isnan(want)
    exact = numbers.copy()
    exact[:, exact_columns:] = False
    assert np.array_equal(np.signbit(got[exact]), np.signbit(want[exact]))
    np.testing.assert_array_equal(got[exact], want[exact])
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    close = numbers & ~exact & ~np.isinf(want)
    np.testing.assert_allclose(got[close], want[close], rtol=8 * np.finfo(got.dtype).eps)


@pytest.mark.parametrize(
    ("dtype", "runtime", "folded"),
    [(np.float32, float_ops_f32, folded_f32), (np.float64, float_ops_f64, folded_f64)],
    ids=["f32", "f64"],
)
def test_folded_float_constants_equal_the_run_time_results_nan_infinity_and_signed_zero_included(
    cpu: CpuClient, dtype: type, runtime, folded
) -> None:
    a = np.array([p[0] for p in FLOAT_PAIRS], dtype)
    b = np.array([p[1] for p in FLOAT_PAIRS], dtype)
    at_run_time = np.zeros(a.size * FLOAT_OPS, dtype)
    runtime.launch(cpu, 1, 64, a, b, at_run_time)
    constant = np.zeros_like(at_run_time)
    folded.launch(cpu, 1, 1, constant)
    assert_same_floats(constant, at_run_time, EXACT_FLOAT_OPS, FLOAT_OPS)
    rows = at_run_time.reshape(-1, FLOAT_OPS)
    zero, one, eight, nan_row = 0, 1, 3, 6
    assert rows[zero, 16] == -np.inf and np.isnan(rows[zero, 3])
    assert np.isnan(rows[one, 4]) and rows[one, 17] == np.inf
    assert rows[2, 5] == 0.0 and np.signbit(rows[2, 5])
    assert np.isnan(rows[eight, 18])
    assert rows[nan_row, 11] == 1.0 and rows[nan_row, 12] == 1.0
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(rows[:, 0], a + b)
        np.testing.assert_array_equal(rows[:, 3], a / b)
        np.testing.assert_array_equal(rows[:, 8], np.rint(a))
        np.testing.assert_array_equal(rows[:, 11], np.fmin(a, b))


def test_a_folded_float_is_computed_in_the_type_it_is_stored_as(cpu: CpuClient) -> None:
    out64, out32, out16 = np.zeros(1), np.zeros(1, np.float32), np.zeros(1, np.float16)
    thirds.launch(cpu, 1, 1, out64, out32, out16)
    assert out64[0] == 1.0 / 3.0
    assert out32[0] == np.float32(1.0) / np.float32(3.0)
    assert out16[0] == np.float16(1.0) / np.float16(3.0)


def test_an_f16_literal_is_rounded_once_from_its_exact_value(cpu: CpuClient) -> None:
    x = np.ones(7, np.float16)
    out = np.zeros_like(x)
    half_scale.launch(cpu, 1, 64, x, out)
    assert np.float16(HALF_FACTOR) == np.float16(1.0009765625)
    np.testing.assert_array_equal(out, np.full(7, 1.0009765625, np.float16))


@pytest.mark.parametrize(
    ("dtype", "kernel"),
    [
        (np.int8, int_ops_i8),
        (np.int32, int_ops_i32),
        (np.uint32, int_ops_u32),
        (np.int64, int_ops_i64),
    ],
    ids=["i8", "i32", "u32", "i64"],
)
def test_integer_shifts_division_by_zero_and_overflow_follow_numpy(
    cpu: CpuClient, dtype: type, kernel
) -> None:
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, 300, dtype=dtype, endpoint=True)
    b = rng.integers(-3 if info.min else 0, info.bits + 8, 300).astype(dtype)
    b[:40] = rng.integers(info.min, info.max, 40, dtype=dtype, endpoint=True)
    b[40:60] = 0
    a[60:70], b[60:70] = info.min, -1 if info.min else 1
    out = np.zeros(a.size * INT_OPS, dtype)
    kernel.launch(cpu, cj_cdiv(a.size, 64), 64, a, b, out)
    np.testing.assert_array_equal(out, int_reference(a, b))


def test_folded_integer_constants_equal_the_run_time_results(cpu: CpuClient) -> None:
    a = np.array([p[0] for p in INT_PAIRS], np.int32)
    b = np.array([p[1] for p in INT_PAIRS], np.int32)
    at_run_time = np.zeros(a.size * INT_OPS, np.int32)
    int_ops_i32.launch(cpu, 1, 64, a, b, at_run_time)
    constant = np.zeros_like(at_run_time)
    folded_i32.launch(cpu, 1, 1, constant)
    np.testing.assert_array_equal(constant, at_run_time)
    np.testing.assert_array_equal(at_run_time, int_reference(a, b))


def test_float_to_integer_conversions_saturate_and_send_nan_to_zero_when_folded_too(
    cpu: CpuClient,
) -> None:
    x = np.array(CONVERSION_VALUES, np.float32)
    signed, unsigned = np.zeros(x.size * 4, np.int64), np.zeros(x.size * 4, np.uint64)
    convert.launch(cpu, 1, 64, x, signed, unsigned)
    want_signed, want_unsigned = conversion_reference(x)
    np.testing.assert_array_equal(signed, want_signed)
    np.testing.assert_array_equal(unsigned, want_unsigned)
    folded_signed, folded_unsigned = np.zeros_like(signed), np.zeros_like(unsigned)
    folded_convert.launch(cpu, 1, 1, folded_signed, folded_unsigned)
    np.testing.assert_array_equal(folded_signed, signed)
    np.testing.assert_array_equal(folded_unsigned, unsigned)


def cj_cdiv(n: int, d: int) -> int:
    return -(-n // d)
