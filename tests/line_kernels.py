"""Lined kernels that the CPU and CUDA lines tests both run: a saxpy that writes out the line
size its launch chose, and a chain of ``tanh`` on whole lines."""

from __future__ import annotations

import cubejit as cj


@cj.kernel
def saxpy(
    a: cj.f32,
    x: cj.Array[cj.Line[cj.f32]],
    y: cj.Array[cj.Line[cj.f32]],
    out: cj.Array[cj.Line[cj.f32]],
    size: cj.Array[cj.u32],
):
    i = cj.ABSOLUTE_POS
    if i == 0:
        size[0] = cj.u32(out.line_size())
    if i < out.len():
        out[i] = a * x[i] + y[i]


@cj.kernel
def tanh_chain(x: cj.Array[cj.Line[cj.f32]], out: cj.Array[cj.Line[cj.f32]]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        v = x[i]
        v = cj.tanh(v * 1.5 + 0.25)
        v = cj.tanh(v * v - 0.5)
        out[i] = cj.tanh(v) * 2.0
