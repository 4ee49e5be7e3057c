"""What ``@cj.kernel`` and ``@cj.function`` know of a function when they wrap it, before its
source is read: its name, whether reading the source may wait, and the signature Python has
already evaluated.

Reading and parsing the source (``inspect``, ``ast``, the file's lines) waits for the first
specialisation, so importing a module of kernels costs little more than defining its functions.
A kernel's signature is still checked where it is defined, from ``fn.__annotations__`` read the
way :mod:`cubejit.lang.signature` reads the source (names through the closure, the enclosing
function's locals for a nested function's postponed annotations, the module's globals, then
builtins; attributes; subscripts; tuples; ints). Whenever this reading is not sure
(an annotation spelled otherwise, a default, ``*args``, a return type, a function whose source is
not in a file), it answers ``None`` and the caller reads the source at once: a wrong signature
fails with the message and place it always had.
"""

from __future__ import annotations

import builtins
import keyword
import os
import re
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

from cubejit.ir.types import ArrayType, Scalar, TensorType
from cubejit.lang.annotations import ComptimeType, ParamAnnotation

_CO_VARARGS = 0x04
_CO_VARKEYWORDS = 0x08
_CO_COROUTINE = 0x80
_CO_ASYNC_GENERATOR = 0x200

_TOKEN = re.compile(r"\s*([A-Za-z_]\w*|0|[1-9]\d*|[.\[\],]|\S)")
"""Names, decimal ints and the punctuation of an annotation; anything else is one odd token."""


class _Unsure(Exception):
    """The annotation is not one this module reads; the source will say what it is."""


def qualified_name(fn: Callable[..., Any]) -> str:
    """``module.qualname``: the name ids, messages and the IR use for a kernel or function."""
    return f"{fn.__module__}.{fn.__qualname__}"


def source_can_wait(fn: object) -> bool:
    """Whether ``fn`` is a plain ``def`` whose source is a file on disk, so that reading it may
    wait for the first specialisation (anything else is read at once, to fail at once)."""
    if not isinstance(fn, types.FunctionType) or fn.__name__ == "<lambda>":
        return False
    code = fn.__code__
    if code.co_flags & (_CO_COROUTINE | _CO_ASYNC_GENERATOR):
        return False
    return os.path.isfile(code.co_filename)


def declared_signature(fn: object) -> list[tuple[str, ParamAnnotation]] | None:
    """A kernel's parameters and their annotations, in signature order, read from what Python
    evaluated; ``None`` when the source must be read to know them (or to say what is wrong)."""
    if not source_can_wait(fn):
        return None
    assert isinstance(fn, types.FunctionType)
    code = fn.__code__
    if code.co_flags & (_CO_VARARGS | _CO_VARKEYWORDS) or fn.__defaults__ or fn.__kwdefaults__:
        return None
    annotations = fn.__annotations__
    if annotations.get("return", None) not in (None, "None"):
        return None
    params = []
    for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
        if name not in annotations:
            return None
        try:
            found = _annotation(fn, annotations[name])
        except _Unsure:
            return None
        if not isinstance(found, Scalar | ArrayType | TensorType | ComptimeType):
            return None
        params.append((name, found))
    return params


def _annotation(fn: types.FunctionType, value: object) -> object:
    """What one entry of ``__annotations__`` names: the object itself, or a string (``from
    __future__ import annotations``) read as the source reader would read it."""
    if not isinstance(value, str):
        return value
    tokens = _TOKEN.findall(value)
    found, end = _expression(fn, tokens, 0)
    if end != len(tokens):
        raise _Unsure
    return found


def _expression(fn: types.FunctionType, tokens: list[str], at: int) -> tuple[object, int]:
    """The value of the expression starting at ``tokens[at]``, and where it ends."""
    first = tokens[at] if at < len(tokens) else ""
    if first.isdigit():
        return int(first), at + 1
    if not first.isidentifier() or keyword.iskeyword(first):
        raise _Unsure
    value, at = _lookup(fn, first), at + 1
    while at < len(tokens) and tokens[at] in (".", "["):
        if tokens[at] == ".":
            attr = tokens[at + 1] if at + 1 < len(tokens) else ""
            if not attr.isidentifier() or not hasattr(value, attr):
                raise _Unsure
            value, at = getattr(value, attr), at + 2
            continue
        items = []
        closed = False
        while not closed:
            item, at = _expression(fn, tokens, at + 1)
            items.append(item)
            if at >= len(tokens) or tokens[at] not in (",", "]"):
                raise _Unsure
            closed = tokens[at] == "]"
        at += 1
        try:
            value = value[items[0] if len(items) == 1 else tuple(items)]  # type: ignore[index]
        except Exception:
            raise _Unsure from None
    return value, at


MISSING = object()
""":func:`lookup`'s answer for a name that means nothing to the function."""

_ENCLOSING: weakref.WeakKeyDictionary[Callable[..., Any], dict[str, object]] = (
    weakref.WeakKeyDictionary()
)
"""For a function defined inside another whose annotations are postponed (strings, under ``from
__future__ import annotations``): what the enclosing function's locals held, at the
definition, under the names those annotations use and its closure does not hold. A name only an
annotation uses is no free variable of the function, so its closure cannot say what it is."""

_FRAMES_SEARCHED = 8
"""How far above the decorator the frame that ran the ``def`` is looked for."""


def remember_enclosing(fn: object) -> None:
    """Keeps, for :func:`lookup`, what the function running the ``def`` of ``fn`` (a nested
    function of postponed annotations) held under the names its annotations use: a kernel made
    per element type, ``def make(T): @cj.kernel def k(x: cj.Array[T]) ...``, reads ``T``."""
    if not isinstance(fn, types.FunctionType) or "<locals>" not in fn.__qualname__:
        return
    texts = [a for a in fn.__annotations__.values() if isinstance(a, str)]
    if not texts:
        return
    code = fn.__code__
    frame = sys._getframe(1)
    for _ in range(_FRAMES_SEARCHED):
        if frame is None:
            return
        if code in frame.f_code.co_consts:
            break
        frame = frame.f_back
    else:
        return
    names = {t for text in texts for t in _TOKEN.findall(text) if t.isidentifier()}
    scope = frame.f_locals
    found = {n: scope[n] for n in names - set(code.co_freevars) if n in scope}
    if found:
        _ENCLOSING[fn] = found


def lookup(fn: Callable[..., Any], name: str) -> object:
    """What ``name`` means to ``fn`` outside its own locals: its closure, the enclosing
    function's locals its postponed annotations name (:func:`remember_enclosing`), its module's
    globals, then builtins; :data:`MISSING` when nothing. The one reading of a name that the
    signature, the frontend and a kernel's identity all share."""
    code = fn.__code__
    if name in code.co_freevars and fn.__closure__ is not None:
        try:
            return fn.__closure__[code.co_freevars.index(name)].cell_contents
        except ValueError:
            return MISSING
    enclosing = _ENCLOSING.get(fn) if "<locals>" in fn.__qualname__ else None
    if enclosing is not None and name in enclosing:
        return enclosing[name]
    if name in fn.__globals__:
        return fn.__globals__[name]
    return getattr(builtins, name, MISSING)


def _lookup(fn: types.FunctionType, name: str) -> object:
    """:func:`lookup`, unsure of a name that means nothing."""
    found = lookup(fn, name)
    if found is MISSING:
        raise _Unsure
    return found
