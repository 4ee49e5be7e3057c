# Kernels here compute on element types chosen when each is made, which mypy cannot follow.
# mypy: disable-error-code="valid-type, operator, type-arg"
"""The CPU's form of ``softmax`` and ``layer_norm``: one unit per cube walking its whole row.

On the CPU a cube is a thread, and a cube of many units runs them one after another between
its barriers, so the cube-wide reductions of :mod:`cubejit.std.rows` cost more than the row.
Here each cube is one unit and one row: its reductions (the maximum and sum of softmax, the sum
and squared deviations of layer_norm) read the row in lines, a partial result per lane, which
the C compiler turns into vector operations; the passes that write (``exp``, the affine map)
are plain loops over elements, which it vectorises with libmvec's vector ``exp``. Softmax sums
blocks of lines in the row's type and the blocks in ``f64``, so a long row's sum keeps its
precision. A row is read from memory once; the later passes find it in the core's cache. The
kernels take each row both as elements and as lines (the same memory twice), the line size
chosen by :func:`lanes_of` so that both views of every operand line up.

These serve ``f32`` and ``f64`` (:func:`serves`); ``f16`` rows take the general form.
"""

from __future__ import annotations

import functools
from typing import Any

import cubejit as cj
from cubejit.ir.types import Scalar, f64
from cubejit.lang import Kernel
from cubejit.runtime.lines import line_size

SUM_BLOCK = 64
"""Lines softmax sums in its own type before adding them to its ``f64`` sum."""


def serves(scalar: Scalar) -> bool:
    """Whether rows of ``scalar`` take this form on the CPU."""
    return scalar.name in ("f32", "f64")


def lanes_of(scalar: Scalar, *views: Any) -> int:
    """The widest line size every one of ``views`` (rank-3 tensors) allows."""
    return min(line_size(v, scalar, True) for v in views)


@functools.cache
def softmax_kernel(T: Scalar) -> Kernel:
    W = f64

    @cj.kernel
    def softmax_row_walk(
        x: cj.Tensor[T, 3],  # type: ignore[valid-type]
        x_lines: cj.Tensor[cj.Line[T], 3],  # type: ignore[valid-type]
        out: cj.Tensor[T, 3],  # type: ignore[valid-type]
        out_lines: cj.Tensor[cj.Line[T], 3],  # type: ignore[valid-type]
        lowest: T,  # type: ignore[valid-type]
        L: cj.Comptime[int],
        BLOCK: cj.Comptime[int],
    ):
        i = cj.CUBE_POS // x.shape(1)
        k = cj.CUBE_POS % x.shape(1)
        m = cj.line(lowest, L)
        for j in range(x_lines.shape(2)):
            v = x_lines[i, k, j]
            m = v if v > m else m
        top = m[0]
        for t in cj.unroll(range(1, L)):
            top = m[t] if m[t] > top else top
        for j in range(x.shape(2)):
            out[i, k, j] = cj.exp(x[i, k, j] - top)
        s = cj.line(W(0), L)
        nl = out_lines.shape(2)
        for b in range(0, nl, BLOCK):
            block = cj.line(T(0), L)
            for j in range(b, min(b + BLOCK, nl)):
                block += out_lines[i, k, j]
            s += W(block)
        total = s[0]
        for t in cj.unroll(range(1, L)):
            total += s[t]
        scale = T(W(1) / total)
        for j in range(out.shape(2)):
            out[i, k, j] = out[i, k, j] * scale

    return softmax_row_walk


@functools.cache
def layer_norm_kernel(T: Scalar) -> Kernel:
    @cj.kernel
    def layer_norm_row_walk(
        x: cj.Tensor[T, 3],  # type: ignore[valid-type]
        x_lines: cj.Tensor[cj.Line[T], 3],  # type: ignore[valid-type]
        weight: cj.Tensor[T, 1],  # type: ignore[valid-type]
        bias: cj.Tensor[T, 1],  # type: ignore[valid-type]
        out: cj.Tensor[T, 3],  # type: ignore[valid-type]
        eps: T,  # type: ignore[valid-type]
        L: cj.Comptime[int],
    ):
        i = cj.CUBE_POS // x.shape(1)
        k = cj.CUBE_POS % x.shape(1)
        count = T(x.shape(2))
        s = cj.line(T(0), L)
        for j in range(x_lines.shape(2)):
            s += x_lines[i, k, j]
        total = s[0]
        for t in cj.unroll(range(1, L)):
            total += s[t]
        mean = total / count
        q = cj.line(T(0), L)
        for j in range(x_lines.shape(2)):
            d = x_lines[i, k, j] - mean
            q += d * d
        squares = q[0]
        for t in cj.unroll(range(1, L)):
            squares += q[t]
        rstd = T(1) / cj.sqrt(squares / count + eps)
        for j in range(x.shape(2)):
            out[i, k, j] = (x[i, k, j] - mean) * rstd * weight[j] + bias[j]

    return layer_norm_row_walk


def softmax_rows(rows: int, xv: Any, ov: Any, scalar: Scalar, client: Any, lowest: float) -> None:
    """Softmax of each of ``rows`` rows of ``xv`` (rank 3) into ``ov``."""
    lanes = lanes_of(scalar, xv, ov)
    x_lines, out_lines = cj.lined(xv, lanes), cj.lined(ov, lanes)
    softmax_kernel(scalar).launch(
        client, rows, 1, xv, x_lines, ov, out_lines, lowest, L=lanes, BLOCK=SUM_BLOCK
    )


def layer_norm_rows(
    rows: int, xv: Any, weight: Any, bias: Any, ov: Any, eps: float, scalar: Scalar, client: Any
) -> None:
    """Layer norm of each of ``rows`` rows of ``xv`` (rank 3) into ``ov``."""
    lanes = lanes_of(scalar, xv)
    layer_norm_kernel(scalar).launch(
        client, rows, 1, xv, cj.lined(xv, lanes), weight, bias, ov, eps, L=lanes
    )
