"""Lines on the CPU: ``cj.Line[T]`` arrays and tensors whose line size each launch chooses,
against numpy, with the chosen size written out by the kernel; ``cj.lined`` forcing a size; line
sizes as part of the kernel's identity; lane-by-lane arithmetic, comparisons, casts, math and
selection; lines in shared memory; and the whole-line loads and stores in the C text."""

from __future__ import annotations

import numpy as np
import pytest
from line_kernels import saxpy, tanh_chain

import cubejit as cj
from cubejit.backends.cpu.client import CpuClient
from cubejit.backends.cpu.codegen import translation_unit
from cubejit.errors import CompilationError, LaunchError

LENGTHS = [1000, 1004, 1002, 1001]
"""Lengths divisible by 8, by 4 (not 8), by 2 (not 4), and odd."""

F32_LINES = {1000: 4, 1004: 4, 1002: 2, 1001: 1}
"""The line size f32 arrays of those lengths get: at most 16 bytes, dividing the length."""


@cj.kernel
def rows(x: cj.Tensor[cj.Line[cj.f32]], out: cj.Tensor[cj.Line[cj.f32]], dims: cj.Array[cj.u32]):
    i = cj.ABSOLUTE_POS
    if i == 0:
        dims[0] = out.shape(0)
        dims[1] = out.shape(1)
        dims[2] = out.stride(0)
        dims[3] = cj.u32(out.line_size())
    if i < out.len():
        r = out.coordinate(i, 0)
        c = out.coordinate(i, 1)
        out[r, c] = x[r, c] * cj.f32(r + 1) + cj.line(cj.f32(c), out.line_size())


@cj.kernel
def lanes(
    x: cj.Array[cj.Line[cj.f32]], n: cj.Array[cj.Line[cj.i32]], out: cj.Array[cj.Line[cj.f32]]
):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        v = x[i]
        k = n[i]
        big = v > 0.5
        w = cj.max(v, 0.25) if k % 2 == 0 else -v
        w += cj.f32(k)
        out[i] = (w if big else cj.line(v[0], out.line_size())) + cj.sqrt(cj.abs(v))


@cj.kernel
def halves(x: cj.Array[cj.Line[cj.f16]], out: cj.Array[cj.Line[cj.f32]]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = cj.f32(x[i]) * 2.0 + cj.f32(cj.f16(cj.f32(x[i]) + 1.0))


@cj.kernel
def reversed_in_cube(x: cj.Array[cj.Line[cj.f32]], out: cj.Array[cj.Line[cj.f32]]):
    tile = cj.SharedMemory[cj.Line[cj.f32, 4]](cj.CUBE_DIM)
    u = cj.UNIT_POS
    i = cj.ABSOLUTE_POS
    tile[u] = cj.line(0.0, 4)
    if i < x.len():
        v = x[i]
        tile[u] = cj.line(v[0], 4) + cj.line(v[x.line_size() - 1], 4)
    cj.sync_cube()
    if i < out.len():
        w = tile[cj.CUBE_DIM - 1 - u]
        out[i] = cj.line(w[0] + w[3], out.line_size())


@pytest.fixture(scope="module")
def cpu() -> CpuClient:
    return CpuClient()


def _random(n: int, dtype: type = np.float32) -> np.ndarray:
    return np.random.default_rng(n).random(n).astype(dtype)


@pytest.mark.parametrize("n", LENGTHS)
def test_a_lined_saxpy_matches_numpy_and_reports_the_line_size_it_was_given(
    cpu: CpuClient, n: int
) -> None:
    x, y = _random(n), _random(n + 1)[:n].copy()
    out = np.zeros(n, np.float32)
    size = np.zeros(1, np.uint32)
    saxpy.launch(cpu, cj.cdiv(n, 64), 64, 2.5, x, y, out, size)
    np.testing.assert_allclose(out, np.float32(2.5) * x + y, rtol=1e-6)
    assert size[0] == F32_LINES[n]


@pytest.mark.parametrize("n", LENGTHS)
def test_a_lined_tanh_chain_matches_numpy(cpu: CpuClient, n: int) -> None:
    x = _random(n) * 4 - 2
    out = np.zeros(n, np.float32)
    tanh_chain.launch(cpu, cj.cdiv(n, 64), 64, x, out)
    v = np.tanh(x * np.float32(1.5) + np.float32(0.25))
    v = np.tanh(v * v - np.float32(0.5))
    np.testing.assert_allclose(out, np.tanh(v) * 2, rtol=1e-5, atol=1e-6)


def test_an_array_off_its_16_byte_alignment_gets_a_narrower_line(cpu: CpuClient) -> None:
    x, y = _random(1001)[1:], np.random.default_rng(9).random(1001).astype(np.float32)[1:]
    out = np.zeros(1001, np.float32)[1:]
    size = np.zeros(1, np.uint32)
    saxpy.launch(cpu, 16, 64, 1.0, x, y, out, size)
    assert x.ctypes.data % 16 != 0
    assert size[0] == 1
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_cj_lined_forces_a_line_size_of_2(cpu: CpuClient) -> None:
    n = 1000
    x, y = _random(n), _random(n)
    out = np.zeros(n, np.float32)
    size = np.zeros(1, np.uint32)
    saxpy.launch(cpu, 16, 64, 3.0, cj.lined(x, 2), cj.lined(y, 2), cj.lined(out, 2), size)
    assert size[0] == 2
    np.testing.assert_allclose(out, np.float32(3.0) * x + y, rtol=1e-6)


def test_cj_lined_refuses_a_size_that_does_not_divide_the_length(cpu: CpuClient) -> None:
    x = _random(1002)
    with pytest.raises(LaunchError, match="'x' cannot be lined by 4"):
        saxpy.launch(cpu, 16, 64, 1.0, cj.lined(x, 4), x, x.copy(), np.zeros(1, np.uint32))


@cj.kernel
def doubled(x: cj.Array[cj.Line[cj.f32]], out: cj.Array[cj.Line[cj.f32]]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * 2.0


def test_different_line_sizes_are_different_kernels_with_two_artifacts(cpu: CpuClient) -> None:
    compiled = cpu.compiler.compilations
    for n in (1000, 1001, 2000, 3001):
        x = cpu.to_device(_random(n))
        out = cpu.empty(n, cj.f32)
        doubled.launch(cpu, cj.cdiv(n, 64), 64, x, out)
        np.testing.assert_allclose(cpu.read(out), cpu.read(x) * 2)
    four = doubled.specialize(64, line_sizes=dict(x=4, out=4))
    one = doubled.specialize(64, line_sizes=dict(x=1, out=1))
    assert four.id() != one.id()
    assert "Line[f32, 4]" in repr(four.id().info) and "Line[f32, 1]" in repr(one.id().info)
    assert cpu.compiler.compilations - compiled == 2


def test_a_lined_2d_tensor_counts_its_innermost_extent_in_lines(cpu: CpuClient) -> None:
    x = np.random.default_rng(3).random((6, 16)).astype(np.float32)
    out = np.zeros((6, 16), np.float32)
    dims = np.zeros(4, np.uint32)
    rows.launch(cpu, 1, 64, x, out, dims)
    assert list(dims) == [6, 4, 4, 4]
    r = np.arange(6, dtype=np.float32)[:, None]
    c = (np.arange(16) // 4).astype(np.float32)[None, :]
    np.testing.assert_allclose(out, x * (r + 1) + c, rtol=1e-6)


def test_a_strided_tensor_row_keeps_lines_within_its_stride(cpu: CpuClient) -> None:
    big = np.random.default_rng(4).random((6, 24)).astype(np.float32)
    x = big[:, :16]
    out = np.zeros((6, 16), np.float32)
    dims = np.zeros(4, np.uint32)
    rows.launch(cpu, 1, 64, x, out, dims)
    assert dims[3] == 4
    r = np.arange(6, dtype=np.float32)[:, None]
    c = (np.arange(16) // 4).astype(np.float32)[None, :]
    np.testing.assert_allclose(out, x * (r + 1) + c, rtol=1e-6)


def test_lines_compute_lane_by_lane_with_scalars_broadcast(cpu: CpuClient) -> None:
    n = 64
    x = _random(n)
    k = np.random.default_rng(5).integers(0, 9, n).astype(np.int32)
    out = np.zeros(n, np.float32)
    lanes.launch(cpu, 1, 64, x, k, out)
    lines = x.reshape(-1, 4)
    first = np.repeat(lines[:, :1], 4, axis=1).reshape(-1)
    w = np.where(k % 2 == 0, np.maximum(x, np.float32(0.25)), -x) + k.astype(np.float32)
    expected = np.where(x > 0.5, w, first) + np.sqrt(np.abs(x))
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_f16_lines_cast_to_f32_lane_by_lane(cpu: CpuClient) -> None:
    n = 256
    x = (_random(n) * 8).astype(np.float16)
    out = np.zeros(n, np.float32)
    halves.launch(cpu, 4, 64, cj.lined(x, 4), out)
    wide = x.astype(np.float32)
    np.testing.assert_allclose(out, wide * 2 + (wide + 1).astype(np.float16).astype(np.float32))


def test_lines_in_shared_memory_are_seen_by_the_whole_cube(cpu: CpuClient) -> None:
    n = 256
    x = _random(n)
    out = np.zeros(n, np.float32)
    reversed_in_cube.launch(cpu, 1, 64, x, out)
    lines = x.reshape(-1, 4)
    per_unit = lines[:, 0] + lines[:, 3]
    expected = 2 * per_unit[::-1]
    np.testing.assert_allclose(out, np.repeat(expected, 4), rtol=1e-6)


def test_a_lined_saxpy_reads_each_lane_as_an_affine_64_bit_index_in_its_c_text() -> None:
    spec = saxpy.specialize(64, line_sizes=dict(x=4, y=4, out=4, size=1))
    text = translation_unit(spec.define(), spec.cube_dim, 64)
    for lane in range(4):
        assert f"p_out[((((uint64_t)(v_i)) * ((uint64_t)4ull)) + ((uint64_t){lane}ull))]" in text
    assert "cj_line" not in text


def test_a_lined_tanh_chain_runs_one_lane_per_step_of_its_c_row_loop() -> None:
    spec = tanh_chain.specialize(256, line_sizes=dict(x=4, out=4))
    text = translation_unit(spec.define(), spec.cube_dim, 64)
    assert "p_x[p_lane_element]" in text
    assert "p_out[p_lane_element] = " in text
    assert text.count("cj_tanhf(") == 3 + 1
    assert "4ull" not in text
    assert "cj_e < (uint64_t)cj_end * 4u" in text


def test_lines_whose_lanes_read_another_lane_keep_their_lanes_in_one_unit() -> None:
    spec = lanes.specialize(64, line_sizes=dict(x=4, n=4, out=4))
    text = translation_unit(spec.define(), spec.cube_dim, 64)
    assert "lane_element" not in text
    assert "((uint64_t)(v_i)) * ((uint64_t)4ull)) + ((uint64_t)3ull)" in text


@cj.kernel
def offset_chain(a: cj.f32, x: cj.Array[cj.Line[cj.f32]], out: cj.Array[cj.Line[cj.f32]]):
    i = cj.ABSOLUTE_POS
    b = a * 2.0
    if i < out.len():
        v = x[i] * b
        w = cj.exp(v - a)
        out[i] = w + v


@pytest.mark.parametrize("n", LENGTHS)
def test_lanes_run_as_units_read_what_the_unit_computed_before_its_lines(
    cpu: CpuClient, n: int
) -> None:
    x = _random(n)
    out = np.zeros(n, np.float32)
    offset_chain.launch(cpu, cj.cdiv(n, 64), 64, 0.75, x, out)
    v = x * np.float32(1.5)
    np.testing.assert_allclose(out, np.exp(v - np.float32(0.75)) + v, rtol=1e-6)
    spec = offset_chain.specialize(64, line_sizes=dict(x=4, out=4))
    assert "p_out[p_lane_element]" in translation_unit(spec.define(), spec.cube_dim, 64)


def test_an_atomic_method_on_a_line_is_a_compilation_error() -> None:
    @cj.kernel
    def bad(x: cj.Array[cj.Line[cj.u32]]):
        x[cj.ABSOLUTE_POS].fetch_add(1)

    with pytest.raises(CompilationError, match="a line is not atomic"):
        bad.specialize(32, line_sizes=dict(x=4)).define()


def test_an_atomic_line_cannot_be_annotated() -> None:
    with pytest.raises(TypeError, match=r"cj\.Line"):
        cj.Line[cj.Atomic[cj.u32]]
