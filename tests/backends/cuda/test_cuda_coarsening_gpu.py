"""On a GPU: the coarsened no-alias form against numpy at sizes around a cube and a block, on
cube counts that are not a multiple of the cubes per block, on 2-D launches, and aliased
arguments taking the plain form. Skips without a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from coarsened_kernels import (
    double_then_copy,
    rows,
    saxpy,
    scaled,
    scaled_reference,
    triple_plus_one,
)

from cubejit.backends.cuda.client import CudaClient
from cubejit.backends.cuda.coarsening import NO_ALIAS
from cubejit.compile.id import ArtifactId
from cubejit.ir.types import f32

pytestmark = pytest.mark.gpu

FILL = np.float32(-7.0)


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    """Equal but for the rounding a fused multiply-add saves (NVRTC fuses ``a * x + y``)."""
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def randoms(seed: int, n: int, count: int = 2) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n).astype(np.float32) for _ in range(count)]


def loaded(gpu: CudaClient, spec: object, variant: object) -> bool:
    return gpu.loader.get(ArtifactId(spec.id(), variant)) is not None  # type: ignore[attr-defined]


@pytest.mark.parametrize("n", [1, 255, 257, 10**6 + 3])
def test_saxpy_computes_what_numpy_does_at_every_size(gpu: CudaClient, n: int) -> None:
    x, y = randoms(n, n)
    out = gpu.to_device(np.full(n, FILL))
    saxpy.launch(gpu, -(-n // 256), 256, 2.5, gpu.to_device(x), gpu.to_device(y), out)
    assert_close(gpu.read(out), np.float32(2.5) * x + y)
    assert loaded(gpu, saxpy.specialize(256), NO_ALIAS)


def test_units_of_cubes_beyond_the_launch_do_nothing(gpu: CudaClient) -> None:
    n = 5000
    x, y = randoms(1, n)
    out = gpu.to_device(np.full(n, FILL))
    saxpy.launch(gpu, 13, 256, 1.5, gpu.to_device(x), gpu.to_device(y), out)
    want = np.full(n, FILL)
    want[: 13 * 256] = (np.float32(1.5) * x + y)[: 13 * 256]
    assert_close(gpu.read(out), want)


def test_every_unit_keeps_its_own_values_and_the_users_positions(gpu: CudaClient) -> None:
    n, cubes = 3000, 47
    (x,) = randoms(2, n, 1)
    out = gpu.to_device(np.full(n, FILL))
    scaled.launch(gpu, cubes, 64, 1.25, gpu.to_device(x), out)
    assert_close(gpu.read(out), scaled_reference(1.25, x, 64, cubes))


def test_a_two_dimensional_launch_of_a_coarsened_kernel_places_every_unit(
    gpu: CudaClient,
) -> None:
    n = 64 * 5 * 3
    x, y = randoms(3, n)
    out = gpu.to_device(np.full(n, FILL))
    saxpy.launch(gpu, (5, 3), 64, 2.0, gpu.to_device(x), gpu.to_device(y), out)
    assert_close(gpu.read(out), np.float32(2.0) * x + y)


def test_saxpy_writing_into_its_input_takes_the_plain_form(gpu: CudaClient) -> None:
    n = 10_000
    x, y = randoms(4, n)
    x_dev = gpu.to_device(x)
    saxpy.launch(gpu, -(-n // 128), 128, 3.0, x_dev, gpu.to_device(y), x_dev)
    assert_close(gpu.read(x_dev), np.float32(3.0) * x + y)
    assert loaded(gpu, saxpy.specialize(128), None)


def test_a_unit_reading_an_array_it_wrote_through_another_argument_sees_its_write(
    gpu: CudaClient,
) -> None:
    n = 100_000
    y, out, x = randoms(5, n, 3)
    out_dev, copy = gpu.to_device(out), gpu.empty(n, f32)
    double_then_copy.launch(gpu, -(-n // 128), 128, out_dev, gpu.to_device(y), out_dev, copy)
    np.testing.assert_array_equal(gpu.read(copy), np.float32(2.0) * y)
    double_then_copy.launch(
        gpu, -(-n // 128), 128, gpu.to_device(x), gpu.to_device(y), out_dev, copy
    )
    np.testing.assert_array_equal(gpu.read(copy), x)


def test_a_unit_reading_what_it_stored_keeps_its_order(gpu: CudaClient) -> None:
    (out,) = randoms(6, 1001, 1)
    out_dev = gpu.to_device(out)
    triple_plus_one.launch(gpu, 9, 128, out_dev)
    assert_close(gpu.read(out_dev), out * np.float32(3.0) + np.float32(1.0))


def test_a_kernel_of_two_dimensional_cubes_keeps_one_unit_per_thread(gpu: CudaClient) -> None:
    (cx, cy), (dx, dy) = (3, 2), (16, 4)
    n = cx * cy * dx * dy - 5
    (x,) = randoms(7, n, 1)
    out = gpu.to_device(np.full(n, FILL))
    rows.launch(gpu, (cx, cy), (dx, dy), 3, gpu.to_device(x), out)
    unit_y = (np.arange(n) // (cx * dx)) % dy
    assert_close(gpu.read(out), x * np.float32(3) + unit_y.astype(np.float32))
    handle = gpu.loader.get(ArtifactId(rows.specialize((dx, dy)).id(), NO_ALIAS))
    assert handle is not None and handle.coarsening == 1
