# Kernels here compute on element types chosen when each is made, which mypy cannot follow.
# mypy: disable-error-code="valid-type, operator, type-arg, type-var"
"""``sum``, ``max``, ``min`` and ``mean`` over one axis or all of an array.

Over an axis, one cube reduces each row: the axis is the row, the other dimensions are folded
into at most two (:func:`~cubejit.std.views.fold_rows`), so strided inputs are read in place.
Over all elements, cubes reduce runs of the array into one partial each, and one cube reduces
the partials. Floats accumulate in ``f32`` (``f64`` for ``f64``); ``max`` and ``min`` return
NaN only where every element is NaN, as the language's ``max`` and ``min`` do (numpy's
``fmax.reduce``).

Kernels here are made per element type; a kernel names each type in its body as well as in its
signature (``A(T(v))``), because the frontend resolves annotations through the kernel's closure.
"""

from __future__ import annotations

import builtins
import functools
import math
from typing import Any

import cubejit as cj
from cubejit.errors import LaunchError
from cubejit.ir.types import MAX_LINE_BYTES, Scalar
from cubejit.lang import Kernel
from cubejit.std import cpu_runs, tuned
from cubejit.std.cube import MAX, MIN, OPERATIONS, SUM, combine, cube_reduce
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
    try_fold,
)
from cubejit.tune import Tuner, anchor

RUN = {"cpu": (64, 1024), "cuda": (256, 16)}
"""Units per cube and elements each unit reads for a reduction over all elements (on CUDA in
an unrolled loop, so each unit has all its loads in flight at once)."""


@functools.cache
def rows_kernel(T: Scalar, U: Scalar) -> Kernel:
    A = accumulator(T)
    reduce_cube = cube_reduce(A)

    @cj.kernel
    def reduce_rows(
        x: cj.Tensor[T, 3],  # type: ignore[valid-type]
        out: cj.Tensor[U, 3],  # type: ignore[valid-type]
        init: A,  # type: ignore[valid-type]
        scale: A,  # type: ignore[valid-type]
        OP: cj.Comptime[int],
    ):
        r = cj.CUBE_POS
        i = r // x.shape(1)
        k = r % x.shape(1)
        acc = init
        for j in range(cj.UNIT_POS, x.shape(2), cj.CUBE_DIM):
            acc = combine(acc, A(T(x[i, k, j])), OP)
        total = reduce_cube(acc, OP)
        if cj.UNIT_POS == 0:
            out[i, k, 0] = U(total * scale)

    return reduce_rows


@functools.cache
def runs_kernel(T: Scalar) -> Kernel:
    A = accumulator(T)
    reduce_cube = cube_reduce(A)

    @cj.kernel
    def reduce_runs(
        x: cj.Tensor[T, 3],  # type: ignore[valid-type]
        partial: cj.Array[A],  # type: ignore[valid-type]
        init: A,  # type: ignore[valid-type]
        OP: cj.Comptime[int],
        R: cj.Comptime[int],
        UNROLL: cj.Comptime[bool],
    ):
        n = x.shape(2)
        first = cj.CUBE_POS * cj.CUBE_DIM * R
        base = first + cj.UNIT_POS
        acc = init
        if first + R * cj.CUBE_DIM <= n:
            if UNROLL:
                for k in cj.unroll(range(R)):
                    acc = combine(acc, A(T(x[0, 0, base + k * cj.CUBE_DIM])), OP)
            else:
                for k in range(R):
                    acc = combine(acc, A(T(x[0, 0, base + cj.u32(k) * cj.CUBE_DIM])), OP)
        else:
            for k in range(R):
                j = base + cj.u32(k) * cj.CUBE_DIM
                if j < n:
                    acc = combine(acc, A(T(x[0, 0, j])), OP)
        total = reduce_cube(acc, OP)
        if cj.UNIT_POS == 0:
            partial[cj.CUBE_POS] = total

    return reduce_runs


LINES: dict[str, tuple[tuple[int, int, int], ...]] = {
    "cpu": (),
    "cuda": ((1024, 132, 8), (512, 264, 8), (1024, 264, 4), (256, 528, 8)),
}
"""For a reduction over all elements of a contiguous array: the shapes of the lined form
:func:`tuner` chooses among (the first where one is not tuned), each units per cube, cubes and
lines each unit loads a round (independent loads in flight); none where a backend keeps the
runs form. The cubes are a bounded number (one or a few per multiprocessor) that take the
array grid-stride, so that their partials are few and one small cube finishes."""


@functools.cache
def lines_kernel(T: Scalar) -> Kernel:
    A = accumulator(T)
    reduce_cube = cube_reduce(A)

    @cj.kernel
    def reduce_lines(
        x: cj.Array[cj.Line[T]],  # type: ignore[valid-type]
        whole: cj.Tensor[T, 3],  # type: ignore[valid-type]
        partial: cj.Array[A],  # type: ignore[valid-type]
        init: A,  # type: ignore[valid-type]
        OP: cj.Comptime[int],
        K: cj.Comptime[int],
    ):
        u = cj.UNIT_POS
        cubes = cj.CUBE_COUNT
        chunks = x.len() // cj.CUBE_DIM
        rounds = chunks // (cubes * K)
        acc = cj.line(init, x.line_size())
        for r in range(rounds):
            first = r * (cubes * K) + cj.CUBE_POS
            for k in cj.unroll(range(K)):
                v = A(x[(first + cj.u32(k) * cubes) * cj.CUBE_DIM + u])
                if OP == 0:
                    acc += v
                elif OP == 1:
                    acc = cj.max(acc, v)
                else:
                    acc = cj.min(acc, v)
        for c in range(rounds * (cubes * K) + cj.CUBE_POS, chunks, cubes):
            v = A(x[c * cj.CUBE_DIM + u])
            if OP == 0:
                acc += v
            elif OP == 1:
                acc = cj.max(acc, v)
            else:
                acc = cj.min(acc, v)
        own = acc[0]
        for lane in cj.unroll(range(1, x.line_size())):
            own = combine(own, acc[lane], OP)
        if cj.CUBE_POS == 0:
            j = chunks * cj.CUBE_DIM + u
            if j < x.len():
                for lane in cj.unroll(range(x.line_size())):
                    own = combine(own, A(T(x[j][lane])), OP)
            rest = x.len() * x.line_size() + u
            if rest < whole.shape(2):
                own = combine(own, A(T(whole[0, 0, rest])), OP)
        total = reduce_cube(own, OP)
        if cj.UNIT_POS == 0:
            partial[cj.CUBE_POS] = total

    return reduce_lines


def _row_dim(n: int) -> int:
    """Units per cube for rows of ``n``: a power of two from 32 to 256 covering the row."""
    return builtins.min(256, builtins.max(32, 1 << builtins.max(0, n - 1).bit_length()))


def reduce_rows(x: Operand, axis: int, out: Operand, op: int, init: float, scale: float) -> None:
    """Reduces ``x`` along ``axis`` into ``out`` (``x``'s shape without ``axis``)."""
    others = tuple(e for d, e in enumerate(x.shape) if d != axis)
    x_steps = tuple(s for d, s in enumerate(x.strides) if d != axis)
    (a, b), ((xa, xb), (oa, ob)) = fold_rows(others, [x_steps, out.strides], "reduce")
    n = x.shape[axis]
    rows = a * b
    if rows == 0:
        return
    xv = x.view((a, b, n), (xa, xb, x.strides[axis]))
    ov = out.view((a, b, 1), (oa, ob, 0))
    kernel = rows_kernel(x.scalar, out.scalar)
    launch(kernel, x.client, rows, _row_dim(n), xv, ov, init, scale, OP=op)


def reduce_all(x: Operand, out: Operand, op: int, init: float, scale: float) -> None:
    """Reduces every element of ``x`` into ``out``'s one element."""
    client = x.client
    acc = accumulator(x.scalar)
    folded = try_fold(x.shape, [x.strides])
    if folded is None:
        rows = operand(new_array(client, x.shape[:-1], acc), client)
        reduce_rows(x, x.ndim - 1, rows, op, init, 1.0)
        reduce_all(rows, out, op, init, scale)
        return
    (a, b), ((xa, xb),) = folded
    if a > 1:
        rows = operand(new_array(client, (a,), acc), client)
        flat = Operand(client, x.scalar, (a, b), (xa, xb), x.base, x.owner)
        reduce_rows(flat, 1, rows, op, init, 1.0)
        x, b, xb = rows, a, 1
    forms = LINES[client.backend]
    if forms and xb == 1 and b > forms[0][0]:
        T, U = x.scalar, out.scalar
        args = (x.view((b,), (1,)), out.view((1,), (1,)), op, init, scale)
        tuned.launch(forms, lambda: tuner(forms, T, U), _run_lines, client, *args)
        return
    if client.backend == "cpu" and (xb == 1 or b == 1):
        cpu_runs.reduce_all(x.view((b,), (1,)), out, op, init, scale)
        return
    dim, per_unit = RUN[client.backend]
    run = dim * per_unit
    if b <= run:
        xv = x.view((1, 1, b), (0, 0, xb))
    else:
        cubes = math.ceil(b / run)
        partial = operand(new_array(client, (cubes,), acc), client)
        xv = x.view((1, 1, b), (0, 0, xb))
        unroll = client.backend == "cuda"
        launch(
            runs_kernel(x.scalar),
            client,
            cubes,
            dim,
            xv,
            partial.owner,
            init,
            OP=op,
            R=per_unit,
            UNROLL=unroll,
        )
        xv = partial.view((1, 1, cubes), (0, 0, 1))
    launch(
        rows_kernel(acc if b > run else x.scalar, out.scalar),
        client,
        1,
        dim,
        xv,
        out.view((1, 1, 1), (0, 0, 0)),
        init,
        scale,
        OP=op,
    )


def reduce_lines(
    x: Operand, n: int, out: Operand, op: int, init: float, scale: float, lined: tuple[int, ...]
) -> None:
    """Reduces the ``n`` adjacent elements at ``x``'s start into ``out``'s one element: the
    lined form takes the elements that fill whole 16-byte lines, and its first cube the few
    after them."""
    client = x.client
    acc = accumulator(x.scalar)
    dim, cubes, per_round = lined
    width = MAX_LINE_BYTES // x.scalar.itemsize
    body = n - n % width
    cubes = builtins.max(1, builtins.min(cubes, body // (dim * width)))
    partial = operand(new_array(client, (cubes,), acc), client)
    launch(
        lines_kernel(x.scalar),
        client,
        cubes,
        dim,
        x.view((body,), (1,)),
        x.view((1, 1, n), (0, 0, 1)),
        partial.owner,
        init,
        OP=op,
        K=per_round,
    )
    launch(
        rows_kernel(acc, out.scalar),
        client,
        1,
        _row_dim(cubes),
        partial.view((1, 1, cubes), (0, 0, 1)),
        out.view((1, 1, 1), (0, 0, 0)),
        init,
        scale,
        OP=op,
    )


def _run_lines(
    form: tuple[int, int, int], client: Any, x: Any, out: Any, op: int, init: float, scale: float
) -> None:
    """:func:`reduce_lines` of the view ``x`` into the view ``out``, launched on their client
    (a candidate's warm-up goes unrecorded; its kernels are declared)."""
    src = operand(x)
    reduce_lines(src, src.size, operand(out), op, init, scale, form)


@functools.cache
def tuner(forms: tuple[tuple[int, int, int], ...], T: Scalar, U: Scalar) -> Tuner:
    """The tuner of lined reductions of every element of a ``T`` array into a ``U`` among
    ``forms`` (see :data:`LINES`): one decision per size class of the array, whatever the
    operation."""
    return tuned.tuner(
        f"cubejit.std.reduce.{T.name}.{U.name}",
        forms,
        _run_lines,
        lambda form: f"{form[0]} units, {form[1]} cubes, {form[2]} a round",
        key=lambda x, out, op, init, scale: (anchor(x.shape[0]),),
        kernels=(lines_kernel(T), rows_kernel(accumulator(T), U)),
    )


def _reduce(what: str, x: Any, axis: int | None, out: Any, client: Any, mean: bool = False) -> Any:
    src = operand(x, client)
    scalar = floating(src, what)
    op = OPERATIONS["sum" if mean else what]
    init = 0.0 if op == SUM else math.nan
    if axis is None:
        count = src.size
        shape: tuple[int, ...] = ()
    else:
        axis = normalize_axis(axis, src.ndim, what)
        count = src.shape[axis]
        shape = tuple(e for d, e in enumerate(src.shape) if d != axis)
    if count == 0 and op != SUM:
        raise LaunchError(f"cubejit.std.{what} of no elements has no value")
    scale = 1.0 / count if mean and count else (math.nan if mean else 1.0)
    result, dst = output(out, src.client, shape, scalar, what)
    if axis is None:
        reduce_all(src, dst, op, init, scale)
    else:
        reduce_rows(src, axis, dst, op, init, scale)
    return result


@replayed
def sum(x: Any, axis: int | None = None, *, out: Any = None, client: Any = None) -> Any:
    """The sum of ``x``'s elements along ``axis`` (all of them when ``None``), accumulated in
    ``f32`` (``f64`` for ``f64`` arrays), as a new array of the client's, or into ``out``.

    >>> import numpy as np, cubejit.std as cs
    >>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> cs.sum(x, axis=1)
    array([ 3., 12.], dtype=float32)
    """
    return _reduce("sum", x, axis, out, client)


@replayed
def max(x: Any, axis: int | None = None, *, out: Any = None, client: Any = None) -> Any:
    """The largest of ``x``'s elements along ``axis`` (all when ``None``); NaN elements lose to
    any number, so the result is NaN only where every element is (numpy's ``fmax.reduce``).

    >>> import numpy as np, cubejit.std as cs
    >>> cs.max(np.array([[1.0, np.nan], [-2.0, 5.0]], np.float32), axis=1)
    array([1., 5.], dtype=float32)
    """
    return _reduce("max", x, axis, out, client)


@replayed
def min(x: Any, axis: int | None = None, *, out: Any = None, client: Any = None) -> Any:
    """The smallest of ``x``'s elements along ``axis`` (all when ``None``); NaN elements lose
    to any number, as in :func:`max`.

    >>> import numpy as np, cubejit.std as cs
    >>> cs.min(np.array([3.0, 1.0, 2.0], np.float32))
    array(1., dtype=float32)
    """
    return _reduce("min", x, axis, out, client)


@replayed
def mean(x: Any, axis: int | None = None, *, out: Any = None, client: Any = None) -> Any:
    """The mean of ``x``'s elements along ``axis`` (all when ``None``): their sum, accumulated
    as :func:`sum` does, times one over their count.

    >>> import numpy as np, cubejit.std as cs
    >>> cs.mean(np.array([[1.0, 3.0], [5.0, 7.0]], np.float32), axis=0)
    array([3., 5.], dtype=float32)
    """
    return _reduce("mean", x, axis, out, client, mean=True)


__all__ = ["MAX", "MIN", "SUM", "max", "mean", "min", "sum"]
