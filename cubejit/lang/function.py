"""``@cj.function``: a Python function that kernels call and cubejit inlines.

A function is expanded at every call site, with its own copy of its parameters and locals. Its
source is part of the identity of every kernel that reaches it, directly or through other
functions, so editing it recompiles exactly those kernels.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from typing import Any

from cubejit.lang.returns import tail_returns
from cubejit.lang.source import PySource


class Function:
    """A function under ``@cj.function``. Called from Python, it runs as plain Python (with
    ``cj.sqrt`` and friends working on Python numbers); called from a kernel, it is inlined."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.source = PySource.of(fn, "function")
        self.name = self.source.name
        self.assigned = self.source.assigned
        """Names the body assigns: parameters among them get a private copy when inlined."""
        self._body: list[ast.stmt] | None = None
        self.source.free_chains  # noqa: B018 -- found now, off the first launch's path
        functools.update_wrapper(self, fn)

    def body(self) -> list[ast.stmt]:
        """The body with every ``return`` moved to the end of the path that takes it (see
        :mod:`cubejit.lang.returns`); raises :class:`~cubejit.lang.source.Problem` for a
        ``return`` inside a loop."""
        if self._body is None:
            self._body = tail_returns(self.source.tree.body)
        return self._body

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<cj.function {self.name}>"


def function(fn: Callable[..., Any]) -> Function:
    """Marks ``fn`` as callable from kernels: ``@cj.function def axpy(a, x, y): return a * x + y``.

    Parameters may be annotated (a scalar type, ``cj.Array[T]``) to check and convert the
    arguments; a return annotation gives literal results their type. A function returns with
    ``return value`` at the end or inside ``if``/``else`` branches, not from inside a loop.
    """
    return Function(fn)
