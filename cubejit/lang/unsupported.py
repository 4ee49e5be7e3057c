"""What the frontend says about Python it does not translate: the construct and what to write.

The translator's fallback looks a syntax node up here, so every construct of Python has a
message naming it, even one this table forgets (it then names the node's class).
"""

from __future__ import annotations

import ast

_KERNEL_SEES = (
    "a kernel sees only its parameters, locals, cubejit's names (cj.f32, cj.sqrt, "
    "cj.ABSOLUTE_POS...) and @cj.function functions"
)

_ADVICE: dict[type[ast.AST], tuple[str, str]] = {
    ast.Try: (
        "a `try` statement",
        "kernels cannot raise or catch exceptions; test the condition with `if` instead",
    ),
    ast.Raise: ("a `raise` statement", "kernels cannot raise; end the unit with `return`"),
    ast.Assert: ("an `assert` statement", "test the condition with `if` and `return`"),
    ast.With: ("a `with` statement", "kernels have no context managers"),
    ast.Import: ("an `import`", "import at module level; the kernel uses the names"),
    ast.ImportFrom: ("an `import`", "import at module level; the kernel uses the names"),
    ast.FunctionDef: ("a nested `def`", "define it at module level under @cj.function"),
    ast.ClassDef: ("a `class` statement", "kernels work on scalars and arrays only"),
    ast.Lambda: ("a `lambda`", "define a module-level function under @cj.function"),
    ast.Global: ("a `global` statement", _KERNEL_SEES),
    ast.Nonlocal: ("a `nonlocal` statement", _KERNEL_SEES),
    ast.Delete: ("a `del` statement", "locals live for the whole kernel; just stop using it"),
    ast.Match: ("a `match` statement", "write `if` / `elif` / `else`"),
    ast.List: ("a list", "use a cj.Array parameter, or several scalar locals"),
    ast.Tuple: ("a tuple", "assign and pass values one at a time"),
    ast.Dict: ("a dict", "use cj.Array parameters"),
    ast.Set: ("a set", "use cj.Array parameters"),
    ast.ListComp: ("a list comprehension", "write a `for` loop storing into a cj.Array"),
    ast.SetComp: ("a set comprehension", "write a `for` loop"),
    ast.DictComp: ("a dict comprehension", "write a `for` loop"),
    ast.GeneratorExp: ("a generator expression", "write a `for` loop"),
    ast.JoinedStr: ("an f-string", "kernels have no strings"),
    ast.Await: ("`await`", "kernels are not coroutines"),
    ast.Yield: ("`yield`", "kernels are not generators"),
    ast.YieldFrom: ("`yield from`", "kernels are not generators"),
    ast.NamedExpr: ("an assignment expression (`:=`)", "assign on its own line first"),
    ast.Starred: ("a starred expression", "pass arguments one by one"),
    ast.Slice: ("a slice", "arrays are indexed one element at a time: a[i]"),
    ast.AsyncFor: ("an `async for`", "write a plain `for v in range(...)`"),
    ast.AsyncWith: ("an `async with`", "kernels have no context managers"),
    ast.AsyncFunctionDef: ("an `async def`", "kernels are plain functions"),
}


def describe(node: ast.AST) -> tuple[str, str]:
    """The construct ``node`` is and what to write instead."""
    return _ADVICE.get(
        type(node),
        (f"Python syntax `{type(node).__name__}`", "see LANGUAGE.md for what kernels may use"),
    )


def unsupported_message(node: ast.AST) -> str:
    what, instead = describe(node)
    return f"{what} is not supported in a kernel; {instead}"


def kernel_sees() -> str:
    """The reminder of what names a kernel may use."""
    return _KERNEL_SEES
