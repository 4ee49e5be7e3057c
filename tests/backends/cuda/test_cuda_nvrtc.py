"""NVRTC to cubins without a GPU: every test kernel for sm_80 and sm_90, failures with the log
and the source, compiles counted, cube_dim validated, artifacts through the store and a bundle."""

from __future__ import annotations

import dataclasses
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from cuda_kernels import IRSpec, all_cases, positions_kernel
from cuda_packages import missing_cuda_packages

from cubejit import environment
from cubejit.backends.cuda.artifact import ELF_MAGIC, ENTRY_POINT, CudaArtifact
from cubejit.backends.cuda.compiler import CudaCompiler
from cubejit.backends.cuda.driver import CudaLimits, arch_name
from cubejit.backends.cuda.nvrtc import compile_to_cubin, half_include_dir, version
from cubejit.backends.cuda.target import CudaTarget, fingerprint, packed, unpacked
from cubejit.compile.id import ArtifactId
from cubejit.compile.recording import CompilationRecording
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.errors import CompilationError, UnsupportedError, ValidationError
from cubejit.ir import nodes as ir

ARCHS = ("sm_80", "sm_90")
CASES = all_cases()


def lowered_and_compiled(compiler: CudaCompiler, spec: Any) -> tuple[Any, CudaArtifact]:
    id = ArtifactId(spec.id(), None)
    recording = CompilationRecording.for_artifact(id, keep_text=True)
    lowered = compiler.lower(spec, id, recording, None)
    assert recording.source_text == lowered.source
    return lowered, compiler.finalize(id, lowered)


@pytest.fixture(scope="module", params=ARCHS)
def built(request: pytest.FixtureRequest) -> tuple[CudaCompiler, dict[str, CudaArtifact]]:
    """Every test kernel compiled for one architecture, two at a time."""
    if missing_cuda_packages() is not None:
        pytest.skip(f"needs the CUDA packages: {missing_cuda_packages()}")
    if half_include_dir() is None:
        pytest.skip("the CUDA half headers (nvidia-cuda-runtime or a CUDA toolkit) are missing")
    compiler = CudaCompiler(request.param)
    with ThreadPoolExecutor(2) as pool:
        done = pool.map(lambda case: lowered_and_compiled(compiler, case.spec)[1], CASES)
        return compiler, {
            case.spec.name: artifact for case, artifact in zip(CASES, done, strict=True)
        }


def test_every_test_kernel_compiles_to_a_cubin_with_the_entry_point(built: Any) -> None:
    compiler, artifacts = built
    assert compiler.compilations == len(CASES)
    for artifact in artifacts.values():
        assert artifact.cubin.startswith(ELF_MAGIC)
        assert ENTRY_POINT.encode() in artifact.cubin
        assert artifact.arch == compiler.arch


def test_the_artifact_carries_the_launch_layout(built: Any) -> None:
    _, artifacts = built
    saxpy = artifacts["saxpy"]
    assert [(p.name, p.scalar.name, p.is_array) for p in saxpy.params] == [
        ("a", "f32", False),
        ("x", "f32", True),
        ("y", "f32", True),
        ("out", "f32", True),
    ]


def test_an_artifact_round_trips_through_its_stored_form(built: Any) -> None:
    _, artifacts = built
    artifact = artifacts["halves_bf16"]
    assert artifact.ptx.startswith(b"//") and b".entry cubejit_kernel" in artifact.ptx
    assert unpacked(*packed(artifact)).with_ptx_unpacked() == artifact
    with pytest.raises(ValueError, match="format"):
        CudaArtifact.from_stored(artifact.cubin, {**artifact.metadata(), "format": 99})
    with pytest.raises(ValueError, match="ELF"):
        CudaArtifact.from_stored(b"not a cubin", artifact.metadata())


@pytest.mark.cuda_packages
@pytest.mark.parametrize("arch", ARCHS)
def test_a_kernel_reading_its_plane_lane_without_plane_operations_compiles(arch: str) -> None:
    spec = IRSpec(positions_kernel(), cube_dim=(4, 2, 2))
    lowered, artifact = lowered_and_compiled(CudaCompiler(arch), spec)
    assert "cj_plane_lane()" in lowered.source
    assert artifact.cubin.startswith(ELF_MAGIC)


@pytest.mark.cuda_packages
def test_a_source_nvrtc_refuses_raises_with_its_log_and_the_source() -> None:
    source = 'extern "C" __global__ void cubejit_kernel() { undeclared = 1; }\n'
    with pytest.raises(CompilationError) as caught:
        compile_to_cubin(source, "sm_90a", kernel="broken")
    error = caught.value
    assert "kernel broken" in str(error) and "sm_90a" in str(error)
    assert "undeclared" in error.log and "undeclared" in str(error)
    assert error.source == source
    assert error.kernel == "broken"


@pytest.mark.cuda_packages
def test_nvrtc_compiles_without_the_device_runtime_kernels_never_use() -> None:
    source = (
        'extern "C" __global__ void cubejit_kernel(int* out) {\n'
        "    cudaError_t status = cudaSuccess;\n"
        "    *out = (int)status;\n"
        "}\n"
    )
    with pytest.raises(CompilationError) as caught:
        compile_to_cubin(source, "sm_90a", kernel="runtime_user")
    assert "cudaError_t" in caught.value.log


@pytest.mark.cuda_packages
def test_each_finalize_counts_and_tells_the_hook() -> None:
    seen: list[str] = []
    compiler = CudaCompiler("sm_90a", on_compile=seen.append)
    lowered, artifact = lowered_and_compiled(compiler, CASES[0].spec)
    assert compiler.compilations == 1
    assert seen == [lowered.source]
    assert CudaCompiler.source(lowered) == lowered.source
    assert artifact.arch == "sm_90a"


def test_a_cube_dim_beyond_the_device_is_a_validation_error_naming_the_kernel() -> None:
    compiler = CudaCompiler("sm_90a")
    too_many = IRSpec(CASES[0].spec.kernel, cube_dim=(64, 32, 1), file="k.py", line=7)
    with pytest.raises(ValidationError, match=r"saxpy \(k.py:7\).*2048 units per cube"):
        compiler.lower(too_many, ArtifactId(too_many.id(), None), _Recording(), None)
    small = CudaLimits(
        name="a small device",
        compute_capability=(9, 0),
        max_units_per_cube=1024,
        max_cube_dim=(128, 128, 64),
        max_cube_count=(2**31 - 1, 65535, 65535),
        max_shared_memory=48 * 1024,
    )
    wide = IRSpec(CASES[0].spec.kernel, cube_dim=(256, 1, 1))
    with pytest.raises(ValidationError, match="256 units along x"):
        CudaCompiler("sm_90a", small).lower(wide, ArtifactId(wide.id(), None), _Recording(), None)


def test_half_types_without_the_headers_are_unsupported_with_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cubejit.backends.cuda import nvrtc

    monkeypatch.setattr(nvrtc, "half_include_dir", lambda: None)
    spec = next(case.spec for case in CASES if case.spec.name == "halves_f16")
    with pytest.raises(UnsupportedError, match="nvidia-cuda-runtime"):
        CudaCompiler("sm_90a").lower(spec, ArtifactId(spec.id(), None), _Recording(), None)


@pytest.mark.cuda_packages
def test_the_architecture_and_fingerprint_name_the_exact_device() -> None:
    assert arch_name((9, 0)) == "sm_90a"
    assert arch_name((8, 6)) == "sm_86"
    major, minor = version()
    assert fingerprint((9, 0)) == f"sm_90-nvrtc{major}.{minor}"


@pytest.mark.cuda_packages
def test_cuda_artifacts_go_through_the_store_and_a_bundle(store_root: Path, tmp_path: Path) -> None:
    compiler = CudaCompiler("sm_90a")
    spec = CASES[0].spec
    id = ArtifactId(spec.id(), None)
    lowered, artifact = lowered_and_compiled(compiler, spec)
    store = environment.ArtifactStore("cuda", fingerprint((9, 0)))
    target = CudaTarget(None, compiler, store)
    assert target.store(id, artifact, lowered.source)
    assert unpacked_ptx(target.stored(id)) == artifact
    renamed = dataclasses.replace(spec.kernel, name="renamed")
    assert target.stored(ArtifactId(IRSpec(renamed).id(), None)) is None
    assert unpacked_ptx(target.stored_for_source(lowered.source)) == artifact
    bundle = tmp_path / "cuda.bundle"
    assert environment.export_bundle(bundle, namespaces=["cuda/"]) == 2
    environment.activate("elsewhere")
    assert target.stored(id) is None
    environment.import_bundle(bundle)
    assert unpacked_ptx(target.stored(id)) == artifact
    ENVIRONMENTS.reset()


@pytest.mark.cuda_packages
def test_a_damaged_stored_artifact_is_not_loaded_but_compiled_again(store_root: Path) -> None:
    compiler = CudaCompiler("sm_90a")
    spec = IRSpec(ir.KernelIR("empty", (), (), ()))
    id = ArtifactId(spec.id(), None)
    store = environment.ArtifactStore("cuda", "sm_90-damaged")
    store.store(
        id, b"not an ELF image", {"format": 1, "entry": "x", "arch": "y", "params": []}, None
    )
    assert CudaTarget(None, compiler, store).stored(id) is None


class _Recording:
    def defined(self, text: str) -> None:
        pass

    def source(self, text: str) -> None:
        pass


def unpacked_ptx(artifact: CudaArtifact | None) -> CudaArtifact | None:
    return None if artifact is None else artifact.with_ptx_unpacked()


@pytest.mark.cuda_packages
def test_a_stored_cuda_artifact_keeps_cubin_and_ptx_compressed_apart_and_loads_the_cubin_alone(
    store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiler = CudaCompiler("sm_80")
    spec = CASES[0].spec
    id = ArtifactId(spec.id(), None)
    lowered, artifact = lowered_and_compiled(compiler, spec)
    payload, metadata = packed(artifact)
    size = metadata["cubin_size"]
    assert metadata["packing"] == "zlib" and isinstance(size, int)
    assert zlib.decompress(payload[:size]) == artifact.cubin
    assert zlib.decompress(payload[size:]) == artifact.ptx
    store = environment.ArtifactStore("cuda", "sm_80-apart")
    target = CudaTarget(None, compiler, store)
    assert target.store(id, artifact, lowered.source)
    inflated: list[int] = []
    real = zlib.decompress

    def counting(data: bytes, *args: Any) -> bytes:
        inflated.append(len(data))
        return real(data, *args)

    monkeypatch.setattr(zlib, "decompress", counting)
    found = target.stored(id)
    assert found is not None and found.cubin == artifact.cubin and found.ptx == b""
    assert inflated == [size]
    assert found.portable_ptx() and found.ptx_text() == artifact.ptx
    assert found.with_ptx_unpacked() == artifact


@pytest.mark.cuda_packages
def test_cuda_entries_stored_before_cubin_and_ptx_were_compressed_apart_are_read(
    store_root: Path,
) -> None:
    compiler = CudaCompiler("sm_80")
    spec = CASES[0].spec
    _, artifact = lowered_and_compiled(compiler, spec)
    store = environment.ArtifactStore("cuda", "sm_80-before")
    target = CudaTarget(None, compiler, store)
    with_ptx = ArtifactId(spec.id(), None)
    cubin_only = ArtifactId(spec.id(), (None, 1))
    metadata = {**artifact.metadata(), "cubin_size": len(artifact.cubin)}
    store.store(with_ptx, artifact.cubin + artifact.ptx, metadata, None)
    store.store(cubin_only, artifact.cubin, artifact.metadata(), None)
    assert target.stored(with_ptx) == artifact
    assert target.stored(cubin_only) == dataclasses.replace(artifact, ptx=b"")
