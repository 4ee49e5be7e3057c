# Kernels here compute on element types chosen when each is made, which mypy cannot follow.
# mypy: disable-error-code="valid-type, operator, type-arg"
"""The CUDA form of the histogram for integers counted one value to a bin.

When the input holds integers of at most 32 bits, lies contiguous in memory, and its range
``(lo, hi)`` has whole ends with ``hi - lo == bins``, numpy's rule puts the value ``v`` in bin
``v - lo`` (and ``hi`` in the last bin): a subtract and an unsigned compare, computed in
``i64`` so that no value wraps into the range. Each unit reads lines of the input (up to 16
bytes, one vector load; ``LINES`` of them before any count, so the loads overlap) over a
bounded grid (a grid-stride loop), counts them into one of
``COPIES`` sub-histograms in shared memory (the planes of a cube take turns, so fewer units
contend for one counter), and each cube adds its copies' sums to the global bins once per bin
at the end; few cubes make those global atomics few.

The kernel runs on every backend (the tests run it on the CPU too); ``histogram`` takes it on
CUDA.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import cubejit as cj
from cubejit.errors import LaunchError
from cubejit.ir.types import Scalar
from cubejit.lang import Kernel
from cubejit.std import tuned
from cubejit.std.views import Operand
from cubejit.tune import Tuner, anchor

SMALL_INTEGERS = ("i8", "i16", "i32", "u8", "u16", "u32")
"""The element types whose values ``i64`` holds with room to subtract any ``lo`` it holds."""
SHARED_COUNTERS = 12288
"""The most counters (``u32``) all copies together take in shared memory (48 KiB)."""


@dataclass(frozen=True)
class IntegerBins:
    """How the kernel cuts its work: units per cube, lines per unit between the cube's counts
    (a cube covers ``units * lines`` lines per step of the grid-stride loop), sub-histograms
    per cube, and the most cubes launched."""

    units: int
    lines: int
    copies: int
    cubes: int


CONFIG = IntegerBins(units=256, lines=4, copies=1, cubes=1056)
"""The default configuration on CUDA (1056 cubes: 8 per SM of an H200)."""

FORMS = (
    CONFIG,
    IntegerBins(units=256, lines=4, copies=2, cubes=1056),
    IntegerBins(units=512, lines=4, copies=1, cubes=528),
    IntegerBins(units=256, lines=8, copies=1, cubes=528),
    IntegerBins(units=1024, lines=2, copies=2, cubes=264),
)
"""The configurations ``histogram``'s tuner chooses among on CUDA, the first its default: more
copies spread the atomics of a cube over more addresses, more lines a unit keep more loads in
flight, fewer and larger cubes add their counts to the global bins fewer times."""


def applies(x: Operand, bins: int, lo: float, hi: float, form: IntegerBins) -> bool:
    """Whether this form counts ``x`` into ``bins`` over ``(lo, hi)`` as numpy would: small
    integers, contiguous, one value per bin, every copy in shared memory."""
    contiguous = all(
        s == math.prod(x.shape[d + 1 :]) for d, s in enumerate(x.strides) if x.shape[d] != 1
    )
    return (
        x.scalar.name in SMALL_INTEGERS
        and contiguous
        and x.size < 2**31
        and lo.is_integer()
        and abs(lo) < 2**40
        and hi - lo == bins
        and _fits(bins, form)
    )


def _fits(bins: int, form: IntegerBins) -> bool:
    """Whether ``form``'s copies of ``bins`` counters fit shared memory."""
    return bins * form.copies <= SHARED_COUNTERS


@cj.function
def bin_of(v: cj.i64, lo: cj.i64, BINS) -> cj.u32:  # type: ignore[no-untyped-def]
    """The bin of ``v`` (``hi`` in the last), or ``BINS`` for a value outside the range."""
    b = v - lo
    if b == BINS:
        b = BINS - 1
    found = cj.u32(BINS)
    if cj.u64(b) < BINS:
        found = cj.u32(b)
    return found


@functools.cache
def integer_bins_kernel(T: Scalar) -> Kernel:
    @cj.kernel
    def count_values(
        x: cj.Array[cj.Line[T]],  # type: ignore[valid-type]
        counts: cj.Array[cj.Atomic[cj.i64]],
        lo: cj.i64,
        BINS: cj.Comptime[int],
        COPIES: cj.Comptime[int],
        R: cj.Comptime[int],
    ):
        local = cj.SharedMemory[cj.Atomic[cj.u32]](BINS * COPIES)
        for j in range(cj.UNIT_POS, BINS * COPIES, cj.CUBE_DIM):
            local[j].store(0)
        cj.sync_cube()
        mine = (cj.UNIT_POS // cj.PLANE_DIM) % COPIES * BINS
        n = x.len()
        step = cj.CUBE_COUNT * cj.CUBE_DIM * R
        found = cj.LocalArray[cj.u32](R * x.line_size())
        for first in range(cj.CUBE_POS * cj.CUBE_DIM * R + cj.UNIT_POS, n, step):
            if first + cj.u32(R - 1) * cj.CUBE_DIM < n:
                for r in cj.unroll(range(R)):
                    v = x[first + cj.u32(r) * cj.CUBE_DIM]
                    for q in cj.unroll(range(x.line_size())):
                        found[r * x.line_size() + q] = bin_of(cj.i64(T(v[q])), lo, BINS)
            else:
                for r in cj.unroll(range(R)):
                    e = first + cj.u32(r) * cj.CUBE_DIM
                    for q in cj.unroll(range(x.line_size())):
                        found[r * x.line_size() + q] = cj.u32(BINS)
                    if e < n:
                        v = x[e]
                        for q in cj.unroll(range(x.line_size())):
                            found[r * x.line_size() + q] = bin_of(cj.i64(T(v[q])), lo, BINS)
            for m in cj.unroll(range(R * x.line_size())):
                if found[m] < BINS:
                    local[mine + found[m]].fetch_add(1)
        cj.sync_cube()
        for j in range(cj.UNIT_POS, BINS, cj.CUBE_DIM):
            c = cj.u32(0)
            for p in range(COPIES):
                c += local[cj.u32(p) * BINS + j].load()
            if c > 0:
                counts[j].fetch_add(cj.i64(c))

    return count_values


def count(
    form: IntegerBins,
    client: Any,
    flat: Any,
    counts: object,
    bins: int,
    lo: float,
    *,
    scalar: Scalar,
) -> None:
    """Adds the counts of ``flat`` (a one-dimensional view of ``scalar``s of an array
    :func:`applies` to) to ``counts``, ``bins`` ``i64``; a form whose copies do not fit shared
    memory raises."""
    if not _fits(bins, form):
        raise LaunchError(
            f"cubejit.std.histogram: {form.copies} copies of {bins} bins exceed the "
            f"{SHARED_COUNTERS} counters shared memory holds"
        )
    widest = 16 // scalar.itemsize
    cubes = max(1, min(form.cubes, -(-flat.shape[0] // (form.units * form.lines * widest))))
    integer_bins_kernel(scalar).launch(
        client,
        cubes,
        form.units,
        flat,
        counts,
        int(lo),
        BINS=bins,
        COPIES=form.copies,
        R=form.lines,
    )


@functools.cache
def tuner(forms: tuple[IntegerBins, ...], T: Scalar) -> Tuner:
    """The tuner of :func:`count` for ``T`` among ``forms``: one decision per size class of
    the input and of the count of bins."""
    return tuned.tuner(
        f"cubejit.std.histogram.{T.name}",
        forms,
        functools.partial(count, scalar=T),
        lambda f: f"{f.units} units, {f.lines} lines, {f.copies} copies, {f.cubes} cubes",
        key=lambda flat, counts, bins, lo: (anchor(flat.shape[0]), anchor(bins)),
        kernels=(integer_bins_kernel(T),),
    )


__all__ = ["CONFIG", "FORMS", "IntegerBins", "applies", "count", "integer_bins_kernel", "tuner"]
