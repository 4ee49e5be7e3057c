"""Tensors on the CPU: ranks 1 to 4 against numpy on transposed, sliced-with-step and broadcast
views (inputs and outputs), without a copy; a new shape of the same rank compiles nothing; the
contiguous form indexes its last dimension without a multiply."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import cubejit as cj
from cubejit.backends.cpu.client import CpuClient
from cubejit.backends.cpu.codegen import translation_unit


@cj.kernel
def axpy1(a: cj.f32, x: cj.Tensor[cj.f32], y: cj.Tensor[cj.f32], out: cj.Tensor[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


@cj.kernel
def axpy2(a: cj.f32, x: cj.Tensor[cj.f32], y: cj.Tensor[cj.f32], out: cj.Tensor[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        r = out.coordinate(i, 0)
        c = out.coordinate(i, 1)
        out[r, c] = a * x[r, c] + y[r, c]


@cj.kernel
def axpy3(a: cj.f32, x: cj.Tensor[cj.f32], y: cj.Tensor[cj.f32], out: cj.Tensor[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        p = out.coordinate(i, 0)
        q = out.coordinate(i, 1)
        r = out.coordinate(i, 2)
        out[p, q, r] = a * x[p, q, r] + y[p, q, r]


@cj.kernel
def axpy4(a: cj.f32, x: cj.Tensor[cj.f32], y: cj.Tensor[cj.f32], out: cj.Tensor[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        p = out.coordinate(i, 0)
        q = out.coordinate(i, 1)
        r = out.coordinate(i, 2)
        s = out.coordinate(i, 3)
        out[p, q, r, s] = a * x[p, q, r, s] + y[p, q, r, s]


KERNELS = {1: axpy1, 2: axpy2, 3: axpy3, 4: axpy4}
SHAPES = {1: (37,), 2: (9, 13), 3: (5, 4, 7), 4: (3, 2, 5, 4)}
RNG = np.random.default_rng(11)


def rand(shape: tuple[int, ...]) -> np.ndarray:
    return RNG.random(shape, dtype=np.float32)


def transposed(shape: tuple[int, ...]) -> np.ndarray:
    return rand(shape[::-1]).T if len(shape) > 1 else rand((shape[0] * 2,))[::-2][::-1]


def stepped(shape: tuple[int, ...]) -> np.ndarray:
    big = rand(tuple(3 * e + 2 for e in shape))
    return big[tuple(slice(1, 1 + 3 * e, 3) for e in shape)]


def broadcast(shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(rand((1,) * (len(shape) - 1) + shape[-1:]), shape)


def contiguous(shape: tuple[int, ...]) -> np.ndarray:
    return rand(shape)


VIEWS: dict[str, Callable[[tuple[int, ...]], np.ndarray]] = {
    "transposed": transposed,
    "stepped": stepped,
    "broadcast": broadcast,
    "contiguous": contiguous,
}


@pytest.mark.parametrize("view", VIEWS, ids=str)
@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_tensors_of_every_rank_and_view_compute_what_numpy_does(
    cpu: CpuClient, rank: int, view: str
) -> None:
    shape = SHAPES[rank]
    x = VIEWS[view](shape)
    y = broadcast(shape) if view != "broadcast" else transposed(shape)
    out = np.zeros(tuple(2 * e for e in shape), np.float32)[
        tuple(slice(None, None, 2) for _ in shape)
    ]
    assert not out.flags.c_contiguous or rank == 1
    n = x.size
    KERNELS[rank].launch(cpu, cj.cdiv(n, 64), 64, 1.5, x, y, out)
    np.testing.assert_allclose(out, np.float32(1.5) * x + y, rtol=1e-6)
    assert np.shares_memory(out, out.base)


def test_a_new_shape_of_the_same_rank_compiles_nothing(cpu: CpuClient) -> None:
    def aligned(shape: tuple[int, ...]) -> np.ndarray:
        array = cpu.empty(shape, cj.f32).array
        array[...] = rand(shape)
        return array

    for count, shape in enumerate(((6, 10), (17, 3), (2, 40), (40, 2))):
        x, y = aligned(shape[::-1]).T, aligned(shape)
        out = cpu.empty(shape, cj.f32)
        axpy2.launch(cpu, cj.cdiv(x.size, 64), 64, 2.0, x, y, out)
        np.testing.assert_allclose(cpu.read(out), 2 * x + y, rtol=1e-6)
        if count == 0:
            compiled = cpu.compiler.compilations
    assert cpu.compiler.compilations == compiled


def test_a_new_rank_or_contiguity_is_a_new_artifact_and_counted(cpu: CpuClient) -> None:
    x3 = cpu.to_device(rand((2, 3, 4))).array
    compiled = cpu.compiler.compilations
    for _ in range(2):
        axpy3.launch(cpu, 1, 64, 1.0, x3, x3, cpu.empty((2, 3, 4), cj.f32))
    assert cpu.compiler.compilations == compiled + 1
    flipped = x3.transpose(2, 1, 0)
    axpy3.launch(cpu, 1, 64, 1.0, flipped, flipped, cpu.empty((4, 3, 2), cj.f32))
    assert cpu.compiler.compilations == compiled + 2


@cj.kernel
def shapes_and_strides(t: cj.Tensor[cj.f32], out: cj.Array[cj.u32]):
    if cj.ABSOLUTE_POS == 0:
        out[0] = t.shape(0)
        out[1] = t.shape(1)
        out[2] = t.stride(0)
        out[3] = t.stride(1)
        out[4] = t.len()
        out[5] = cj.u32(t.rank())


def test_shape_stride_len_and_rank_read_the_launch_argument(cpu: CpuClient) -> None:
    out = np.zeros(6, np.uint32)
    base = rand((8, 10))
    shapes_and_strides.launch(cpu, 1, 1, base[1::2, ::3], out)
    assert list(out) == [4, 4, 20, 3, 16, 2]
    shapes_and_strides.launch(cpu, 1, 1, np.broadcast_to(base[0], (5, 10)), out)
    assert list(out) == [5, 10, 0, 1, 50, 2]


def test_the_contiguous_form_indexes_its_last_dimension_without_a_multiply() -> None:
    kernel = axpy2.specialize(64, x=2, y=2, out=2).define()
    strided = translation_unit(kernel, (64, 1, 1), 64)
    dense = translation_unit(kernel, (64, 1, 1), 64, frozenset({"x", "y", "out"}))
    assert "* d_x_1)" in strided and "* d_x_1)" not in dense
    assert "* d_x_0)" in dense


@cj.kernel
def rows(a: cj.f32, x: cj.Tensor[cj.f32], y: cj.Tensor[cj.f32], out: cj.Tensor[cj.f32]):
    c = cj.ABSOLUTE_POS_X
    r = cj.ABSOLUTE_POS_Y
    if c < out.shape(1):
        out[r, c] = a * x[r, c] + y[r, c]


def test_a_two_dimensional_launch_over_a_transposed_tensor_writes_every_element(
    cpu: CpuClient,
) -> None:
    m, n = 33, 300
    x = rand((n, m)).T
    y = rand((m, n))
    out = cpu.empty((m, n), cj.f32)
    rows.launch(cpu, (cj.cdiv(n, 64), m), (64, 1), 3.0, x, y, out)
    np.testing.assert_allclose(cpu.read(out), 3 * x + y, rtol=1e-6)


def test_artifact_metadata_keeps_the_shape_earlier_versions_read_for_kernels_without_tensors() -> (
    None
):
    from cubejit.backends.cpu.artifact import CpuArtifact
    from cubejit.runtime.layout import ParamSlot, SlotKind

    flat = (ParamSlot("x", cj.f32, SlotKind.ARRAY), ParamSlot("o", cj.f32, SlotKind.ARRAY, 0, True))
    meta = CpuArtifact(b"\x7fELF", "e", flat).metadata()
    assert meta["format"] == 1 and meta["layout"] == [["x", "array", "f32"], ["o", "array", "f32"]]
    assert CpuArtifact.from_parts(b"\x7fELF", meta).layout == flat
    shaped = (ParamSlot("t", cj.f32, SlotKind.TENSOR, 3, True),)
    meta = CpuArtifact(b"\x7fELF", "e", shaped).metadata()
    assert meta["layout"] == [["t", "tensor", "f32", 3]] and meta["written"] == ["t"]
    assert CpuArtifact.from_parts(b"\x7fELF", meta).layout == shaped
    del meta["written"]
    assert not CpuArtifact.from_parts(b"\x7fELF", meta).layout[0].written
