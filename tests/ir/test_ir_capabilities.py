"""Backends declare what they run, and the validator holds kernels to that declaration."""

from __future__ import annotations

import dataclasses

import pytest

import cubejit as cj
from cubejit.backends.cpu.capabilities import cpu_capabilities
from cubejit.backends.cpu.compiler import CPU_LIMITS
from cubejit.backends.cuda.capabilities import cuda_capabilities
from cubejit.backends.cuda.driver import ARCHITECTURAL_LIMITS
from cubejit.ir.traits import Group
from cubejit.ir.validate import validate_for
from cubejit.showcase import saxpy

CPU = cpu_capabilities(CPU_LIMITS)
CUDA = cuda_capabilities(ARCHITECTURAL_LIMITS)


def test_each_backend_declares_its_plane_cube_memory_atomics_and_lines() -> None:
    assert (CPU.backend, CPU.plane_size, CUDA.backend, CUDA.plane_size) == ("cpu", 1, "cuda", 32)
    assert CPU.largest_cube == (1024, 1024, 64) and CUDA.max_units_per_cube == 1024
    assert CUDA.shared_memory_per_cube == ARCHITECTURAL_LIMITS.max_shared_memory
    for caps in (CPU, CUDA):
        assert caps.atomics == {"i32", "u32", "i64", "u64", "f32", "f64"}
        assert caps.barriers == {Group.CUBE, Group.PLANE}
        assert 1 in caps.line_widths and caps.max_line_bytes == 16


def test_a_device_with_more_shared_memory_declares_it() -> None:
    big = dataclasses.replace(ARCHITECTURAL_LIMITS, max_shared_memory=227 * 1024)
    assert cuda_capabilities(big).shared_memory_per_cube == 227 * 1024


def test_a_kernel_within_the_declaration_is_accepted() -> None:
    ir = saxpy.specialize(256).define()
    for caps in (CPU, CUDA):
        validate_for(ir, caps, (256, 1, 1))


@pytest.mark.parametrize(
    ("cube_dim", "message"),
    [
        ((1, 1, 65), "cube_dim \\(1, 1, 65\\) has 65 units along z; at most 64"),
        ((64, 32, 1), "cube_dim \\(64, 32, 1\\) has 2048 units per cube; at most 1024"),
    ],
)
def test_a_cube_larger_than_the_target_declares_is_a_validation_error(
    cube_dim: tuple[int, int, int], message: str
) -> None:
    ir = saxpy.specialize(256).define()
    with pytest.raises(cj.ValidationError, match=f"the cuda backend cannot run it: {message}"):
        validate_for(ir, CUDA, cube_dim)


def test_a_target_declaring_a_smaller_cube_refuses_what_another_accepts() -> None:
    small = dataclasses.replace(CPU, largest_cube=(128, 1, 1), max_units_per_cube=128)
    ir = saxpy.specialize(256).define()
    validate_for(ir, CPU, (256, 1, 1))
    with pytest.raises(cj.ValidationError, match=r"kernel .*saxpy: the cpu backend cannot run"):
        validate_for(ir, small, (256, 1, 1))
