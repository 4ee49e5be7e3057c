"""The language's names for cooperation: ``cj.Atomic[T]``, ``cj.SharedMemory[T](n)``,
``cj.LocalArray[T](n)``, ``cj.sync_cube()``, ``cj.sync_plane()`` and the plane operations.

These are Python objects the frontend recognises by identity inside a kernel (see
:mod:`cubejit.lang.cooperative_calls`); outside one they only say where they belong.
``cj.Array[cj.Atomic[cj.u32]]`` evaluates to an atomic :class:`~cubejit.ir.types.ArrayType`, so
an annotation means the same whether Python evaluated it or the frontend read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cubejit.ir.nodes import BufferKind, PlaneFn
from cubejit.ir.types import LINE_AT_LAUNCH, LineType, Scalar

ATOMIC_TYPES = frozenset(("i32", "u32", "i64", "u64", "f32", "f64"))
"""The element types ``cj.Atomic[T]`` takes."""


@dataclass(frozen=True, slots=True)
class AtomicType:
    """``cj.Atomic[T]``: an element type for arrays and shared memory whose elements are read
    and written by atomic operations."""

    elem: Scalar

    def __str__(self) -> str:
        return f"Atomic[{self.elem.name}]"


class Atomic:
    """``cj.Atomic[T]`` with ``T`` one of i32, u32, i64, u64, f32, f64."""

    def __class_getitem__(cls, elem: object) -> AtomicType:
        if not isinstance(elem, Scalar) or elem.name not in ATOMIC_TYPES:
            names = ", ".join(f"cj.{n}" for n in sorted(ATOMIC_TYPES))
            raise TypeError(f"cj.Atomic[...] takes one of {names}, not {elem!r}")
        return AtomicType(elem)


@dataclass(frozen=True, slots=True)
class BufferMaker:
    """``cj.SharedMemory[T]`` or ``cj.LocalArray[T]``, waiting for its size."""

    kind: BufferKind
    elem: Scalar | AtomicType | LineType

    def __call__(self, size: int) -> Any:
        raise TypeError(f"{self} declares a buffer inside a kernel only")

    def __str__(self) -> str:
        name = "SharedMemory" if self.kind is BufferKind.SHARED else "LocalArray"
        return f"cj.{name}[{self.elem}]"


class SharedMemory:
    """``s = cj.SharedMemory[T](n)``: one buffer of ``n`` (comptime) elements per cube."""

    def __class_getitem__(cls, elem: object) -> BufferMaker:
        return BufferMaker(BufferKind.SHARED, _element(elem, "SharedMemory"))


class LocalArray:
    """``a = cj.LocalArray[T](n)``: ``n`` (comptime) elements per unit."""

    def __class_getitem__(cls, elem: object) -> BufferMaker:
        return BufferMaker(BufferKind.LOCAL, _element(elem, "LocalArray"))


def _element(elem: object, name: str) -> Scalar | AtomicType | LineType:
    if isinstance(elem, LineType) and elem.width == LINE_AT_LAUNCH:
        raise TypeError(
            f"cj.{name}[cj.Line[T]] needs its lanes: cj.{name}[cj.Line[{elem.elem}, 4]]"
        )
    if isinstance(elem, Scalar | AtomicType | LineType):
        return elem
    raise TypeError(f"cj.{name}[...] takes a scalar type or cj.Atomic[T], not {elem!r}")


class Collective:
    """A builtin that every unit of a group calls together: a barrier or a plane operation."""

    __slots__ = ("fn", "name")

    def __init__(self, name: str, fn: PlaneFn | None) -> None:
        self.name = name
        self.fn = fn
        """The plane operation; None for the barriers."""

    def __call__(self, *args: Any) -> Any:
        raise TypeError(f"cj.{self.name} works inside kernels only")

    def __repr__(self) -> str:
        return f"cj.{self.name}"


sync_cube = Collective("sync_cube", None)
sync_plane = Collective("sync_plane", None)
plane_sum = Collective("plane_sum", PlaneFn.SUM)
plane_prod = Collective("plane_prod", PlaneFn.PROD)
plane_max = Collective("plane_max", PlaneFn.MAX)
plane_min = Collective("plane_min", PlaneFn.MIN)
plane_all = Collective("plane_all", PlaneFn.ALL)
plane_any = Collective("plane_any", PlaneFn.ANY)
plane_inclusive_sum = Collective("plane_inclusive_sum", PlaneFn.INCLUSIVE_SUM)
plane_exclusive_sum = Collective("plane_exclusive_sum", PlaneFn.EXCLUSIVE_SUM)
plane_inclusive_prod = Collective("plane_inclusive_prod", PlaneFn.INCLUSIVE_PROD)
plane_exclusive_prod = Collective("plane_exclusive_prod", PlaneFn.EXCLUSIVE_PROD)
plane_broadcast = Collective("plane_broadcast", PlaneFn.BROADCAST)
plane_shuffle = Collective("plane_shuffle", PlaneFn.SHUFFLE)
plane_shuffle_xor = Collective("plane_shuffle_xor", PlaneFn.SHUFFLE_XOR)
plane_shuffle_up = Collective("plane_shuffle_up", PlaneFn.SHUFFLE_UP)
plane_shuffle_down = Collective("plane_shuffle_down", PlaneFn.SHUFFLE_DOWN)
plane_elect = Collective("plane_elect", PlaneFn.ELECT)
plane_ballot = Collective("plane_ballot", PlaneFn.BALLOT)

NAMES = (
    "Atomic",
    "LocalArray",
    "SharedMemory",
    "plane_all",
    "plane_any",
    "plane_ballot",
    "plane_broadcast",
    "plane_elect",
    "plane_exclusive_prod",
    "plane_exclusive_sum",
    "plane_inclusive_prod",
    "plane_inclusive_sum",
    "plane_max",
    "plane_min",
    "plane_prod",
    "plane_shuffle",
    "plane_shuffle_down",
    "plane_shuffle_up",
    "plane_shuffle_xor",
    "plane_sum",
    "sync_cube",
    "sync_plane",
)
"""The names this module adds to ``cubejit``."""
