"""One walk for every node: children and rebuilding derived from the node dataclasses.

A node's fields say what its children are: a field annotated ``Expr`` holds an operand, one
annotated ``tuple[Expr, ...]`` several, one annotated ``tuple[Stmt, ...]`` a block; every other
field (a name, an opcode, a type) is data. :func:`fields_of` reads that once per class from the
annotations, so a node kind added to :mod:`cubejit.ir.nodes` is walked and rebuilt here without
a line of this module changing. What a node *does* (reads, writes, synchronises) is not here but
in :mod:`cubejit.ir.traits`; a pass that must know what a kind means dispatches on it and ends
with ``typing.assert_never``.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from cubejit.ir.nodes import Expr, Stmt

EXPR_KINDS: tuple[type, ...] = typing.get_args(Expr)
"""Every expression class, in the order of the ``Expr`` union."""
STMT_KINDS: tuple[type, ...] = typing.get_args(Stmt)
"""Every statement class, in the order of the ``Stmt`` union."""

Block = tuple[Stmt, ...]
Node = Expr | Stmt


class Role(enum.Enum):
    """What a field of a node holds."""

    EXPR = "expr"
    """One operand."""
    EXPRS = "exprs"
    """A tuple of operands."""
    BLOCK = "block"
    """A tuple of statements."""
    DATA = "data"
    """Anything else: names, opcodes, types, literal values."""


@dataclass(frozen=True, slots=True)
class NodeField:
    name: str
    role: Role


def _role(kind: type, name: str, hint: object) -> Role:
    if hint == Expr:
        return Role.EXPR
    if hint == tuple[Expr, ...]:
        return Role.EXPRS
    if hint == tuple[Stmt, ...]:
        return Role.BLOCK
    if _mentions_a_node(hint):
        raise TypeError(
            f"{kind.__name__}.{name} holds nodes as {hint}; a child field is annotated Expr, "
            f"tuple[Expr, ...] or tuple[Stmt, ...], so that every walk sees it"
        )
    return Role.DATA


def _mentions_a_node(hint: object) -> bool:
    if hint in EXPR_KINDS or hint in STMT_KINDS:
        return True
    return any(_mentions_a_node(arg) for arg in typing.get_args(hint))


_FIELDS: dict[type, tuple[NodeField, ...]] = {}


def fields_of(kind: type) -> tuple[NodeField, ...]:
    """The fields of node class ``kind`` in declaration order, each with its role. Raises
    TypeError for a field that holds nodes in any other shape than the three roles name."""
    found = _FIELDS.get(kind)
    if found is None:
        hints = typing.get_type_hints(kind)
        found = tuple(
            NodeField(f.name, _role(kind, f.name, hints[f.name])) for f in dataclasses.fields(kind)
        )
        _FIELDS[kind] = found
    return found


def is_expr(value: object) -> typing.TypeGuard[Expr]:
    """Whether ``value`` is an expression node."""
    return isinstance(value, EXPR_KINDS)


def is_stmt(value: object) -> typing.TypeGuard[Stmt]:
    """Whether ``value`` is a statement node."""
    return isinstance(value, STMT_KINDS)


def operands(node: Node) -> tuple[Expr, ...]:
    """The expressions directly in ``node``'s fields: an expression's operands, or the
    expressions a statement itself evaluates (not those of its nested statements)."""
    getter = _GETTERS.get(type(node))
    if getter is None:
        getter = _GETTERS[type(node)] = _operand_getter(type(node))
    return getter(node)


_GETTERS: dict[type, Callable[[Node], tuple[Expr, ...]]] = {}
"""By node class: how to read its operands. Walks run on every compile, so each class gets the
cheapest reader its fields allow."""


def _operand_getter(kind: type) -> Callable[[Node], tuple[Expr, ...]]:
    fields = [f for f in fields_of(kind) if f.role in (Role.EXPR, Role.EXPRS)]
    if not fields:
        return lambda node: ()
    if len(fields) == 1:
        name = fields[0].name
        if fields[0].role is Role.EXPRS:
            return lambda node: getattr(node, name)  # type: ignore[no-any-return]
        return lambda node: (getattr(node, name),)
    if all(f.role is Role.EXPR for f in fields):
        return operator.attrgetter(*(f.name for f in fields))

    def gather(node: Node) -> tuple[Expr, ...]:
        found: list[Expr] = []
        for f in fields:
            value = getattr(node, f.name)
            if f.role is Role.EXPR:
                found.append(value)
            else:
                found.extend(value)
        return tuple(found)

    return gather


def blocks(stmt: Stmt) -> tuple[Block, ...]:
    """The statement blocks directly inside ``stmt``, in field order."""
    return tuple(getattr(stmt, f.name) for f in fields_of(type(stmt)) if f.role is Role.BLOCK)


_N = typing.TypeVar("_N", bound=Node)


def rebuild(
    node: _N,
    expr: Callable[[Expr], Expr] | None = None,
    block: Callable[[Block], Block] | None = None,
) -> _N:
    """``node`` with each operand ``e`` replaced by ``expr(e)`` and each block ``b`` by
    ``block(b)``; its data fields unchanged. The result is ``node`` itself when every
    replacement is the very object it replaces (changes are found by identity, never by
    comparing trees)."""
    changes: dict[str, object] = {}
    for f in fields_of(type(node)):
        value = getattr(node, f.name)
        if expr is not None and f.role is Role.EXPR:
            new = expr(value)
            if new is not value:
                changes[f.name] = new
        elif expr is not None and f.role is Role.EXPRS:
            operands_ = tuple(expr(e) for e in value)
            if _replaced(operands_, value):
                changes[f.name] = operands_
        elif block is not None and f.role is Role.BLOCK:
            stmts = block(value)
            if _replaced(stmts, value):
                changes[f.name] = stmts
    if not changes:
        return node
    rebuilt: _N = dataclasses.replace(node, **changes)  # type: ignore[arg-type]
    return rebuilt


def _replaced(new: tuple[Node, ...], old: tuple[Node, ...]) -> bool:
    return len(new) != len(old) or any(a is not b for a, b in zip(new, old, strict=True))


def map_expr(e: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    """``e`` rewritten bottom-up: each operand is mapped first, then ``fn`` is given the node
    rebuilt from the mapped operands."""
    return fn(rebuild(e, lambda sub: map_expr(sub, fn)))


def map_block(stmts: Block, fn: Callable[[Expr], Expr]) -> Block:
    """``stmts`` with :func:`map_expr` applied to every expression, nested blocks included."""
    return tuple(_map_stmt(s, fn) for s in stmts)


def _map_stmt(s: Stmt, fn: Callable[[Expr], Expr]) -> Stmt:
    return rebuild(s, lambda e: map_expr(e, fn), lambda b: map_block(b, fn))


def walk_stmts(block: Block) -> Iterator[Stmt]:
    """Every statement of ``block`` and of the blocks nested in it, outer first."""
    for stmt in block:
        yield stmt
        for inner in blocks(stmt):
            yield from walk_stmts(inner)


def walk_expr(e: Expr) -> Iterator[Expr]:
    """``e`` and every expression inside it, each before its operands."""
    stack = [e]
    while stack:
        top = stack.pop()
        yield top
        stack.extend(operands(top))


def walk_exprs(block: Block) -> Iterator[Expr]:
    """Every expression evaluated anywhere in ``block``, each before its operands."""
    for stmt in walk_stmts(block):
        stack = list(operands(stmt))
        stack.reverse()
        while stack:
            top = stack.pop()
            yield top
            stack.extend(operands(top))
