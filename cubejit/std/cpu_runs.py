# Kernels here compute on element types chosen when each is made, which mypy cannot follow.
# mypy: disable-error-code="valid-type, operator, type-arg"
"""The CPU's forms of a reduction over all elements, of running sums and of histograms: one
unit per cube walking a long run of adjacent elements.

On the CPU a cube is a thread and its units take turns, so a cube of many units meeting at
barriers (the forms CUDA wants) spends its time between them. Here each cube is one unit: a
reduction sums its run in lines (a partial per lane, which the C compiler turns into vector
operations) into one partial per cube, and the partials are reduced the same way until one
is left; a running sum adds up each block of a row in lines, scans the block totals, then walks
each block once more carrying its offset; a histogram counts its run in the cube's own local
counts and adds them to the bins once per bin. Runs are short enough that a lane's sum stays
precise, long enough that a launch is a few thousand cubes at most per million elements.
"""

from __future__ import annotations

import functools
from typing import Any

import cubejit as cj
from cubejit.ir.types import Scalar
from cubejit.lang import Kernel
from cubejit.runtime.lines import line_size
from cubejit.std import tuned
from cubejit.std.bin_rule import numpy_bin
from cubejit.std.cube import combine
from cubejit.std.views import Operand, accumulator, new_array, operand, packed
from cubejit.tune import Tuner, anchor

RUNS = (256, 512, 128)
"""Lines each cube of a reduction over all elements reduces: a tuner's choices, the first its
default (:mod:`cubejit.std.tuned`)."""
SCAN_BLOCKS = (16384, 4096, 65536)
"""Elements of a row each cube of a running sum walks, a tuner's choices."""
HISTOGRAM_RUNS = (65536, 16384, 262144)
"""Elements each cube of a histogram counts, a tuner's choices."""
UNIT_BINNED = ("i8", "u8", "i16", "u16", "i32", "u32")
"""Integers whose every value is exact in ``f64``: over bins one wide from a whole number, the
bin of each is its distance from the first edge, with no float arithmetic."""


def lanes_of(scalar: Scalar, *views: Any) -> int:
    """The widest line size every one of ``views`` allows."""
    return min(line_size(v, scalar, True) for v in views)


def adjacent(*operands: Operand) -> bool:
    """Whether the innermost elements of every operand are adjacent (stride 1)."""
    return all(o.strides[-1] == 1 or o.shape[-1] == 1 for o in operands)


@functools.cache
def reduce_kernel(T: Scalar, U: Scalar) -> Kernel:
    A = accumulator(T)

    @cj.kernel
    def reduce_run_walk(
        x: cj.Tensor[cj.Line[T], 1],  # type: ignore[valid-type]
        out: cj.Tensor[U, 1],  # type: ignore[valid-type]
        init: A,  # type: ignore[valid-type]
        scale: A,  # type: ignore[valid-type]
        OP: cj.Comptime[int],
        L: cj.Comptime[int],
        R: cj.Comptime[int],
    ):
        first = cj.CUBE_POS * R
        stop = min(first + R, x.shape(0))
        acc = cj.line(init, L)
        for j in range(first, stop):
            v = A(T(x[j]))
            if OP == 0:
                acc += v
            elif OP == 1:
                acc = max(acc, v)
            else:
                acc = min(acc, v)
        total = acc[0]
        for t in cj.unroll(range(1, L)):
            total = combine(total, acc[t], OP)
        out[cj.CUBE_POS] = U(total * scale)

    return reduce_run_walk


def reduce_all(x: Any, out: Operand, op: int, init: float, scale: float) -> None:
    """Reduces the ``n`` adjacent elements of the rank-1 view ``x`` (of ``out``'s client)
    into ``out``'s one element, in the run a tuner picks."""
    T, U = operand(x, out.client).scalar, out.scalar
    args = (x, out.view((1,), (1,)), op, init, scale)
    tuned.launch(RUNS, lambda: reduce_tuner(RUNS, T, U), _reduce_runs, out.client, *args)


def _reduce_runs(
    run: int, client: Any, x: Any, out: Any, op: int, init: float, scale: float
) -> None:
    """:func:`reduce_all` into the view ``out``, each cube reducing ``run`` lines."""
    scalar = operand(x, client).scalar
    out = operand(out, client)
    while True:
        lanes = lanes_of(scalar, x)
        lines = x.shape[0] // lanes
        cubes = max(1, -(-lines // run))
        if cubes == 1:
            target, last = out.view((1,), (0,)), True
        else:
            target, last = new_array(client, (cubes,), accumulator(scalar)), False
        reduce_kernel(scalar, out.scalar if last else accumulator(scalar)).launch(
            client,
            cubes,
            1,
            cj.lined(x, lanes),
            target,
            init,
            scale if last else 1.0,
            OP=op,
            L=lanes,
            R=run,
        )
        if last:
            return
        x, scalar = target, accumulator(scalar)


@functools.cache
def totals_kernel(T: Scalar) -> Kernel:
    A = accumulator(T)

    @cj.kernel
    def block_total_walk(
        x: cj.Tensor[cj.Line[T], 3],  # type: ignore[valid-type]
        totals: cj.Array[A],  # type: ignore[valid-type]
        blocks: cj.u32,
        L: cj.Comptime[int],
        B: cj.Comptime[int],
    ):
        row = cj.CUBE_POS // blocks
        i = row // x.shape(1)
        k = row % x.shape(1)
        first = (cj.CUBE_POS % blocks) * (B // L)
        stop = min(first + B // L, x.shape(2))
        acc = cj.line(A(0), L)
        for j in range(first, stop):
            acc += A(T(x[i, k, j]))
        total = acc[0]
        for t in cj.unroll(range(1, L)):
            total += acc[t]
        totals[cj.CUBE_POS] = total

    return block_total_walk


@functools.cache
def scan_kernel(T: Scalar, U: Scalar) -> Kernel:
    A = accumulator(T)

    @cj.kernel
    def block_scan_walk(
        x: cj.Tensor[T, 3],  # type: ignore[valid-type]
        out: cj.Tensor[U, 3],  # type: ignore[valid-type]
        offsets: cj.Array[A],  # type: ignore[valid-type]
        blocks: cj.u32,
        B: cj.Comptime[int],
        EXCLUSIVE: cj.Comptime[bool],
        OFFSETS: cj.Comptime[bool],
    ):
        row = cj.CUBE_POS // blocks
        i = row // x.shape(1)
        k = row % x.shape(1)
        first = (cj.CUBE_POS % blocks) * B
        stop = min(first + B, x.shape(2))
        carry = A(0)
        if OFFSETS:
            carry = offsets[cj.CUBE_POS]
        for j in range(first, stop):
            v = A(T(x[i, k, j]))
            if EXCLUSIVE:
                out[i, k, j] = U(carry)
                carry += v
            else:
                carry += v
                out[i, k, j] = U(carry)

    return block_scan_walk


def scan(x: Operand, out: Operand, exclusive: bool, flat: bool, tune: bool = True) -> None:
    """:func:`cubejit.std.scan.scan` on the CPU, for operands whose innermost elements are
    adjacent (:func:`adjacent`), in the blocks a tuner picks unless not ``tune``."""
    forms = SCAN_BLOCKS if tune else SCAN_BLOCKS[:1]
    T, U = x.scalar, out.scalar
    views = (x.view(x.shape, x.strides), out.view(out.shape, out.strides))
    tuned.launch(
        forms, lambda: scan_tuner(forms, T, U), _scan_blocks, x.client, *views, exclusive, flat
    )


def _scan_blocks(block: int, client: Any, x: Any, out: Any, exclusive: bool, flat: bool) -> None:
    """:func:`scan` of the views ``x`` and ``out``, each cube walking ``block`` elements."""
    x, out = operand(x, client), operand(out, client)
    a, b, n = x.shape
    rows = a * b
    blocks = max(1, -(-n // block))
    acc = accumulator(x.scalar)
    xv, ov = x.view(x.shape, x.strides), out.view(out.shape, out.strides)
    propagate = blocks > 1 or (flat and rows > 1)
    offsets = new_array(client, (rows * blocks if propagate else 1,), acc)
    if propagate:
        totals = new_array(client, (rows * blocks,), acc)
        lanes = lanes_of(x.scalar, xv)
        totals_kernel(x.scalar).launch(
            client, rows * blocks, 1, cj.lined(xv, lanes), totals, blocks, L=lanes, B=block
        )
        layout = (1, 1, rows * blocks) if flat else (a, b, blocks)
        pair = (packed(totals, client, layout), packed(offsets, client, layout))
        scan(*pair, True, False, tune=False)
    scan_kernel(x.scalar, out.scalar).launch(
        client,
        rows * blocks,
        1,
        xv,
        ov,
        offsets,
        blocks,
        B=block,
        EXCLUSIVE=exclusive,
        OFFSETS=propagate,
    )


@functools.cache
def histogram_kernel(T: Scalar, C: Scalar) -> Kernel:
    @cj.kernel
    def count_run_walk(
        x: cj.Tensor[T, 3],  # type: ignore[valid-type]
        counts: cj.Array[cj.Atomic[cj.i64]],
        edges: cj.Array[C],  # type: ignore[valid-type]
        lo: C,  # type: ignore[valid-type]
        per_bin: C,  # type: ignore[valid-type]
        first_bin: cj.i64,
        blocks: cj.u32,
        BINS: cj.Comptime[int],
        R: cj.Comptime[int],
        UNIT: cj.Comptime[bool],
    ):
        local = cj.LocalArray[cj.u32](BINS)
        for j in range(BINS):
            local[j] = cj.u32(0)
        row = cj.CUBE_POS // blocks
        i = row // x.shape(1)
        k = row % x.shape(1)
        first = (cj.CUBE_POS % blocks) * R
        stop = min(first + R, x.shape(2))
        for e in range(first, stop):
            if UNIT:
                d = cj.i64(T(x[i, k, e])) - first_bin
                if d >= 0 and d <= cj.i64(BINS):
                    local[min(cj.i32(d), cj.i32(BINS - 1))] += cj.u32(1)
            else:
                v = C(T(x[i, k, e]))
                b = numpy_bin(v, lo, C(v - lo) * per_bin, edges, cj.u32(BINS))
                if b >= 0:
                    local[b] += cj.u32(1)
        for j in range(BINS):
            c = local[j]
            if c > 0:
                counts[j].fetch_add(cj.i64(c))

    return count_run_walk


def count(
    run: int,
    client: Any,
    xv: Any,
    counts: Any,
    edges: Any,
    lo: float,
    span: float,
    bins: int,
    *,
    compute: Scalar,
) -> None:
    """Adds the counts of the elements of the rank-3 view ``xv`` in ``bins`` bins of ``edges``
    (from ``lo``, ``span`` wide) to ``counts``, each cube counting ``run`` elements (a tuner
    picks among :data:`HISTOGRAM_RUNS`); as :mod:`cubejit.std.histograms` bins them, the
    first guess of a bin multiplying by bins per unit instead of dividing (the edges correct
    it as they correct the quotient); integers over bins one wide from a whole number
    (:data:`UNIT_BINNED`) are binned by subtraction alone."""
    a, b, n = xv.shape
    blocks = max(1, -(-n // run))
    scalar = operand(xv, client).scalar
    unit = (
        scalar.name in UNIT_BINNED and float(lo).is_integer() and span == bins and abs(lo) < 2**62
    )
    histogram_kernel(scalar, compute).launch(
        client,
        a * b * blocks,
        1,
        xv,
        counts,
        edges,
        lo,
        bins / span,
        int(lo) if unit else 0,
        blocks,
        BINS=bins,
        R=run,
        UNIT=unit,
    )


@functools.cache
def reduce_tuner(runs: tuple[int, ...], T: Scalar, U: Scalar) -> Tuner:
    """The tuner of :func:`reduce_all` of ``T`` into ``U`` among ``runs``: one decision per
    size class of the array."""
    return tuned.tuner(
        f"cubejit.std.reduce.{T.name}.{U.name}.cpu",
        runs,
        _reduce_runs,
        lambda run: f"{run} lines a cube",
        key=lambda x, out, op, init, scale: (anchor(x.shape[0]),),
        kernels=(reduce_kernel(T, U), reduce_kernel(accumulator(T), U)),
    )


@functools.cache
def scan_tuner(blocks: tuple[int, ...], T: Scalar, U: Scalar) -> Tuner:
    """The tuner of :func:`scan` of ``T`` into ``U`` among ``blocks``: one decision per size
    class of the row's length and of the count of rows, and per ``flat``."""
    return tuned.tuner(
        f"cubejit.std.cumsum.{T.name}.{U.name}.cpu",
        blocks,
        _scan_blocks,
        lambda block: f"{block} elements a cube",
        key=lambda x, out, exclusive, flat: (
            anchor(x.shape[2]),
            anchor(x.shape[0] * x.shape[1]),
            flat,
        ),
        kernels=(totals_kernel(T), scan_kernel(T, U)),
    )


@functools.cache
def count_tuner(runs: tuple[int, ...], T: Scalar, compute: Scalar) -> Tuner:
    """The tuner of :func:`count` of ``T`` (bins computed in ``compute``) among ``runs``: one
    decision per size class of the input and of the count of bins."""
    return tuned.tuner(
        f"cubejit.std.histogram.{T.name}.cpu",
        runs,
        functools.partial(count, compute=compute),
        lambda run: f"{run} elements a cube",
        key=lambda xv, counts, edges, lo, span, bins: (
            anchor(xv.shape[0] * xv.shape[1] * xv.shape[2]),
            anchor(bins),
        ),
        kernels=(histogram_kernel(T, compute),),
    )
