"""Kernels and tuners the autotune tests share with their host processes (``tune_host.py``).

``plus_one`` adds one in place; its comptime ``spin`` runs a dependent chain of that many
multiply-adds per unit whose result is then cancelled out, so every candidate computes exactly
``x + 1`` while one made with a large ``spin`` is truly slower.
"""

from __future__ import annotations

import cubejit as cj

SLOW_SPIN = 2000
"""Enough to make ``slow`` slower than ``fast`` on an idle machine."""
SLOWER_SPIN = 100_000
"""Enough to make ``slower`` tens of milliseconds slower than ``fast`` on a few thousand
elements: beyond the scheduling noise of a loaded machine, where any launch may take 8 ms."""


@cj.kernel
def plus_one(x: cj.Array[cj.f32], spin: cj.Comptime[int]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        w = v
        for _k in range(spin):
            w = w * 0.5 + 0.25
        x[i] = v + 1.0 + (w - w)


@cj.kernel
def plus_one_ill_typed(x: cj.Array[cj.i32]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i] / 2


def slow(client, x):
    return plus_one.launch(client, cj.cdiv(x.size, 64), 64, x, spin=SLOW_SPIN)


def slower(client, x):
    return plus_one.launch(client, cj.cdiv(x.size, 64), 64, x, spin=SLOWER_SPIN)


def fast(client, x):
    return plus_one.launch(client, cj.cdiv(x.size, 64), 64, x, spin=0)


def fast_wide(client, x):
    return plus_one.launch(client, cj.cdiv(x.size, 128), 128, x, spin=0)


def size_key(x):
    return (cj.anchor(x.size),)


def plus_one_tuner(name: str = "plus one") -> cj.Tuner:
    """The slow candidate first (the default), so that a win of the fast one is tuning's."""
    return cj.Tuner(
        name,
        key=size_key,
        candidates=[cj.Tunable("slow", slow), cj.Tunable("fast", fast)],
    )


def spin_tuner(name: str) -> cj.Tuner:
    """Like :func:`plus_one_tuner`, with a first candidate far slower than the second."""
    return cj.Tuner(
        name,
        key=size_key,
        candidates=[cj.Tunable("slower", slower), cj.Tunable("fast", fast)],
    )


def changed_tuner(name: str = "plus one") -> cj.Tuner:
    """:func:`plus_one_tuner` with its candidate ``fast`` changed: 128 units per cube."""
    return cj.Tuner(
        name,
        key=size_key,
        candidates=[cj.Tunable("slow", slow), cj.Tunable("fast", fast_wide)],
    )
