"""A function's source lines, as :func:`inspect.getsourcelines` finds them, without tokenizing.

``inspect`` finds where a ``def`` ends by running the tokenizer over the rest of the file, and
the tokenizer's first use in a process compiles its regular expressions: on a warm first launch
that was most of the time spent before the store was even asked. A ``def``'s block ends at the
first code line, after its body's first (the first line its code object runs), indented no
deeper than the ``def`` itself, so the lines up to there are taken and parsed; the parse must
end exactly on the last of them. Wherever that is not sure (a string or bracket that a line of
lower indentation continues, a body on the ``def``'s own line, a file ``linecache`` cannot
read), the answer is ``inspect``'s own, so both always agree.

A kernel's identity needs the lines but not the parse: :func:`unparsed_source_lines` stops at the
last code line and trusts the indentation only where the code object's own positions (every
line an instruction spans) lie inside the lines found.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
import types


def source_lines(fn: types.FunctionType) -> tuple[list[str], int]:
    """``inspect.getsourcelines(fn)``: the lines of ``fn``'s definition (decorators, trailing
    comments indented as its body included) and the file line of the first. Raises what
    ``inspect`` raises (``OSError``, ``TypeError``) when the source is not available."""
    lines, first_line, _ = parsed_source_lines(fn)
    return lines, first_line


def parsed_source_lines(fn: types.FunctionType) -> tuple[list[str], int, ast.Module | None]:
    """:func:`source_lines`, and the parse of the lines dedented when reading them parsed
    them already (``None``: the caller parses)."""
    found = _without_tokenizing(fn)
    if found is None:
        return (*inspect.getsourcelines(fn), None)
    return found


def unparsed_source_lines(fn: types.FunctionType) -> tuple[list[str], int] | None:
    """The lines of ``fn``'s definition up to its last code line (trailing comments left out)
    and the file line of the first, found without parsing: trusted only when every line that
    ``fn``'s code (nested code included) spans lies inside them, so that a string or bracket
    that a line of lower indentation continues is never cut. ``None`` when not sure (the
    caller parses)."""
    found = _scanned(fn)
    if found is None:
        return None
    lines, start, last = found
    if _last_code_line(fn.__code__) > last + 1:
        return None
    return lines[start : last + 1], start + 1


def _last_code_line(code: types.CodeType) -> int:
    """The last file line any instruction of ``code`` or its nested code objects spans."""
    last = max((end for _, end, _, _ in code.co_positions() if end is not None), default=0)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            last = max(last, _last_code_line(const))
    return last


def _scanned(fn: types.FunctionType) -> tuple[list[str], int, int] | None:
    """The file's lines, the index of ``fn``'s first line and of its last code line, found by
    indentation (the first code line after the body's first indented no deeper than the
    ``def``); ``None`` where the file or the code object does not allow it."""
    if hasattr(fn, "__wrapped__"):
        return None
    code = fn.__code__
    file = code.co_filename
    if file.startswith("<") and file.endswith(">"):
        return None
    linecache.checkcache(file)
    lines = linecache.getlines(file, fn.__globals__)
    start = code.co_firstlineno - 1
    if not lines or start >= len(lines):
        return None
    if start > 0 and not _opens_definition(lines[start]):
        return None
    body = [n for _, _, n in code.co_lines() if n is not None and n > code.co_firstlineno]
    if not body or min(body) > len(lines):
        return None
    depth = _indent(lines[start])
    last = min(body) - 1
    for i in range(last, len(lines)):
        stripped = lines[i].strip()
        if not stripped or stripped.startswith("#"):
            continue
        if _indent(lines[i]) <= depth:
            break
        last = i
    return lines, start, last


def _without_tokenizing(fn: types.FunctionType) -> tuple[list[str], int, ast.Module | None] | None:
    found = _scanned(fn)
    if found is None:
        return None
    lines, start, last = found
    block = lines[start : last + 1]
    try:
        module = ast.parse(textwrap.dedent("".join(block)))
    except (SyntaxError, ValueError):
        return None
    tree = module.body[-1] if len(module.body) == 1 else None
    if not isinstance(tree, ast.FunctionDef | ast.AsyncFunctionDef) or tree.name != fn.__name__:
        return None
    if tree.end_lineno != len(block) or tree.body[0].lineno == tree.lineno:
        return None
    body_column = _indent(lines[start + tree.body[0].lineno - 1])
    code_end = last
    for i in range(last + 1, len(lines)):
        stripped = lines[i].strip()
        if stripped and not stripped.startswith("#"):
            break
        if stripped and _indent(lines[i]) >= body_column:
            last = i
    return lines[start : last + 1], start + 1, module if last == code_end else None


def _opens_definition(line: str) -> bool:
    """Whether ``line`` starts a decorator or a ``def``: where ``inspect.findsource`` stops at
    once (its regular expression, compiled in every fresh process, is not needed for that)."""
    words = line.split(None, 2)
    if not words:
        return False
    if words[0].startswith("@"):
        return True
    return words[0] == "def" or (words[0] == "async" and len(words) > 1 and words[1] == "def")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
