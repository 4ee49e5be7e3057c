"""The no-alias form of a kernel without a GPU: several cubes per CUDA thread as golden text,
loads before stores where that is exact, the kernels it leaves alone, and NVRTC compiling it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from coarsened_kernels import clashing_names, double_then_copy, rows, saxpy, scaled, triple_plus_one
from cuda_kernels import IRSpec, all_cases, positions_kernel

from cubejit.backends.cuda.artifact import ELF_MAGIC, ENTRY_POINT, CudaArtifact
from cubejit.backends.cuda.coarsening import FACTOR, NO_ALIAS, _coarsenable, coarsen
from cubejit.backends.cuda.compiler import CudaCompiler
from cubejit.backends.cuda.dialect import cuda_source
from cubejit.backends.cuda.nvrtc import half_include_dir
from cubejit.backends.cuda.target import packed, unpacked
from cubejit.compile.id import ArtifactId
from cubejit.errors import UnsupportedError
from cubejit.ir.traits import Access, Exit, Group, Traits
from cubejit.ir.values import MemorySpace


def no_alias_source(spec: Any) -> str:
    kernel = spec.define()
    coarsened = coarsen(kernel, spec.cube_dim)
    assert coarsened is not None
    return cuda_source(kernel, coarsened)


def between(text: str, start: str, end: str) -> list[str]:
    """The lines of ``text`` after the line ``start`` and before the line ``end``, stripped."""
    lines = [line.strip() for line in text.splitlines()]
    first = lines.index(start) + 1
    return lines[first : lines.index(end, first)]


SAXPY = no_alias_source(saxpy.specialize(256))
EVERY_UNIT_LIVE = "if ((((v_live_0 && v_live_1) && v_live_2) && v_live_3)) {"


def test_the_no_alias_saxpy_restricts_its_arrays_and_takes_the_cube_count() -> None:
    assert (
        'extern "C" __global__ void cubejit_kernel(float p_a, const float* __restrict__ p_x, '
        "unsigned int n_x, const float* __restrict__ p_y, unsigned int n_y, "
        "float* __restrict__ p_out, unsigned int n_out, unsigned int p_cube_count_x) {"
    ) in SAXPY


def test_each_block_runs_four_consecutive_cubes_with_the_users_positions() -> None:
    assert FACTOR == 4
    for line in (
        "const unsigned int p_cube_pos_x_0 = (blockIdx.x * 4u);",
        "const unsigned int p_cube_pos_x_3 = (p_cube_pos_x_0 + 3u);",
        "const unsigned int p_absolute_pos_2 = (((p_cube_pos_x_2 * blockDim.x) + threadIdx.x) + "
        "(((blockIdx.y * blockDim.y) + threadIdx.y) * (p_cube_count_x * blockDim.x)) + "
        "(((blockIdx.z * blockDim.z) + threadIdx.z) * (p_cube_count_x * blockDim.x) * "
        "(gridDim.y * blockDim.y)));",
        "v_live_1 = ((p_cube_pos_x_1 < p_cube_count_x) && (p_absolute_pos_1 < n_out));",
    ):
        assert f"    {line}\n" in SAXPY


def test_when_every_unit_is_live_all_loads_come_before_any_store() -> None:
    assert between(SAXPY, EVERY_UNIT_LIVE, "} else {") == [
        *(
            line
            for k in range(4)
            for line in (
                f"v_i_{k} = p_absolute_pos_{k};",
                f"v_stored_{k}_1 = ((p_a * p_x[v_i_{k}]) + p_y[v_i_{k}]);",
            )
        ),
        *(f"p_out[v_i_{k}] = v_stored_{k}_1;" for k in range(4)),
    ]


def test_a_thread_straddling_the_bound_runs_each_live_unit_alone() -> None:
    assert between(SAXPY, "if (v_live_3) {", "}") == [
        "v_i_3 = p_absolute_pos_3;",
        "p_out[v_i_3] = ((p_a * p_x[v_i_3]) + p_y[v_i_3]);",
    ]


def test_a_unit_reading_what_it_stored_keeps_its_order() -> None:
    text = no_alias_source(triple_plus_one.specialize(128))
    assert "float* __restrict__ p_out" in text and "const float" not in text
    assert between(text, EVERY_UNIT_LIVE, "} else {")[:3] == [
        "v_i_0 = p_absolute_pos_x_0;",
        "p_out[v_i_0] = (p_out[v_i_0] * 0x1.8000000000000p+1f);",
        "p_out[v_i_0] = (p_out[v_i_0] + 0x1.0000000000000p+0f);",
    ]


def test_each_unit_has_its_own_copy_of_an_assigned_parameter_and_its_cube() -> None:
    text = no_alias_source(scaled.specialize(64))
    fast = between(text, EVERY_UNIT_LIVE, "} else {")
    assert fast[:2] == ["v_a_0 = p_a;", "v_n_0 = n_out;"]
    assert (
        "p_out[v_i_2] = (((v_a_2 * p_x[v_i_2]) + ((float)(p_cube_pos_x_2))) + "
        "((float)(p_cube_count_x)));"
    ) in fast


def test_names_of_unit_copies_never_clash_with_the_kernels() -> None:
    text = no_alias_source(clashing_names.specialize(64))
    assert "unsigned int v_i_0_ = 0u;" in text and "float v_i_0_0 = 0x0.0p+0f;" in text
    assert "v_i_0_0 = (p_x[v_i_0_] + 0x1.0000000000000p+0f);" in text


@pytest.mark.parametrize(
    ("name", "spec"),
    [
        ("a kernel of two-dimensional cubes", rows.specialize((16, 4))),
        ("a kernel without a guard", IRSpec(positions_kernel())),
        ("a body with loops", next(c.spec for c in all_cases() if c.spec.name == "control_flow")),
    ],
)
def test_kernels_coarsening_does_not_fit_keep_one_unit_per_thread(name: str, spec: Any) -> None:
    compiler = CudaCompiler("sm_90a")
    plain, no_alias = (
        compiler.lower(spec, ArtifactId(spec.id(), variant), _Recording(), None)
        for variant in (None, NO_ALIAS)
    )
    assert no_alias.source == plain.source
    assert no_alias.coarsening == plain.coarsening == 1


def test_the_plain_text_says_whether_the_kernel_has_a_coarsened_form() -> None:
    compiler = CudaCompiler("sm_90a")
    one_d, two_d = (
        compiler.lower(spec, ArtifactId(spec.id(), None), _Recording(), None)
        for spec in (saxpy.specialize(256), saxpy.specialize((16, 16)))
    )
    marker = "// cubejit: the no-alias form runs 4 cubes per CUDA block\n\n"
    assert one_d.source == marker + two_d.source
    assert (one_d.coarsening, two_d.coarsening) == (4, 1)


def test_a_variant_other_than_none_or_no_alias_is_unsupported() -> None:
    spec = saxpy.specialize(256)
    with pytest.raises(UnsupportedError, match="CUDA variant 'fast'"):
        CudaCompiler("sm_90a").lower(spec, ArtifactId(spec.id(), "fast"), _Recording(), None)


COARSENED = [saxpy.specialize(256), double_then_copy.specialize(128), scaled.specialize(64)]
COARSENED += [c.spec for c in all_cases() if coarsen(c.spec.kernel, c.spec.cube_dim)]


@pytest.mark.parametrize(("arch", "specs"), [("sm_90", COARSENED), ("sm_80", COARSENED[:2])])
def test_nvrtc_compiles_the_no_alias_form_of_every_kernel_that_has_one(
    arch: str, specs: list[Any]
) -> None:
    if half_include_dir() is None:
        pytest.skip("the CUDA half headers (nvidia-cuda-runtime or a CUDA toolkit) are missing")
    compiler = CudaCompiler(arch)

    def build(spec: Any) -> CudaArtifact:
        id = ArtifactId(spec.id(), NO_ALIAS)
        lowered = compiler.lower(spec, id, _Recording(), None)
        assert "unsigned int p_cube_count_x) {" in lowered.source
        return compiler.finalize(id, lowered)

    with ThreadPoolExecutor(2) as pool:
        artifacts = list(pool.map(build, specs))
    for artifact in artifacts:
        assert artifact.cubin.startswith(ELF_MAGIC) and ENTRY_POINT.encode() in artifact.cubin
        assert artifact.coarsening == FACTOR
        assert artifact.ptx.startswith(b"//") and b".entry cubejit_kernel" in artifact.ptx
    assert unpacked(*packed(artifact)).with_ptx_unpacked() == artifact
    assert [(p.name, p.written) for p in artifacts[1].params] == [
        ("x", False),
        ("y", False),
        ("out", True),
        ("copy", True),
    ]


class _Recording:
    def defined(self, text: str) -> None:
        pass

    def source(self, text: str) -> None:
        pass


def test_work_that_touches_more_than_global_memory_waits_or_leaves_is_not_coarsened() -> None:
    in_global = Traits(writes=frozenset((Access("out", MemorySpace.GLOBAL),)))
    assert _coarsenable(in_global)
    for refused in (
        Traits(reads=frozenset((Access("tile", MemorySpace.SHARED),))),
        Traits(synchronises=Group.CUBE, converged=Group.CUBE),
        Traits(converged=Group.PLANE),
        Traits(exits=frozenset((Exit.RETURN,))),
    ):
        assert not _coarsenable(in_global.join(refused)), refused
