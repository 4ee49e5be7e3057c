"""What a target offers, checked before any code is written: shared memory per cube and the
types atomics take; and the sizes of buffers, comptime from CUBE_DIM, PLANE_DIM and arithmetic."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import cubejit as cj
from cubejit.backends.cpu.capabilities import cpu_capabilities
from cubejit.backends.cpu.compiler import CPU_LIMITS, compiler_runs
from cubejit.errors import CompilationError, ValidationError
from cubejit.ir import nodes as ir_nodes
from cubejit.ir.nodes import BufferKind
from cubejit.ir.validate import validate_for


@cj.kernel
def big_tiles(x: cj.Array[cj.f32], N: cj.Comptime[int]):
    a = cj.SharedMemory[cj.f32](N)
    b = cj.SharedMemory[cj.f64](cj.CUBE_DIM * 2)
    a[cj.UNIT_POS] = x[cj.UNIT_POS]
    b[cj.UNIT_POS] = cj.f64(a[cj.UNIT_POS])
    x[cj.UNIT_POS] = cj.f32(b[cj.UNIT_POS])


def test_buffer_sizes_are_folded_from_comptime_values_cube_dim_and_plane_dim() -> None:
    @cj.kernel
    def sized(x: cj.Array[cj.f32], K: cj.Comptime[int]):
        a = cj.SharedMemory[cj.f32](cj.CUBE_DIM_X * K + cj.PLANE_DIM // 2)
        b = cj.LocalArray[cj.i32](K - 1)
        a[0] = x[0]
        b[0] = 1
        x[1] = a[0] + cj.f32(b[0] + a.len())

    ir = sized.specialize((16, 2), K=5).define(plane_dim=32)
    sizes = {b.kind: b.size for b in ir.allocations}
    assert sizes == {BufferKind.SHARED: 16 * 5 + 16, BufferKind.LOCAL: 4}
    assert "96i32" in str(ir)


def test_a_comptime_comparison_folds_as_its_unsigned_operands_compute() -> None:
    @cj.kernel
    def wrapped(out: cj.Array[cj.u32]):
        if cj.UNIT_POS == 0:
            out[0] = cj.PLANE_DIM - cj.CUBE_DIM
            out[1] = cj.u32(2)
            if cj.PLANE_DIM - cj.CUBE_DIM > cj.u32(7):
                out[1] = cj.u32(1)
            out[2] = cj.u32(2)
            if (cj.PLANE_DIM - cj.CUBE_DIM) // cj.u32(4096) > cj.u32(7):
                out[2] = cj.u32(1)

    ir = wrapped.specialize(64).define(plane_dim=32)
    assert str(ir).count("if ") == 1, "both comparisons fold, as u32 arithmetic computes them"
    assert "out[1i32] = 1u32" in str(ir) and "out[2i32] = 1u32" in str(ir)
    client = cj.client("cpu")
    out = client.empty(3, cj.u32)
    wrapped.launch(client, 1, 64, out)
    got = client.read(out)
    plane = cpu_capabilities(CPU_LIMITS).plane_size
    expected = (plane - 64) % 2**32
    assert got[0] == expected, "the run-time value wraps as a u32"
    assert list(got[1:]) == [1, 1], "the folded branches agree with the wrapped values"


def test_an_if_on_cube_dim_and_plane_dim_keeps_the_branch_taken_and_its_buffers_alone() -> None:
    @cj.kernel
    def staged(x: cj.Array[cj.f32], n: cj.u32):
        v = x[cj.UNIT_POS]
        if cj.CUBE_DIM > cj.PLANE_DIM:
            partial = cj.SharedMemory[cj.f32](cj.CUBE_DIM // cj.PLANE_DIM)
            partial[cj.UNIT_POS // cj.PLANE_DIM] = v
            cj.sync_cube()
            v = partial[0]
        if cj.CUBE_DIM_Y != 1 and n > 1:
            v = v + 1.0
        x[cj.UNIT_POS] = v

    one_plane = staged.specialize(32).define(plane_dim=32)
    assert one_plane.allocations == () and not one_plane.has(ir_nodes.SyncCube)
    assert not one_plane.has(ir_nodes.If), "a comptime-false side of `and` decides it"
    planes = staged.specialize(256).define(plane_dim=32)
    assert [b.size for b in planes.allocations] == [8] and planes.has(ir_nodes.SyncCube)
    assert not any(isinstance(s, ir_nodes.If) for s in planes.body)
    assert staged.specialize((32, 2)).define(plane_dim=32).has(ir_nodes.If)


def test_a_size_known_only_at_run_time_is_refused() -> None:
    @cj.kernel
    def runtime_size(x: cj.Array[cj.f32], n: cj.u32):
        a = cj.SharedMemory[cj.f32](n)
        a[0] = x[0]

    with pytest.raises(CompilationError, match="must be known when the kernel is specialised"):
        runtime_size.specialize(32).define()


def test_shared_memory_past_the_target_s_limit_is_refused_naming_the_sizes() -> None:
    ir = big_tiles.specialize(256, N=300_000).define()
    capabilities = cpu_capabilities(CPU_LIMITS)
    with pytest.raises(ValidationError) as caught:
        validate_for(ir, capabilities, (256, 1, 1))
    message = str(caught.value)
    assert "1204096 bytes of shared memory per cube" in message
    assert "300000 x f32 = 1200000 bytes" in message and "512 x f64 = 4096 bytes" in message
    assert f"at most {capabilities.shared_memory_per_cube} bytes" in message


def test_shared_memory_past_the_limit_fails_the_launch_before_any_compile() -> None:
    client = cj.client("cpu")
    before = compiler_runs.count
    with pytest.raises(ValidationError, match="bytes of shared memory per cube"):
        big_tiles.launch(client, 1, 256, np.zeros(256, np.float32), N=400_000)
    assert compiler_runs.count == before


def test_atomics_on_a_type_the_target_lacks_are_refused() -> None:
    @cj.kernel
    def atomic_f64(x: cj.Array[cj.Atomic[cj.f64]]):
        x[0].fetch_add(1.0)

    ir = atomic_f64.specialize(32).define()
    without = dataclasses.replace(cpu_capabilities(CPU_LIMITS), atomics=frozenset(("i32", "u32")))
    with pytest.raises(ValidationError, match=r"cj\.Atomic\[f64\].*no atomics on f64"):
        validate_for(ir, without, (32, 1, 1))
    validate_for(ir, cpu_capabilities(CPU_LIMITS), (32, 1, 1))


def test_atomic_elements_are_read_and_written_only_through_atomic_operations() -> None:
    @cj.kernel
    def plain_read(x: cj.Array[cj.Atomic[cj.u32]], y: cj.Array[cj.u32]):
        y[0] = x[0]

    @cj.kernel
    def plain_write(x: cj.Array[cj.Atomic[cj.u32]]):
        x[0] = 1

    @cj.kernel
    def bit_op_on_a_float(x: cj.Array[cj.Atomic[cj.f32]]):
        x[0].fetch_or(1.0)

    with pytest.raises(CompilationError, match=r"read an element with `x\[0\]\.load\(\)`"):
        plain_read.specialize(1).define()
    with pytest.raises(CompilationError, match=r"write an element with `x\[0\]\.store\(v\)`"):
        plain_write.specialize(1).define()
    with pytest.raises(CompilationError, match=r"`\.fetch_or` takes integers"):
        bit_op_on_a_float.specialize(1).define()
