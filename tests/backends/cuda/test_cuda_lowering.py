"""IR to CUDA C++: the spellings CUDA has where C has others, checked as golden text."""

from __future__ import annotations

import dataclasses

import pytest
from cuda_kernels import all_cases, positions_kernel

from cubejit.backends.cuda.dialect import cuda_source, needs_half_headers
from cubejit.ir import nodes as ir
from cubejit.ir.types import f32, f64

SOURCES = {case.spec.name: cuda_source(case.spec.kernel) for case in all_cases()}
POSITIONS = cuda_source(positions_kernel())


def test_a_kernel_is_one_extern_c_global_function_with_a_fixed_entry_point() -> None:
    assert (
        'extern "C" __global__ void cubejit_kernel(float p_a, float* p_x, unsigned int n_x, '
        "float* p_y, unsigned int n_y, float* p_out, unsigned int n_out) {"
    ) in SOURCES["saxpy"]
    assert "p_out[v_i] = ((p_a * p_x[v_i]) + p_y[v_i]);" in SOURCES["saxpy"]


def test_the_text_holds_nothing_of_the_kernels_name() -> None:
    saxpy = next(case.spec.kernel for case in all_cases() if case.spec.name == "saxpy")
    renamed = dataclasses.replace(saxpy, name="some.other.module.renamed")
    assert cuda_source(renamed) == SOURCES["saxpy"]
    assert all(name not in text for name, text in SOURCES.items())


def test_positions_read_the_cuda_built_ins() -> None:
    for line in (
        "pos_absolute_pos_x = ((blockIdx.x * blockDim.x) + threadIdx.x);",
        "pos_absolute_pos_z = ((blockIdx.z * blockDim.z) + threadIdx.z);",
        "pos_unit_pos = (threadIdx.x + (threadIdx.y * blockDim.x) + "
        "(threadIdx.z * blockDim.x * blockDim.y));",
        "pos_cube_pos = (blockIdx.x + (blockIdx.y * gridDim.x) + "
        "(blockIdx.z * gridDim.x * gridDim.y));",
        "pos_cube_dim = (blockDim.x * blockDim.y * blockDim.z);",
        "pos_cube_count_y = gridDim.y;",
        "pos_absolute_pos = (((blockIdx.x * blockDim.x) + threadIdx.x) + "
        "(((blockIdx.y * blockDim.y) + threadIdx.y) * (gridDim.x * blockDim.x)) + "
        "(((blockIdx.z * blockDim.z) + threadIdx.z) * (gridDim.x * blockDim.x) * "
        "(gridDim.y * blockDim.y)));",
    ):
        assert f"const unsigned int {line}" in POSITIONS


def test_floor_division_and_modulo_are_device_helpers() -> None:
    text = SOURCES["signed_i32"]
    assert "static __device__ __forceinline__ int cj_floordiv_i32(int a, int b) {" in text
    assert "static __device__ __forceinline__ int cj_mod_i32(int a, int b) {" in text
    assert "cj_floordiv_i32(p_x[v_i], p_y[v_i])" in text
    assert (
        "static __device__ __forceinline__ float cj_mod_f32(float x, float y) {"
        in (SOURCES["floats_f32"])
    )
    assert "cj_floordiv_u64" in SOURCES["unsigned_u64"]


def test_integer_pow_is_a_device_helper_taking_an_i64_exponent() -> None:
    text = SOURCES["signed_i64"]
    assert (
        "static __device__ __forceinline__ long long cj_pow_i64(long long base, long long e)"
        in (text)
    )
    assert "cj_pow_i64(p_x[v_i], ((long long)(p_e[v_i])))" in text


def test_float_math_takes_the_single_precision_names_on_f32_only() -> None:
    f32_text, f64_text = SOURCES["floats_f32"], SOURCES["floats_f64"]
    for name in ("sqrtf(", "erff(", "fminf(", "fmaf(", "powf(", "tanhf(", "fabsf("):
        assert name in f32_text
        assert name[:-2] + "(" in f64_text


def test_nan_and_infinity_are_spelled_by_their_bits() -> None:
    assert "(p_x[v_i] * __int_as_float(2139095040))" in SOURCES["floats_f32"]
    assert "__longlong_as_double(-4503599627370496ll)" in SOURCES["casts"]
    assert "(__int_as_float(2143289344) != __int_as_float(2143289344))" in SOURCES["casts"]
    assert "INFINITY" not in "".join(SOURCES.values())


def test_integer_literals_keep_their_width() -> None:
    assert "((long long)(-9223372036854775807ll - 1ll))" in SOURCES["casts"]
    assert "((unsigned long long)1099511627776ull)" in SOURCES["casts"]


def test_control_flow_is_structured_cuda() -> None:
    text = SOURCES["control_flow"]
    for line in (
        "for (int cj_i0 = cj_mod_i32(p_x[v_i], 7); (cj_i0 < cj_stop0); cj_i0 += 3) {",
        "const int cj_step1 = ((int)((unsigned int)0 - (unsigned int)((int)((unsigned int)1 + "
        "(unsigned int)cj_mod_i32(p_x[v_i], 3)))));",
        "while (true) {",
        "continue;",
        "break;",
        "return;",
        "} else if ((cj_mod_i32(v_acc, 3) == 0)) {",
    ):
        assert line in text


def test_half_types_include_the_cuda_headers_and_go_through_float() -> None:
    f16_text, bf16_text = SOURCES["halves_f16"], SOURCES["halves_bf16"]
    assert f16_text.startswith("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n")
    assert "__half* p_x" in f16_text and "__nv_bfloat16* p_x" in bf16_text
    assert "((__half)(p_x[v_i] + p_y[v_i]))" in f16_text
    assert "((__half)(((float)(cj_to_i32_f16(p_x[v_i])))))" in f16_text
    assert "float v = (float)x;" in f16_text
    assert "#include" not in SOURCES["floats_f32"]


@pytest.mark.parametrize(("name", "half"), [("halves_bf16", True), ("casts", False)])
def test_only_kernels_with_half_types_need_the_half_headers(name: str, half: bool) -> None:
    kernel = next(case.spec.kernel for case in all_cases() if case.spec.name == name)
    assert needs_half_headers(kernel) is half


def test_a_cast_from_f64_to_a_half_type_rounds_once() -> None:
    from cubejit.backends.cuda.dialect import DIALECT
    from cubejit.ir.types import bf16, f16

    assert DIALECT.cast("d", f64, f16) == "__double2half(d)"
    assert DIALECT.cast("d", f64, bf16) == "__double2bfloat16(d)"
    assert DIALECT.cast("h", f16, bf16) == "((__nv_bfloat16)(((float)(h))))"
    assert DIALECT.float_literal(float("-inf"), f32) == "__int_as_float(-8388608)"


def test_an_empty_kernel_lowers_to_an_empty_body() -> None:
    kernel = ir.KernelIR("nothing", (), (), ())
    assert cuda_source(kernel) == 'extern "C" __global__ void cubejit_kernel() {\n}\n'
