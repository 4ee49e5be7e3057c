"""Golden IR text of the second edition: positions by their (kind, axis), what guard hoisting
and CUDA coarsening make of a kernel, and one text in every process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import cubejit as cj
from cubejit.backends.cuda.coarsening import coarsen
from cubejit.backends.unit_loop import plan_unit_loop
from cubejit.ir import nodes as n
from cubejit.ir.printer import print_kernel
from cubejit.showcase import saxpy

ROOT = Path(__file__).resolve().parents[2]


def test_each_position_is_a_kind_and_an_axis() -> None:
    planes = (n.PositionKind.PLANE_DIM, n.PositionKind.UNIT_POS_PLANE)
    assert len(n.Position) == (len(n.PositionKind) - len(planes)) * 4 + len(planes)
    for p in n.Position:
        assert n.Position.of(p.kind, p.axis) is p
        suffix = "" if p.axis is None else f"_{p.axis.name}"
        assert p.name == f"{p.kind.value}{suffix}"
    assert (cj.CUBE_POS_Y.kind, cj.CUBE_POS_Y.axis) == (n.PositionKind.CUBE_POS, n.Axis.Y)
    assert cj.ABSOLUTE_POS.axis is None


@cj.kernel
def positions(out: cj.Array[cj.u32]):
    out[cj.ABSOLUTE_POS] = cj.UNIT_POS_X + cj.CUBE_POS_Y * cj.CUBE_DIM_Z + cj.CUBE_COUNT


def test_positions_print_as_the_language_spells_them() -> None:
    assert str(positions.specialize(32).define()).splitlines()[1:] == [
        "    out[ABSOLUTE_POS] = UNIT_POS_X + CUBE_POS_Y * CUBE_DIM_Z + CUBE_COUNT",
    ]


def test_the_hoisted_guard_leaves_straight_line_code() -> None:
    ir = saxpy.specialize(256).define()
    plan = plan_unit_loop(ir)
    assert (plan.lead, plan.bound) == (n.Position.ABSOLUTE_POS, n.Length("out"))
    assert print_kernel(replace(ir, body=plan.body)) == textwrap.dedent("""\
        kernel cubejit.showcase.saxpy(a: f32, x: Array[f32], y: Array[f32], out: Array[f32]):
            let i: u32
            i = ABSOLUTE_POS
            out[i] = a * x[i] + y[i]
        """)


COARSENED_SAXPY = """\
    let live_0: bool
    let live_1: bool
    let live_2: bool
    let live_3: bool
    let i_0: u32
    let i_1: u32
    let i_2: u32
    let i_3: u32
    let stored_0_1: f32
    let stored_1_1: f32
    let stored_2_1: f32
    let stored_3_1: f32
    live_0 = cube_pos_x_0 < cube_count_x and absolute_pos_0 < out.len()
    live_1 = cube_pos_x_1 < cube_count_x and absolute_pos_1 < out.len()
    live_2 = cube_pos_x_2 < cube_count_x and absolute_pos_2 < out.len()
    live_3 = cube_pos_x_3 < cube_count_x and absolute_pos_3 < out.len()
    if live_0 and live_1 and live_2 and live_3:
        i_0 = absolute_pos_0
        stored_0_1 = a * x[i_0] + y[i_0]
        i_1 = absolute_pos_1
        stored_1_1 = a * x[i_1] + y[i_1]
        i_2 = absolute_pos_2
        stored_2_1 = a * x[i_2] + y[i_2]
        i_3 = absolute_pos_3
        stored_3_1 = a * x[i_3] + y[i_3]
        out[i_0] = stored_0_1
        out[i_1] = stored_1_1
        out[i_2] = stored_2_1
        out[i_3] = stored_3_1
    else:
        if live_0:
            i_0 = absolute_pos_0
            out[i_0] = a * x[i_0] + y[i_0]
        if live_1:
            i_1 = absolute_pos_1
            out[i_1] = a * x[i_1] + y[i_1]
        if live_2:
            i_2 = absolute_pos_2
            out[i_2] = a * x[i_2] + y[i_2]
        if live_3:
            i_3 = absolute_pos_3
            out[i_3] = a * x[i_3] + y[i_3]
"""


def test_coarsening_puts_every_load_of_four_units_before_their_stores() -> None:
    coarsened = coarsen(saxpy.specialize(256).define(), (256, 1, 1))
    assert coarsened is not None
    head, *body = print_kernel(coarsened.kernel).splitlines(keepends=True)
    assert head.endswith(
        "out: Array[f32], cube_count_x: u32, cube_pos_x_0: u32, cube_pos_x_1: u32, "
        "cube_pos_x_2: u32, cube_pos_x_3: u32, absolute_pos_0: u32, absolute_pos_1: u32, "
        "absolute_pos_2: u32, absolute_pos_3: u32):\n"
    )
    assert "".join(body) == COARSENED_SAXPY


_PRINT_ALL = """
from cubejit.backends.cuda.coarsening import coarsen
from cubejit.showcase import examples
for example in examples():
    spec = example.spec()
    ir = spec.define()
    print(ir)
    coarsened = coarsen(ir, spec.cube_dim)
    print(coarsened.kernel if coarsened else "-")
"""


def _printed_in_a_process(seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _PRINT_ALL], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_every_process_prints_the_same_text() -> None:
    first, second = _printed_in_a_process("1"), _printed_in_a_process("2")
    assert first == second
    assert "kernel cubejit.showcase.saxpy(" in first
