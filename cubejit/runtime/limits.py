"""What a device allows a launch: cube sizes and counts, checked before anything runs.

A backend's compiler checks cube_dim against its :class:`DeviceLimits` when it lowers a kernel
(a :class:`~cubejit.errors.ValidationError`, before any platform compiler runs); its client
checks cube_count at launch (a :class:`~cubejit.errors.LaunchError`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cubejit.errors import LaunchError, ValidationError


def as_dims(value: object) -> tuple[int, int, int] | None:
    """``value`` (a positive int, numpy integers included, or a tuple or list of 1 to 3 of them)
    as ``(x, y, z)`` of Python ints; ``None`` when it is none of those."""
    if type(value) is int and value >= 1:
        return (value, 1, 1)
    items = value if isinstance(value, tuple | list) else (value,)
    if not 1 <= len(items) <= 3:
        return None
    dims = []
    for item in items:
        if isinstance(item, bool | np.bool_) or not isinstance(item, int | np.integer):
            return None
        if item < 1:
            return None
        dims.append(int(item))
    return (*dims, *(1,) * (3 - len(dims)))  # type: ignore[return-value]


def dims3(value: object, what: str, kernel: str) -> tuple[int, int, int]:
    """``value`` (an int or a tuple of 1 to 3 positive ints, numpy integers included) as
    ``(x, y, z)``; a LaunchError naming ``what`` and ``kernel`` otherwise."""
    dims = as_dims(value)
    if dims is None:
        raise LaunchError(
            f"kernel {kernel}: {what} must be a positive int or a tuple of 1 to 3 "
            f"positive ints, not {value!r}"
        )
    return dims


@dataclass(frozen=True, slots=True)
class DeviceLimits:
    """The largest launch a device runs."""

    max_units_per_cube: int
    """Units in one cube (the product of cube_dim)."""
    max_cube_dim: tuple[int, int, int]
    """Units per cube along x, y, z."""
    max_cube_count: tuple[int, int, int]
    """Cubes per launch along x, y, z."""

    def check_cube_dim(self, cube_dim: tuple[int, int, int], kernel: str, where: str) -> None:
        """Raises ValidationError when ``cube_dim`` is beyond this device; ``where`` is the
        kernel's ``file:line``."""
        units = math.prod(cube_dim)
        for axis, dim, limit in zip("xyz", cube_dim, self.max_cube_dim, strict=True):
            if dim > limit:
                raise ValidationError(
                    f"kernel {kernel} ({where}): cube_dim {cube_dim} has {dim} units along "
                    f"{axis}; this device allows at most {limit}",
                    kernel=kernel,
                )
        if units > self.max_units_per_cube:
            raise ValidationError(
                f"kernel {kernel} ({where}): cube_dim {cube_dim} has {units} units per cube; "
                f"this device allows at most {self.max_units_per_cube}",
                kernel=kernel,
            )

    def check_cube_count(self, cube_count: tuple[int, int, int], kernel: str) -> None:
        """Raises LaunchError when ``cube_count`` is beyond this device."""
        for axis, count, limit in zip("xyz", cube_count, self.max_cube_count, strict=True):
            if count > limit:
                raise LaunchError(
                    f"kernel {kernel}: cube_count {cube_count} has {count} cubes "
                    f"along {axis}; this device allows at most {limit}"
                )
