"""The printed form of the IR: golden text for hand-built kernels, parentheses only where
Python's precedence needs them."""

from __future__ import annotations

import textwrap

import pytest

from cubejit.ir.nodes import (
    Assign,
    Binary,
    BinaryOp,
    Break,
    Cast,
    Const,
    Continue,
    If,
    KernelIR,
    Length,
    Load,
    Local,
    Math,
    MathFn,
    Param,
    Position,
    PositionOf,
    RangeFor,
    Return,
    Select,
    Store,
    Unary,
    UnaryOp,
    Var,
    While,
)
from cubejit.ir.printer import print_expr, print_kernel
from cubejit.ir.types import ArrayType, bool_, f32, i32, u32

A = Var("a", i32)
B = Var("b", i32)
C = Var("c", i32)


def bin(op: BinaryOp, lhs, rhs, t=i32):
    return Binary(op, lhs, rhs, t)


def sample() -> KernelIR:
    i = Var("i", u32)
    return KernelIR(
        name="mod.sample",
        params=(Param("x", ArrayType(f32)), Param("n", i32)),
        locals=(Local("i", u32), Local("s", f32), Local("k", i32)),
        body=(
            Assign("i", PositionOf(Position.ABSOLUTE_POS)),
            If(bin(BinaryOp.GE, i, Length("x"), bool_), (Return(),)),
            Assign("s", Const(0.0, f32)),
            RangeFor(
                "k",
                Const(0, i32),
                Var("n", i32),
                Const(2, i32),
                (
                    If(
                        bin(BinaryOp.EQ, Var("k", i32), Const(4, i32), bool_),
                        (Continue(),),
                        (
                            If(
                                bin(BinaryOp.GT, Var("k", i32), Const(8, i32), bool_),
                                (Break(),),
                                (Assign("s", Math(MathFn.SQRT, (Load("x", i, f32),), f32)),),
                            ),
                        ),
                    ),
                ),
            ),
            While(Const(False, bool_), ()),
            Store(
                "x",
                i,
                Select(
                    bin(BinaryOp.LT, Var("s", f32), Const(-1.5, f32), bool_),
                    Cast(Var("k", i32), f32),
                    Var("s", f32),
                    f32,
                ),
            ),
        ),
    )


def test_a_kernel_prints_as_its_golden_text():
    assert print_kernel(sample()) == textwrap.dedent("""\
        kernel mod.sample(x: Array[f32], n: i32):
            let i: u32
            let s: f32
            let k: i32
            i = ABSOLUTE_POS
            if i >= x.len():
                return
            s = 0.0f32
            for k in range(0i32, n, 2i32):
                if k == 4i32:
                    continue
                elif k > 8i32:
                    break
                else:
                    s = sqrt(x[i])
            while False:
                pass
            x[i] = f32(k) if s < -1.5f32 else s
        """)
    assert str(sample()) == print_kernel(sample())


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (bin(BinaryOp.MUL, bin(BinaryOp.ADD, A, B), C), "(a + b) * c"),
        (bin(BinaryOp.ADD, A, bin(BinaryOp.MUL, B, C)), "a + b * c"),
        (bin(BinaryOp.SUB, A, bin(BinaryOp.SUB, B, C)), "a - (b - c)"),
        (bin(BinaryOp.SUB, bin(BinaryOp.SUB, A, B), C), "a - b - c"),
        (bin(BinaryOp.POW, bin(BinaryOp.POW, A, B), C), "(a ** b) ** c"),
        (bin(BinaryOp.POW, A, bin(BinaryOp.POW, B, C)), "a ** b ** c"),
        (bin(BinaryOp.POW, Unary(UnaryOp.NEG, A, i32), B), "(-a) ** b"),
        (bin(BinaryOp.POW, Const(-2, i32), B), "(-2i32) ** b"),
        (Unary(UnaryOp.NEG, bin(BinaryOp.POW, A, B), i32), "-a ** b"),
        (bin(BinaryOp.BITAND, bin(BinaryOp.SHL, A, B), C), "a << b & c"),
        (bin(BinaryOp.SHL, A, bin(BinaryOp.BITAND, B, C)), "a << (b & c)"),
        (
            bin(BinaryOp.EQ, bin(BinaryOp.LT, A, B, bool_), Const(True, bool_), bool_),
            "(a < b) == True",
        ),
        (
            Unary(UnaryOp.NOT, bin(BinaryOp.OR, Var("p", bool_), Var("q", bool_), bool_), bool_),
            "not (p or q)",
        ),
        (
            bin(
                BinaryOp.AND,
                bin(BinaryOp.OR, Var("p", bool_), Var("q", bool_), bool_),
                Var("r", bool_),
                bool_,
            ),
            "(p or q) and r",
        ),
        (
            Select(Var("p", bool_), Select(Var("q", bool_), A, B, i32), C, i32),
            "(a if q else b) if p else c",
        ),
        (
            Select(Var("p", bool_), A, Select(Var("q", bool_), B, C, i32), i32),
            "a if p else b if q else c",
        ),
        (Unary(UnaryOp.INVERT, Unary(UnaryOp.NEG, A, i32), i32), "~-a"),
        (Const(1e-05, f32), "1e-05f32"),
        (Const(4294967295, u32), "4294967295u32"),
    ],
)
def test_expressions_print_with_the_parentheses_python_needs(expr, text):
    assert print_expr(expr) == text
