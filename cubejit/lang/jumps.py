"""Translating the statements that leave a block: ``break``, ``continue`` and ``return``.

In a run-time loop ``break`` and ``continue`` are the IR's own. A ``cj.unroll`` loop has no loop
left to jump in, so they set the loop's flag (a bool local made on first use) and the
statements and copies they skip run under ``if not flag``. A kernel's ``return`` ends the unit;
a function's ``return value`` gives the result, and inside a loop also sets the function's
return flag and leaves the loop, the code after each loop it leaves running only where the flag
is not set (:meth:`~cubejit.lang.statements.StatementRules.block_of` adds those guards).
"""

from __future__ import annotations

import ast

from cubejit.ir.nodes import Assign, Break, Const, Continue, Return
from cubejit.ir.types import bool_
from cubejit.lang.loops import JUMPED, RETURNED, LoopRules
from cubejit.lang.source import Problem
from cubejit.lang.values import coerce, typed


class JumpRules(LoopRules):
    """``break``, ``continue`` and ``return``."""

    def stmt_Break(self, node: ast.Break) -> str:
        self._jump("break")
        return JUMPED

    def stmt_Continue(self, node: ast.Continue) -> str:
        self._jump("continue")
        return JUMPED

    def _jump(self, word: str) -> None:
        """``break`` or ``continue``: the IR's own in a loop; in a ``cj.unroll`` loop, the
        loop's flag is set and what it skips is guarded (see :meth:`block_of`)."""
        frame = self.frame
        if not frame.loops:
            raise Problem(f"`{word}` outside a loop")
        loop = frame.loops[-1]
        if loop.kind == "loop":
            self.emit(Break() if word == "break" else Continue())
            return
        if word == "break":
            loop.break_flag = loop.break_flag or self.declare(frame.prefix + "broke", bool_)
            flag = loop.break_flag
        else:
            loop.continue_flag = loop.continue_flag or self.declare(frame.prefix + "skip", bool_)
            flag = loop.continue_flag
        self.emit(Assign(flag, Const(True, bool_)))
        frame.raised.append(flag)

    def stmt_Return(self, node: ast.Return) -> str:
        frame = self.frame
        if frame.is_kernel:
            if node.value is not None:
                raise Problem(
                    "a kernel returns nothing (a bare `return` ends the unit); write "
                    "the result into an array instead, e.g. `out[i] = value`"
                )
            self.emit(Return())
            return RETURNED
        has_value = node.value is not None
        if frame.returns_value is not None and frame.returns_value != has_value:
            raise Problem(
                "this function mixes `return` and `return value`; return a value on every path"
            )
        frame.returns_value = has_value
        if node.value is None:
            if frame.loops:
                self._leave_loops()
            return RETURNED
        value = self.scalar(node.value)
        if frame.return_type is not None:
            value = coerce(value, frame.return_type, "the annotated return type")
        if frame.branch_depth == 0 and frame.result_name is None:
            frame.result = value
            return RETURNED
        if frame.result_name is None:
            t = frame.return_type or typed(value).type
            frame.result_name = self.declare(frame.prefix + "result", t)
        t = self.locals[frame.result_name]
        self.emit(
            Assign(
                frame.result_name,
                coerce(value, t, "the function's result (its first return decides its type)"),
            )
        )
        if frame.loops:
            self._leave_loops()
        return RETURNED

    def _leave_loops(self) -> None:
        """A function's ``return`` inside a loop: the return flag is set, and the loop left;
        the code after each loop it leaves runs only where the flag is not set."""
        frame = self.frame
        if frame.return_flag is None:
            frame.return_flag = self.declare(frame.prefix + "returned", bool_)
        self.emit(Assign(frame.return_flag, Const(True, bool_)))
        frame.raised.append(frame.return_flag)
        if frame.loops[-1].kind == "loop":
            self.emit(Break())
