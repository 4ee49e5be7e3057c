"""Kernels of the language for the tests of coarsening (several cubes per CUDA thread), with
numpy references: the saxpy of LANGUAGE.md, and kernels that test where coarsening must keep
each unit's own values, its order of loads and stores, and where it must not apply."""

from __future__ import annotations

import numpy as np

import cubejit as cj


@cj.kernel
def saxpy(a: cj.f32, x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


@cj.kernel
def double_then_copy(
    x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32], copy: cj.Array[cj.f32]
):
    i = cj.ABSOLUTE_POS
    if i >= out.len():
        return
    out[i] = y[i] * 2.0
    copy[i] = x[i]


@cj.kernel
def scaled(a: cj.f32, x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    n = out.len()
    i = cj.ABSOLUTE_POS
    if i < n:
        a = a * 2.0
        if x[i] > 0.0:
            a = a + 1.0
        out[i] = a * x[i] + cj.f32(cj.CUBE_POS_X) + cj.f32(cj.CUBE_COUNT_X)


def scaled_reference(a: float, x: np.ndarray, cube_dim: int, cubes: int) -> np.ndarray:
    doubled = np.float32(a) * np.float32(2.0)
    factor = np.where(x > 0, doubled + np.float32(1.0), doubled).astype(np.float32)
    cube = (np.arange(x.size) // cube_dim).astype(np.float32)
    return factor * x + cube + np.float32(cubes)


@cj.kernel
def triple_plus_one(out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS_X
    if i < out.len():
        out[i] = out[i] * 3.0
        out[i] = out[i] + 1.0


@cj.kernel
def clashing_names(x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        i_0 = x[i] + 1.0
        out[i] = i_0


@cj.kernel
def rows(width: cj.u32, x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * cj.f32(width) + cj.f32(cj.UNIT_POS_Y)
