"""The language of LANGUAGE.md, end to end on the CPU, compared with numpy on random data of
awkward sizes. Few kernels, each covering many constructs, so the suite compiles little."""

from __future__ import annotations

import math

import numpy as np
import pytest

import cubejit as cj

SIZES = [1, 255, 257, 10**6 + 3]


@cj.function
def clamp01(v: cj.f32) -> cj.f32:
    if v < 0.0:
        return 0.0
    return cj.min(v, 1.0)


@cj.kernel
def floats(
    a: cj.f32,
    x: cj.Array[cj.f32],
    y: cj.Array[cj.f32],
    out: cj.Array[cj.f32],
    results: cj.Array[cj.f32],
):
    i = cj.ABSOLUTE_POS
    if i >= out.len():
        return
    v = a * x[i] + y[i]
    v += 1.0
    w = v / 2.0 - y[i] ** 2.0 + v // 0.75 + v % 0.75
    out[i] = clamp01(w) if x[i] > 0.5 and not y[i] > 0.9 else -w
    results[i] = (
        cj.sqrt(x[i])
        + cj.exp(y[i])
        + cj.log(x[i] + 1.0)
        + cj.sin(x[i]) * cj.cos(y[i])
        + cj.tan(x[i] * 0.5)
        + cj.tanh(y[i])
        + cj.erf(x[i])
        + cj.floor(v)
        + cj.ceil(v)
        + abs(x[i] - y[i])
        + max(x[i], y[i])
        + cj.pow(x[i], 1.5)
        + cj.fma(x[i], y[i], 1.0)
    )


@cj.kernel
def integers(
    p: cj.Array[cj.i32],
    q: cj.Array[cj.i32],
    u: cj.Array[cj.u32],
    out: cj.Array[cj.i32],
    bits: cj.Array[cj.u32],
    total: cj.Array[cj.i64],
):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = p[i] // q[i] + p[i] % q[i] * 3 - (p[i] ** 2) // 7
        bits[i] = (u[i] << 3) ^ (u[i] >> 2) | (u[i] & 255) + ~u[i]
        acc = cj.i64(0)
        for k in range(p[i] % 9, -1, -2):
            if k == 3:
                continue
            acc += cj.i64(k)
        n = 0
        while True:
            n += 1
            if n >= 5:
                break
        total[i] = acc * cj.i64(n)


@pytest.fixture(scope="module")
def client():
    return cj.client("cpu")


@pytest.mark.parametrize("size", SIZES)
def test_float_expressions_math_and_functions_follow_numpy(client, size: int) -> None:
    rng = np.random.default_rng(size)
    x, y = rng.random(size, dtype=np.float32), rng.random(size, dtype=np.float32)
    out, results = np.empty_like(x), np.empty_like(x)
    floats.launch(client, cj.cdiv(size, 256), 256, 1.5, x, y, out, results)
    a = np.float32(1.5)
    v = a * x + y + np.float32(1.0)
    w = v / np.float32(2) - y**2 + v // np.float32(0.75) + v % np.float32(0.75)
    clamped = np.where(w < 0, 0, np.minimum(w, 1))
    np.testing.assert_allclose(
        out, np.where((x > 0.5) & ~(y > 0.9), clamped, -w), rtol=2e-6, atol=2e-6
    )
    want = (
        np.sqrt(x)
        + np.exp(y)
        + np.log(x + 1)
        + np.sin(x) * np.cos(y)
        + np.tan(x * 0.5)
        + np.tanh(y)
        + np.floor(v)
        + np.ceil(v)
        + np.abs(x - y)
        + np.maximum(x, y)
        + x**1.5
        + x * y
        + 1
    )
    erf = np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))
    np.testing.assert_allclose(results, want + erf.astype(np.float32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", SIZES)
def test_integer_expressions_and_loops_follow_numpy(client, size: int) -> None:
    rng = np.random.default_rng(size + 1)
    p = rng.integers(-10_000, 10_000, size, dtype=np.int32)
    q = rng.integers(1, 50, size, dtype=np.int32) * rng.choice(np.array([-1, 1], np.int32), size)
    u = rng.integers(0, 2**32, size, dtype=np.uint32)
    out, bits, total = (np.empty(size, t) for t in (np.int32, np.uint32, np.int64))
    integers.launch(client, cj.cdiv(size, 128), 128, p, q, u, out, bits, total)
    np.testing.assert_array_equal(out, p // q + p % q * 3 - (p**2) // 7)
    np.testing.assert_array_equal(bits, (u << 3) ^ (u >> 2) | (u & 255) + ~u)
    sums = {r: sum(k for k in range(r, -1, -2) if k != 3) for r in range(9)}
    np.testing.assert_array_equal(total, np.array([sums[r] for r in (p % 9).tolist()]) * 5)
