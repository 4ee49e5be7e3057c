"""Lined kernels that the CPU and CUDA lines tests both run: a saxpy of each element type that
writes out the line size its launch chose, and a chain of ``tanh`` on whole lines."""

from __future__ import annotations

from typing import Any

import cubejit as cj
from cubejit.lang import Kernel


def lined_saxpy(T: Any) -> Kernel:
    """``a * x + y`` on lines of ``T``; its body never names ``T``, only its annotations do."""

    @cj.kernel
    def saxpy(
        a: T,
        x: cj.Array[cj.Line[T]],
        y: cj.Array[cj.Line[T]],
        out: cj.Array[cj.Line[T]],
        size: cj.Array[cj.u32],
    ):
        i = cj.ABSOLUTE_POS
        if i == 0:
            size[0] = cj.u32(out.line_size())
        if i < out.len():
            out[i] = a * x[i] + y[i]

    return saxpy


saxpy = lined_saxpy(cj.f32)
half_saxpy = lined_saxpy(cj.f16)


@cj.kernel
def tanh_chain(x: cj.Array[cj.Line[cj.f32]], out: cj.Array[cj.Line[cj.f32]]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        v = x[i]
        v = cj.tanh(v * 1.5 + 0.25)
        v = cj.tanh(v * v - 0.5)
        out[i] = cj.tanh(v) * 2.0
