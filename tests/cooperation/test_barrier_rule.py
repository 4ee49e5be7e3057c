"""The barrier rule: a barrier or plane operation that some units of its group might not reach
is a ValidationError naming the line and the reason; cube-uniform control flow is accepted."""

from __future__ import annotations

import re

import pytest

import cubejit as cj
from cubejit.errors import ValidationError


@cj.kernel
def under_a_unit_condition(x: cj.Array[cj.f32]):
    if cj.UNIT_POS < 3:
        cj.sync_cube()


@cj.kernel
def in_a_unit_loop(x: cj.Array[cj.f32]):
    for k in range(cj.UNIT_POS_X):
        x[k] = 0.0
        cj.sync_cube()


@cj.kernel
def after_a_unit_return(x: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i >= x.len():
        return
    x[i] = 1.0
    cj.sync_cube()


@cj.kernel
def plane_op_under_a_unit_condition(x: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        x[i] = cj.plane_sum(x[i])


@cj.kernel
def sync_plane_after_a_unit_break(x: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    while True:
        if i > 4:
            break
        cj.sync_plane()


@cj.kernel
def a_plane_op_in_a_condition_on_the_unit_s_lane(x: cj.Array[cj.f32]):
    if cj.UNIT_POS_PLANE == 0:
        cj.plane_ballot(x[0] > 0.0)


REFUSED = [
    (under_a_unit_condition, "cj.sync_cube()", "under the condition `UNIT_POS < 3u32`"),
    (in_a_unit_loop, "cj.sync_cube()", "in a loop whose iterations depend on the unit"),
    (after_a_unit_return, "cj.sync_cube()", "after a `return` that depends on the unit"),
    (plane_op_under_a_unit_condition, "cj.plane_sum(...)", "under the condition `i < x.len()`"),
    (sync_plane_after_a_unit_break, "cj.sync_plane()", "in a loop whose iterations depend"),
    (a_plane_op_in_a_condition_on_the_unit_s_lane, "cj.plane_ballot(...)", "UNIT_POS_PLANE"),
]


@pytest.mark.parametrize(("kernel", "what", "why"), REFUSED, ids=lambda v: getattr(v, "name", ""))
def test_a_barrier_some_units_might_miss_is_refused_naming_the_line(
    kernel: cj.Kernel, what: str, why: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        kernel.specialize(64).define(plane_dim=32)
    message = str(caught.value)
    assert kernel.name in message and what in message and why in message
    found = re.search(r"test_barrier_rule\.py:(\d+)", message)
    assert found is not None
    source = open(__file__).read().splitlines()[int(found.group(1)) - 1]
    assert what.removeprefix("cj.").split("(")[0] in source


@cj.kernel
def cube_uniform_control(x: cj.Array[cj.f32], n: cj.u32, G: cj.Comptime[int]):
    s = cj.SharedMemory[cj.f32](cj.CUBE_DIM)
    if cj.CUBE_POS >= x.len() // cj.CUBE_DIM + 1:
        return
    for k in range(n):
        s[cj.UNIT_POS] = x[k]
        cj.sync_cube()
        if x[0] > 0.0:
            cj.sync_cube()
    if cj.UNIT_POS < cj.PLANE_DIM * G:
        x[0] = cj.plane_sum(s[cj.UNIT_POS])
    cj.sync_plane()


def test_cube_uniform_conditions_loops_and_returns_are_accepted() -> None:
    ir = cube_uniform_control.specialize(128, G=2).define(plane_dim=32)
    text = str(ir)
    assert text.count("sync_cube()") == 2 and "plane_sum(" in text


def test_a_barrier_in_a_function_names_the_function_s_line() -> None:
    @cj.function
    def wait_for_the_cube() -> None:
        cj.sync_cube()

    @cj.kernel
    def calls_it(x: cj.Array[cj.f32]):
        if cj.ABSOLUTE_POS < x.len():
            wait_for_the_cube()

    with pytest.raises(ValidationError, match=r"cj\.sync_cube\(\) at .*test_barrier_rule\.py:\d+"):
        calls_it.specialize(32).define()
