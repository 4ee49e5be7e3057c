"""The CPU's regions: a cube that waits at barriers runs as loops over its units split at each
``sync_cube`` (golden C text), locals live across a barrier kept per unit, cube-uniform ``if``s
and loops holding barriers split too, and a kernel without barriers keeps its C."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import cubejit as cj
from cubejit.backends.cpu.codegen import translation_unit
from cubejit.backends.cpu.regions import needs_regions

GOLDEN = Path(__file__).parent / "golden"


@cj.kernel
def rotate_within_cubes(x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    s = cj.SharedMemory[cj.f32](cj.CUBE_DIM)
    u = cj.UNIT_POS
    i = cj.ABSOLUTE_POS
    s[u] = x[i]
    cj.sync_cube()
    t = s[(u + 1) % cj.CUBE_DIM]
    cj.sync_cube()
    s[u] = t * 2.0
    out[i] = s[u] + 1.0


def test_a_two_barrier_kernel_is_three_regions_with_the_locals_they_share_kept_per_unit() -> None:
    ir = rotate_within_cubes.specialize(64).define(plane_dim=1)
    text = translation_unit(ir, (64, 1, 1), 64)
    assert text == (GOLDEN / "two_barriers.c").read_text()


def test_the_two_barrier_kernel_runs_each_region_for_every_unit_before_the_next() -> None:
    x = np.random.default_rng(3).random(64 * 5, dtype=np.float32)
    out = np.zeros_like(x)
    rotate_within_cubes.launch(cj.client("cpu"), 5, 64, x, out)
    rotated = np.roll(x.reshape(5, 64), -1, axis=1).reshape(-1)
    np.testing.assert_allclose(out, rotated * 2.0 + 1.0)


@cj.kernel
def prefix_sums(x: cj.Array[cj.i32], out: cj.Array[cj.i32], flags: cj.Array[cj.u32]):
    """A cube-wide inclusive scan (Hillis-Steele): barriers inside a cube-uniform loop and a
    cube-uniform ``if``, a cube-uniform early return and break."""
    s = cj.SharedMemory[cj.i32](cj.CUBE_DIM)
    u = cj.UNIT_POS
    i = cj.ABSOLUTE_POS
    if cj.CUBE_POS >= flags[0]:
        return
    s[u] = x[i]
    cj.sync_cube()
    d = cj.u32(1)
    while True:
        if d >= cj.CUBE_DIM:
            break
        v = s[u]
        if u >= d:
            v += s[u - d]
        cj.sync_cube()
        s[u] = v
        if flags[1] != 0:
            cj.sync_cube()
        else:
            cj.sync_cube()
        d *= 2
    out[i] = s[u]


def test_barriers_inside_cube_uniform_ifs_and_loops_split_them_too() -> None:
    rng = np.random.default_rng(5)
    cubes, dim = 6, 48
    x = rng.integers(-50, 50, cubes * dim).astype(np.int32)
    out = np.full_like(x, -1)
    flags = np.array([4, 1], np.uint32)
    prefix_sums.launch(cj.client("cpu"), cubes, dim, x, out, flags)
    want = np.cumsum(x.reshape(cubes, dim), axis=1).reshape(-1)
    np.testing.assert_array_equal(out[: 4 * dim], want[: 4 * dim])
    np.testing.assert_array_equal(out[4 * dim :], -1)


@cj.kernel
def two_dimensional_transpose(x: cj.Array[cj.f32], out: cj.Array[cj.f32], n: cj.u32):
    tile = cj.LocalArray[cj.f32](2)
    s = cj.SharedMemory[cj.f32](cj.CUBE_DIM_X * cj.CUBE_DIM_Y)
    tx = cj.UNIT_POS_X
    ty = cj.UNIT_POS_Y
    tile[0] = x[(cj.CUBE_POS_Y * 8 + ty) * n + cj.CUBE_POS_X * 8 + tx]
    s[ty * 8 + tx] = tile[0]
    cj.sync_cube()
    tile[1] = s[tx * 8 + ty]
    out[(cj.CUBE_POS_X * 8 + ty) * n + cj.CUBE_POS_Y * 8 + tx] = tile[1] + tile[0] * 0.0


def test_a_local_array_live_across_a_barrier_is_kept_per_unit_in_a_two_dimensional_cube() -> None:
    n = 24
    x = np.random.default_rng(8).random((n, n), dtype=np.float32)
    out = np.zeros_like(x)
    two_dimensional_transpose.launch(cj.client("cpu"), (3, 3), (8, 8), x.ravel(), out.ravel(), n)
    np.testing.assert_array_equal(out, x.T)


def test_a_kernel_without_barriers_or_shared_memory_keeps_its_unit_loop() -> None:
    from cubejit.showcase import saxpy

    ir = saxpy.specialize(256).define(plane_dim=1)
    assert not needs_regions(ir)
    text = translation_unit(ir, (256, 1, 1), 64)
    assert "cj_unit(" in text and "CJ_UNITS" not in text
