"""Checked launches: the checked variant's id, and the error its record becomes.

A checked artifact is a variant of the kernel's own id, ``("checked", variant)`` where
``variant`` is what the unchecked launch would take, so it is stored, shared and warmed as any
variant is and never replaces the unchecked one. Its code compares every access with its
buffer's length (:mod:`cubejit.ir.bounds`) and the first failing one fills a small record
(:data:`RECORD_SYMBOL`, laid out as :data:`RECORD_FORMAT`); a checked client reads the record
after each launch and raises :func:`bounds_error`'s LaunchError when it is filled. The record is
the artifact's own, so launches of one checked artifact from several threads at once share it.
"""

from __future__ import annotations

import linecache
import struct
from typing import Any

from cubejit.errors import LaunchError
from cubejit.ir.bounds import checked

RECORD_SYMBOL = "cubejit_bounds"
"""The name of a checked artifact's failure record, the same in every artifact."""
RECORD_FORMAT = "<iiqq"
"""The record's layout, as ``struct`` reads it: failed, site, index, length."""

CHECKED = "checked"
"""The first element of a checked variant."""

RECORD_BYTES = struct.calcsize(RECORD_FORMAT)
"""The size of a checked artifact's record."""


def checked_variant(variant: Any) -> tuple[str, Any]:
    """The checked variant of the artifact ``variant`` names."""
    return (CHECKED, variant)


def split_variant(variant: Any) -> tuple[bool, Any]:
    """``(is_checked, the unchecked variant)`` of an artifact's ``variant``."""
    if isinstance(variant, tuple) and len(variant) == 2 and variant[0] == CHECKED:
        return True, variant[1]
    return False, variant


def bounds_error(spec: Any, record: bytes, plane_dim: int | None = None) -> LaunchError | None:
    """The error of a launch of ``spec`` whose record reads ``record``, or None when no access
    failed. The sites are numbered again from the kernel's IR (defined for ``plane_dim`` as the
    backend defines it), which gives the same numbers the artifact was built with."""
    failed, site, index, length = struct.unpack(RECORD_FORMAT, record)
    if not failed:
        return None
    _, sites = checked(spec.define(plane_dim=plane_dim))
    where = f"{spec.file}:{spec.line}"
    if not 0 <= site < len(sites):
        return LaunchError(
            f"kernel {spec.name} ({where}): an access was out of bounds (index {index}, "
            f"length {length}); the launch stopped the unit that made it"
        )
    found = sites[site]
    place = found.where or where
    file, _, line = place.rpartition(":")
    text = linecache.getline(file, int(line)).strip() if line.isdigit() else ""
    return LaunchError(
        f"{place}: in kernel {spec.name}: index {index} is out of bounds for "
        f"{found.describe()} of length {length}; the launch stopped the unit that made the "
        f"access (checked launch, CUBEJIT_CHECK_BOUNDS)" + (f"\n    {text}" if text else "")
    )
