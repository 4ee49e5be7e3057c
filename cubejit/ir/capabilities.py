"""What a backend can run, declared as data: the validator checks a kernel against it.

Each backend describes its target once (``CPU_CAPABILITIES`` in
:mod:`cubejit.backends.cpu.capabilities`, :func:`cubejit.backends.cuda.capabilities.
cuda_capabilities` for a device), after tinygrad's ``has_local`` and Triton's ``GPUTarget``:
plane size, shared memory per cube, the element types atomics take, the groups a barrier may
wait for, the largest cube and the line widths. Emitters never ask "is this CUDA?"; the
validator (:func:`cubejit.ir.validate.validate_for`) refuses a kernel that needs what its
target lacks with a :class:`~cubejit.errors.ValidationError` before any C or CUDA is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from cubejit.ir.traits import Group


@dataclass(frozen=True, slots=True)
class Capabilities:
    """One target's abilities and limits."""

    backend: str
    """The backend's name as users pass it to ``cj.client`` (``"cpu"``, ``"cuda"``)."""
    plane_size: int
    """Units per plane (``cj.PLANE_DIM``): 32 on NVIDIA GPUs, 1 on the CPU."""
    shared_memory_per_cube: int
    """Bytes of shared memory one cube may hold, all its buffers together."""
    atomics: frozenset[str]
    """Scalar names (``"i32"``) of the element types ``cj.Atomic[T]`` takes."""
    barriers: frozenset[Group]
    """The groups a barrier may wait for (``sync_cube``, ``sync_plane``)."""
    largest_cube: tuple[int, int, int]
    """Units per cube along x, y and z."""
    max_units_per_cube: int
    """Units in one cube, the product of its three extents."""
    line_widths: frozenset[int]
    """Lanes a line may have; 1 is a plain element."""
    max_line_bytes: int
    """Bytes one line may span (its width times its element's size)."""
