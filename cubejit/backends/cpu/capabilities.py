"""What the CPU backend runs: the declaration its validator reads.

A cube runs on one OS thread, its units as loops (DESIGN.md, "Backends declare what they can
do"), so a plane is one unit and a barrier splits the cube's loops into regions.
"""

from __future__ import annotations

from cubejit.ir.capabilities import Capabilities
from cubejit.ir.traits import Group
from cubejit.runtime.limits import DeviceLimits


def cpu_capabilities(limits: DeviceLimits) -> Capabilities:
    """The CPU under ``limits`` (its cube extents): planes of one unit; a cube's shared memory
    one allocation of up to 1 MiB on the thread running it (cubejit's choice, about a core's
    L2 on current CPUs); atomics on the 32- and 64-bit types; lines of up to 16 bytes, the
    width of the vector registers every x86-64 and AArch64 CPU has."""
    return Capabilities(
        backend="cpu",
        plane_size=1,
        shared_memory_per_cube=1024 * 1024,
        atomics=frozenset(("i32", "u32", "i64", "u64", "f32", "f64")),
        barriers=frozenset((Group.CUBE, Group.PLANE)),
        largest_cube=limits.max_cube_dim,
        max_units_per_cube=limits.max_units_per_cube,
        line_widths=frozenset((1, 2, 4, 8)),
        max_line_bytes=16,
    )
