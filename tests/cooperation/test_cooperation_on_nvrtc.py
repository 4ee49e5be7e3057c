"""Every cooperative kernel lowered to CUDA C++ and compiled by NVRTC for sm_80 and sm_90 on a
machine without a GPU: shared memory (dynamic past 48 KiB), barriers, every atomic on every
atomic type, every plane operation; coarsening only where the traits allow it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
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
from test_plane_operations import every_plane_op

import cubejit as cj
from cubejit.backends.cuda.artifact import ELF_MAGIC, CudaArtifact
from cubejit.backends.cuda.compiler import CudaCompiler, CudaLowered
from cubejit.backends.cuda.driver import ARCHITECTURAL_LIMITS
from cubejit.backends.cuda.nvrtc import nvrtc_module
from cubejit.compile.id import ArtifactId
from cubejit.compile.recording import CompilationRecording
from cubejit.errors import BackendUnavailableError, ValidationError
from cubejit.ir.types import TensorType

try:
    nvrtc_module()
except BackendUnavailableError as missing:
    pytest.skip(f"needs the CUDA packages: {missing}", allow_module_level=True)

H200 = dataclasses.replace(
    ARCHITECTURAL_LIMITS, name="an H200", compute_capability=(9, 0), max_shared_memory=227 * 1024
)
SPECS = [
    tree_sum.specialize(256),
    stencil.specialize(128),
    tiled_matmul.specialize((16, 16), T=16),
    histogram_global.specialize(256),
    histogram_2d.specialize((64, 1)),
    histogram_shared.specialize(256, B=256, P=8),
    tickets.specialize(64),
    cas_counter.specialize(64),
    plane_sum_reduction.specialize(80),
    plane_lanes.specialize(64),
    every_plane_op.specialize(64),
    *(every_atomic(t).specialize(32) for t in (cj.i32, cj.u32, cj.i64, cj.u64, cj.f32, cj.f64)),
]


def build(
    compiler: CudaCompiler, spec: Any, variant: Any = None
) -> tuple[CudaLowered, CudaArtifact]:
    id = ArtifactId(spec.id(), variant)
    recording = CompilationRecording.for_artifact(id, keep_text=True)
    lowered = compiler.lower(spec, id, recording, None)
    return lowered, compiler.finalize(id, lowered)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.name}-{s.params[0].type}")
def test_every_cooperative_kernel_compiles_with_nvrtc(arch: str, spec: Any) -> None:
    tensors = any(isinstance(p.type, TensorType) for p in spec.params)
    lowered, artifact = build(CudaCompiler(arch, H200), spec, (None, 0) if tensors else None)
    assert artifact.cubin.startswith(ELF_MAGIC)
    assert lowered.coarsening == 1 or not spec.define(plane_dim=32).allocations


def test_barriers_and_plane_operations_have_their_cuda_spellings() -> None:
    source = build(CudaCompiler("sm_90", H200), every_plane_op.specialize(64))[0].source
    for spelling in ("__shfl_down_sync", "__shfl_up_sync", "__shfl_xor_sync", "__ballot_sync"):
        assert spelling in source
    assert "#if __CUDA_ARCH__ >= 800\n    return __reduce_add_sync(mask, v);" in source
    reduction = build(CudaCompiler("sm_90", H200), tree_sum.specialize(256))[0].source
    assert "__shared__ __align__(16) float s_shared[256];" in reduction
    assert reduction.count("__syncthreads();") == 2


def test_float_extrema_and_64_bit_integers_use_compare_and_swap_or_the_unsigned_intrinsic() -> None:
    f32 = build(CudaCompiler("sm_90", H200), every_atomic(cj.f32).specialize(32))[0].source
    assert "cj_atomic_max_f32" in f32 and "atomicCAS(bits, seen" in f32
    i64 = build(CudaCompiler("sm_90", H200), every_atomic(cj.i64).specialize(32))[0].source
    assert "((long long)atomicAdd((unsigned long long *)(&p_a[0])" in i64


def test_shared_memory_past_48_kib_is_dynamic_and_the_artifact_carries_its_size() -> None:
    n = 20_000
    lowered, artifact = build(CudaCompiler("sm_90", H200), wide_tile.specialize(256, N=n))
    assert "extern __shared__ __align__(16) unsigned char cj_shared[];" in lowered.source
    assert "unsigned int *const s_shared_2 = (unsigned int *)(cj_shared + 80000);" in lowered.source
    assert artifact.dynamic_shared == n * 4 + 12
    stored = CudaArtifact.from_stored(artifact.cubin, artifact.metadata())
    assert stored.dynamic_shared == artifact.dynamic_shared
    small = build(CudaCompiler("sm_90", H200), wide_tile.specialize(256, N=1000))[1]
    assert small.dynamic_shared == 0


def test_shared_memory_past_the_device_s_opt_in_maximum_is_a_compilation_error_naming_sizes() -> (
    None
):
    spec = wide_tile.specialize(256, N=60_000)
    compiler = CudaCompiler("sm_90", H200)
    with pytest.raises(ValidationError) as caught:
        build(compiler, spec)
    message = str(caught.value)
    assert "240012 bytes of shared memory per cube" in message
    assert "60000 x f32 = 240000 bytes" in message and "at most 232448 bytes" in message
    assert compiler.compilations == 0


def test_a_kernel_that_cooperates_is_never_coarsened_but_one_with_only_global_atomics_may_be() -> (
    None
):
    compiler = CudaCompiler("sm_90", H200)
    for spec in (tree_sum.specialize(256), every_plane_op.specialize(64)):
        lowered, _ = build(compiler, spec, variant=True)
        assert lowered.coarsening == 1 and "cubes per CUDA block" not in lowered.source
    lowered, _ = build(compiler, histogram_global.specialize(256), variant=True)
    assert lowered.coarsening == 4 and "atomicAdd" in lowered.source
