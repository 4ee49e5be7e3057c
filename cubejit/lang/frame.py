"""What the translator knows about the Python function it is in: the kernel, or one inlined
``@cj.function`` call.

Python scopes names per function, so each frame maps the function's names to what they hold:
a local (an IR local or scalar parameter), a constant (a comptime value, an unroll index, a
constant argument) or an array. Inlined frames also collect the function's result.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Literal as KindOf

from cubejit.ir.types import Scalar
from cubejit.lang.source import PySource
from cubejit.lang.values import ArrayRef, Literal, Scalarish


@dataclass(frozen=True, slots=True)
class LocalBinding:
    """A name held in the IR local or scalar parameter ``ir_name``."""

    ir_name: str
    type: Scalar


@dataclass(frozen=True, slots=True)
class ConstBinding:
    """A name holding a constant. ``origin`` says whether assigning to it is an error
    (a comptime parameter, a ``cj.unroll`` index) or simply rebinds it (any other constant)."""

    value: Literal
    origin: KindOf["comptime", "unroll", "value"]


@dataclass(frozen=True, slots=True)
class LineBinding:
    """A name holding a line: one IR local per lane, ``ir_names[k]`` lane ``k``."""

    ir_names: tuple[str, ...]
    type: Scalar


Binding = LocalBinding | ConstBinding | ArrayRef | LineBinding


@dataclass(eq=False)
class Loop:
    """A loop around the statement being translated. A ``cj.unroll`` loop has no loop left to
    jump in, so its ``break`` and ``continue`` set a bool local (made on first use) and the
    statements they skip run under ``if not flag``."""

    kind: KindOf["loop", "unroll"]
    break_flag: str | None = None
    continue_flag: str | None = None


@dataclass(eq=False)
class Frame:
    """One Python function being translated."""

    source: PySource
    prefix: str
    """Prepended to the function's names to make IR names (empty for the kernel itself)."""
    assigned: frozenset[str]
    """Names Python treats as locals of this function."""
    env: dict[str, Binding] = field(default_factory=dict)
    call: tuple[Frame, ast.Call] | None = None
    """The caller and the call expression, for an inlined function."""
    loops: list[Loop] = field(default_factory=list)
    """The loops around the current statement in this function, innermost last."""
    defined: set[str] | None = field(default_factory=set)
    """The function's names assigned on every path to the current statement; None where no
    path reaches it (after a ``return``, ``break`` or ``continue``)."""
    raised: list[str] = field(default_factory=list)
    """Jump flags (bool locals) some path may have set so far: statements after the one that
    set them run only where none is set."""
    return_flag: str | None = None
    """The flag a ``return`` inside a loop of a function sets (made on first use)."""
    branch_depth: int = 0
    """How many run-time ``if`` branches enclose the current statement."""
    return_type: Scalar | None = None
    """A function's annotated return type."""
    result_name: str | None = None
    """The IR local holding a function's result, once a return inside a branch needed one."""
    result: Scalarish | None = None
    """A function's result, when its one return is not inside a run-time branch."""
    returns_value: bool | None = None
    """Whether the function's returns carry a value (None until one is seen)."""

    @property
    def is_kernel(self) -> bool:
        return self.call is None
