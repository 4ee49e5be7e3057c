"""The shared C-family walker, read through the C text it writes."""

from __future__ import annotations

import pytest
from cpu_ir_builders import arr, b, guarded, kernel, load, pos, scalar

from cubejit.backends.cpu.codegen import ENTRY, CDialect, translation_unit
from cubejit.backends.cstyle import emit_body
from cubejit.errors import UnsupportedError
from cubejit.ir import nodes as n
from cubejit.ir.types import bf16, f32, i32, i64, u32


def saxpy(name: str) -> n.KernelIR:
    i = pos("ABSOLUTE_POS")
    value = b("ADD", b("MUL", n.Var("a", f32), load("x", i, f32)), load("y", i, f32))
    return kernel(
        name,
        [scalar("a", f32), arr("x", f32), arr("y", f32), arr("out", f32)],
        [guarded(i, "out", n.Store("out", i, value))],
    )


def test_the_c_text_names_neither_the_kernel_nor_its_id() -> None:
    text = translation_unit(saxpy("my_secret_saxpy"), (256, 1, 1), 64)
    assert "my_secret_saxpy" not in text
    assert f"void {ENTRY}(" in text


def test_kernels_with_equal_ir_lower_to_identical_text() -> None:
    first = translation_unit(saxpy("one"), (256, 1, 1), 64)
    assert first == translation_unit(saxpy("two"), (256, 1, 1), 64)
    assert first != translation_unit(saxpy("one"), (128, 1, 1), 64)
    assert first != translation_unit(saxpy("one"), (256, 1, 1), 16)


def test_names_are_decorated_so_c_keywords_are_safe_as_ir_names() -> None:
    ir = kernel(
        "k",
        [arr("int", i32), scalar("while", i32)],
        [n.Assign("for", n.Var("while", i32)), n.Store("int", n.Const(0, i32), n.Var("for", i32))],
        [n.Local("for", i32)],
    )
    lines = emit_body(ir, CDialect()).lines
    assert "int32_t v_for = 0;" in lines
    assert "p_int[0] = v_for;" in lines
    assert "v_for = p_while;" in lines


def test_only_the_positions_the_kernel_reads_are_computed() -> None:
    body = emit_body(saxpy("k"), CDialect())
    assert body.positions == (n.Position.ABSOLUTE_POS,)
    assert sum("pos_" in line and "const" in line for line in body.lines) == 1


def test_helpers_appear_only_when_the_body_calls_them() -> None:
    assert emit_body(saxpy("k"), CDialect()).helpers == ""
    ir = kernel(
        "k",
        [arr("a", i64)],
        [
            n.Store(
                "a",
                n.Const(0, i32),
                b("FLOORDIV", load("a", n.Const(1, i32), i64), n.Const(-3, i64)),
            )
        ],
    )
    helpers = emit_body(ir, CDialect()).helpers
    assert "cj_floordiv_i64" in helpers
    assert "cj_mod" not in helpers


def test_a_range_with_a_step_known_only_at_run_time_checks_its_sign() -> None:
    loop = n.RangeFor("i", n.Const(0, i32), n.Var("s", i32), n.Var("s", i32), (n.Break(),))
    lines = emit_body(
        kernel("k", [scalar("s", i32)], [loop], [n.Local("i", i32)]), CDialect()
    ).lines
    text = "\n".join(lines)
    assert "const int32_t cj_step0 = p_s;" in text
    assert "((cj_step0 > 0) ? (cj_i0 < cj_stop0) : (cj_i0 > cj_stop0))" in text


def test_unsigned_literals_and_extreme_signed_literals_are_spelled_exactly() -> None:
    d = CDialect()
    assert d.int_literal(-(2**31), i32) == "(-2147483647 - 1)"
    assert d.int_literal(-(2**63), i64) == "((int64_t)(-9223372036854775807ll - 1ll))"
    assert d.int_literal(7, u32) == "7u"
    assert d.float_literal(0.1, f32) == "0x1.999999999999ap-4f"


def test_a_scalar_the_dialect_lacks_is_unsupported_naming_the_kernel() -> None:
    ir = kernel("halfway", [arr("h", bf16)], [])
    with pytest.raises(UnsupportedError, match="kernel halfway: this backend has no bf16"):
        translation_unit(ir, (1, 1, 1), 64)
