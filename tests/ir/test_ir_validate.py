"""The validator accepts well-formed IR and rejects every broken rule with a message that
names the kernel, the rule and the statement."""

from __future__ import annotations

import pytest

from cubejit.errors import ValidationError
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
from cubejit.ir.types import ArrayType, bool_, f32, f64, i32, i64, u32
from cubejit.ir.validate import validate

PARAMS = (Param("x", ArrayType(f32)), Param("n", i32))
LOCALS = (Local("i", u32), Local("s", f32), Local("k", i32), Local("p", bool_))
X0 = Load("x", Const(0, i32), f32)
S = Var("s", f32)
K = Var("k", i32)


def kernel(*body, locals=LOCALS, params=PARAMS) -> KernelIR:
    setup = (
        Assign("i", PositionOf(Position.ABSOLUTE_POS)),
        Assign("s", X0),
        Assign("k", Const(0, i32)),
        Assign("p", Const(True, bool_)),
    )
    return KernelIR("mod.k", params, locals, setup + tuple(body))


def test_well_formed_ir_passes():
    validate(
        kernel(
            If(Binary(BinaryOp.LT, Var("i", u32), Length("x"), bool_), (Return(),)),
            RangeFor(
                "k",
                Const(0, i32),
                Var("n", i32),
                Const(1, i32),
                (
                    If(Var("p", bool_), (Break(),), (Continue(),)),
                    Store("x", K, Math(MathFn.FMA, (S, S, Cast(K, f32)), f32)),
                ),
            ),
            While(Unary(UnaryOp.NOT, Var("p", bool_), bool_), (Break(),)),
            Assign("k", Binary(BinaryOp.SHL, K, Var("i", u32), i32)),
            Assign("k", Binary(BinaryOp.POW, K, Var("i", u32), i32)),
            Assign("k", Math(MathFn.MAX, (K, Const(-3, i32)), i32)),
            Assign("s", Select(Var("p", bool_), S, Const(1.0, f32), f32)),
        )
    )


BROKEN = {
    "mixed operand types": (
        Assign("s", Binary(BinaryOp.ADD, S, Cast(S, f64), f32)),
        "operands must have one type",
    ),
    "wrong result type": (Assign("p", Binary(BinaryOp.ADD, K, K, bool_)), "must have type i32"),
    "integer true division": (Assign("k", Binary(BinaryOp.DIV, K, K, i32)), "div takes floats"),
    "bit op on floats": (Assign("s", Binary(BinaryOp.BITAND, S, S, f32)), "takes integers"),
    "and on ints": (Assign("p", Binary(BinaryOp.AND, K, K, bool_)), "takes bools"),
    "comparison not bool": (Assign("k", Binary(BinaryOp.LT, K, K, i32)), "must have type bool"),
    "undeclared variable": (Assign("k", Var("ghost", i32)), "ghost is not a declared"),
    "variable with the wrong type": (Assign("s", Var("k", f32)), "k is i32 but used as f32"),
    "assignment of another type": (Assign("s", K), "the value assigned to s is i32"),
    "assignment to an array": (Assign("x", S), "which is an array"),
    "assignment to an undeclared name": (Assign("ghost", S), "which is not declared"),
    "store of another type": (Store("x", K, K), "stored into x is i32"),
    "store into a scalar": (Store("n", K, S), "n is not an array parameter"),
    "float index": (Store("x", S, S), "not an integer"),
    "load of the wrong type": (Assign("k", Load("x", K, i32)), "element type"),
    "length of a scalar": (Assign("i", Length("n")), "n is not an array"),
    "condition not bool": (If(K, ()), "an if condition is i32"),
    "while condition not bool": (While(S, ()), "a while condition is f32"),
    "break outside a loop": (Break(), "break outside a loop"),
    "continue outside a loop": (If(Var("p", bool_), (Continue(),)), "continue outside a loop"),
    "float loop variable": (RangeFor("s", S, S, S, ()), "not an integer"),
    "range bound of another type": (
        RangeFor("k", Const(0, i64), K, Const(1, i32), ()),
        "the range start is i64",
    ),
    "zero step": (RangeFor("k", K, K, Const(0, i32), ()), "step is zero"),
    "constant out of range": (Assign("k", Const(2**31, i32)), "not a valid i32"),
    "float constant of an int type": (Assign("k", Const(1.5, i32)), "not a valid i32"),
    "int constant of a float type": (Assign("s", Const(1, f32)), "not a valid f32"),
    "bool constant of an int type": (Assign("k", Const(True, i32)), "not a valid i32"),
    "math on ints": (Assign("k", Math(MathFn.SQRT, (K,), i32)), "sqrt does not take i32"),
    "math arity": (Assign("s", Math(MathFn.FMA, (S, S), f32)), "fma takes 3 argument"),
    "not on an int": (Assign("k", Unary(UnaryOp.NOT, K, i32)), "not takes a bool"),
    "select branches differ": (
        Assign("s", Select(Var("p", bool_), S, K, f32)),
        "second value is i32",
    ),
    "position not u32": (Assign("k", PositionOf(Position.UNIT_POS, i32)), "u32"),
    "not a statement": ("oops", "is not a statement"),
}


@pytest.mark.parametrize("case", list(BROKEN), ids=list(BROKEN))
def test_each_broken_rule_is_a_validation_error(case):
    stmt, fragment = BROKEN[case]
    with pytest.raises(ValidationError) as info:
        validate(kernel(stmt))
    assert fragment in str(info.value)
    assert str(info.value).startswith("kernel mod.k: invalid IR: ")
    assert info.value.kernel == "mod.k"


@pytest.mark.parametrize(
    ("params", "locals", "fragment"),
    [
        ((Param("x", ArrayType(f32)), Param("x", i32)), LOCALS, "parameter x is declared twice"),
        (PARAMS, (*LOCALS, Local("n", i32)), "local n is declared twice"),
        (PARAMS, (*LOCALS, Local("unused", i32)), "local unused is declared but never assigned"),
        (PARAMS, (*LOCALS, Local("not valid", i32)), "not a valid identifier"),
        (PARAMS, (*LOCALS, Local("for", i32)), "not a valid identifier"),
    ],
)
def test_broken_declarations_are_validation_errors(params, locals, fragment):
    with pytest.raises(ValidationError, match=fragment):
        validate(kernel(locals=locals, params=params))


def test_the_message_shows_the_offending_statement():
    with pytest.raises(ValidationError) as info:
        validate(kernel(RangeFor("k", K, K, K, (Assign("s", K),))))
    assert "in: s = k" in str(info.value)
