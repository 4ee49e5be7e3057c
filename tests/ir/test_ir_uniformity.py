"""The uniformity analysis on small kernels written in the language: which values every unit
of a launch, of a cube or of a plane shares, and how uniform the control flow reaching each
statement is."""

from __future__ import annotations

import cubejit as cj
from cubejit.ir import nodes as n
from cubejit.ir.traversal import walk_stmts
from cubejit.ir.uniformity import Uniform, Uniformity, analyse


def _define(kernel: cj.Kernel, **comptime: int) -> n.KernelIR:
    return kernel.specialize(64, **comptime).define()


def _stores(ir: n.KernelIR) -> list[n.Store]:
    return [s for s in walk_stmts(ir.body) if isinstance(s, n.Store)]


@cj.kernel
def levels(
    a: cj.f32,
    x: cj.Array[cj.f32],
    out: cj.Array[cj.f32],
    table: cj.Array[cj.u32],
    N: cj.Comptime[int],
):
    width = out.len() * 2 + N
    cube = cj.CUBE_POS_X * cj.CUBE_DIM_X
    unit = cj.UNIT_POS + cube
    first = table[cj.CUBE_POS]
    mine = table[unit]
    scale = a * 2.0
    out[unit] = x[unit] * scale + cj.f32(width + cj.CUBE_COUNT + first + mine)


def test_parameters_comptime_values_lengths_and_extents_are_launch_uniform() -> None:
    u = analyse(_define(levels, N=3))
    assert u.names["width"] is Uniform.LAUNCH
    assert u.names["scale"] is Uniform.LAUNCH
    assert u.names["a"] is Uniform.LAUNCH


def test_cube_positions_are_cube_uniform_and_unit_positions_vary() -> None:
    u = analyse(_define(levels, N=3))
    assert u.names["cube"] is Uniform.CUBE
    assert u.names["unit"] is Uniform.UNIT


def test_a_load_from_a_buffer_nobody_writes_is_as_uniform_as_its_index() -> None:
    u = analyse(_define(levels, N=3))
    assert u.names["first"] is Uniform.CUBE
    assert u.names["mine"] is Uniform.UNIT
    assert u.of(n.Load("out", n.Const(0, cj.u32), cj.f32)) is Uniform.UNIT


def test_promised_loads_count_as_uniform() -> None:
    u = analyse(_define(levels, N=3), promise_loads=True)
    assert u.names["mine"] is Uniform.LAUNCH


@cj.kernel
def divergent(x: cj.Array[cj.f32], out: cj.Array[cj.f32], n: cj.u32):
    v = 0.0
    w = 0.0
    if cj.CUBE_POS < n:
        w = 1.0
    if cj.UNIT_POS < n:
        v = 1.0
    out[cj.ABSOLUTE_POS] = v + w


def test_a_name_assigned_under_a_condition_is_as_uniform_as_the_condition() -> None:
    u = analyse(_define(divergent))
    assert (u.names["w"], u.names["v"]) == (Uniform.CUBE, Uniform.UNIT)


@cj.kernel
def early_exit(out: cj.Array[cj.f32], n: cj.u32):
    out[cj.CUBE_POS] = 1.0
    if cj.CUBE_POS_X >= n:
        return
    out[cj.CUBE_POS + 1] = 2.0
    if cj.ABSOLUTE_POS >= n:
        return
    out[cj.CUBE_POS + 2] = 3.0


def test_statements_after_a_divergent_return_run_under_its_level() -> None:
    ir = _define(early_exit)
    u = analyse(ir)
    assert [u.control_at(s) for s in _stores(ir)] == [Uniform.LAUNCH, Uniform.CUBE, Uniform.UNIT]


@cj.kernel
def loops(out: cj.Array[cj.f32], n: cj.u32):
    total = 0.0
    for _k in range(n):
        total += 1.0
    steps = 0.0
    j = cj.UNIT_POS
    while j < n:
        steps += 1.0
        j += cj.CUBE_DIM
    late = 0.0
    for k2 in range(n):
        if k2 > cj.UNIT_POS:
            break
        late += 1.0
    out[cj.ABSOLUTE_POS] = total + steps + late


def test_a_loop_is_as_uniform_as_its_trip_count() -> None:
    ir = _define(loops)
    u = analyse(ir)
    assert u.names["total"] is Uniform.LAUNCH
    assert u.names["steps"] is Uniform.UNIT
    assert u.names["late"] is Uniform.UNIT
    assert u.names["k2"] is Uniform.UNIT


def test_the_analysis_says_where_every_statement_runs() -> None:
    ir = _define(loops)
    u = analyse(ir)
    assert isinstance(u, Uniformity)
    assert len(u.control) == sum(1 for _ in walk_stmts(ir.body))
    assert u.control_at(ir.body[0]) is Uniform.LAUNCH
