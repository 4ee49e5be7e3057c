"""numpy's bin rule, which every form of :func:`~cubejit.std.histogram` counts by.

An element's bin is first guessed from its distance to the first edge (a quotient, or a product
by bins per unit), then corrected against the edges ``numpy.linspace`` gives, which the guess
may miss by one either way: numpy puts an element in the bin whose edges hold it, the last edge
in the last bin, and nothing outside the edges (NaN included) in any.
"""

from __future__ import annotations

import cubejit as cj


@cj.function
def numpy_bin(v, lo, guess, edges, bins):  # type: ignore[no-untyped-def]
    """The bin of ``v`` among ``bins`` bins of ``edges`` (``bins + 1`` of them, from ``lo``),
    from ``guess``, a float near it; -1 when no bin holds ``v``."""
    b = cj.i32(-1)
    if v >= lo and v <= edges[bins]:
        b = min(cj.i32(guess), cj.i32(bins) - 1)
        if v < edges[b]:
            b -= 1
        if b != cj.i32(bins) - 1 and v >= edges[b + 1]:
            b += 1
    return b
