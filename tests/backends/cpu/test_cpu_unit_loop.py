"""The CPU's row loop: a bounds guard hoisted into the loop's end must not change what a kernel
does, vector forms of libm must keep its values and special values, and a launch never numbers
more units than a u32 position can."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cpu_ir_builders import arr, b, guarded, kernel, load, pos, scalar

import cubejit as cj
from cubejit import config
from cubejit.backends.cpu.codegen import translation_unit
from cubejit.backends.cpu.fingerprint import compile_flags, vectoriser_flags
from cubejit.backends.cpu.vector_math import link_libraries
from cubejit.backends.unit_loop import plan_unit_loop
from cubejit.ir import nodes as n
from cubejit.ir.types import f32, u32

SIZES = [1, 255, 257, 10**6 + 3]
_DECLARE_MARK = "#pragma omp declare simd notinbranch"


@cj.kernel
def guarded_chain(a: cj.f32, x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = cj.tanh(a * x[i] + y[i]) * x[i]


@cj.kernel
def early_return(count: cj.u32, x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i >= count:
        return
    v = cj.exp(x[i])
    if v > 2.0:
        out[i] = v
        return
    out[i] = -v


@cj.kernel
def guard_on_an_element(limit: cj.Array[cj.u32], x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < limit[0]:
        out[i] = x[i] * 3.0


@cj.kernel
def rows(width: cj.u32, height: cj.u32, x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    col = cj.ABSOLUTE_POS_X
    row = cj.ABSOLUTE_POS_Y
    if col < width:
        if row < height:
            out[row * width + col] = x[row * width + col] + cj.f32(col)


@cj.kernel
def libm32(
    x: cj.Array[cj.f32],
    y: cj.Array[cj.f32],
    tanh: cj.Array[cj.f32],
    exp: cj.Array[cj.f32],
    log: cj.Array[cj.f32],
    sin: cj.Array[cj.f32],
    cos: cj.Array[cj.f32],
    tan: cj.Array[cj.f32],
    erf: cj.Array[cj.f32],
    pow: cj.Array[cj.f32],
):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        tanh[i] = cj.tanh(x[i])
        exp[i] = cj.exp(x[i])
        log[i] = cj.log(x[i])
        sin[i] = cj.sin(x[i])
        cos[i] = cj.cos(x[i])
        tan[i] = cj.tan(x[i])
        erf[i] = cj.erf(x[i])
        pow[i] = cj.pow(x[i], y[i])


@cj.kernel
def libm64(x: cj.Array[cj.f64], out: cj.Array[cj.f64]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        out[i] = cj.tanh(x[i]) + cj.exp(x[i] * 0.25) + cj.sin(x[i]) * cj.cos(x[i])


@pytest.fixture(scope="module")
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


@pytest.mark.parametrize("size", SIZES)
def test_a_hoisted_guard_runs_exactly_the_units_below_it(cpu, rng, size: int) -> None:
    x, y = rng.standard_normal(size, dtype=np.float32), rng.standard_normal(size, dtype=np.float32)
    out = np.full(size + 3, 7.0, np.float32)
    view = out[:size]
    guarded_chain.launch(cpu, cj.cdiv(size, 256), 256, np.float32(1.5), x, y, view)
    np.testing.assert_allclose(view, np.tanh(np.float32(1.5) * x + y) * x, rtol=1e-5, atol=1e-6)
    assert (out[size:] == 7.0).all()


@pytest.mark.parametrize("size", SIZES)
def test_an_early_return_guard_stops_exactly_the_units_at_or_past_it(cpu, rng, size: int) -> None:
    x = rng.standard_normal(size + 300, dtype=np.float32)
    out = np.full(size + 300, 5.0, np.float32)
    early_return.launch(cpu, cj.cdiv(size + 300, 128), 128, size, x, out)
    want = np.exp(x[:size])
    np.testing.assert_allclose(out[:size], np.where(want > 2.0, want, -want), rtol=1e-5)
    assert (out[size:] == 5.0).all()


@pytest.mark.parametrize("size", SIZES)
def test_a_guard_whose_bound_varies_is_kept_in_each_unit(cpu, rng, size: int) -> None:
    x = rng.standard_normal(size, dtype=np.float32)
    out = np.full(size, 1.0, np.float32)
    limit = np.array([size // 2], np.uint32)
    guard_on_an_element.launch(cpu, cj.cdiv(size, 256), 256, limit, x, out)
    np.testing.assert_array_equal(out[: size // 2], x[: size // 2] * np.float32(3.0))
    assert (out[size // 2 :] == 1.0).all()


@pytest.mark.parametrize("width, height", [(1, 1), (255, 3), (257, 17), (1003, 1001)])
def test_a_guard_on_absolute_pos_x_bounds_each_row_of_a_2d_launch(
    cpu, rng, width: int, height: int
) -> None:
    x = rng.standard_normal(width * height, dtype=np.float32)
    out = np.zeros(width * height, np.float32)
    rows.launch(cpu, (cj.cdiv(width, 16), cj.cdiv(height, 16)), (16, 16), width, height, x, out)
    cols = np.tile(np.arange(width, dtype=np.float32), height)
    np.testing.assert_array_equal(out, x + cols)


def test_vector_libm_keeps_values_and_special_values_in_f32(cpu, rng) -> None:
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 88.8, -104.0, 1e30, -1.0]
    x = np.concatenate(
        [np.array(specials, np.float32), rng.uniform(-20, 20, 1000).astype(np.float32)]
    )
    powers = [2.0, 0.5, -1.0, 3.0, np.nan, 0.0, 2.0, 1.5, 2.0, 0.0, 0.5]
    y = np.concatenate([np.array(powers, np.float32), rng.uniform(-3, 3, 1000).astype(np.float32)])
    out = np.empty((8, x.size), np.float32)
    libm32.launch(cpu, cj.cdiv(x.size, 64), 64, x, y, *out)
    erf = np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64)).astype(np.float32)
    with np.errstate(all="ignore"):
        wants = [np.tanh(x), np.exp(x), np.log(x), np.sin(x), np.cos(x), np.tan(x), erf, x**y]
    for got, want in zip(out, wants, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_vector_libm_keeps_values_in_f64(cpu, rng) -> None:
    x = np.concatenate([np.array([0.0, np.inf, -np.inf, np.nan]), rng.uniform(-30, 30, 2001)])
    out = np.empty_like(x)
    libm64.launch(cpu, cj.cdiv(x.size, 256), 256, x, out)
    with np.errstate(all="ignore"):
        want = np.tanh(x) + np.exp(x * 0.25) + np.sin(x) * np.cos(x)
    np.testing.assert_allclose(out, want, rtol=1e-12)


def test_a_launch_of_more_units_than_a_u32_numbers_is_refused(cpu) -> None:
    out = np.zeros(4, np.float32)
    with pytest.raises(cj.LaunchError, match="more than 4294967295 units"):
        guarded_chain.launch(cpu, 2**22, 1024, np.float32(1.0), out, out, out)
    assert (out == 0.0).all()


def _saxpy_body(*stmts: n.Stmt) -> n.KernelIR:
    params = [scalar("a", f32), scalar("m", u32), arr("x", f32), arr("out", f32)]
    return kernel("k", params, list(stmts), [n.Local("i", u32), n.Local("j", u32)])


_I = n.Var("i", u32)
_STORE = n.Store("out", _I, b("MUL", n.Var("a", f32), load("x", _I, f32)))


def test_the_guard_of_a_plain_kernel_becomes_the_loop_bound_and_leaves_the_unit() -> None:
    ir = _saxpy_body(n.Assign("i", pos("ABSOLUTE_POS")), guarded(_I, "out", _STORE))
    plan = plan_unit_loop(ir)
    assert plan.lead is n.Position.ABSOLUTE_POS
    assert plan.bound == n.Length("out")
    assert plan.body == (n.Assign("i", pos("ABSOLUTE_POS")), _STORE)
    text = translation_unit(ir, (256, 1, 1), 64)
    assert "if (cj_bound < cj_end) cj_end = cj_bound;" in text
    assert "if ((v_i < n_out))" not in text


def test_a_bound_kept_in_a_local_is_hoisted_as_the_value_it_holds() -> None:
    width = b("MUL", n.Var("m", u32), n.Const(2, u32))
    ir = _saxpy_body(
        n.Assign("j", width),
        n.Assign("i", pos("ABSOLUTE_POS_X")),
        n.If(b("LE", n.Var("j", u32), _I), (n.Return(),)),
        _STORE,
    )
    plan = plan_unit_loop(ir)
    assert (plan.lead, plan.bound) == (n.Position.ABSOLUTE_POS_X, width)
    assert plan.body == (*ir.body[:2], _STORE)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            [
                n.Assign("i", pos("ABSOLUTE_POS")),
                n.Assign("i", b("ADD", _I, n.Const(1, u32))),
                guarded(_I, "out", _STORE),
            ],
            id="position-local-assigned-twice",
        ),
        pytest.param(
            [n.Assign("i", pos("ABSOLUTE_POS")), guarded(_I, "out", _STORE), _STORE],
            id="work-after-the-guard",
        ),
        pytest.param(
            [
                n.Assign("i", pos("ABSOLUTE_POS")),
                n.If(b("LT", _I, n.Length("out")), (_STORE,), (_STORE,)),
            ],
            id="guard-with-else",
        ),
        pytest.param(
            [
                n.Assign("i", pos("ABSOLUTE_POS")),
                n.Assign("j", n.Cast(load("x", n.Const(0, u32), f32), u32)),
                n.If(b("LT", _I, n.Var("j", u32)), (_STORE,)),
            ],
            id="bound-read-from-an-array",
        ),
        pytest.param(
            [
                n.Assign("i", pos("ABSOLUTE_POS")),
                _STORE,
                n.If(b("GE", _I, n.Var("m", u32)), (n.Return(),)),
                _STORE,
            ],
            id="store-before-the-guard",
        ),
        pytest.param(
            [n.Assign("i", pos("UNIT_POS")), guarded(_I, "out", _STORE)],
            id="guard-on-unit-pos",
        ),
    ],
)
def test_a_guard_that_is_not_the_same_for_every_unit_is_left_in_place(body) -> None:
    ir = _saxpy_body(*body)
    plan = plan_unit_loop(ir)
    assert plan.bound is None
    assert plan.body == ir.body


@pytest.mark.skipif(
    not vectoriser_flags(config.settings().cc) or not link_libraries(_DECLARE_MARK),
    reason="checks GCC's vectoriser report and glibc's libmvec on x86_64",
)
def test_the_row_loop_of_a_guarded_kernel_of_ten_arrays_vectorises_its_libm_calls(
    tmp_path: Path,
) -> None:
    spec = libm32.specialize(64)
    (tmp_path / "k.c").write_text(translation_unit(spec.define(), spec.cube_dim, 64))
    settings = config.settings()
    command = [
        settings.cc,
        *compile_flags(settings),
        *vectoriser_flags(settings.cc),
        "-fopt-info-vec-optimized",
        "-o",
        "k.so",
        "k.c",
        "-lmvec",
    ]
    report = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "loop vectorized" in report.stderr
    symbols = subprocess.run(["nm", "-D", "k.so"], cwd=tmp_path, capture_output=True, text=True)
    assert "_ZGV" in symbols.stdout and "tanhf" in symbols.stdout


def test_a_statement_before_the_guard_that_only_assigns_the_units_own_names_is_hoisted_over() -> (
    None
):
    choose = n.If(
        b("GT", n.Var("a", f32), n.Const(0.0, f32)),
        (n.Assign("j", n.Const(1, u32)),),
        (n.Assign("j", n.Const(2, u32)),),
    )
    ir = _saxpy_body(n.Assign("i", pos("ABSOLUTE_POS")), choose, guarded(_I, "out", _STORE))
    plan = plan_unit_loop(ir)
    assert plan.bound == n.Length("out")
    assert plan.body == (*ir.body[:2], _STORE)


def test_a_statement_before_the_guard_that_may_leave_keeps_the_guard_in_each_unit() -> None:
    leave = n.If(b("GT", n.Var("a", f32), n.Const(0.0, f32)), (n.Return(),))
    ir = _saxpy_body(n.Assign("i", pos("ABSOLUTE_POS")), leave, guarded(_I, "out", _STORE))
    assert plan_unit_loop(ir).bound is None
