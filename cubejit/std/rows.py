# Kernels here compute on element types chosen when each is made, which mypy cannot follow.
# mypy: disable-error-code="valid-type, operator, type-arg"
"""``softmax`` and ``layer_norm`` over the rows of an array.

One cube takes each row. A row that fits the cube's units a few elements each is read once:
its elements stay in each unit's local array while the cube reduces their maximum and sum (or
mean and variance), then are written. A longer row is read twice: the first pass keeps a
running maximum and a sum rescaled to it (softmax) or a shifted sum and sum of squares
(layer_norm), the second writes. Floats compute in ``f32`` (``f64`` for ``f64``).

Kernels here are made per element type; a kernel names each type in its body as well as in its
signature, because the frontend resolves annotations through the kernel's closure.
"""

from __future__ import annotations

import builtins
import functools
import math
from typing import Any

import numpy as np

import cubejit as cj
from cubejit.errors import LaunchError
from cubejit.ir.types import Scalar
from cubejit.lang import Kernel
from cubejit.std import cpu_rows, tuned
from cubejit.std.cube import MAX, SUM, cube_reduce
from cubejit.std.lined_rows import (
    LINED,
    LINES_PER_UNIT,
    layer_norm_lines_kernel,
    line_size,
    shape_of_lines,
    softmax_lines_kernel,
)
from cubejit.std.replay import launch, replayed
from cubejit.std.views import (
    Operand,
    accumulator,
    floating,
    fold_rows,
    normalize_axis,
    operand,
    output,
)
from cubejit.tune import Tuner, anchor

PER_UNIT = 8
"""The most elements of a row each unit keeps for the one-pass form."""


@functools.cache
def softmax_kernel(T: Scalar) -> Kernel:
    A = accumulator(T)
    reduce_cube = cube_reduce(A)

    @cj.kernel
    def softmax_rows(
        x: cj.Tensor[T, 3],  # type: ignore[valid-type]
        out: cj.Tensor[T, 3],  # type: ignore[valid-type]
        lowest: A,  # type: ignore[valid-type]
        K: cj.Comptime[int],
        ONE_PASS: cj.Comptime[bool],
    ):
        i = cj.CUBE_POS // x.shape(1)
        k = cj.CUBE_POS % x.shape(1)
        n = x.shape(2)
        u = cj.UNIT_POS
        if ONE_PASS:
            v = cj.LocalArray[A](K)
            m = lowest
            for t in cj.unroll(range(K)):
                j = u + t * cj.CUBE_DIM
                if j < n:
                    v[t] = A(T(x[i, k, j]))
                else:
                    v[t] = lowest
                m = max(m, v[t])
            top = reduce_cube(m, MAX)
            s = A(0)
            for t in cj.unroll(range(K)):
                e = cj.exp(v[t] - top)
                v[t] = e
                if u + t * cj.CUBE_DIM < n:
                    s += e
            scale = A(1) / reduce_cube(s, SUM)
            for t in cj.unroll(range(K)):
                j = u + t * cj.CUBE_DIM
                if j < n:
                    out[i, k, j] = T(v[t] * scale)
        else:
            m = lowest
            s = A(0)
            for j in range(u, n, cj.CUBE_DIM):
                w = A(T(x[i, k, j]))
                if w > m:
                    s = s * cj.exp(m - w) + A(1)
                    m = w
                elif m != lowest or cj.isnan(w):
                    s += cj.exp(w - m)
            top = reduce_cube(m, MAX)
            mine = A(0)
            if m != lowest or cj.isnan(s):
                mine = s * cj.exp(m - top)
            scale = A(1) / reduce_cube(mine, SUM)
            for j in range(u, n, cj.CUBE_DIM):
                out[i, k, j] = T(cj.exp(A(x[i, k, j]) - top) * scale)

    return softmax_rows


@functools.cache
def layer_norm_kernel(T: Scalar) -> Kernel:
    A = accumulator(T)
    reduce_cube = cube_reduce(A)

    @cj.kernel
    def layer_norm_rows(
        x: cj.Tensor[T, 3],  # type: ignore[valid-type]
        weight: cj.Tensor[T, 1],  # type: ignore[valid-type]
        bias: cj.Tensor[T, 1],  # type: ignore[valid-type]
        out: cj.Tensor[T, 3],  # type: ignore[valid-type]
        eps: A,  # type: ignore[valid-type]
        K: cj.Comptime[int],
        ONE_PASS: cj.Comptime[bool],
    ):
        i = cj.CUBE_POS // x.shape(1)
        k = cj.CUBE_POS % x.shape(1)
        n = x.shape(2)
        count = A(n)
        u = cj.UNIT_POS
        if ONE_PASS:
            v = cj.LocalArray[A](K)
            s = A(0)
            for t in cj.unroll(range(K)):
                j = u + t * cj.CUBE_DIM
                if j < n:
                    v[t] = A(T(x[i, k, j]))
                else:
                    v[t] = A(0)
                s += v[t]
            mean = reduce_cube(s, SUM) / count
            q = A(0)
            for t in cj.unroll(range(K)):
                if u + t * cj.CUBE_DIM < n:
                    d = v[t] - mean
                    q += d * d
            rstd = A(1) / cj.sqrt(reduce_cube(q, SUM) / count + eps)
            for t in cj.unroll(range(K)):
                j = u + t * cj.CUBE_DIM
                if j < n:
                    out[i, k, j] = T((v[t] - mean) * rstd * A(weight[j]) + A(bias[j]))
        else:
            shift = A(x[i, k, 0])
            s = A(0)
            q = A(0)
            for j in range(u, n, cj.CUBE_DIM):
                d = A(x[i, k, j]) - shift
                s += d
                q += d * d
            ds = reduce_cube(s, SUM) / count
            var = max(reduce_cube(q, SUM) / count - ds * ds, A(0))
            mean = shift + ds
            rstd = A(1) / cj.sqrt(var + eps)
            for j in range(u, n, cj.CUBE_DIM):
                w = A(weight[j])
                out[i, k, j] = T((A(x[i, k, j]) - mean) * rstd * w + A(bias[j]))

    return layer_norm_rows


def _shape_of_rows(n: int, backend: str) -> tuple[int, int, bool]:
    """Units per cube, elements per unit and whether one pass serves rows of ``n``."""
    dim = builtins.min(1024, builtins.max(32, 1 << builtins.max(0, n - 1).bit_length()))
    if backend == "cuda":
        dim = builtins.min(dim, 1024 if n > 4096 else 512 if n > 2048 else 256)
    else:
        dim = builtins.min(dim, 128)
    per_unit = -(-n // dim)
    if per_unit > PER_UNIT:
        return dim, 1, False
    return dim, 1 << builtins.max(0, per_unit - 1).bit_length(), True


def _walks_rows(src: Operand, scalar: Scalar, *views: Any) -> bool:
    """Whether the CPU's form (:mod:`cubejit.std.cpu_rows`) takes these rows: ``f32`` or
    ``f64`` rows of adjacent elements."""
    return (
        src.client.backend == "cpu"
        and cpu_rows.serves(scalar)
        and all(v.strides[-1] == scalar.itemsize for v in views)
    )


Layouts = list[tuple[Operand, tuple[int, ...]]]


def _lined(what: str, scalar: Scalar, n: int, layouts: Layouts, steps: list[int]) -> int | None:
    """The lanes of the lined form for rows of ``n`` elements (:mod:`~cubejit.std.lined_rows`)
    of operands laid out as ``layouts`` (each with its strides other than the row's), or
    ``None`` where it does not serve: another backend, a row whose elements are not adjacent in
    every operand (``steps``), or one too long for one pass at the most lines a unit keeps."""
    if not LINED[layouts[0][0].client.backend] or any(s != 1 for s in steps):
        return None
    lanes = line_size(scalar, n, [(op.address, outer) for op, outer in layouts])
    if shape_of_lines(n // lanes, builtins.max(LINES_PER_UNIT[what])) is None:
        return None
    return lanes


def _lines(what: str, scalar: Scalar, lanes: int, client: Any, *args: Any) -> None:
    """Runs ``what``'s lined kernel on ``args`` (rank-3 views of rows ``x`` and ``out``, then
    for ``layer_norm`` the weight, the bias and ``eps``), tuned where there is a choice."""
    most = LINES_PER_UNIT[what]
    run = functools.partial(_launch_lines, what=what, scalar=scalar, lanes=lanes)
    tuned.launch(most, lambda: lines_tuner(what, scalar, lanes, most), run, client, *args)


def _launch_lines(
    most: int, client: Any, x: Any, out: Any, *rest: Any, what: str, scalar: Scalar, lanes: int
) -> None:
    """One launch of ``what``'s lined kernel, each unit keeping at most ``most`` lines."""
    n = x.shape[2]
    shape = shape_of_lines(n // lanes, most)
    if shape is None:
        raise LaunchError(
            f"cubejit.std.{what}: a row of {n} elements does not fit 1024 units of {most} "
            f"lines of {lanes}"
        )
    dim, per_unit = shape
    rows = x.shape[0] * x.shape[1]
    if what == "softmax":
        kernel = softmax_lines_kernel(scalar, lanes)
        args: tuple[Any, ...] = (cj.lined(x, lanes), cj.lined(out, lanes), -math.inf)
    else:
        weight, bias, eps = rest
        kernel = layer_norm_lines_kernel(scalar, lanes)
        lined = (cj.lined(a, lanes) for a in (x, weight, bias, out))
        args = (*lined, eps, float(n))
    launch(kernel, client, rows, dim, *args, K=per_unit)


@functools.cache
def lines_tuner(what: str, scalar: Scalar, lanes: int, most: tuple[int, ...]) -> Tuner:
    """The tuner of ``what``'s lined kernel for rows in lines of ``lanes`` ``scalar``s: one
    decision per size class of the row's length and of the count of rows, among ``most`` (the
    most lines each unit keeps); a choice a row does not fit fails and is skipped."""
    kernel = softmax_lines_kernel if what == "softmax" else layer_norm_lines_kernel
    return tuned.tuner(
        f"cubejit.std.{what}.{scalar.name}.lines{lanes}",
        most,
        functools.partial(_launch_lines, what=what, scalar=scalar, lanes=lanes),
        lambda lines: f"{lines} lines a unit",
        key=lambda x, out, *rest: (anchor(x.shape[2]), anchor(x.shape[0] * x.shape[1])),
        kernels=(kernel(scalar, lanes),),
    )


def _rows(x: Operand, out: Operand, axis: int, what: str) -> tuple[int, Any, Any, Layouts]:
    """The count of rows, ``x`` and ``out`` as rank-3 views of rows, and each with its two
    folded strides."""
    others = tuple(e for d, e in enumerate(x.shape) if d != axis)
    steps = [tuple(s for d, s in enumerate(o.strides) if d != axis) for o in (x, out)]
    (a, b), ((xa, xb), (oa, ob)) = fold_rows(others, steps, what)
    n = x.shape[axis]
    return (
        a * b,
        x.view((a, b, n), (xa, xb, x.strides[axis])),
        out.view((a, b, n), (oa, ob, out.strides[axis])),
        [(x, (xa, xb)), (out, (oa, ob))],
    )


@replayed
def softmax(x: Any, axis: int = -1, *, out: Any = None, client: Any = None) -> Any:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``, computed in ``f32`` (``f64`` for
    ``f64``), as a new array or into ``out``. A row holding ``-inf`` gives 0 there; a row of
    only ``-inf``, or holding a NaN, gives NaN (as numpy's formula does).

    >>> import numpy as np, cubejit.std as cs
    >>> np.round(cs.softmax(np.array([[0.0, np.log(3.0)]], np.float32)), 6)
    array([[0.25, 0.75]], dtype=float32)
    """
    src = operand(x, client)
    scalar = floating(src, "softmax")
    axis = normalize_axis(axis, src.ndim, "softmax")
    result, dst = output(out, src.client, src.shape, scalar, "softmax")
    rows, xv, ov, layouts = _rows(src, dst, axis, "softmax")
    n = src.shape[axis]
    if rows == 0 or n == 0:
        return result
    client = src.client
    lanes = _lined("softmax", scalar, n, layouts, [src.strides[axis], dst.strides[axis]])
    if lanes is not None:
        _lines("softmax", scalar, lanes, client, xv, ov)
        return result
    if _walks_rows(src, scalar, xv, ov):
        cpu_rows.softmax_rows(rows, xv, ov, scalar, src.client, -math.inf)
        return result
    dim, per_unit, one_pass = _shape_of_rows(n, src.client.backend)
    launch(
        softmax_kernel(scalar),
        src.client,
        rows,
        dim,
        xv,
        ov,
        -math.inf,
        K=per_unit,
        ONE_PASS=one_pass,
    )
    return result


@replayed
def layer_norm(
    x: Any,
    weight: Any = None,
    bias: Any = None,
    eps: float = 1e-5,
    *,
    out: Any = None,
    client: Any = None,
) -> Any:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axis (mean and biased
    variance of each row, in ``f32``; ``f64`` for ``f64``), as a new array or into ``out``.
    ``weight`` and ``bias`` have the row's length (ones and zeros when ``None``).

    >>> import numpy as np, cubejit.std as cs
    >>> x = np.array([[1.0, 2.0, 3.0]], np.float32)
    >>> np.round(cs.layer_norm(x, eps=0.0), 4)
    array([[-1.2247,  0.    ,  1.2247]], dtype=float32)
    """
    src = operand(x, client)
    scalar = floating(src, "layer_norm")
    n = src.shape[-1] if src.ndim else 0
    params = []
    operands = []
    steps = [src.strides[-1] if src.ndim else 1]
    for name, given, fill in (("weight", weight, 1.0), ("bias", bias, 0.0)):
        if given is None:
            given = src.client.to_device(np.full(builtins.max(n, 1), fill, scalar.dtype))
        p = operand(given, src.client, name)
        if p.shape != (n,) and not (n == 0 and p.shape == (1,)):
            raise LaunchError(
                f"cubejit.std.layer_norm: {name} has shape {p.shape}, expected ({n},)"
            )
        if p.scalar != scalar:
            raise LaunchError(
                f"cubejit.std.layer_norm: {name} holds {p.scalar.name}, not {scalar.name}"
            )
        params.append(p.view(p.shape, p.strides))
        operands.append(p)
        steps.append(p.strides[0] if p.strides else 1)
    result, dst = output(out, src.client, src.shape, scalar, "layer_norm")
    rows, xv, ov, layouts = _rows(src, dst, src.ndim - 1, "layer_norm")
    if rows == 0 or n == 0:
        return result
    client = src.client
    layouts += [(p, ()) for p in operands]
    lanes = _lined("layer_norm", scalar, n, layouts, [*steps, dst.strides[-1]])
    if lanes is not None:
        _lines("layer_norm", scalar, lanes, client, xv, ov, *params, eps)
        return result
    if _walks_rows(src, scalar, xv, ov):
        cpu_rows.layer_norm_rows(rows, xv, params[0], params[1], ov, eps, scalar, src.client)
        return result
    dim, per_unit, one_pass = _shape_of_rows(n, src.client.backend)
    launch(
        layer_norm_kernel(scalar),
        src.client,
        rows,
        dim,
        xv,
        params[0],
        params[1],
        ov,
        eps,
        K=per_unit,
        ONE_PASS=one_pass,
    )
    return result


__all__ = ["layer_norm", "softmax"]
