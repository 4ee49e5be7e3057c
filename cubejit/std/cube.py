# Kernels here compute on element types chosen when each is made, which mypy cannot follow.
# mypy: disable-error-code="valid-type, operator, type-arg"
"""What the standard kernels share inside a cube: combining two values, and reducing or scanning
one value per unit over the whole cube.

A cube-wide reduction runs in two levels: each plane reduces its lanes (``plane_sum``,
``plane_max``, ``plane_min``), its first lane leaves the plane's result in shared memory, and
the first plane reduces those. On the CPU a plane is one unit, so the second level is a loop
over the cube's units. A cube of one plane has no second level: ``CUBE_DIM > PLANE_DIM`` is a
constant once the kernel is specialised, so its shared memory and barriers are never made. Every
unit gets the result. The operation is a comptime int: ``SUM``,
``MAX`` or ``MIN``; ``max`` and ``min`` follow the language (a NaN loses to any number).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import cubejit as cj
from cubejit.ir.types import Scalar

SUM = 0
MAX = 1
MIN = 2
OPERATIONS = {"sum": SUM, "max": MAX, "min": MIN}


@cj.function
def combine(a, b, OP):  # type: ignore[no-untyped-def]
    """``a`` and ``b`` combined by ``OP``."""
    if OP == 0:
        return a + b
    if OP == 1:
        return max(a, b)
    return min(a, b)


@cj.function
def plane_reduce(v, OP):  # type: ignore[no-untyped-def]
    """``v`` reduced by ``OP`` over the plane; every lane gets the result."""
    if OP == 0:
        return cj.plane_sum(v)
    if OP == 1:
        return cj.plane_max(v)
    return cj.plane_min(v)


@functools.cache
def cube_reduce(A: Scalar) -> Callable[..., Any]:
    """The cube-wide reduction of one ``A`` per unit (a function of ``v`` and ``OP``)."""

    @cj.function
    def reduce_cube(v: A, OP) -> A:  # type: ignore[no-untyped-def, valid-type]
        w = plane_reduce(v, OP)
        if cj.CUBE_DIM > cj.PLANE_DIM:
            partial = cj.SharedMemory[A](cj.CUBE_DIM // cj.PLANE_DIM + 1)
            if cj.UNIT_POS_PLANE == 0:
                partial[cj.UNIT_POS // cj.PLANE_DIM] = w
            cj.sync_cube()
            w = partial[0]
            for p in range(1, cj.cdiv(cj.CUBE_DIM, cj.PLANE_DIM)):
                w = combine(w, partial[p], OP)
            cj.sync_cube()
        return w

    return reduce_cube


@functools.cache
def cube_exclusive_sum(A: Scalar) -> Callable[..., Any]:
    """The cube-wide exclusive prefix sum of one ``A`` per unit, in unit order (a function of
    ``v``); the cube's size is a multiple of the plane's."""

    @cj.function
    def scan_cube(v: A) -> A:  # type: ignore[no-untyped-def, valid-type]
        partial = cj.SharedMemory[A](cj.CUBE_DIM // cj.PLANE_DIM + 1)
        exclusive = cj.plane_exclusive_sum(v)
        if cj.UNIT_POS_PLANE == cj.PLANE_DIM - 1:
            partial[cj.UNIT_POS // cj.PLANE_DIM] = exclusive + v
        cj.sync_cube()
        before = A(0)
        for p in range(0, cj.UNIT_POS // cj.PLANE_DIM):
            before += partial[p]
        cj.sync_cube()
        return before + exclusive

    return scan_cube
