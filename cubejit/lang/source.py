"""A Python function's source as the frontend reads it: text, syntax tree, names, places.

Kernels and ``@cj.function`` functions are never run; cubejit reads their source. A
:class:`PySource` holds what every later step needs: the parsed ``def``, the text that goes into
the kernel's identity, how the function's free names resolve (closure, then module globals, then
builtins, as Python would) and how to point at a line of it in an error message.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

from cubejit.errors import UnsupportedError
from cubejit.lang.declaration import MISSING, lookup, qualified_name
from cubejit.lang.source_lines import parsed_source_lines


class Problem(Exception):
    """What is wrong with one construct, before the frontend knows where it is.

    Raised by the typing rules and caught by the translator, which adds the place (the
    innermost syntax node being translated, unless ``node`` says otherwise) and raises a
    :class:`~cubejit.errors.CompilationError`; ``unsupported`` selects
    :class:`~cubejit.errors.UnsupportedError`.
    """

    def __init__(self, message: str, *, unsupported: bool = False, node: ast.AST | None = None):
        super().__init__(message)
        self.message = message
        self.unsupported = unsupported
        self.node = node


class Spelling:
    """The source text of a syntax node, written out only when a message needs it (most
    expressions never fail, and unparsing each one would cost more than translating it)."""

    __slots__ = ("node", "quoted")

    def __init__(self, node: ast.AST, quoted: bool = False) -> None:
        self.node = node
        self.quoted = quoted

    def quote(self) -> Spelling:
        """The same text in backticks."""
        return Spelling(self.node, True)

    def __str__(self) -> str:
        text = ast.unparse(self.node)
        return f"`{text}`" if self.quoted else text


class PySource:
    """The source of one Python function, parsed.

    A plain class rather than a dataclass: it is made on a kernel's first specialisation, often
    a warm process's first launch, and a dataclass generates and compiles its methods when its
    module is imported.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str,
        file: str,
        first_line: int,
        indent: int,
        lines: tuple[str, ...],
        text: str,
        tree: ast.FunctionDef,
    ) -> None:
        self.fn = fn
        self.name = name
        """The function's qualified name."""
        self.file = file
        self.first_line = first_line
        """The file line of the first source line (a decorator's, if any)."""
        self.indent = indent
        """Columns removed from every line so that the ``def`` parses at the top level."""
        self.lines = lines
        """The source lines as they are in the file."""
        self.text = text
        """The dedented source: what the kernel's identity hashes."""
        self.tree = tree

    @classmethod
    def of(cls, fn: Callable[..., Any], what: str) -> PySource:
        """Reads and parses ``fn``'s source; ``what`` ("kernel", "function") names it in errors."""
        name = qualified_name(fn) if hasattr(fn, "__qualname__") else repr(fn)
        if not inspect.isfunction(fn):
            raise UnsupportedError(
                f"@cj.{what} decorates a Python function (a `def`), not {type(fn).__name__} {name}",
                kernel=name,
            )
        try:
            lines, first_line, parsed = parsed_source_lines(fn)
            file = inspect.getsourcefile(fn) or inspect.getfile(fn)
        except (OSError, TypeError) as exc:
            raise UnsupportedError(
                f"cubejit reads a {what}'s source, and the source of {name} is not available "
                f"({exc}); define it in a file, not in an interactive prompt or exec()",
                kernel=name,
            ) from None
        raw = "".join(lines)
        text = textwrap.dedent(raw)
        indent = len(lines[0]) - len(lines[0].lstrip()) if text != raw else 0
        module = ast.parse(text) if parsed is None else parsed
        tree = module.body[0]
        if not isinstance(tree, ast.FunctionDef):
            raise UnsupportedError(
                f"{file}:{first_line}: @cj.{what} {name} must be a plain `def` function "
                f"(not async, not a lambda)",
                kernel=name,
            )
        return cls(fn, name, file, first_line, indent, tuple(lines), text, tree)

    @functools.cached_property
    def assigned(self) -> frozenset[str]:
        """The names Python treats as locals of the function (see :func:`assigned_names`)."""
        return assigned_names(self.tree)

    @functools.cached_property
    def free_chains(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Each free name the function reads, with the attribute chain read off it
        (``cj.f32`` is ``("cj", ("f32",))``), in the order of the tree. Only the text decides
        them, so a kernel finds them once, when it is decorated; what they mean is looked up
        when its identity is computed."""
        args = self.tree.args
        own = self.assigned | {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        found: list[tuple[str, tuple[str, ...]]] = []
        for node in ast.walk(self.tree):
            chain: list[str] = []
            base: ast.expr = node  # type: ignore[assignment]
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if not isinstance(base, ast.Name) or not isinstance(node, ast.Name | ast.Attribute):
                continue
            if base.id in own or not isinstance(node.ctx, ast.Load):
                continue
            found.append((base.id, tuple(reversed(chain))))
        return tuple(found)

    @property
    def def_line(self) -> int:
        """The file line of the ``def`` keyword."""
        return self.first_line + self.tree.lineno - 1

    def digest(self) -> str:
        """SHA-256 of :attr:`text`."""
        return hashlib.sha256(self.text.encode()).hexdigest()

    def lookup(self, name: str) -> Any:
        """What ``name`` means to the function outside its own locals (see
        :func:`~cubejit.lang.declaration.lookup`); a private sentinel (see :func:`is_missing`)
        when it means nothing."""
        return lookup(self.fn, name)

    def place(self, node: ast.AST) -> tuple[int, int]:
        """The file line and column (1-based) where ``node`` starts."""
        line = getattr(node, "lineno", self.tree.lineno)
        col = getattr(node, "col_offset", 0)
        return self.first_line + line - 1, col + self.indent + 1

    def message(self, node: ast.AST, kernel: str, text: str) -> str:
        """An error message about ``node``: ``file:line:col``, the kernel, ``text``, then the
        source line with a caret under the column."""
        line, col = self.place(node)
        index = line - self.first_line
        source = self.lines[index].rstrip("\n") if 0 <= index < len(self.lines) else ""
        caret = " " * (col - 1) + "^"
        return f"{self.file}:{line}:{col}: in kernel {kernel}: {text}\n    {source}\n    {caret}"


def is_missing(value: Any) -> bool:
    """Whether :meth:`PySource.lookup` found nothing."""
    return value is MISSING


def assigned_names(tree: ast.FunctionDef) -> frozenset[str]:
    """The names Python would treat as locals of ``tree``'s body (assigned somewhere in it)."""
    names = {
        node.id
        for stmt in tree.body
        for node in ast.walk(stmt)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    return frozenset(names)
