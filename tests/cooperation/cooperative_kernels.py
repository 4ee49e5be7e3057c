"""Kernels that cooperate, shared by the CPU and CUDA tests of cooperation and the benchmark.

Each is written once in the kernel language; the tests run them on both backends against numpy
models, and the CUDA tests also compile each with NVRTC for every architecture tested.
"""

from __future__ import annotations

import cubejit as cj


@cj.kernel
def tree_sum(x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    """One partial sum per cube: a tree reduction in shared memory."""
    s = cj.SharedMemory[cj.f32](cj.CUBE_DIM)
    u = cj.UNIT_POS
    i = cj.ABSOLUTE_POS
    v = 0.0
    if i < x.len():
        v = x[i]
    s[u] = v
    cj.sync_cube()
    k = cj.CUBE_DIM // 2
    while k > 0:
        if u < k:
            s[u] += s[u + k]
        cj.sync_cube()
        k //= 2
    if u == 0:
        out[cj.CUBE_POS] = s[0]


@cj.kernel
def stencil(x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    """``out[i] = x[i - 1] + 2 x[i] + x[i + 1]`` (zero outside), through a tile with a halo of
    one element on each side."""
    tile = cj.SharedMemory[cj.f32](cj.CUBE_DIM + 2)
    u = cj.UNIT_POS
    i = cj.ABSOLUTE_POS
    n = x.len()
    tile[u + 1] = x[i] if i < n else 0.0
    if u == 0:
        tile[0] = x[i - 1] if i > 0 and i - 1 < n else 0.0
    if u == cj.CUBE_DIM - 1:
        tile[u + 2] = x[i + 1] if i + 1 < n else 0.0
    cj.sync_cube()
    if i < n:
        out[i] = tile[u] + 2.0 * tile[u + 1] + tile[u + 2]


@cj.kernel
def tiled_matmul(
    a: cj.Array[cj.f32],
    b: cj.Array[cj.f32],
    c: cj.Array[cj.f32],
    m: cj.u32,
    k: cj.u32,
    n: cj.u32,
    T: cj.Comptime[int],
):
    """``c = a @ b`` (row-major, ``m x k`` by ``k x n``) in ``T x T`` tiles of shared memory;
    cubes of ``(T, T)`` units, one per element of ``c``."""
    ta = cj.SharedMemory[cj.f32](T * T)
    tb = cj.SharedMemory[cj.f32](T * T)
    tx = cj.UNIT_POS_X
    ty = cj.UNIT_POS_Y
    row = cj.CUBE_POS_Y * T + ty
    col = cj.CUBE_POS_X * T + tx
    acc = 0.0
    for t in range(cj.cdiv(k, T)):
        ka = t * T + tx
        kb = t * T + ty
        ta[ty * T + tx] = a[row * k + ka] if row < m and ka < k else 0.0
        tb[ty * T + tx] = b[kb * n + col] if kb < k and col < n else 0.0
        cj.sync_cube()
        for j in cj.unroll(range(T)):
            acc += ta[ty * T + j] * tb[j * T + tx]
        cj.sync_cube()
    if row < m and col < n:
        c[row * n + col] = acc


@cj.kernel
def histogram_global(x: cj.Array[cj.u32], bins: cj.Array[cj.Atomic[cj.u32]]):
    """Every element counted with one atomic on the global histogram."""
    i = cj.ABSOLUTE_POS
    if i < x.len():
        bins[x[i] % bins.len()].fetch_add(1)


@cj.kernel
def histogram_shared(
    x: cj.Array[cj.u32], bins: cj.Array[cj.Atomic[cj.u32]], B: cj.Comptime[int], P: cj.Comptime[int]
):
    """A privatised histogram of ``B`` bins: each cube counts ``P`` elements per unit into
    shared memory, then adds its counts to the global one."""
    local = cj.SharedMemory[cj.Atomic[cj.u32]](B)
    u = cj.UNIT_POS
    for j in range(u, B, cj.CUBE_DIM):
        local[j].store(0)
    cj.sync_cube()
    base = cj.CUBE_POS * cj.CUBE_DIM * P
    for p in range(P):
        i = base + cj.u32(p) * cj.CUBE_DIM + u
        if i < x.len():
            local[x[i] % B].fetch_add(1)
    cj.sync_cube()
    for j in range(u, B, cj.CUBE_DIM):
        count = local[j].load()
        if count > 0:
            bins[j].fetch_add(count)


@cj.kernel
def histogram_2d(x: cj.Tensor[cj.u32, 2], bins: cj.Tensor[cj.Atomic[cj.u32], 2]):
    """Each row of ``x`` counted into its own row of ``bins``, atomics on a tensor."""
    r = cj.ABSOLUTE_POS_Y
    c = cj.ABSOLUTE_POS_X
    if r < x.shape(0) and c < x.shape(1):
        bins[r, x[r, c] % bins.shape(1)].fetch_add(1)


@cj.kernel
def tickets(counter: cj.Array[cj.Atomic[cj.u32]], out: cj.Array[cj.u32]):
    """Each unit takes a ticket: the value the counter held before its increment."""
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = counter[0].fetch_add(1)


@cj.kernel
def cas_counter(counter: cj.Array[cj.Atomic[cj.i64]], out: cj.Array[cj.i64], n: cj.u32):
    """A lock-free counter: read, then compare-and-swap until the increment lands; each unit
    records the value it replaced."""
    i = cj.ABSOLUTE_POS
    if i < n:
        seen = counter[0].load()
        while True:
            before = counter[0].compare_exchange(seen, seen + 1)
            if before == seen:
                break
            seen = before
        out[i] = seen


@cj.kernel
def plane_sum_reduction(x: cj.Array[cj.f32], out: cj.Array[cj.Atomic[cj.f32]]):
    """A cube-wide sum right for any plane size: planes reduce, their first lanes write to
    shared memory, the first plane reduces those, one atomic per cube."""
    partial = cj.SharedMemory[cj.f32](cj.CUBE_DIM // cj.PLANE_DIM + 1)
    i = cj.ABSOLUTE_POS
    u = cj.UNIT_POS
    v = 0.0
    if i < x.len():
        v = x[i]
    total = cj.plane_sum(v)
    planes = cj.cdiv(cj.CUBE_DIM, cj.PLANE_DIM)
    if cj.UNIT_POS_PLANE == 0:
        partial[u // cj.PLANE_DIM] = total
    cj.sync_cube()
    if cj.UNIT_POS < cj.PLANE_DIM:
        w = 0.0
        for p in range(u, planes, cj.PLANE_DIM):
            w += partial[p]
        s = cj.plane_sum(w)
        if u == 0:
            out[0].fetch_add(s)


@cj.kernel
def wide_tile(x: cj.Array[cj.f32], out: cj.Array[cj.f32], N: cj.Comptime[int]):
    """``out[j] = x[N - 1 - j] + j % 3`` through one shared buffer of ``N`` floats and a
    small one: past 48 KiB on CUDA for ``N`` above 12288."""
    big = cj.SharedMemory[cj.f32](N)
    small = cj.SharedMemory[cj.u32](3)
    u = cj.UNIT_POS
    for j in range(u, N, cj.CUBE_DIM):
        big[j] = x[j]
    if u < 3:
        small[u] = u
    cj.sync_cube()
    for j in range(u, N, cj.CUBE_DIM):
        out[j] = big[N - 1 - j] + cj.f32(small[j % 3])


@cj.kernel
def plane_lanes(out: cj.Array[cj.u32]):
    """Each unit's lane and plane, ``UNIT_POS_PLANE`` and ``UNIT_POS // PLANE_DIM``, with no
    plane operation besides: the positions alone must bring what they need."""
    i = cj.ABSOLUTE_POS
    out[2 * i] = cj.UNIT_POS_PLANE
    out[2 * i + 1] = cj.UNIT_POS // cj.PLANE_DIM


def every_atomic(t: object) -> cj.Kernel:
    """A kernel doing every atomic operation ``cj.Atomic[t]`` has, on global and shared
    memory, writing each old value to ``out``: the integer bit operations on integers only."""
    T = t
    is_int = t in (cj.i32, cj.u32, cj.i64, cj.u64)

    @cj.kernel
    def atomics(a: cj.Array[cj.Atomic[T]], out: cj.Array[T], v: T):
        s = cj.SharedMemory[cj.Atomic[T]](4)
        u = cj.UNIT_POS
        if u == 0:
            s[0].store(v)
            s[1].store(v)
        cj.sync_cube()
        at = cj.ABSOLUTE_POS * 11
        out[at + 0] = a[0].fetch_add(v)
        out[at + 1] = a[1].fetch_sub(v)
        out[at + 2] = a[2].fetch_max(v)
        out[at + 3] = a[3].fetch_min(v)
        out[at + 4] = a[4].exchange(v)
        out[at + 5] = a[5].compare_exchange(v, v)
        out[at + 6] = a[6].load()
        out[at + 7] = s[0].fetch_add(v)
        out[at + 8] = s[0].compare_exchange(v, v)
        if is_int:
            out[at + 9] = a[7].fetch_and(v) | a[8].fetch_or(v)
            out[at + 10] = s[1].fetch_xor(v)
        a[9].store(v)

    return atomics
