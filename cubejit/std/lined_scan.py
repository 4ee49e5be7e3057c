# Kernels here compute on element types chosen when each is made, which mypy cannot follow.
# mypy: disable-error-code="valid-type, operator, type-arg"
"""The CUDA form of the scan, for rows whose elements are adjacent: runs of lines per unit.

A cube owns a block of ``ROUNDS`` rounds; in each round every unit owns a run of ``LINES``
consecutive lines (``cj.Line``: up to 16 bytes, read as one vector load) that it scans serially
in registers, so the cube scans one total per unit per round instead of one element per unit:
one plane scan and one pass over the planes' totals in shared memory per ``LINES`` lines of each
unit. The block totals are summed with coalesced lined loads (each unit strides over the block's
lines), so each block costs one read for its total and one read and one write for its scan; the
scan of the block totals is the same routine again. The output is written element by element at
its own strides, so any ``out`` works.

This is reduce-then-scan, three passes over memory; :mod:`cubejit.std.lookback_scan` scans in
one, for sums in ``f32``.

The kernels run on every backend (the tests run them on the CPU too); ``scan`` takes them on CUDA.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import cubejit as cj
from cubejit.ir.types import Scalar
from cubejit.lang import Kernel
from cubejit.runtime.lines import line_size
from cubejit.std.views import accumulator


@dataclass(frozen=True)
class LinedScan:
    """How the lined scan cuts a row: units per cube, lines per unit per round, rounds per
    cube (a block is ``units * lines * rounds`` lines); with ``single_pass``, rows whose sums
    are ``f32`` take the look-back scan of :mod:`cubejit.std.lookback_scan` in tiles of
    ``units * lines`` lines instead."""

    units: int
    lines: int
    rounds: int
    single_pass: bool = False


CONFIG = LinedScan(units=256, lines=1, rounds=16)
"""The reduce-then-scan configuration: the form of sums kept in ``f64``."""

FORMS = (
    LinedScan(units=256, lines=8, rounds=1, single_pass=True),
    LinedScan(units=128, lines=8, rounds=1, single_pass=True),
    LinedScan(units=96, lines=16, rounds=1, single_pass=True),
    LinedScan(units=128, lines=16, rounds=1, single_pass=True),
    CONFIG,
)
"""The forms ``scan``'s tuner chooses among on CUDA, the first its default: tiles of 4096 to
8192 ``f32`` elements for the look-back (fewer units with longer runs keep more loads in flight
per unit; shared memory holds the tile), and reduce-then-scan."""


def lanes(view: object, scalar: Scalar) -> int:
    """The line size a launch gives ``view`` (a rank-3 view whose innermost stride is 1)."""
    return line_size(view, scalar, True)


@functools.cache
def lined_totals_kernel(T: Scalar) -> Kernel:
    from cubejit.std.cube import cube_reduce

    A = accumulator(T)
    reduce_cube = cube_reduce(A)

    @cj.kernel
    def lined_block_totals(
        x: cj.Tensor[cj.Line[T], 3],  # type: ignore[valid-type]
        totals: cj.Array[A],  # type: ignore[valid-type]
        blocks: cj.u32,
        K: cj.Comptime[int],
    ):
        row = cj.CUBE_POS // blocks
        i = row // x.shape(1)
        k = row % x.shape(1)
        n = x.shape(2)
        first = (cj.CUBE_POS % blocks) * cj.CUBE_DIM * K
        start = first + cj.UNIT_POS
        acc = cj.line(A(0), x.line_size())
        if first + cj.CUBE_DIM * K <= n:
            for t in cj.unroll(range(K)):
                acc += A(T(x[i, k, start + cj.u32(t) * cj.CUBE_DIM]))
        else:
            for t in range(min(cj.u32(K), cj.cdiv(n - first, cj.CUBE_DIM))):
                j = start + cj.u32(t) * cj.CUBE_DIM
                if j < n:
                    acc += A(T(x[i, k, j]))
        s = A(0)
        for q in cj.unroll(range(x.line_size())):
            s += acc[q]
        total = reduce_cube(s, 0)
        if cj.UNIT_POS == 0:
            totals[cj.CUBE_POS] = total

    return lined_block_totals


@functools.cache
def lined_scan_kernel(T: Scalar, U: Scalar) -> Kernel:
    A = accumulator(T)

    @cj.kernel
    def lined_scan_blocks(
        x: cj.Tensor[cj.Line[T], 3],  # type: ignore[valid-type]
        out: cj.Tensor[U, 3],  # type: ignore[valid-type]
        offsets: cj.Array[A],  # type: ignore[valid-type]
        blocks: cj.u32,
        R: cj.Comptime[int],
        K: cj.Comptime[int],
        EXCLUSIVE: cj.Comptime[bool],
        OFFSETS: cj.Comptime[bool],
    ):
        partial = cj.SharedMemory[A](cj.CUBE_DIM // cj.PLANE_DIM + 1)
        run = cj.LocalArray[A](R * x.line_size())
        row = cj.CUBE_POS // blocks
        i = row // x.shape(1)
        k = row % x.shape(1)
        n = x.shape(2)
        mine = cj.UNIT_POS // cj.PLANE_DIM
        first = (cj.CUBE_POS % blocks) * cj.CUBE_DIM * R * K
        carry = A(0)
        if OFFSETS:
            carry = offsets[cj.CUBE_POS]
        for t in range(min(cj.u32(K), cj.cdiv(n - first, cj.CUBE_DIM * R))):
            start = first + cj.u32(t) * cj.CUBE_DIM * R + cj.UNIT_POS * R
            if start + R <= n:
                for r in cj.unroll(range(R)):
                    v = A(T(x[i, k, start + r]))
                    for q in cj.unroll(range(x.line_size())):
                        run[r * x.line_size() + q] = v[q]
            else:
                for r in cj.unroll(range(R)):
                    v = cj.line(A(0), x.line_size())
                    if start + r < n:
                        v = A(T(x[i, k, start + r]))
                    for q in cj.unroll(range(x.line_size())):
                        run[r * x.line_size() + q] = v[q]
            s = A(0)
            for m in cj.unroll(range(R * x.line_size())):
                if EXCLUSIVE:
                    e = run[m]
                    run[m] = s
                    s += e
                else:
                    s += run[m]
                    run[m] = s
            before = cj.plane_exclusive_sum(s)
            if cj.UNIT_POS_PLANE == cj.PLANE_DIM - 1:
                partial[mine] = before + s
            cj.sync_cube()
            lead = carry + before
            for p in range(cj.cdiv(cj.CUBE_DIM, cj.PLANE_DIM)):
                w = partial[p]
                if p < mine:
                    lead += w
                carry += w
            cj.sync_cube()
            for r in cj.unroll(range(R)):
                if start + r < n:
                    j = (start + r) * x.line_size()
                    for q in cj.unroll(range(x.line_size())):
                        out[i, k, j + q] = U(lead + run[r * x.line_size() + q])

    return lined_scan_blocks


__all__ = ["CONFIG", "LinedScan", "lined_scan_kernel", "lined_totals_kernel"]
