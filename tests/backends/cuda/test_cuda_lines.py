"""Lines on CUDA: NVRTC turns whole lines into 16-byte loads and stores (``ld.global.v4.f32``,
eight ``f16`` lanes as ``v4.u32``) without a GPU; on a GPU, lined saxpy and a lined tanh chain for
lengths divisible by 8, 4, 2 and odd against numpy with the chosen line size written out,
``cj.lined`` forcing 2, a lined 2-D tensor and ``f16`` lines of 8."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from line_kernels import half_saxpy, saxpy, tanh_chain

import cubejit as cj
from cubejit.backends.cuda import nvrtc
from cubejit.backends.cuda.coarsening import FACTOR, NO_ALIAS
from cubejit.backends.cuda.compiler import CudaCompiler
from cubejit.backends.cuda.dialect import cuda_source
from cubejit.compile.id import ArtifactId


@cj.kernel
def rows(x: cj.Tensor[cj.Line[cj.f32]], out: cj.Tensor[cj.Line[cj.f32]], dims: cj.Array[cj.u32]):
    i = cj.ABSOLUTE_POS
    if i == 0:
        dims[0] = out.shape(1)
        dims[1] = cj.u32(out.line_size())
    if i < out.len():
        r = out.coordinate(i, 0)
        c = out.coordinate(i, 1)
        out[r, c] = x[r, c] * cj.f32(r + 1)


@cj.kernel
def neighbours(x: cj.Array[cj.Line[cj.f32]], out: cj.Array[cj.Line[cj.f32]]):
    i = cj.ABSOLUTE_POS * 2
    v = x[i]
    i = i + 1
    w = x[i]
    out[cj.ABSOLUTE_POS] = v - w


def _ptx(kernel: Any, **line_sizes: int) -> str:
    """The PTX NVRTC makes of ``kernel`` with these line sizes (for sm_90)."""
    source = cuda_source(kernel.specialize(256, line_sizes=line_sizes).define())
    module = nvrtc.nvrtc_module()
    (program,) = nvrtc._checked(
        module.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], []), "program"
    )
    include = nvrtc.half_include_dir()
    options = [b"-arch=compute_90", b"-std=c++17"]
    options += [f"-I{include}".encode()] if include else []
    (status,) = module.nvrtcCompileProgram(program, len(options), options)
    assert status == module.nvrtcResult.NVRTC_SUCCESS, source
    (size,) = nvrtc._checked(module.nvrtcGetPTXSize(program), "ptx size")
    ptx = bytes(size)
    nvrtc._checked(module.nvrtcGetPTX(program, ptx), "ptx")
    module.nvrtcDestroyProgram(program)
    return ptx.decode()


@pytest.mark.cuda_packages
def test_a_lined_f32_saxpy_moves_each_line_in_one_16_byte_load_and_store() -> None:
    ptx = _ptx(saxpy, x=4, y=4, out=4, size=1)
    assert ptx.count("ld.global.v4.f32") == 2
    assert ptx.count("st.global.v4.f32") == 1
    assert "ld.global.f32" not in ptx


def test_a_line_read_again_after_its_index_is_reassigned_is_read_from_the_new_index() -> None:
    source = cuda_source(neighbours.specialize(256, line_sizes=dict(x=4, out=4)).define())
    reads = re.findall(r"^ *v_w_lane(\d) = (.*);$", source, re.MULTILINE)
    assert [lane for lane, _ in reads] == ["0", "1", "2", "3"]
    assert all("p_x[" in value and "cj_line" not in value for _, value in reads)


@pytest.mark.gpu
def test_a_line_read_again_after_its_index_is_reassigned_matches_numpy(gpu: Any) -> None:
    x = np.random.default_rng(7).random(4096, dtype=np.float32)
    out = gpu.empty(2048, cj.f32)
    neighbours.launch(gpu, 2, 256, gpu.to_device(x), out)
    lines = x.reshape(-1, 2, 4)
    np.testing.assert_array_equal(gpu.read(out), (lines[:, 0] - lines[:, 1]).ravel())


@pytest.mark.cuda_packages
def test_f16_lines_of_8_move_as_16_bytes() -> None:
    ptx = _ptx(half_saxpy, x=8, y=8, out=8, size=1)
    assert ptx.count("ld.global.v4.u32") == 2
    assert ptx.count("st.global.v4.u32") == 1


@pytest.mark.cuda_packages
@pytest.mark.parametrize("width", [2, 1])
def test_narrower_lines_compile_to_their_own_widths(width: int) -> None:
    ptx = _ptx(saxpy, x=width, y=width, out=width, size=1)
    if width == 2:
        assert "ld.global.v2.f32" in ptx
    else:
        assert "ld.global.v2.f32" not in ptx and "ld.global.f32" in ptx


class _Recording:
    def defined(self, text: str) -> None:
        pass

    def source(self, text: str) -> None:
        pass


@cj.kernel
def plain_half_saxpy(
    a: cj.f16,
    x: cj.Array[cj.Line[cj.f16]],
    y: cj.Array[cj.Line[cj.f16]],
    out: cj.Array[cj.Line[cj.f16]],
):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


def _compiled_ptx(kernel: Any, variant: object, **line_sizes: int) -> str:
    """The PTX the CUDA compiler keeps beside the cubin of ``kernel`` in ``variant``."""
    compiler = CudaCompiler("sm_90")
    spec = kernel.specialize(256, line_sizes=line_sizes)
    aid = ArtifactId(spec.id(), variant)
    artifact = compiler.finalize(aid, compiler.lower(spec, aid, _Recording(), None))
    return artifact.ptx.decode()


@pytest.mark.cuda_packages
@pytest.mark.parametrize("variant", [None, NO_ALIAS])
def test_a_lined_f16_saxpy_loads_and_stores_16_bytes_per_line_in_both_forms(
    variant: object,
) -> None:
    ptx = _compiled_ptx(plain_half_saxpy, variant, x=8, y=8, out=8)
    loads = len(re.findall(r"ld\.global(\.nc)?\.v4\.(u32|b32|f32)", ptx))
    stores = len(re.findall(r"st\.global\.v4\.(u32|b32|f32)", ptx))
    units = 1 if variant is None else FACTOR
    assert loads >= 2 * units and stores >= units, ptx
    assert not re.search(r"(ld|st)\.global(\.nc)?\.(u16|b16|f16)\b", ptx), ptx


@pytest.mark.cuda_packages
@pytest.mark.parametrize("variant", [None, NO_ALIAS])
def test_a_lined_f16_saxpy_computes_two_lanes_per_half2_instruction(variant: object) -> None:
    ptx = _compiled_ptx(plain_half_saxpy, variant, x=8, y=8, out=8)
    units = 1 if variant is None else FACTOR
    muls = len(re.findall(r"mul(\.rn)?\.f16x2", ptx))
    adds = len(re.findall(r"add(\.rn)?\.f16x2", ptx))
    assert muls >= 4 * units and adds >= 4 * units, ptx
    assert not re.search(r"(mul|add|fma\.rn)\.f16\s", ptx), ptx
    assert "fma.rn.f16x2" not in ptx, "a multiply and an add round apart, as numpy's do"


@cj.kernel
def bf16_saxpy(
    a: cj.bf16,
    x: cj.Array[cj.Line[cj.bf16]],
    y: cj.Array[cj.Line[cj.bf16]],
    out: cj.Array[cj.Line[cj.bf16]],
):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] - y[i]


@pytest.mark.cuda_packages
def test_bf16_lines_compute_two_lanes_per_bfloat162_instruction() -> None:
    ptx = _compiled_ptx(bf16_saxpy, NO_ALIAS, x=8, y=8, out=8)
    assert "mul.rn.bf16x2" in ptx or "mul.bf16x2" in ptx, ptx
    assert "st.global.v4.u32" in ptx and not re.search(r"st\.global\.(u16|b16)\b", ptx), ptx


@pytest.mark.gpu
def test_a_lined_f16_saxpy_run_by_coarsened_threads_matches_numpy(gpu: Any) -> None:
    n = (1 << 20) + 8 * 256 * 3
    rng = np.random.default_rng(16)
    x, y = rng.random(n).astype(np.float16), rng.random(n).astype(np.float16)
    out = gpu.empty(n, cj.f16)
    plain_half_saxpy.launch(
        gpu, cj.cdiv(n // 8, 256), 256, 1.5, gpu.to_device(x), gpu.to_device(y), out
    )
    expected = np.float16(1.5) * x + y
    np.testing.assert_array_equal(gpu.read(out), expected)


@pytest.mark.cuda_packages
@pytest.mark.parametrize("variant", [None, NO_ALIAS])
def test_the_cuda_compiler_builds_both_forms_of_a_lined_saxpy_with_whole_lines(
    variant: object,
) -> None:
    compiler = CudaCompiler("sm_90")
    spec = saxpy.specialize(256, line_sizes=dict(x=4, y=4, out=4, size=1))
    aid = ArtifactId(spec.id(), variant)
    lowered = compiler.lower(spec, aid, _Recording(), None)
    assert "struct __align__(16) cj_line4_f32 { float v[4]; };" in lowered.source
    artifact = compiler.finalize(aid, lowered)
    assert [s.describe() for s in artifact.params] == ["f32", *["Array[f32]"] * 3, "Array[u32]"]


@pytest.mark.cuda_packages
def test_the_cuda_compiler_builds_a_lined_2d_tensor_kernel() -> None:
    compiler = CudaCompiler("sm_90")
    spec = rows.specialize(128, x=2, out=2, line_sizes=dict(x=4, out=4))
    aid = ArtifactId(spec.id(), (None, 3))
    lowered = compiler.lower(spec, aid, _Recording(), None)
    assert "cj_line4_f32" in lowered.source
    compiler.finalize(aid, lowered)


LENGTHS = {1 << 20: 4, (1 << 20) + 4: 4, (1 << 20) + 2: 2, (1 << 20) + 1: 1}


@pytest.mark.gpu
@pytest.mark.parametrize("n", list(LENGTHS))
def test_a_lined_saxpy_on_the_device_matches_numpy(gpu: Any, n: int) -> None:
    rng = np.random.default_rng(n)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out, size = gpu.empty(n, cj.f32), gpu.empty(1, cj.u32)
    saxpy.launch(gpu, cj.cdiv(n, 256), 256, 2.5, gpu.to_device(x), gpu.to_device(y), out, size)
    np.testing.assert_allclose(gpu.read(out), np.float32(2.5) * x + y, rtol=1e-6)
    assert gpu.read(size)[0] == LENGTHS[n]


@pytest.mark.gpu
@pytest.mark.parametrize("n", list(LENGTHS))
def test_a_lined_tanh_chain_on_the_device_matches_numpy(gpu: Any, n: int) -> None:
    x = np.random.default_rng(n).random(n, dtype=np.float32) * 4 - 2
    out = gpu.empty(n, cj.f32)
    tanh_chain.launch(gpu, cj.cdiv(n, 256), 256, gpu.to_device(x), out)
    v = np.tanh(x * np.float32(1.5) + np.float32(0.25))
    v = np.tanh(v * v - np.float32(0.5))
    np.testing.assert_allclose(gpu.read(out), np.tanh(v) * 2, rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
def test_cj_lined_forces_2_on_the_device(gpu: Any) -> None:
    n = 1 << 16
    x = np.random.default_rng(2).random(n, dtype=np.float32)
    dx, out, size = gpu.to_device(x), gpu.empty(n, cj.f32), gpu.empty(1, cj.u32)
    saxpy.launch(gpu, n // 512, 256, 1.0, cj.lined(dx, 2), cj.lined(dx, 2), cj.lined(out, 2), size)
    assert gpu.read(size)[0] == 2
    np.testing.assert_allclose(gpu.read(out), 2 * x, rtol=1e-6)


@pytest.mark.gpu
def test_a_lined_2d_tensor_on_the_device_counts_lines_innermost(gpu: Any) -> None:
    x = np.random.default_rng(3).random((64, 32), dtype=np.float32)
    out, dims = gpu.empty((64, 32), cj.f32), gpu.empty(2, cj.u32)
    rows.launch(gpu, 4, 128, gpu.to_device(x), out, dims)
    assert list(gpu.read(dims)) == [8, 4]
    np.testing.assert_allclose(gpu.read(out), x * np.arange(1, 65, dtype=np.float32)[:, None])


@pytest.mark.gpu
def test_f16_lines_of_8_on_the_device_match_numpy(gpu: Any) -> None:
    n = 1 << 20
    rng = np.random.default_rng(8)
    x, y = rng.random(n).astype(np.float16), rng.random(n).astype(np.float16)
    out, size = gpu.empty(n, cj.f16), gpu.empty(1, cj.u32)
    half_saxpy.launch(gpu, n // 2048, 256, 1.5, gpu.to_device(x), gpu.to_device(y), out, size)
    assert gpu.read(size)[0] == 8
    expected = (np.float16(1.5) * x + y).astype(np.float32)
    np.testing.assert_allclose(gpu.read(out).astype(np.float32), expected, rtol=2e-3, atol=2e-3)
