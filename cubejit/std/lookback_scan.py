# Kernels here compute on element types chosen when each is made, which mypy cannot follow.
# mypy: disable-error-code="valid-type, operator, type-arg"
"""The single-pass scan with decoupled look-back, for ``f32`` accumulation on CUDA.

Each cube takes the next tile number from a ticket (so every tile before it belongs to a cube
already running), reads its tile into shared memory in coalesced rounds of lines, sums each unit's
run of adjacent elements there (padded one word in 33 against bank conflicts), publishes the tile's
total, then walks back over the tiles before it, adding their totals until one has published its
inclusive prefix, and publishes its own. The walk is the first plane's: each step reads the states
of ``PLANE_DIM`` tiles at once, and takes them when every tile up to the nearest inclusive one has
published (else it reads them again). Each tile's state is one ``u64`` atomic: a flag in the high
half (0: nothing yet, 1: the tile's total, 2: the inclusive prefix up to the tile) and the ``f32``
value's bits in the low half. The value and its flag travel in one relaxed atomic word, so a reader
that sees the flag sees its value: the scan needs no ordering between two locations, which the
language's relaxed atomics and missing fence could not give. ``f64`` would need a 128-bit word, so
``f64`` keeps the reduce-then-scan form. Rows are chained tile after tile (over all rows when
``FLAT``).

Each unit then rewrites its run as running sums in place, and the tile is stored in coalesced
rounds of elements, so ``out`` may have any strides. No run is held in registers across the
walk: registers would bound the cubes an SM keeps in flight, which the walk's latency needs.

The input is read once and the output written once, against three passes for reduce-then-scan;
the kernels run on every backend (the tests run them on the CPU too).
"""

from __future__ import annotations

import functools

import cubejit as cj
from cubejit.ir.types import Scalar, f32
from cubejit.lang import Kernel


@functools.cache
def lookback_scan_kernel(T: Scalar, U: Scalar) -> Kernel:
    A = f32

    @cj.kernel
    def lookback_scan_tiles(
        x: cj.Tensor[cj.Line[T], 3],  # type: ignore[valid-type]
        out: cj.Tensor[U, 3],  # type: ignore[valid-type]
        state: cj.Array[cj.Atomic[cj.u64]],
        blocks: cj.u32,
        R: cj.Comptime[int],
        EXCLUSIVE: cj.Comptime[bool],
        FLAT: cj.Comptime[bool],
    ):
        partial = cj.SharedMemory[A](cj.CUBE_DIM // cj.PLANE_DIM + 1)
        shared_tile = cj.SharedMemory[cj.u32](1)
        shared_prefix = cj.SharedMemory[A](1)
        staged = cj.SharedMemory[A](cj.CUBE_DIM * R * x.line_size() * 33 // 32 + 1)
        tiles = state.len() - 1
        if cj.UNIT_POS == 0:
            shared_tile[0] = cj.u32(state[tiles].fetch_add(cj.u64(1)))
        cj.sync_cube()
        tile = shared_tile[0]
        row = tile // blocks
        i = row // x.shape(1)
        k = row % x.shape(1)
        n = x.shape(2)
        mine = cj.UNIT_POS // cj.PLANE_DIM
        base = (tile % blocks) * cj.CUBE_DIM * R
        for r in cj.unroll(range(R)):
            g = cj.u32(r * cj.CUBE_DIM) + cj.UNIT_POS
            v = cj.line(A(0), x.line_size())
            if base + g < n:
                v = A(T(x[i, k, base + g]))
            for q in cj.unroll(range(x.line_size())):
                e = g * x.line_size() + q
                staged[e + e // 32] = v[q]
        cj.sync_cube()
        s = A(0)
        for m in cj.unroll(range(R * x.line_size())):
            e = cj.UNIT_POS * (R * x.line_size()) + m
            s += staged[e + e // 32]
        before = cj.plane_exclusive_sum(s)
        if cj.UNIT_POS_PLANE == cj.PLANE_DIM - 1:
            partial[mine] = before + s
        cj.sync_cube()
        lead = before
        total = A(0)
        for p in range(cj.cdiv(cj.CUBE_DIM, cj.PLANE_DIM)):
            w = partial[p]
            if p < mine:
                lead += w
            total += w
        if mine == 0:
            first = tile == 0 or (not FLAT and tile % blocks == 0)
            if cj.UNIT_POS == 0:
                flag_now = cj.u64(1)
                if first:
                    flag_now = cj.u64(2)
                state[tile].store((flag_now << 32) | cj.u64(cj.bitcast(total, cj.u32)))
            prefix = A(0)
            if not first:
                chain = cj.u32(0)
                if not FLAT:
                    chain = tile - tile % blocks
                lane = cj.UNIT_POS_PLANE
                end = tile
                done = False
                while not done:
                    flag = cj.u64(2)
                    value = A(0)
                    if lane < end - chain:
                        word = state[end - 1 - lane].load()
                        flag = word >> 32
                        value = cj.bitcast(cj.u32(word & cj.u64(0xFFFFFFFF)), cj.f32)
                    near = cj.u32(cj.PLANE_DIM)
                    if flag == 2:
                        near = lane
                    nearest = cj.plane_min(near)
                    if not cj.plane_any(flag == 0 and lane < nearest):
                        taken = A(0)
                        if lane <= nearest:
                            taken = value
                        prefix += cj.plane_sum(taken)
                        if nearest < cj.PLANE_DIM:
                            done = True
                        else:
                            end -= cj.u32(cj.PLANE_DIM)
                if cj.UNIT_POS == 0:
                    state[tile].store(
                        (cj.u64(2) << 32) | cj.u64(cj.bitcast(prefix + total, cj.u32))
                    )
            if cj.UNIT_POS == 0:
                shared_prefix[0] = prefix
        cj.sync_cube()
        running = lead + shared_prefix[0]
        for m in cj.unroll(range(R * x.line_size())):
            e = cj.UNIT_POS * (R * x.line_size()) + m
            if EXCLUSIVE:
                here = staged[e + e // 32]
                staged[e + e // 32] = running
                running += here
            else:
                running += staged[e + e // 32]
                staged[e + e // 32] = running
        cj.sync_cube()
        last = n * x.line_size()
        for r in cj.unroll(range(R * x.line_size())):
            e = cj.u32(r * cj.CUBE_DIM) + cj.UNIT_POS
            j = base * x.line_size() + e
            if j < last:
                out[i, k, j] = U(staged[e + e // 32])

    return lookback_scan_tiles


@functools.cache
def clear_kernel() -> Kernel:
    @cj.kernel
    def clear_states(state: cj.Array[cj.u64]):
        if cj.ABSOLUTE_POS < state.len():
            state[cj.ABSOLUTE_POS] = 0

    return clear_states


__all__ = ["clear_kernel", "lookback_scan_kernel"]
