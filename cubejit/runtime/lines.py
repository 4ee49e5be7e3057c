"""The line size of each ``cj.Line[T]`` argument, chosen at launch, and ``cj.lined`` to force it.

A line size is part of the kernel (its identity, its IR and its artifact), so it is chosen
before the spec is looked up, from what every buffer tells without a copy: its address, shape
and strides. The widest of 8, 4, 2 and 1 lanes is taken that spans at most 16 bytes and divides
the length (a tensor: its innermost extent, whose stride must be 1, and every other stride) and
the address's alignment, so that every line is one aligned load. A size forced with
``cj.lined`` must meet the same rules, or the launch is refused with a
:class:`~cubejit.errors.LaunchError` naming the argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from cubejit.errors import LaunchError
from cubejit.ir.types import LINE_SIZES, MAX_LINE_BYTES, Scalar


@dataclass(frozen=True, slots=True)
class Lined:
    """A launch argument whose line size the caller chose (``cj.lined(x, n)``)."""

    arg: Any
    """The buffer itself, as the launch would have taken it."""
    size: int
    """Lanes per line."""


def lined(arg: Any, n: int) -> Lined:
    """``cj.lined(x, n)``: passes ``x`` to a ``cj.Line[T]`` parameter with lines of ``n``
    lanes (one of 8, 4, 2, 1) instead of the widest that fits."""
    if type(n) is int and n in LINE_SIZES:
        return Lined(arg, n)
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or int(n) not in LINE_SIZES:
        raise LaunchError(f"cj.lined takes a line size of 8, 4, 2 or 1 lanes, not {n!r}")
    return Lined(arg, int(n))


class Layout(NamedTuple):
    """What a line size depends on: the address, the extents and the strides (bytes)."""

    address: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    """Bytes between neighbours; ``None`` when C-contiguous."""


def layout_of(arg: Any) -> Layout | None:
    """The layout of a buffer argument (one that tells its own with ``layout()``, numpy, a
    client's buffer, anything with ``__cuda_array_interface__``); ``None`` for anything else,
    which the client's argument check then refuses."""
    own = getattr(arg, "layout", None)
    if own is not None and callable(own):
        found = own()
        if isinstance(found, Layout):
            return found
    array = getattr(arg, "array", None)
    if isinstance(array, np.ndarray):
        arg = array
    if isinstance(arg, np.ndarray):
        return Layout(arg.__array_interface__["data"][0], arg.shape, arg.strides)
    interface = getattr(arg, "__cuda_array_interface__", None)
    if isinstance(interface, dict):
        strides = interface.get("strides")
        return Layout(
            int(interface["data"][0]),
            tuple(interface["shape"]),
            None if strides is None else tuple(strides),
        )
    return None


def fits(layout: Layout, elem: Scalar, lanes: int, tensor: bool) -> bool:
    """Whether lines of ``lanes`` elements tile ``layout``: each one aligned and whole. Known
    after the first time for each layout, up to the address's alignment (a launch asks for
    every lined argument)."""
    if lanes == 1:
        return True
    key = (layout.address % MAX_LINE_BYTES, layout.shape, layout.strides, elem.itemsize, lanes)
    known = _FITS.get((key, tensor))
    if known is None:
        if len(_FITS) >= FITS_KEPT:
            _FITS.clear()
        known = _FITS[(key, tensor)] = _fits(layout, elem, lanes, tensor)
    return known


FITS_KEPT = 4096
"""The layouts whose fit :func:`fits` remembers."""

_FITS: dict[tuple[tuple[int, tuple[int, ...], tuple[int, ...] | None, int, int], bool], bool] = {}


def _fits(layout: Layout, elem: Scalar, lanes: int, tensor: bool) -> bool:
    width = lanes * elem.itemsize
    if width > MAX_LINE_BYTES or layout.address % width:
        return False
    shape = layout.shape or (1,)
    if not tensor:
        size = 1
        for extent in shape:
            size *= extent
        return size % lanes == 0
    if shape[-1] % lanes:
        return False
    if layout.strides is None:
        return True
    *outer, inner = layout.strides
    return inner == elem.itemsize and all(s % width == 0 for s in outer)


def line_size(arg: Any, elem: Scalar, tensor: bool) -> int:
    """The widest line size ``arg`` allows (1 where its layout is unknown)."""
    layout = layout_of(arg)
    if layout is None:
        return 1
    return next(n for n in LINE_SIZES if fits(layout, elem, n, tensor))


def forced_size(kernel: str, name: str, given: Lined, elem: Scalar, tensor: bool) -> int:
    """The size ``given`` forces, once ``given.arg`` fits it."""
    layout = layout_of(given.arg)
    n = given.size
    if layout is not None and not fits(layout, elem, n, tensor):
        what = "innermost extent and every other stride" if tensor else "length"
        raise LaunchError(
            f"kernel {kernel}: argument {name!r} cannot be lined by {n}: its {what} must be "
            f"a multiple of {n} elements, its address aligned to {n * elem.itemsize} bytes, "
            f"and a line at most {MAX_LINE_BYTES} bytes"
        )
    return n
