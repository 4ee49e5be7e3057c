"""Kernels that cooperate, against numpy on random data of awkward sizes, on every backend:
tree reductions and stencils in shared memory, a tiled matmul, histograms, atomics returning
the values they replaced, and a reduction through planes right for any plane size."""

from __future__ import annotations

import numpy as np
import pytest
from cooperation_devices import Device
from cooperative_kernels import (
    cas_counter,
    every_atomic,
    histogram_2d,
    histogram_global,
    histogram_shared,
    plane_lanes,
    plane_sum_reduction,
    stencil,
    tickets,
    tiled_matmul,
    tree_sum,
    wide_tile,
)

import cubejit as cj

RNG = np.random.default_rng(12)


@pytest.mark.parametrize("n", [1, 1000, 65_537])
def test_a_cube_tree_reduction_in_shared_memory_sums_each_cube(device: Device, n: int) -> None:
    x = RNG.random(n, dtype=np.float32)
    cubes = cj.cdiv(n, 128)
    out = device.put(np.zeros(cubes, np.float32))
    tree_sum.launch(device.client, cubes, 128, device.put(x), out)
    padded = np.zeros(cubes * 128, np.float32)
    padded[:n] = x
    np.testing.assert_allclose(device.get(out), padded.reshape(cubes, 128).sum(axis=1), rtol=1e-5)


@pytest.mark.parametrize("n", [5, 1003, 4099])
def test_a_stencil_reads_its_halo_from_shared_memory(device: Device, n: int) -> None:
    x = RNG.standard_normal(n).astype(np.float32)
    out = device.put(np.zeros(n, np.float32))
    stencil.launch(device.client, cj.cdiv(n, 64), 64, device.put(x), out)
    p = np.pad(x, 1)
    np.testing.assert_allclose(device.get(out), p[:-2] + 2 * p[1:-1] + p[2:], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("m", "k", "n"), [(37, 29, 45), (1, 70, 3), (64, 16, 17)])
def test_a_tiled_matmul_is_right_for_sizes_that_are_not_multiples_of_the_tile(
    device: Device, m: int, k: int, n: int
) -> None:
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    c = device.put(np.zeros(m * n, np.float32))
    tile = 16
    grid = (cj.cdiv(n, tile), cj.cdiv(m, tile))
    tiled_matmul.launch(
        device.client,
        grid,
        (tile, tile),
        device.put(a.ravel()),
        device.put(b.ravel()),
        c,
        m,
        k,
        n,
        T=tile,
    )
    np.testing.assert_allclose(device.get(c).reshape(m, n), a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [17, 100_003])
def test_a_global_atomic_histogram_counts_every_element(device: Device, n: int) -> None:
    x = RNG.integers(0, 2**32, n, dtype=np.uint32)
    bins = device.put(np.zeros(256, np.uint32))
    histogram_global.launch(device.client, cj.cdiv(n, 256), 256, device.put(x), bins)
    np.testing.assert_array_equal(device.get(bins), np.bincount(x % 256, minlength=256))


@pytest.mark.parametrize(("n", "bins"), [(33, 256), (100_003, 256), (50_000, 100)])
def test_a_histogram_privatised_in_shared_memory_counts_every_element(
    device: Device, n: int, bins: int
) -> None:
    x = RNG.integers(0, 2**32, n, dtype=np.uint32)
    out = device.put(np.zeros(bins, np.uint32))
    per_unit = 4
    cubes = cj.cdiv(n, 96 * per_unit)
    histogram_shared.launch(device.client, cubes, 96, device.put(x), out, B=bins, P=per_unit)
    np.testing.assert_array_equal(device.get(out), np.bincount(x % bins, minlength=bins))


def test_atomics_on_a_tensor_count_each_row_into_its_own_row_of_bins(device: Device) -> None:
    rows, cols, width = 7, 1001, 33
    x = RNG.integers(0, 2**32, (rows, cols), dtype=np.uint32)
    bins = device.put(np.zeros((rows, width), np.uint32))
    grid = (cj.cdiv(cols, 64), rows)
    histogram_2d.launch(device.client, grid, (64, 1), device.put(x), bins)
    want = np.stack([np.bincount(row % width, minlength=width) for row in x])
    np.testing.assert_array_equal(device.get(bins).reshape(rows, width), want)


def test_fetch_add_gives_every_unit_a_different_ticket(device: Device) -> None:
    n = 30_011
    counter = device.put(np.zeros(1, np.uint32))
    out = device.put(np.zeros(n, np.uint32))
    tickets.launch(device.client, cj.cdiv(n, 64), 64, counter, out)
    np.testing.assert_array_equal(np.sort(device.get(out)), np.arange(n))
    assert device.get(counter)[0] == n


def test_compare_exchange_makes_a_lock_free_counter(device: Device) -> None:
    n = 5_003
    start = int(RNG.integers(-(2**40), 2**40))
    counter = device.put(np.array([start], np.int64))
    out = device.put(np.zeros(n, np.int64))
    cas_counter.launch(device.client, cj.cdiv(n, 32), 32, counter, out, n)
    np.testing.assert_array_equal(np.sort(device.get(out)), start + np.arange(n))
    assert device.get(counter)[0] == start + n


@pytest.mark.parametrize(("n", "cube_dim"), [(1, 32), (10_007, 80), (65_536, 256), (999, 33)])
def test_a_reduction_through_planes_and_shared_memory_is_right_for_any_plane_size(
    device: Device, n: int, cube_dim: int
) -> None:
    x = RNG.random(n, dtype=np.float32)
    out = device.put(np.zeros(1, np.float32))
    plane_sum_reduction.launch(device.client, cj.cdiv(n, cube_dim), cube_dim, device.put(x), out)
    np.testing.assert_allclose(device.get(out)[0], x.sum(dtype=np.float64), rtol=1e-4)


@pytest.mark.parametrize("cube_dim", [64, 80])
def test_a_kernel_reading_only_its_lane_and_plane_gets_them(device: Device, cube_dim: int) -> None:
    cubes = 3
    n = cubes * cube_dim
    out = device.put(RNG.integers(100, 2**31, 2 * n).astype(np.uint32))
    plane_lanes.launch(device.client, cubes, cube_dim, out)
    unit = np.tile(np.arange(cube_dim, dtype=np.uint32), cubes)
    p = device.plane_dim()
    want = np.stack([unit % p, unit // p], axis=1).reshape(-1)
    np.testing.assert_array_equal(device.get(out), want)


@pytest.mark.parametrize("n", [1000, 20_000])
def test_a_large_shared_buffer_is_seen_by_the_whole_cube(device: Device, n: int) -> None:
    x = RNG.random(n, dtype=np.float32)
    out = device.put(np.zeros(n, np.float32))
    wide_tile.launch(device.client, 1, 256, device.put(x), out, N=n)
    np.testing.assert_allclose(device.get(out), x[::-1] + (np.arange(n) % 3))


ATOMIC_TYPES = [cj.i32, cj.u32, cj.i64, cj.u64, cj.f32, cj.f64]


@pytest.mark.parametrize("t", ATOMIC_TYPES, ids=str)
def test_every_atomic_operation_returns_the_value_held_before(device: Device, t: object) -> None:
    dtype = t.dtype  # type: ignore[attr-defined]
    start = np.array([5, 9, 3, 8, 2, 6, 7, 12, 10, 0], dtype)
    a = device.put(start)
    out = device.put(np.zeros(11, dtype))
    v = dtype.type(6)
    every_atomic(t).launch(device.client, 1, 1, a, out, v)
    integer = np.issubdtype(dtype, np.integer)
    want_old = (
        [5, 9, 3, 8, 2, 6, 7, 6, 12, 12 | 10, 6] if integer else [5, 9, 3, 8, 2, 6, 7, 6, 12, 0, 0]
    )
    np.testing.assert_array_equal(device.get(out), np.array(want_old, dtype))
    after = (
        [11, 3, 6, 6, 6, 6, 7, 12 & 6, 10 | 6, 6] if integer else [11, 3, 6, 6, 6, 6, 7, 12, 10, 6]
    )
    np.testing.assert_array_equal(device.get(a), np.array(after, dtype))
