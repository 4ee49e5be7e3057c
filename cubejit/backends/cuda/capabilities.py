"""What the CUDA backend runs on one device: the declaration its validator reads."""

from __future__ import annotations

from cubejit.backends.cuda.driver import CudaLimits
from cubejit.ir.capabilities import Capabilities
from cubejit.ir.traits import Group


def cuda_capabilities(limits: CudaLimits) -> Capabilities:
    """The abilities of a device with ``limits``: warps of 32 lanes, ``__syncthreads`` and
    ``__syncwarp``, the driver's cube extents and shared memory per block, atomics on the
    32- and 64-bit types (``atomicAdd`` on ``double`` since compute capability 6.0, below every
    architecture NVRTC still targets), lines of up to 16 bytes (``float4``)."""
    return Capabilities(
        backend="cuda",
        plane_size=32,
        shared_memory_per_cube=limits.max_shared_memory,
        atomics=frozenset(("i32", "u32", "i64", "u64", "f32", "f64")),
        barriers=frozenset((Group.CUBE, Group.PLANE)),
        largest_cube=limits.max_cube_dim,
        max_units_per_cube=limits.max_units_per_cube,
        line_widths=frozenset((1, 2, 4, 8)),
        max_line_bytes=16,
    )
