"""The textual form of the IR: ``str(kernel_ir)``.

Python-like and meant for people (golden tests, ``cubejit explain``, error reports): locals are
declared at the top with ``let``, constants carry their type as a suffix (``1u32``,
``0.5f32``), operators print with Python's precedence and only the parentheses it needs. The
text depends on nothing but the IR, so one kernel prints the same in every process.
"""

from __future__ import annotations

from typing import assert_never

from cubejit.ir.nodes import (
    Assign,
    Atomic,
    AtomicOp,
    Binary,
    BinaryOp,
    Bitcast,
    BoundsFailure,
    Break,
    Cast,
    Const,
    Continue,
    Expr,
    If,
    KernelIR,
    Length,
    Load,
    Math,
    PlaneOp,
    PositionOf,
    Print,
    RangeFor,
    Return,
    Select,
    Shape,
    Stmt,
    Store,
    Stride,
    SyncCube,
    SyncPlane,
    TensorIndex,
    Unary,
    UnaryOp,
    Var,
    While,
)

_INDENT = "    "

# Python's precedence, loosest first; comparisons do not chain in the printed form, so a
# comparison operand that is itself a comparison is parenthesised.
(
    _SELECT,
    _OR,
    _AND,
    _NOT,
    _CMP,
    _BITOR,
    _BITXOR,
    _BITAND,
    _SHIFT,
    _ADD,
    _MUL,
    _UNARY,
    _POW,
    _ATOM,
) = range(14)

_PRECEDENCE = {
    BinaryOp.OR: _OR,
    BinaryOp.AND: _AND,
    BinaryOp.BITOR: _BITOR,
    BinaryOp.BITXOR: _BITXOR,
    BinaryOp.BITAND: _BITAND,
    BinaryOp.SHL: _SHIFT,
    BinaryOp.SHR: _SHIFT,
    BinaryOp.ADD: _ADD,
    BinaryOp.SUB: _ADD,
    BinaryOp.MUL: _MUL,
    BinaryOp.DIV: _MUL,
    BinaryOp.FLOORDIV: _MUL,
    BinaryOp.MOD: _MUL,
    BinaryOp.POW: _POW,
}


def print_kernel(kernel: KernelIR) -> str:
    """The text of ``kernel``, ending with a newline."""
    params = ", ".join(f"{p.name}: {p.type}" for p in kernel.params)
    lines = [f"kernel {kernel.name}({params}):"]
    lines += [f"{_INDENT}let {local.name}: {local.type}" for local in kernel.locals]
    for b in kernel.allocations:
        elem = f"Atomic[{b.elem}]" if b.atomic else str(b.elem)
        lines.append(f"{_INDENT}{b.kind.value} {b.name}: {elem}[{b.size}]")
    _block(kernel.body, 1, lines)
    return "\n".join(lines) + "\n"


def print_expr(expr: Expr) -> str:
    """The text of one expression."""
    return _expr(expr)[0]


def print_stmt(stmt: Stmt) -> str:
    """The text of one statement, its nested blocks included, without indentation at its own
    level and without a final newline."""
    lines: list[str] = []
    _stmt(stmt, 0, lines)
    return "\n".join(lines)


def _block(block: tuple[Stmt, ...], depth: int, lines: list[str]) -> None:
    if not block:
        lines.append(f"{_INDENT * depth}pass")
    for stmt in block:
        _stmt(stmt, depth, lines)


def _stmt(stmt: Stmt, depth: int, lines: list[str]) -> None:
    pad = _INDENT * depth
    if isinstance(stmt, Assign):
        lines.append(f"{pad}{stmt.name} = {print_expr(stmt.value)}")
    elif isinstance(stmt, Store):
        lines.append(f"{pad}{stmt.array}[{_subscript(stmt.index)}] = {print_expr(stmt.value)}")
    elif isinstance(stmt, If):
        lines.append(f"{pad}if {print_expr(stmt.cond)}:")
        _block(stmt.then, depth + 1, lines)
        orelse = stmt.orelse
        while len(orelse) == 1 and isinstance(orelse[0], If):
            lines.append(f"{pad}elif {print_expr(orelse[0].cond)}:")
            _block(orelse[0].then, depth + 1, lines)
            orelse = orelse[0].orelse
        if orelse:
            lines.append(f"{pad}else:")
            _block(orelse, depth + 1, lines)
    elif isinstance(stmt, RangeFor):
        bounds = ", ".join(print_expr(e) for e in (stmt.start, stmt.stop, stmt.step))
        lines.append(f"{pad}for {stmt.var} in range({bounds}):")
        _block(stmt.body, depth + 1, lines)
    elif isinstance(stmt, While):
        lines.append(f"{pad}while {print_expr(stmt.cond)}:")
        _block(stmt.body, depth + 1, lines)
    elif isinstance(stmt, Break):
        lines.append(f"{pad}break")
    elif isinstance(stmt, Continue):
        lines.append(f"{pad}continue")
    elif isinstance(stmt, Return):
        lines.append(f"{pad}return")
    elif isinstance(stmt, Atomic):
        args = ", ".join(print_expr(a) for a in stmt.args)
        call = f"{stmt.array}[{print_expr(stmt.index)}].{stmt.op.value}({args})"
        if stmt.op is AtomicOp.STORE or stmt.result is None:
            lines.append(f"{pad}{call}")
        else:
            lines.append(f"{pad}{stmt.result} = {call}")
    elif isinstance(stmt, SyncCube):
        lines.append(f"{pad}sync_cube()")
    elif isinstance(stmt, SyncPlane):
        lines.append(f"{pad}sync_plane()")
    elif isinstance(stmt, PlaneOp):
        args = ", ".join(print_expr(a) for a in stmt.args)
        lines.append(f"{pad}{stmt.result} = {stmt.fn.value}({args})")
    elif isinstance(stmt, Print):
        lines.append(f"{pad}print({_print_items(stmt)})")
    elif isinstance(stmt, BoundsFailure):
        index, length = print_expr(stmt.index), print_expr(stmt.length)
        lines.append(f"{pad}bounds_failure(site={stmt.site}, index={index}, length={length})")
    else:
        assert_never(stmt)


def _print_items(stmt: Print) -> str:
    """A print statement's line as its parts: each text piece quoted, each value printed."""
    parts = [repr(stmt.text[0])]
    for arg, text in zip(stmt.args, stmt.text[1:], strict=True):
        parts += [print_expr(arg), repr(text)]
    return ", ".join(p for p in parts if p != "''")


def _const(const: Const) -> tuple[str, int]:
    value = const.value
    if isinstance(value, bool):
        return ("True" if value else "False"), _ATOM
    text = f"{value!r}{const.type.name}"
    return text, _UNARY if text.startswith("-") else _ATOM


def _subscript(index: Expr) -> str:
    """What goes between a buffer's brackets: a tensor's coordinates, an array's index."""
    if isinstance(index, TensorIndex):
        return ", ".join(print_expr(i) for i in index.indices)
    return print_expr(index)


def _wrap(expr: Expr, minimum: int) -> str:
    text, precedence = _expr(expr)
    return f"({text})" if precedence < minimum else text


def _expr(expr: Expr) -> tuple[str, int]:
    """The text of ``expr`` and the precedence of its outermost operator."""
    if isinstance(expr, Const):
        return _const(expr)
    if isinstance(expr, Var):
        return expr.name, _ATOM
    if isinstance(expr, PositionOf):
        return expr.which.name, _ATOM
    if isinstance(expr, Length):
        return f"{expr.array}.len()", _ATOM
    if isinstance(expr, Shape | Stride):
        return f"{expr.tensor}.{type(expr).__name__.lower()}({expr.dim})", _ATOM
    if isinstance(expr, TensorIndex):
        return f"{expr.tensor}.offset({', '.join(print_expr(i) for i in expr.indices)})", _ATOM
    if isinstance(expr, Load):
        return f"{expr.array}[{_subscript(expr.index)}]", _ATOM
    if isinstance(expr, Cast):
        return f"{expr.type.name}({print_expr(expr.value)})", _ATOM
    if isinstance(expr, Bitcast):
        return f"bitcast[{expr.type.name}]({print_expr(expr.value)})", _ATOM
    if isinstance(expr, Math):
        return f"{expr.fn.value}({', '.join(print_expr(a) for a in expr.args)})", _ATOM
    if isinstance(expr, Select):
        text = (
            f"{_wrap(expr.if_true, _OR)} if {_wrap(expr.cond, _OR)} "
            f"else {_wrap(expr.if_false, _SELECT)}"
        )
        return text, _SELECT
    if isinstance(expr, Unary):
        if expr.op is UnaryOp.NOT:
            return f"not {_wrap(expr.operand, _NOT)}", _NOT
        symbol = "-" if expr.op is UnaryOp.NEG else "~"
        return f"{symbol}{_wrap(expr.operand, _UNARY)}", _UNARY
    if isinstance(expr, Binary):
        symbol = expr.op.symbol
        if expr.op.is_comparison:
            text = f"{_wrap(expr.lhs, _CMP + 1)} {symbol} {_wrap(expr.rhs, _CMP + 1)}"
            return text, _CMP
        precedence = _PRECEDENCE[expr.op]
        if expr.op is BinaryOp.POW:
            return f"{_wrap(expr.lhs, _POW + 1)} ** {_wrap(expr.rhs, _UNARY)}", _POW
        text = f"{_wrap(expr.lhs, precedence)} {symbol} {_wrap(expr.rhs, precedence + 1)}"
        return text, precedence
    assert_never(expr)
