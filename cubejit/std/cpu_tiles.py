# Kernels here compute on element types chosen when each is made, which mypy cannot follow.
# mypy: disable-error-code="valid-type, operator, type-arg"
"""The CPU's form of ``matmul``: one unit per cube computing an ``RM x BN`` tile of the result.

On the CPU a cube is a thread: tiles copied through shared memory by a cube of units that meet
at barriers cost more than they save, since the core's caches already hold what a tile reuses.
Here a cube's one unit keeps its tile's accumulators in a local array and, stepping along the
inner dimension, adds each of its ``RM`` elements of ``a`` times a row segment of ``b`` to one
row of them: a loop over ``BN`` adjacent elements, which the C compiler vectorises. ``b`` and
the result are seen as ``(rows, N / BN, BN)``, so a segment's position is its own coordinate
and the compiler sees its elements as adjacent. ``BN`` is the widest power of two up to the
tile's that divides ``N``; a tuner picks the tile among :data:`TILES`. Rows past ``M`` in the
last cubes repeat row ``M - 1`` and are not written: testing each row at each step along the
inner dimension instead made the kernel 1.7 times slower (1024³ f32 on two x86 cores: 52 to
69 ms against 28 to 39).
"""

from __future__ import annotations

import functools
from typing import Any

import cubejit as cj
from cubejit.ir.types import Scalar
from cubejit.lang import Kernel
from cubejit.std import tuned
from cubejit.std.views import Operand, accumulator, operand
from cubejit.tune import Tuner, anchor

TILES = ((8, 64), (4, 64), (8, 32), (16, 32))
"""Rows of the result each cube computes and the most columns: a tuner's choices, the first its
default (:mod:`cubejit.std.tuned`)."""


@functools.cache
def matmul_kernel(T: Scalar) -> Kernel:
    A = accumulator(T)

    @cj.kernel
    def matmul_tile_walk(
        a: cj.Tensor[T, 2],  # type: ignore[valid-type]
        b: cj.Tensor[T, 3],  # type: ignore[valid-type]
        out: cj.Tensor[T, 3],  # type: ignore[valid-type]
        RM: cj.Comptime[int],
        BN: cj.Comptime[int],
    ):
        acc = cj.LocalArray[A](RM * BN)
        m = a.shape(0)
        last = m - 1
        m0 = cj.CUBE_POS_Y * RM
        c = cj.CUBE_POS_X
        for t in range(RM * BN):
            acc[t] = A(0)
        for p in range(a.shape(1)):
            for r in cj.unroll(range(RM)):
                av = A(T(a[min(m0 + r, last), p]))
                for j in range(BN):
                    acc[r * BN + j] += av * A(b[p, c, j])
        for r in cj.unroll(range(RM)):
            if m0 + r < m:
                for j in range(BN):
                    out[m0 + r, c, j] = T(acc[r * BN + j])

    return matmul_tile_walk


def matmul(client: Any, left: Operand, right: Operand, dst: Operand) -> None:
    """``dst = left @ right`` (``M x K`` by ``K x N``, any strides) on the CPU, in the tiles a
    tuner picks."""
    views = (o.view(o.shape, o.strides) for o in (left, right, dst))
    T = left.scalar
    tuned.launch(TILES, lambda: tuner(TILES, T), _matmul_tiles, client, *views)


def _matmul_tiles(tile: tuple[int, int], client: Any, a: Any, b: Any, out: Any) -> None:
    """:func:`matmul` of the views ``a`` and ``b`` into ``out``, each cube computing ``tile``
    (rows, the most columns) of it."""
    left, right, dst = (operand(v, client) for v in (a, b, out))
    rm, bn = tile
    m, k = left.shape
    n = right.shape[1]
    while n % bn:
        bn //= 2
    (rb0, rb1), (ro0, ro1) = right.strides, dst.strides
    matmul_kernel(left.scalar).launch(
        client,
        (n // bn, -(-m // rm)),
        1,
        a,
        right.view((k, n // bn, bn), (rb0, bn * rb1, rb1)),
        dst.view((m, n // bn, bn), (ro0, bn * ro1, ro1)),
        RM=rm,
        BN=bn,
    )


@functools.cache
def tuner(tiles: tuple[tuple[int, int], ...], T: Scalar) -> Tuner:
    """The tuner of :func:`matmul` of ``T`` among ``tiles``: one decision per size class of
    ``M``, ``K`` and ``N``."""
    return tuned.tuner(
        f"cubejit.std.matmul.{T.name}.cpu",
        tiles,
        _matmul_tiles,
        lambda tile: f"{tile[0]}x{tile[1]} a cube",
        key=lambda a, b, out: (anchor(a.shape[0]), anchor(a.shape[1]), anchor(b.shape[1])),
        kernels=(matmul_kernel(T),),
    )
