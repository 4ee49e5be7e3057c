"""``@cj.function``: a Python function that kernels call and cubejit inlines.

A function is expanded at every call site, with its own copy of its parameters and locals. Its
source is part of the identity of every kernel that reaches it, directly or through other
functions, so editing it recompiles exactly those kernels.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cubejit.lang.declaration import qualified_name, remember_enclosing, source_can_wait

if TYPE_CHECKING:
    import ast

    from cubejit.lang.identity import Reading
    from cubejit.lang.source import PySource


class Function:
    """A function under ``@cj.function``. Called from Python, it runs as plain Python (with
    ``cj.sqrt`` and friends working on Python numbers); called from a kernel, it is inlined."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        remember_enclosing(fn)
        if not source_can_wait(fn):
            self.source  # noqa: B018 -- read now, to fail where the function is defined
        self.name = qualified_name(fn)
        self._body: list[ast.stmt] | None = None
        functools.update_wrapper(self, fn)

    @functools.cached_property
    def source(self) -> PySource:
        """The function's source, read and parsed when a kernel first needs it (its identity or
        its translation), not when the function is defined."""
        from cubejit.lang.source import PySource

        return PySource.of(self.fn, "function")

    @functools.cached_property
    def reading(self) -> Reading:
        """What the identity of a kernel reaching this function reads of its source (see
        :mod:`cubejit.lang.identity`): without parsing it where that is sure."""
        from cubejit.lang.identity import read

        return read(self.fn, lambda: self.source)

    @property
    def assigned(self) -> frozenset[str]:
        """Names the body assigns: parameters among them get a private copy when inlined."""
        return self.source.assigned

    def body(self) -> list[ast.stmt]:
        """The body with every ``return`` moved to the end of the path that takes it (see
        :mod:`cubejit.lang.returns`); raises :class:`~cubejit.lang.source.Problem` for a
        ``return`` inside a loop."""
        if self._body is None:
            from cubejit.lang.returns import tail_returns

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
