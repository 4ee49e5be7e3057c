"""matmul against numpy (in f64) on awkward shapes, transposed and sliced operands, on every
backend."""

from __future__ import annotations

import numpy as np
import pytest
from std_devices import Device

import cubejit as cj
import cubejit.std as cs
from cubejit.errors import LaunchError
from cubejit.std.tiles import TILES, Tiles, fits_lines, matmul_candidate
from cubejit.std.views import operand


def _check(device: Device, a: np.ndarray, b: np.ndarray) -> None:
    got = device.get(cs.matmul(device.put(a), device.put(b)))
    wide = a.astype(np.float64) @ b.astype(np.float64)
    bound = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    eps = 1e-15 if a.dtype == np.float64 else 1e-6
    assert got.dtype == a.dtype and got.shape == wide.shape
    assert np.all(np.abs(got - wide) <= 4 * eps * np.sqrt(a.shape[1]) * (bound + 1))


@pytest.mark.parametrize(("m", "k", "n"), [(1, 1, 1), (7, 33, 5), (130, 257, 67)])
def test_matmul_matches_numpy_on_awkward_shapes(device: Device, m: int, k: int, n: int) -> None:
    rng = np.random.default_rng(m + k + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    _check(device, a, b)


def test_matmul_reads_transposed_and_sliced_operands(device: Device) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((300, 200)).astype(np.float32).T[::2]
    b = rng.standard_normal((70, 300)).astype(np.float32).T[:, 1::3]
    _check(device, a, b)


def test_matmul_of_f64_accumulates_in_f64() -> None:
    rng = np.random.default_rng(2)
    _check(Device_cpu(), rng.standard_normal((40, 70)), rng.standard_normal((70, 30)))


def Device_cpu() -> Device:

    return Device(cj.client("cpu"))


def test_matmul_writes_into_out_and_refuses_mismatched_shapes_and_types() -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((9, 4)).astype(np.float32)
    b = rng.standard_normal((4, 6)).astype(np.float32)
    out = np.empty((9, 6), np.float32)
    assert cs.matmul(a, b, out=out) is out
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)
    with pytest.raises(LaunchError, match=r"not \(9, 4\) by \(6, 4\)"):
        cs.matmul(a, b.T)
    with pytest.raises(LaunchError, match="a holds f32 and b f64"):
        cs.matmul(a, b.astype(np.float64))


def test_matmul_of_contiguous_operands_dividing_every_tile_matches_numpy(device: Device) -> None:
    rng = np.random.default_rng(4)
    a = rng.standard_normal((256, 80)).astype(np.float32)
    b = rng.standard_normal((80, 384)).astype(np.float32)
    _check(device, a, b)


@pytest.mark.parametrize("tiles", [t for t in TILES["cuda"] if t.lined], ids=lambda t: t.name)
def test_each_lined_configuration_computes_the_product_on_the_cpu(tiles: Tiles) -> None:
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2 * tiles.bm, 3 * tiles.bk)).astype(np.float32)
    b = rng.standard_normal((3 * tiles.bk, 2 * tiles.bn)).astype(np.float32)
    out = np.full((a.shape[0], b.shape[1]), np.nan, np.float32)
    matmul_candidate(tiles, cj.f32).fn(cj.client("cpu"), a, b, out)
    wide = a.astype(np.float64) @ b.astype(np.float64)
    bound = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.abs(out - wide) <= 4e-6 * np.sqrt(a.shape[1]) * (bound + 1))


def test_only_contiguous_aligned_f32_operands_dividing_every_lined_tile_take_lines() -> None:
    rng = np.random.default_rng(6)
    a = rng.standard_normal((256, 64)).astype(np.float32)
    b = rng.standard_normal((64, 128)).astype(np.float32)
    out = np.zeros((256, 128), np.float32)

    def fits(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
        return fits_lines("cuda", operand(a), operand(b), operand(out))

    shifted = np.empty(a.size + 1, np.float32)[1:].reshape(a.shape)
    assert fits(a, b, out)
    assert not fits(a[:, :48], b[:48], out)
    assert not fits(a[:192], b, out[:192])
    assert not fits(np.asfortranarray(a), b, out)
    assert not fits(shifted, b, out)
    assert not fits(a.astype(np.float64), b.astype(np.float64), out.astype(np.float64))
    assert not fits_lines("cpu", operand(a), operand(b), operand(out))
