# Kernels here compute on element types chosen when each is made, which mypy cannot follow.
# mypy: disable-error-code="valid-type, operator, type-arg, call-overload"
"""``softmax`` and ``layer_norm`` over contiguous rows, read and written in lines.

Where a row's elements are adjacent (its stride is 1 in the input and the output), a launch
passes the rows as lines of ``L`` lanes (16 bytes where the row's length and the address allow,
:func:`line_size`): each unit loads its ``K`` lines of the row once, in 16-byte loads, keeps
them in a local array indexed by constants only (registers on CUDA), and the cube reduces the
row's maximum and sum (or mean and variance) from them before the unit writes its lines. A row
is one cube's: its base is computed once, and every index after it is a line of the row.

The CUDA launch takes this form for every row it fits (:data:`LINES_PER_UNIT` lines per unit
at most); the CPU keeps :mod:`~cubejit.std.rows`'s kernels, which GCC vectorises across units.
"""

from __future__ import annotations

import builtins
import functools

import cubejit as cj
from cubejit.ir.types import LINE_SIZES, MAX_LINE_BYTES, Scalar
from cubejit.lang import Kernel
from cubejit.std.cube import MAX, SUM, cube_reduce
from cubejit.std.views import accumulator

LINED = {"cpu": False, "cuda": True}
"""Whether a backend's launches take the lined form for contiguous rows."""

LINES_PER_UNIT = {"softmax": (4, 2, 8), "layer_norm": (4, 2, 8)}
"""The most lines of a row each unit of a kernel keeps, the choices of a tuner (the first where
one is not tuned): the row is spread over units so that each holds at most this many (a row
longer than ``1024`` units of the largest takes the two-pass form of :mod:`~cubejit.std.rows`).
Fewer lines a unit means more units to a row, so shorter rows still fill the multiprocessors;
more means more loads in flight and fewer cube-wide steps."""


@functools.cache
def softmax_lines_kernel(T: Scalar, L: int) -> Kernel:
    A = accumulator(T)
    reduce_cube = cube_reduce(A)

    @cj.kernel
    def softmax_lines(
        x: cj.Tensor[cj.Line[T], 3],  # type: ignore[valid-type]
        out: cj.Tensor[cj.Line[T], 3],  # type: ignore[valid-type]
        lowest: A,  # type: ignore[valid-type]
        K: cj.Comptime[int],
    ):
        i = cj.CUBE_POS // x.shape(1)
        k = cj.CUBE_POS % x.shape(1)
        n = x.shape(2)
        u = cj.UNIT_POS
        v = cj.LocalArray[cj.Line[A, L]](K)
        m = cj.line(lowest, L)
        for t in cj.unroll(range(K)):
            if u + t * cj.CUBE_DIM < n:
                v[t] = A(x[i, k, u + t * cj.CUBE_DIM])
            else:
                v[t] = cj.line(lowest, L)
            m = max(m, v[t])
        mine = m[0]
        for lane in cj.unroll(range(1, L)):
            mine = max(mine, m[lane])
        top = reduce_cube(mine, MAX)
        s = cj.line(A(0), L)
        for t in cj.unroll(range(K)):
            e = cj.exp(v[t] - top)
            v[t] = e
            if u + t * cj.CUBE_DIM < n:
                s += e
        own = s[0]
        for lane in cj.unroll(range(1, L)):
            own += s[lane]
        scale = A(1) / reduce_cube(own, SUM)
        for t in cj.unroll(range(K)):
            if u + t * cj.CUBE_DIM < n:
                out[i, k, u + t * cj.CUBE_DIM] = T(v[t] * scale)

    return softmax_lines


@functools.cache
def layer_norm_lines_kernel(T: Scalar, L: int) -> Kernel:
    A = accumulator(T)
    reduce_cube = cube_reduce(A)

    @cj.kernel
    def layer_norm_lines(
        x: cj.Tensor[cj.Line[T], 3],  # type: ignore[valid-type]
        weight: cj.Tensor[cj.Line[T], 1],  # type: ignore[valid-type]
        bias: cj.Tensor[cj.Line[T], 1],  # type: ignore[valid-type]
        out: cj.Tensor[cj.Line[T], 3],  # type: ignore[valid-type]
        eps: A,  # type: ignore[valid-type]
        count: A,  # type: ignore[valid-type]
        K: cj.Comptime[int],
    ):
        i = cj.CUBE_POS // x.shape(1)
        k = cj.CUBE_POS % x.shape(1)
        n = x.shape(2)
        u = cj.UNIT_POS
        v = cj.LocalArray[cj.Line[A, L]](K)
        s = cj.line(A(0), L)
        for t in cj.unroll(range(K)):
            if u + t * cj.CUBE_DIM < n:
                v[t] = A(x[i, k, u + t * cj.CUBE_DIM])
            else:
                v[t] = cj.line(A(0), L)
            s += v[t]
        own = s[0]
        for lane in cj.unroll(range(1, L)):
            own += s[lane]
        mean = reduce_cube(own, SUM) / count
        q = cj.line(A(0), L)
        for t in cj.unroll(range(K)):
            if u + t * cj.CUBE_DIM < n:
                d = v[t] - mean
                q += d * d
        spread = q[0]
        for lane in cj.unroll(range(1, L)):
            spread += q[lane]
        rstd = A(1) / cj.sqrt(reduce_cube(spread, SUM) / count + eps)
        for t in cj.unroll(range(K)):
            j = u + t * cj.CUBE_DIM
            if j < n:
                w = A(weight[j])
                out[i, k, j] = T((v[t] - mean) * rstd * w + A(bias[j]))

    return layer_norm_lines


def line_size(scalar: Scalar, n: int, layouts: list[tuple[int, tuple[int, ...]]]) -> int:
    """The widest line size that rows of ``n`` adjacent elements take in every one of
    ``layouts`` (each the address of its first element, in bytes, and its other strides, in
    elements): the size a launch allows (:mod:`cubejit.runtime.lines`), told from integers."""
    for lanes in LINE_SIZES:
        width = lanes * scalar.itemsize
        if width <= MAX_LINE_BYTES and n % lanes == 0:
            if all(a % width == 0 and all(s % lanes == 0 for s in o) for a, o in layouts):
                return lanes
    return 1


@functools.cache
def shape_of_lines(lines: int, most: int) -> tuple[int, int] | None:
    """Units per cube and lines per unit for rows of ``lines`` lines, each unit keeping at most
    ``most``; ``None`` past what one pass keeps."""
    want = -(-lines // most)
    dim = builtins.min(1024, builtins.max(32, 1 << builtins.max(0, want - 1).bit_length()))
    per_unit = -(-lines // dim)
    if per_unit > most:
        return None
    return dim, builtins.max(1, per_unit)
