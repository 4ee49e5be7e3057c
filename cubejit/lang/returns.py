"""Moving a ``@cj.function``'s returns to the end of each path, so that inlining needs no jump.

After :func:`tail_returns`, a ``return`` is always the last statement its path executes: the
statements that followed an ``if`` holding a return are copied into the branches that fall
through. Inlining then turns ``return v`` into "the result is ``v``" with nothing left to skip. A
return inside a loop leaves it through a flag instead (see ``StatementRules._leave_loops``).
"""

from __future__ import annotations

import ast


def tail_returns(body: list[ast.stmt]) -> list[ast.stmt]:
    """``body`` with every ``return`` last on its path; statements after a return are dropped
    (Python never runs them)."""
    out: list[ast.stmt] = []
    for index, stmt in enumerate(body):
        if isinstance(stmt, ast.Return):
            out.append(stmt)
            return out
        if isinstance(stmt, ast.If) and _has_return(stmt):
            rest = body[index + 1 :]
            branch = ast.If(
                test=stmt.test,
                body=tail_returns(stmt.body + rest),
                orelse=tail_returns(stmt.orelse + rest),
            )
            out.append(ast.copy_location(branch, stmt))
            return out
        out.append(stmt)
    return out


def _has_return(stmt: ast.stmt) -> bool:
    return any(isinstance(node, ast.Return) for node in ast.walk(stmt))
