# Kernels here compute on element types chosen when each is made, which mypy cannot follow.
# mypy: disable-error-code="valid-type, operator, type-arg"
"""``cumsum`` and ``exclusive_cumsum``: running sums along an axis or over all elements.

The scan-then-propagate form: the row is cut into blocks; one launch sums each block, the block
sums are scanned (by the same routine, so any length works), and one launch rescans each block
starting from its offset, writing the result. On the CPU a cube is one unit scanning a long
block serially; on CUDA a cube of units scans a block a cube-width at a time (plane scans, then
the planes' totals in shared memory), except rows of adjacent elements, which CUDA scans in runs
of lines per unit: in one pass with decoupled look-back (:mod:`cubejit.std.lookback_scan`), or
reduce-then-scan (:mod:`cubejit.std.lined_scan`), as a tuner finds faster for the size (sums
in ``f64`` take the second). Floats accumulate in ``f32`` (``f64`` for ``f64``).

Kernels here are made per element type; a kernel names each type in its body as well as in its
signature, because the frontend resolves annotations through the kernel's closure.
"""

from __future__ import annotations

import functools
from typing import Any

import cubejit as cj
from cubejit.errors import LaunchError
from cubejit.ir.types import Scalar, f32, u64
from cubejit.lang import Kernel
from cubejit.std import cpu_runs, lined_scan, tuned
from cubejit.std.lined_scan import LinedScan, lined_scan_kernel, lined_totals_kernel
from cubejit.std.lookback_scan import clear_kernel, lookback_scan_kernel
from cubejit.std.replay import launch, replayed
from cubejit.std.views import (
    Operand,
    accumulator,
    floating,
    fold_rows,
    new_array,
    normalize_axis,
    operand,
    output,
    packed,
    try_fold,
)
from cubejit.tune import Tuner, anchor

BLOCK = {"cpu": (1, 16384), "cuda": (256, 16)}
"""Units per cube and cube-widths per block."""
LINED: dict[str, tuple[LinedScan, ...]] = {"cpu": (), "cuda": lined_scan.FORMS}
"""Where rows of adjacent elements take the lined form of :mod:`cubejit.std.lined_scan`: the
ways to cut them that :func:`tuner` chooses among (the first for scans it does not tune); none
keeps the form above."""


@functools.cache
def totals_kernel(T: Scalar) -> Kernel:
    from cubejit.std.cube import cube_reduce

    A = accumulator(T)
    reduce_cube = cube_reduce(A)

    @cj.kernel
    def block_totals(
        x: cj.Tensor[T, 3],  # type: ignore[valid-type]
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
        acc = A(0)
        for t in range(min(cj.u32(K), cj.cdiv(n - first, cj.CUBE_DIM))):
            j = start + cj.u32(t) * cj.CUBE_DIM
            if j < n:
                acc += A(T(x[i, k, j]))
        total = reduce_cube(acc, 0)
        if cj.UNIT_POS == 0:
            totals[cj.CUBE_POS] = total

    return block_totals


@functools.cache
def scan_kernel(T: Scalar, U: Scalar) -> Kernel:
    A = accumulator(T)

    @cj.kernel
    def scan_blocks(
        x: cj.Tensor[T, 3],  # type: ignore[valid-type]
        out: cj.Tensor[U, 3],  # type: ignore[valid-type]
        offsets: cj.Array[A],  # type: ignore[valid-type]
        blocks: cj.u32,
        K: cj.Comptime[int],
        EXCLUSIVE: cj.Comptime[bool],
        OFFSETS: cj.Comptime[bool],
    ):
        partial = cj.SharedMemory[A](cj.CUBE_DIM // cj.PLANE_DIM + 1)
        row = cj.CUBE_POS // blocks
        i = row // x.shape(1)
        k = row % x.shape(1)
        n = x.shape(2)
        u = cj.UNIT_POS
        mine = u // cj.PLANE_DIM
        first = (cj.CUBE_POS % blocks) * cj.CUBE_DIM * K
        start = first + u
        carry = A(0)
        if OFFSETS:
            carry = offsets[cj.CUBE_POS]
        for t in range(min(cj.u32(K), cj.cdiv(n - first, cj.CUBE_DIM))):
            j = start + cj.u32(t) * cj.CUBE_DIM
            v = A(0)
            if j < n:
                v = A(T(x[i, k, j]))
            before = cj.plane_exclusive_sum(v)
            if cj.UNIT_POS_PLANE == cj.PLANE_DIM - 1:
                partial[mine] = before + v
            cj.sync_cube()
            lead = carry
            for p in range(cj.cdiv(cj.CUBE_DIM, cj.PLANE_DIM)):
                w = partial[p]
                if p < mine:
                    lead += w
                carry += w
            cj.sync_cube()
            if j < n:
                if EXCLUSIVE:
                    out[i, k, j] = U(lead + before)
                else:
                    out[i, k, j] = U(lead + before + v)

    return scan_blocks


def scan(x: Operand, out: Operand, exclusive: bool, flat: bool, tune: bool = True) -> None:
    """Scans ``x`` into ``out``, both rank-3 layouts ``(A, B, N)`` of one shape: along ``N``
    for each row, or, when ``flat``, over all elements in row-major order; a lined scan is
    tuned unless not ``tune`` (the scan of a scan's block totals)."""
    client = x.client
    if client.backend == "cpu" and cpu_runs.adjacent(x, out):
        cpu_runs.scan(x, out, exclusive, flat, tune)
        return
    forms = tuple(
        f for f in LINED[client.backend] if not f.single_pass or accumulator(x.scalar) == f32
    )
    if forms and x.strides[2] == 1:
        if not tune:
            forms = forms[:1]
        views = (x.view(x.shape, x.strides), out.view(out.shape, out.strides))
        T, U = x.scalar, out.scalar
        tuned.launch(forms, lambda: tuner(forms, T, U), _run_lined, client, *views, exclusive, flat)
        return
    dim, per_block = BLOCK[client.backend]
    a, b, n = x.shape
    rows = a * b
    blocks = max(1, -(-n // (dim * per_block)))
    acc = accumulator(x.scalar)
    xv, ov = x.view(x.shape, x.strides), out.view(out.shape, out.strides)
    offsets = new_array(client, (rows * blocks if blocks > 1 or flat else 1,), acc)
    if blocks > 1 or (flat and rows > 1):
        totals = new_array(client, (rows * blocks,), acc)
        launch(totals_kernel(x.scalar), client, rows * blocks, dim, xv, totals, blocks, K=per_block)
        layout = (1, 1, rows * blocks) if flat else (a, b, blocks)
        _scan_totals(totals, offsets, client, layout)
    launch(
        scan_kernel(x.scalar, out.scalar),
        client,
        rows * blocks,
        dim,
        xv,
        ov,
        offsets,
        blocks,
        K=per_block,
        EXCLUSIVE=exclusive,
        OFFSETS=blocks > 1 or (flat and rows > 1),
    )


def _scan_lined(x: Operand, out: Operand, exclusive: bool, flat: bool, form: LinedScan) -> None:
    """:func:`scan` for rows of adjacent elements, in runs of lines per unit."""
    client = x.client
    a, b, n = x.shape
    rows = a * b
    xv = x.view(x.shape, x.strides)
    lanes = lined_scan.lanes(xv, x.scalar)
    blocks = max(1, -(-n // (lanes * form.units * form.lines * form.rounds)))
    acc = accumulator(x.scalar)
    if form.single_pass and acc == f32:
        tiles = rows * -(-n // (lanes * form.units * form.lines))
        state = new_array(client, (tiles + 1,), u64)
        launch(clear_kernel(), client, -(-(tiles + 1) // 256), 256, state)
        launch(
            lookback_scan_kernel(x.scalar, out.scalar),
            client,
            tiles,
            form.units,
            cj.lined(xv, lanes),
            out.view(out.shape, out.strides),
            state,
            tiles // rows,
            R=form.lines,
            EXCLUSIVE=exclusive,
            FLAT=flat,
        )
        return
    chained = blocks > 1 or (flat and rows > 1)
    if chained:
        offsets = new_array(client, (rows * blocks,), acc)
    elif x.scalar == acc:
        offsets = x.view((1,), (1,))
    else:
        offsets = new_array(client, (1,), acc)
    if chained:
        totals = new_array(client, (rows * blocks,), acc)
        launch(
            lined_totals_kernel(x.scalar),
            client,
            rows * blocks,
            form.units,
            cj.lined(xv, lanes),
            totals,
            blocks,
            K=form.lines * form.rounds,
        )
        layout = (1, 1, rows * blocks) if flat else (a, b, blocks)
        _scan_totals(totals, offsets, client, layout)
    launch(
        lined_scan_kernel(x.scalar, out.scalar),
        client,
        rows * blocks,
        form.units,
        cj.lined(xv, lanes),
        out.view(out.shape, out.strides),
        offsets,
        blocks,
        R=form.lines,
        K=form.rounds,
        EXCLUSIVE=exclusive,
        OFFSETS=chained,
    )


def _scan_totals(totals: Any, offsets: Any, client: Any, layout: tuple[int, int, int]) -> None:
    """Scans a scan's block ``totals`` into their exclusive ``offsets`` (contiguous arrays of
    ``client``'s, laid out as ``layout``), untuned: a tuner may be timing the scan they serve."""
    scan(packed(totals, client, layout), packed(offsets, client, layout), True, False, tune=False)


def _run_lined(form: LinedScan, client: Any, x: Any, out: Any, exclusive: bool, flat: bool) -> None:
    """:func:`_scan_lined` of the views ``x`` and ``out``, launched on their client."""
    _scan_lined(operand(x), operand(out), exclusive, flat, form)


def _named(form: LinedScan) -> str:
    if form.single_pass:
        return f"single pass {form.units}x{form.lines}"
    return f"reduce-then-scan {form.units}x{form.lines}x{form.rounds}"


@functools.cache
def tuner(forms: tuple[LinedScan, ...], T: Scalar, U: Scalar) -> Tuner:
    """The tuner of lined scans of ``T`` into ``U`` among ``forms``: one decision per size
    class of the row's length and of the count of rows, and per ``flat`` (rows chained or
    not). A candidate launches on its arrays' client, so its warm-up runs unrecorded; its
    kernels are declared instead."""
    return tuned.tuner(
        f"cubejit.std.cumsum.{T.name}.{U.name}",
        forms,
        _run_lined,
        _named,
        key=lambda x, out, exclusive, flat: (
            anchor(x.shape[2]),
            anchor(x.shape[0] * x.shape[1]),
            flat,
        ),
        kernels=(
            clear_kernel(),
            lookback_scan_kernel(T, U),
            lined_totals_kernel(T),
            lined_scan_kernel(T, U),
        ),
    )


def _cumsum(what: str, x: Any, axis: int | None, out: Any, client: Any, exclusive: bool) -> Any:
    src = operand(x, client)
    scalar = floating(src, what)
    if axis is None:
        result, dst = output(out, src.client, (src.size,), scalar, what)
        folded = try_fold(src.shape, [src.strides])
        shape: tuple[int, ...]
        strides: tuple[int, ...]
        if folded is not None:
            (a, b), ((sa, sb),) = folded
            shape, strides = (1, a, b), (0, sa, sb)
        elif src.ndim == 3:
            shape, strides = src.shape, src.strides
        else:
            raise LaunchError(
                f"cubejit.std.{what}: the dimensions of this array do not fold into three "
                f"(shape {src.shape}); pass a contiguous copy"
            )
        step = dst.strides[0]
        packed = (shape[1] * shape[2] * step, shape[2] * step, step)
        xs = Operand(src.client, scalar, shape, strides, src.base, src.owner)
        os_ = Operand(dst.client, scalar, shape, packed, dst.base, dst.owner)
        if src.size:
            scan(xs, os_, exclusive, True)
        return result
    axis = normalize_axis(axis, src.ndim, what)
    result, dst = output(out, src.client, src.shape, scalar, what)
    others = tuple(e for d, e in enumerate(src.shape) if d != axis)
    steps = [tuple(s for d, s in enumerate(o.strides) if d != axis) for o in (src, dst)]
    (a, b), ((xa, xb), (oa, ob)) = fold_rows(others, steps, what)
    n = src.shape[axis]
    if a * b and n:
        xs = Operand(
            src.client, scalar, (a, b, n), (xa, xb, src.strides[axis]), src.base, src.owner
        )
        os_ = Operand(
            dst.client, scalar, (a, b, n), (oa, ob, dst.strides[axis]), dst.base, dst.owner
        )
        scan(xs, os_, exclusive, False)
    return result


@replayed
def cumsum(x: Any, axis: int | None = None, *, out: Any = None, client: Any = None) -> Any:
    """The running sums of ``x`` along ``axis`` (over all elements in row-major order, as a
    one-dimensional result, when ``None``), accumulated in ``f32`` (``f64`` for ``f64``), as a
    new array or into ``out``: ``out[i] = x[0] + ... + x[i]``, as ``numpy.cumsum``.

    >>> import numpy as np, cubejit.std as cs
    >>> cs.cumsum(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    array([ 1.,  3.,  6., 10.], dtype=float32)
    """
    return _cumsum("cumsum", x, axis, out, client, exclusive=False)


@replayed
def exclusive_cumsum(
    x: Any, axis: int | None = None, *, out: Any = None, client: Any = None
) -> Any:
    """The running sums of ``x`` before each element: ``out[i] = x[0] + ... + x[i - 1]``
    (``out[0] = 0``), along ``axis`` or over all elements, as :func:`cumsum`.

    >>> import numpy as np, cubejit.std as cs
    >>> cs.exclusive_cumsum(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    array([0., 1., 3., 6.], dtype=float32)
    """
    return _cumsum("exclusive_cumsum", x, axis, out, client, exclusive=True)


__all__ = ["cumsum", "exclusive_cumsum"]
