"""Kernels of the language (``@cj.kernel``) on the CUDA backend: compiled to cubins everywhere,
run against numpy where there is a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import cubejit as cj
from cubejit.backends.cuda.artifact import ELF_MAGIC
from cubejit.backends.cuda.compiler import CudaCompiler
from cubejit.compile.id import ArtifactId
from cubejit.compile.recording import CompilationRecording


@cj.kernel
def saxpy(a: cj.f32, x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


@cj.function
def smooth(v: cj.f32) -> cj.f32:
    return cj.tanh(v) * cj.sqrt(cj.abs(v)) + cj.max(v, 0.5)


@cj.kernel
def polynomial(
    x: cj.Array[cj.f32], out: cj.Array[cj.f32], degree: cj.Comptime[int], clamp: cj.Comptime[bool]
):
    i = cj.ABSOLUTE_POS
    if i >= x.len():
        return
    acc = cj.f32(0.0)
    for k in cj.unroll(range(degree)):
        acc = acc * x[i] + cj.f32(k + 1)
    if clamp:
        acc = cj.min(acc, 10.0)
    out[i] = smooth(acc)


@cj.kernel
def grid_mod(n: cj.i32, out: cj.Array[cj.i32]):
    col = cj.ABSOLUTE_POS_X
    row = cj.ABSOLUTE_POS_Y
    width = cj.CUBE_COUNT_X * cj.CUBE_DIM_X
    v = cj.i32(col) - cj.i32(row) * 3
    total = 0
    for k in range(v, n, 5):
        total += k % 7
    out[row * width + col] = v // 4 + v % 3 * 100 + total


def polynomial_reference(x: np.ndarray, degree: int, clamp: bool) -> np.ndarray:
    acc = np.zeros_like(x)
    for k in range(degree):
        acc = acc * x + np.float32(k + 1)
    if clamp:
        acc = np.minimum(acc, np.float32(10.0))
    return np.tanh(acc) * np.sqrt(np.abs(acc)) + np.maximum(acc, np.float32(0.5))


def grid_mod_reference(n: int, width: int, height: int) -> np.ndarray:
    out = np.zeros((height, width), np.int64)
    for row in range(height):
        for col in range(width):
            v = col - row * 3
            out[row, col] = v // 4 + v % 3 * 100 + sum(k % 7 for k in range(v, n, 5))
    return out.reshape(-1)


SPECS = [
    saxpy.specialize(256),
    polynomial.specialize(128, degree=4, clamp=True),
    polynomial.specialize(128, degree=2, clamp=False),
    grid_mod.specialize((8, 4)),
]


@pytest.mark.cuda_packages
@pytest.mark.parametrize("spec", SPECS, ids=repr)
def test_language_kernels_compile_to_cubins(spec: Any) -> None:
    id = ArtifactId(spec.id(), None)
    recording = CompilationRecording.for_artifact(id, keep_text=True)
    compiler = CudaCompiler("sm_90a")
    artifact = compiler.finalize(id, compiler.lower(spec, id, recording, None))
    assert artifact.cubin.startswith(ELF_MAGIC)
    assert recording.ir is not None and spec.name not in (recording.source_text or "")


@pytest.mark.gpu
def test_language_kernels_compute_what_numpy_does(gpu: Any) -> None:
    rng = np.random.default_rng(5)
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    x_dev, y_dev, out = gpu.to_device(x), gpu.to_device(y), gpu.empty(n, cj.f32)

    saxpy.launch(gpu, cj.cdiv(n, 256), 256, 1.5, x_dev, y_dev, out)
    # NVRTC contracts a * x + y into one fused multiply-add: one rounding, where numpy has two.
    np.testing.assert_allclose(gpu.read(out), np.float32(1.5) * x + y, rtol=1e-5, atol=1e-6)

    for degree, clamp in ((4, True), (2, False)):
        polynomial.launch(gpu, cj.cdiv(n, 128), 128, x_dev, out, degree=degree, clamp=clamp)
        want = polynomial_reference(x, degree, clamp)
        np.testing.assert_allclose(gpu.read(out), want, rtol=1e-5, atol=1e-5)

    width, height = 8 * 3, 4 * 5
    grid = gpu.empty(width * height, cj.i32)
    grid_mod.launch(gpu, (3, 5), (8, 4), 40, grid)
    np.testing.assert_array_equal(gpu.read(grid), grid_mod_reference(40, width, height))
