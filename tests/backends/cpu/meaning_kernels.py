"""One meaning for every operation: the same operations written once (``@cj.function``), run
with run-time operands and with constants the frontend folds, for the values where C, CUDA,
Python and numpy could disagree. ``tests/backends/cuda/test_cuda_porter.py`` imports this file
by its path to lower (and on a GPU run) the same kernels."""

from __future__ import annotations

import math

import numpy as np

import cubejit as cj

NAN = math.nan
INF = math.inf

FLOAT_PAIRS = [
    (0.0, 0.0),
    (-1.0, 1000.0),
    (-0.5, 2.0),
    (-8.0, 0.5),
    (1.0, 3.0),
    (0.1, 0.2),
    (NAN, 1.0),
    (1.0, NAN),
    (2.5, -0.0),
    (1e30, 1e30),
    (-7.25, 2.0),
    (5e-39, 3.0),
]
FLOAT_OPS = 22
EXACT_FLOAT_OPS = 16
"""The first ops are correctly rounded (IEEE) or exact, so every backend and folding agree to
the bit; the others are libm's, within a few ulps of each other."""


@cj.function
def float_ops(out, base, a, b):
    out[base + 0] = a + b
    out[base + 1] = a - b
    out[base + 2] = a * b
    out[base + 3] = a / b
    out[base + 4] = cj.sqrt(a)
    out[base + 5] = cj.ceil(a)
    out[base + 6] = cj.floor(a)
    out[base + 7] = cj.trunc(a)
    out[base + 8] = cj.round(a)
    out[base + 9] = a // b
    out[base + 10] = a % b
    out[base + 11] = cj.min(a, b)
    out[base + 12] = max(a, b)
    out[base + 13] = cj.fma(a, b, a)
    out[base + 14] = -a
    out[base + 15] = cj.abs(a)
    out[base + 16] = cj.log(a)
    out[base + 17] = cj.exp(b)
    out[base + 18] = cj.pow(a, b)
    out[base + 19] = cj.sin(a)
    out[base + 20] = cj.atan2(a, b)
    out[base + 21] = cj.hypot(a, b)


@cj.kernel
def float_ops_f32(a: cj.Array[cj.f32], b: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < a.len():
        float_ops(out, i * 22, a[i], b[i])


@cj.kernel
def float_ops_f64(a: cj.Array[cj.f64], b: cj.Array[cj.f64], out: cj.Array[cj.f64]):
    i = cj.ABSOLUTE_POS
    if i < a.len():
        float_ops(out, i * 22, a[i], b[i])


@cj.function
def folded_float_ops(out):
    float_ops(out, 0 * 22, 0.0, 0.0)
    float_ops(out, 1 * 22, -1.0, 1000.0)
    float_ops(out, 2 * 22, -0.5, 2.0)
    float_ops(out, 3 * 22, -8.0, 0.5)
    float_ops(out, 4 * 22, 1.0, 3.0)
    float_ops(out, 5 * 22, 0.1, 0.2)
    float_ops(out, 6 * 22, NAN, 1.0)
    float_ops(out, 7 * 22, 1.0, NAN)
    float_ops(out, 8 * 22, 2.5, -0.0)
    float_ops(out, 9 * 22, 1e30, 1e30)
    float_ops(out, 10 * 22, -7.25, 2.0)
    float_ops(out, 11 * 22, 5e-39, 3.0)


@cj.kernel
def folded_f32(out: cj.Array[cj.f32]):
    if cj.ABSOLUTE_POS == 0:
        folded_float_ops(out)


@cj.kernel
def folded_f64(out: cj.Array[cj.f64]):
    if cj.ABSOLUTE_POS == 0:
        folded_float_ops(out)


INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
INT_PAIRS = [
    (7, 0),
    (-7, 0),
    (INT_MIN, -1),
    (INT_MAX, 1),
    (INT_MAX, INT_MAX),
    (-5, 40),
    (5, 32),
    (-1, 31),
    (123456, 3),
    (-123456, 5),
    (3, -2),
    (-3, -2),
]
INT_OPS = 8


@cj.function
def int_ops(out, base, a, b):
    out[base + 0] = a << b
    out[base + 1] = a >> b
    out[base + 2] = a // b
    out[base + 3] = a % b
    out[base + 4] = a + b
    out[base + 5] = a * b
    out[base + 6] = a - b
    out[base + 7] = -a


@cj.kernel
def int_ops_i32(a: cj.Array[cj.i32], b: cj.Array[cj.i32], out: cj.Array[cj.i32]):
    i = cj.ABSOLUTE_POS
    if i < a.len():
        int_ops(out, i * 8, a[i], b[i])


@cj.kernel
def int_ops_i8(a: cj.Array[cj.i8], b: cj.Array[cj.i8], out: cj.Array[cj.i8]):
    i = cj.ABSOLUTE_POS
    if i < a.len():
        int_ops(out, i * 8, a[i], b[i])


@cj.kernel
def int_ops_u32(a: cj.Array[cj.u32], b: cj.Array[cj.u32], out: cj.Array[cj.u32]):
    i = cj.ABSOLUTE_POS
    if i < a.len():
        int_ops(out, i * 8, a[i], b[i])


@cj.kernel
def int_ops_i64(a: cj.Array[cj.i64], b: cj.Array[cj.i64], out: cj.Array[cj.i64]):
    i = cj.ABSOLUTE_POS
    if i < a.len():
        int_ops(out, i * 8, a[i], b[i])


@cj.kernel
def folded_i32(out: cj.Array[cj.i32]):
    if cj.ABSOLUTE_POS == 0:
        int_ops(out, 0 * 8, 7, 0)
        int_ops(out, 1 * 8, -7, 0)
        int_ops(out, 2 * 8, INT_MIN, -1)
        int_ops(out, 3 * 8, INT_MAX, 1)
        int_ops(out, 4 * 8, INT_MAX, INT_MAX)
        int_ops(out, 5 * 8, -5, 40)
        int_ops(out, 6 * 8, 5, 32)
        int_ops(out, 7 * 8, -1, 31)
        int_ops(out, 8 * 8, 123456, 3)
        int_ops(out, 9 * 8, -123456, 5)
        int_ops(out, 10 * 8, 3, -2)
        int_ops(out, 11 * 8, -3, -2)


def int_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy's answers, which the language takes for shifts, ``//``, ``%`` and overflow."""
    with np.errstate(all="ignore"):
        columns = [a << b, a >> b, a // b, a % b, a + b, a * b, a - b, -a]
    return np.stack(columns, axis=1).reshape(-1)


CONVERSION_VALUES = [NAN, INF, -INF, 3e9, -3e9, 255.7, 256.0, -0.9, -1.5, 1e20, 7.99, -2147483904.0]
CONVERSIONS = 4


@cj.function
def conversions(signed, unsigned, base, v):
    signed[base + 0] = cj.i64(cj.i32(v))
    signed[base + 1] = cj.i64(v)
    unsigned[base + 2] = cj.u64(cj.u8(v))
    unsigned[base + 3] = cj.u64(cj.u32(v))


@cj.kernel
def convert(x: cj.Array[cj.f32], signed: cj.Array[cj.i64], unsigned: cj.Array[cj.u64]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        conversions(signed, unsigned, i * 4, x[i])


@cj.kernel
def folded_convert(signed: cj.Array[cj.i64], unsigned: cj.Array[cj.u64]):
    if cj.ABSOLUTE_POS == 0:
        conversions(signed, unsigned, 0 * 4, NAN)
        conversions(signed, unsigned, 1 * 4, INF)
        conversions(signed, unsigned, 2 * 4, -INF)
        conversions(signed, unsigned, 3 * 4, 3e9)
        conversions(signed, unsigned, 4 * 4, -3e9)
        conversions(signed, unsigned, 5 * 4, 255.7)
        conversions(signed, unsigned, 6 * 4, 256.0)
        conversions(signed, unsigned, 7 * 4, -0.9)
        conversions(signed, unsigned, 8 * 4, -1.5)
        conversions(signed, unsigned, 9 * 4, 1e20)
        conversions(signed, unsigned, 10 * 4, 7.99)
        conversions(signed, unsigned, 11 * 4, -2147483904.0)


def saturated(values: np.ndarray, dtype: type) -> np.ndarray:
    """``values`` truncated and clamped to ``dtype``'s range, NaN to 0 (PTX's cvt.rzi.sat)."""
    info = np.iinfo(dtype)
    exact = [
        0
        if math.isnan(v)
        else max(
            info.min,
            min(info.max, int(v) if math.isfinite(v) else (info.max if v > 0 else info.min)),
        )
        for v in values.astype(np.float64).tolist()
    ]
    return np.array(exact, dtype=dtype)


def conversion_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    signed = np.zeros((x.size, CONVERSIONS), np.int64)
    unsigned = np.zeros((x.size, CONVERSIONS), np.uint64)
    signed[:, 0] = saturated(x, np.int32)
    signed[:, 1] = saturated(x, np.int64)
    unsigned[:, 2] = saturated(x, np.uint8)
    unsigned[:, 3] = saturated(x, np.uint32)
    return signed.reshape(-1), unsigned.reshape(-1)


HALF_FACTOR = 1.0004882821813226
"""Just above halfway between the f16 values 1 and 1.0009765625: rounded once it is the
latter; rounded to f32 first it lands on the halfway point, and then on 1."""


@cj.kernel
def half_scale(x: cj.Array[cj.f16], out: cj.Array[cj.f16]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        out[i] = x[i] * 1.0004882821813226


@cj.kernel
def thirds(out64: cj.Array[cj.f64], out32: cj.Array[cj.f32], out16: cj.Array[cj.f16]):
    if cj.ABSOLUTE_POS == 0:
        out64[0] = 1.0 / 3.0
        out32[0] = 1.0 / 3.0
        out16[0] = 1.0 / 3.0
