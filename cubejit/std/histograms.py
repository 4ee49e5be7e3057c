# Kernels here compute on element types chosen when each is made, which mypy cannot follow.
# mypy: disable-error-code="valid-type, operator, type-arg"
"""``histogram(x, bins, range)``: counts of ``x``'s elements in equal bins, numpy's rule.

Each cube counts its run of the input in shared memory (atomics there, one private histogram
per cube) and adds its counts to the global bins once per bin. An element falls in the bin
numpy's ``histogram`` puts it in: the index ``(x - lo) / (hi - lo) * bins`` computed in the
input's float type (``f64`` for integers), corrected against the bin edges numpy computes, with
``hi`` in the last bin and elements outside ``[lo, hi]`` or NaN left out. More bins than shared
memory holds count straight into the global bins. On CUDA, contiguous small integers counted one
value to a bin take the integer-only form of :mod:`cubejit.std.integer_bins`.

Kernels here are made per element type; a kernel names each type in its body as well as in its
signature, because the frontend resolves annotations through the kernel's closure.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

import cubejit as cj
from cubejit.errors import LaunchError
from cubejit.ir.types import Scalar, f32, f64, i64
from cubejit.lang import Kernel
from cubejit.std import cpu_runs, integer_bins, tuned
from cubejit.std.bin_rule import numpy_bin
from cubejit.std.integer_bins import IntegerBins
from cubejit.std.views import operand, output, try_fold
from cubejit.tune import Tuner, anchor

SHARED_BINS = 4096
"""The most bins counted in shared memory (16 KiB of ``u32``)."""
RUN = {"cpu": ((256, 256),), "cuda": ((256, 16), (256, 32), (512, 8), (128, 64))}
"""Units per cube and elements each unit counts: the choices of :func:`tuner` (the first where
one is not tuned)."""
INTEGER_BINS: dict[str, tuple[IntegerBins, ...]] = {"cpu": (), "cuda": integer_bins.FORMS}
"""Where integers counted one value to a bin take :mod:`cubejit.std.integer_bins`, and the
forms its tuner chooses among (the first where one is not tuned); none keeps the form above."""


def _compute_type(scalar: Scalar) -> Scalar:
    """What bins are computed in: numpy's type for the edges (the input's float type, ``f64``
    for integers; ``f32`` for ``f16`` and ``bf16``)."""
    if scalar.name in ("f32", "f64"):
        return scalar
    return f32 if scalar.name in ("f16", "bf16") else f64


@functools.cache
def histogram_kernel(T: Scalar) -> Kernel:
    C = _compute_type(T)

    @cj.kernel
    def count_bins(
        x: cj.Tensor[T, 3],  # type: ignore[valid-type]
        counts: cj.Array[cj.Atomic[cj.i64]],
        edges: cj.Array[C],  # type: ignore[valid-type]
        lo: C,  # type: ignore[valid-type]
        span: C,  # type: ignore[valid-type]
        R: cj.Comptime[int],
        BINS: cj.Comptime[int],
        PRIVATE: cj.Comptime[bool],
    ):
        bins = counts.len()
        cols = x.shape(2)
        n = x.shape(0) * x.shape(1) * cols
        base = cj.CUBE_POS * cj.CUBE_DIM * R + cj.UNIT_POS
        if PRIVATE:
            local = cj.SharedMemory[cj.Atomic[cj.u32]](BINS)
            for j in range(cj.UNIT_POS, bins, cj.CUBE_DIM):
                local[j].store(0)
            cj.sync_cube()
        for r in range(R):
            e = base + cj.u32(r) * cj.CUBE_DIM
            if e < n:
                row = e // cols
                v = C(T(x[row // x.shape(1), row % x.shape(1), e % cols]))
                b = numpy_bin(v, lo, (v - lo) / span * C(bins), edges, bins)
                if b >= 0:
                    if PRIVATE:
                        local[b].fetch_add(1)
                    else:
                        counts[b].fetch_add(cj.i64(1))
        if PRIVATE:
            cj.sync_cube()
            for j in range(cj.UNIT_POS, bins, cj.CUBE_DIM):
                c = local[j].load()
                if c > 0:
                    counts[j].fetch_add(cj.i64(c))

    return count_bins


@functools.cache
def zero_kernel() -> Kernel:
    @cj.kernel
    def zero_counts(counts: cj.Array[cj.i64]):
        if cj.ABSOLUTE_POS < counts.len():
            counts[cj.ABSOLUTE_POS] = 0

    return zero_counts


def histogram(
    x: Any,
    bins: int = 10,
    range: tuple[float, float] | None = None,
    *,
    out: Any = None,
    client: Any = None,
) -> Any:
    """The number of ``x``'s elements (all of them, any shape and strides) in each of ``bins``
    equal bins over ``range`` (``(x.min(), x.max())`` when ``None``, NaNs left out), as
    ``numpy.histogram`` counts them (in the same type, rounded the same way; ``f16`` as its
    ``f32`` values), as a new ``i64`` array or into ``out``. The edges are
    ``numpy.linspace(lo, hi, bins + 1)``.

    >>> import numpy as np, cubejit.std as cs
    >>> cs.histogram(np.array([0.1, 0.2, 0.7, 1.0], np.float32), bins=2, range=(0.0, 1.0))
    array([2, 2])
    """
    from cubejit.std import reductions

    src = operand(x, client)
    if src.scalar.name == "bool":
        raise LaunchError("cubejit.std.histogram takes numbers, not bools")
    if not isinstance(bins, int) or bins < 1:
        raise LaunchError(f"cubejit.std.histogram: bins is a whole number from 1, not {bins!r}")
    compute = _compute_type(src.scalar)
    if range is None:
        if src.size == 0:
            lo, hi = 0.0, 1.0
        elif compute == f64 and src.scalar.name != "f64":
            raise LaunchError("cubejit.std.histogram of integers needs range=(lo, hi)")
        else:
            lo = float(_read(src, reductions.min(x, client=src.client)))
            hi = float(_read(src, reductions.max(x, client=src.client)))
    else:
        lo, hi = float(range[0]), float(range[1])
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise LaunchError(f"cubejit.std.histogram: range ({lo}, {hi}) is not a finite interval")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    first: Any = lo
    last: Any = hi
    if range is None:
        first, last = compute.dtype.type(lo), compute.dtype.type(hi)
    span = float(last - first)
    result, counts = output(out, src.client, (bins,), i64, "histogram")
    if counts.strides != (1,):
        raise LaunchError("cubejit.std.histogram: out must be contiguous")
    client = src.client
    zero_kernel().launch(client, -(-bins // 256), 256, result)
    if src.size == 0:
        return result
    forms = INTEGER_BINS[client.backend]
    if forms and integer_bins.applies(src, bins, lo, hi, forms[0]):
        T = src.scalar
        flat = src.view((src.size,), (1,))
        run = functools.partial(integer_bins.count, scalar=T)
        tuned.launch(
            forms, lambda: integer_bins.tuner(forms, T), run, client, flat, result, bins, lo
        )
        return result
    edges = np.linspace(first, last, bins + 1, dtype=compute.dtype)
    device_edges = src.client.to_device(edges)
    folded = try_fold(src.shape, [src.strides])
    if folded is None:
        xv = src.view(src.shape[-3:], src.strides[-3:]) if src.ndim == 3 else None
        if xv is None:
            raise LaunchError(
                f"cubejit.std.histogram: the dimensions of this array do not fold into three "
                f"(shape {src.shape}); pass a contiguous copy"
            )
    else:
        (a, b), ((sa, sb),) = folded
        xv = src.view((1, a, b), (0, sa, sb))
    T = src.scalar
    args = (xv, result, device_edges, lo, span, bins)
    if client.backend == "cpu" and bins <= SHARED_BINS:
        walks = cpu_runs.HISTOGRAM_RUNS
        walk = functools.partial(cpu_runs.count, compute=compute)
        tuned.launch(walks, lambda: cpu_runs.count_tuner(walks, T, compute), walk, client, *args)
        return result
    runs = RUN[client.backend]
    run = functools.partial(_count, scalar=T)
    tuned.launch(runs, lambda: tuner(runs, T), run, client, *args)
    return result


def _count(
    run: tuple[int, int],
    client: Any,
    xv: Any,
    counts: Any,
    edges: Any,
    lo: float,
    span: float,
    bins: int,
    *,
    scalar: Scalar,
) -> None:
    """Adds the counts of ``xv`` (a rank-3 view of ``scalar``s) in ``bins`` bins from ``lo``
    over ``span`` to ``counts``, each of ``run[0]`` units per cube counting ``run[1]``
    elements."""
    dim, per_unit = run
    private = bins <= SHARED_BINS
    cubes = -(-math.prod(xv.shape) // (dim * per_unit))
    histogram_kernel(scalar).launch(
        client,
        cubes,
        dim,
        xv,
        counts,
        edges,
        lo,
        span,
        R=per_unit,
        BINS=bins if private else 1,
        PRIVATE=private,
    )


@functools.cache
def tuner(runs: tuple[tuple[int, int], ...], T: Scalar) -> Tuner:
    """The tuner of counting ``T`` elements in bins among ``runs`` (see :data:`RUN`): one
    decision per size class of the input and of the count of bins."""
    return tuned.tuner(
        f"cubejit.std.histogram.{T.name}.edges",
        runs,
        functools.partial(_count, scalar=T),
        lambda run: f"{run[0]} units, {run[1]} elements each",
        key=lambda xv, counts, edges, lo, span, bins: (
            anchor(math.prod(xv.shape)),
            anchor(bins),
        ),
        kernels=(histogram_kernel(T),),
    )


def _read(src: Any, value: Any) -> Any:
    if src.client.backend == "cpu":
        return np.asarray(value).reshape(-1)[0]
    return src.client.read(value).reshape(-1)[0]


__all__ = ["histogram"]
