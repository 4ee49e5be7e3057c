"""The tensor surface of the language: the IR ``t[i, j]``, ``shape``, ``stride``, ``rank``,
``len`` and ``coordinate`` make (golden text), the rank taken from the launch, and each mistake
a compile error naming the line."""

from __future__ import annotations

import pytest

import cubejit as cj
from cubejit.errors import CompilationError, LaunchError


@cj.kernel
def transpose_add(x: cj.Tensor[cj.f32], out: cj.Tensor[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        r = out.coordinate(i, 0)
        c = out.coordinate(i, 1)
        out[r, c] += x[c, r] * cj.f32(x.stride(0) + out.shape(1) + out.rank())


def test_tensor_operations_have_a_readable_ir_text() -> None:
    text = str(transpose_add.specialize(64, x=2, out=2).define())
    assert text.splitlines()[0].endswith("(x: Tensor[f32, 2], out: Tensor[f32, 2]):")
    assert "if i < out.len():" in text
    assert "r = i // out.shape(1) % out.shape(0)" in text
    assert "c = i % out.shape(1)" in text
    assert "out[r, c] = out[r, c] + x[c, r] * f32(x.stride(0) + out.shape(1) + 2u32)" in text


def test_the_rank_is_part_of_the_kernels_identity_and_the_shape_is_not() -> None:
    two = transpose_add.specialize(64, x=2, out=2)
    three = transpose_add.specialize(64, x=3, out=2)
    assert two.id() != three.id()
    assert "Tensor[f32, 2]" in str(two.id().info)
    assert transpose_add.specialize(64, x=2, out=2) is two


def test_specialising_without_a_tensors_rank_says_how_to_give_it() -> None:
    with pytest.raises(LaunchError, match=r"needs the rank of its tensor parameter.*x, out"):
        transpose_add.specialize(64)


def _define(source_fn, **ranks):
    return source_fn.specialize(1, **ranks).define()


def test_indexing_a_tensor_with_the_wrong_number_of_indices_names_the_line() -> None:
    @cj.kernel
    def wrong_count(t: cj.Tensor[cj.f32]):
        t[0] = 1.0

    line = wrong_count.line + 1
    with pytest.raises(CompilationError, match=rf":{line}\b.*rank 2 and takes 2 indices.*not 1"):
        _define(wrong_count, t=2)
    _define(wrong_count, t=1)


def test_a_dimension_past_the_rank_or_not_constant_is_a_compile_error() -> None:
    @cj.kernel
    def too_far(t: cj.Tensor[cj.f32], out: cj.Array[cj.u32]):
        out[0] = t.shape(2)

    with pytest.raises(CompilationError, match=r"dimension 2 of a tensor of rank 2"):
        _define(too_far, t=2)

    @cj.kernel
    def moving(t: cj.Tensor[cj.f32], out: cj.Array[cj.u32], d: cj.i32):
        out[0] = t.stride(d)

    with pytest.raises(CompilationError, match="must be a constant int"):
        _define(moving, t=2)


def test_tensor_methods_on_an_array_say_to_annotate_a_tensor() -> None:
    @cj.kernel
    def flat(a: cj.Array[cj.f32], out: cj.Array[cj.u32]):
        out[0] = a.shape(0)

    with pytest.raises(CompilationError, match=r"is a tensor's.*cj.Tensor\[\.\.\.\]"):
        _define(flat)


def test_a_fixed_rank_annotation_and_a_function_taking_any_rank() -> None:
    @cj.function
    def first(t: cj.Tensor[cj.f32]) -> cj.f32:
        return t[0, 0]

    @cj.kernel
    def fixed(t: cj.Tensor[cj.f32, 2], out: cj.Array[cj.f32]):
        out[0] = first(t)

    assert "out[0i32] = t[0i32, 0i32]" in str(_define(fixed))
    with pytest.raises(TypeError, match="rank 1 or more"):
        cj.Tensor[cj.f32, 0]
