"""The porter constructs and the one-meaning kernels of the CPU tests, on CUDA: lowered and
compiled by NVRTC everywhere, run against numpy (and against the folded constants) on a GPU."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from cubejit.backends.cuda.artifact import ELF_MAGIC
from cubejit.backends.cuda.compiler import CudaCompiler
from cubejit.backends.cuda.nvrtc import half_include_dir
from cubejit.compile.id import ArtifactId
from cubejit.compile.recording import CompilationRecording

_CPU_TESTS = Path(__file__).parents[1] / "cpu"


def _load(name: str) -> ModuleType:
    """A kernel module of the CPU tests, by its path (the two test folders are not packages)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, _CPU_TESTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


porter = _load("porter_kernels")
meaning = _load("meaning_kernels")

SPECS = [case.kernel.specialize(case.cube_dim, **case.comptime) for case in porter.CASES] + [
    kernel.specialize(cube_dim)
    for kernel, cube_dim in (
        (meaning.float_ops_f32, 64),
        (meaning.float_ops_f64, 64),
        (meaning.folded_f32, 1),
        (meaning.folded_f64, 1),
        (meaning.int_ops_i8, 64),
        (meaning.int_ops_i32, 64),
        (meaning.int_ops_u32, 64),
        (meaning.int_ops_i64, 64),
        (meaning.folded_i32, 1),
        (meaning.convert, 64),
        (meaning.folded_convert, 1),
        (meaning.half_scale, 64),
        (meaning.thirds, 1),
    )
]


def lowered(spec: Any) -> tuple[str, bytes]:
    id = ArtifactId(spec.id(), None)
    recording = CompilationRecording.for_artifact(id, keep_text=True)
    compiler = CudaCompiler("sm_90")
    artifact = compiler.finalize(id, compiler.lower(spec, id, recording, None))
    return recording.source_text or "", artifact.cubin


@pytest.mark.cuda_packages
@pytest.mark.parametrize("spec", SPECS, ids=repr)
def test_each_porter_and_one_meaning_kernel_compiles_with_nvrtc(spec: Any) -> None:
    if half_include_dir() is None:
        pytest.skip("the CUDA half headers (nvidia-cuda-runtime or a CUDA toolkit) are missing")
    _, cubin = lowered(spec)
    assert cubin.startswith(ELF_MAGIC)


@pytest.mark.cuda_packages
def test_cuda_text_rounds_an_f16_literal_once_and_saturates_conversions() -> None:
    if half_include_dir() is None:
        pytest.skip("the CUDA half headers (nvidia-cuda-runtime or a CUDA toolkit) are missing")
    half_text, _ = lowered(meaning.half_scale.specialize(64))
    assert "((__half)0x1.0040000000000p+0f)" in half_text
    convert_text, _ = lowered(meaning.convert.specialize(64))
    assert "if (v != v) return 0;" in convert_text
    assert "cj_to_i32_f32(" in convert_text and "cj_to_u8_f32(" in convert_text
    bits_text, _ = lowered(porter.bitcasts.specialize(64))
    assert "__float_as_uint(" in bits_text and "__half_as_ushort(" in bits_text


@pytest.mark.gpu
@pytest.mark.parametrize("case", porter.CASES, ids=[c.name for c in porter.CASES])
def test_each_porter_construct_computes_what_numpy_does_on_the_gpu(gpu: Any, case: Any) -> None:
    porter.run_case(gpu, case, 257, np.random.default_rng(257))


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("dtype", "name"), [(np.float32, "f32"), (np.float64, "f64")], ids=["f32", "f64"]
)
def test_folded_floats_equal_the_gpus_results(gpu: Any, dtype: type, name: str) -> None:
    a = np.array([p[0] for p in meaning.FLOAT_PAIRS], dtype)
    b = np.array([p[1] for p in meaning.FLOAT_PAIRS], dtype)
    out = gpu.empty(a.size * meaning.FLOAT_OPS, dtype)
    getattr(meaning, f"float_ops_{name}").launch(
        gpu, 1, 64, gpu.to_device(a), gpu.to_device(b), out
    )
    folded = gpu.empty(a.size * meaning.FLOAT_OPS, dtype)
    getattr(meaning, f"folded_{name}").launch(gpu, 1, 1, folded)
    got, want = (
        gpu.read(out).reshape(-1, meaning.FLOAT_OPS),
        gpu.read(folded).reshape(-1, meaning.FLOAT_OPS),
    )
    assert np.array_equal(np.isnan(got), np.isnan(want))
    exact = ~np.isnan(want)
    exact[:, meaning.EXACT_FLOAT_OPS :] = False
    np.testing.assert_array_equal(got[exact], want[exact])
    assert np.array_equal(np.signbit(got[exact]), np.signbit(want[exact]))
    rest = ~np.isnan(want) & ~exact & np.isfinite(want)
    np.testing.assert_allclose(got[rest], want[rest], rtol=8 * np.finfo(dtype).eps)


@pytest.mark.gpu
def test_integers_and_conversions_on_the_gpu_follow_numpy_and_the_folded_constants(
    gpu: Any,
) -> None:
    rng = np.random.default_rng(3)
    for dtype, kernel in (
        (np.int8, meaning.int_ops_i8),
        (np.int32, meaning.int_ops_i32),
        (np.uint32, meaning.int_ops_u32),
        (np.int64, meaning.int_ops_i64),
    ):
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, 300, dtype=dtype, endpoint=True)
        b = rng.integers(-3 if info.min else 0, info.bits + 8, 300).astype(dtype)
        b[:20] = 0
        out = gpu.empty(a.size * meaning.INT_OPS, dtype)
        kernel.launch(gpu, 5, 64, gpu.to_device(a), gpu.to_device(b), out)
        np.testing.assert_array_equal(gpu.read(out), meaning.int_reference(a, b))
    folded = gpu.empty(len(meaning.INT_PAIRS) * meaning.INT_OPS, np.int32)
    meaning.folded_i32.launch(gpu, 1, 1, folded)
    a = np.array([p[0] for p in meaning.INT_PAIRS], np.int32)
    b = np.array([p[1] for p in meaning.INT_PAIRS], np.int32)
    np.testing.assert_array_equal(gpu.read(folded), meaning.int_reference(a, b))
    x = np.array(meaning.CONVERSION_VALUES, np.float32)
    # Each conversion writes its own slots of one of the two outputs: the others stay zero.
    signed = gpu.to_device(np.zeros(x.size * 4, np.int64))
    unsigned = gpu.to_device(np.zeros(x.size * 4, np.uint64))
    meaning.convert.launch(gpu, 1, 64, gpu.to_device(x), signed, unsigned)
    want_signed, want_unsigned = meaning.conversion_reference(x)
    np.testing.assert_array_equal(gpu.read(signed), want_signed)
    np.testing.assert_array_equal(gpu.read(unsigned), want_unsigned)
    halves = gpu.empty(7, np.float16)
    meaning.half_scale.launch(gpu, 1, 64, gpu.to_device(np.ones(7, np.float16)), halves)
    np.testing.assert_array_equal(gpu.read(halves), np.full(7, 1.0009765625, np.float16))
