"""What a kernel's identity hashes from its source: its text, what its free names mean, and the
same for every ``@cj.function`` it reaches.

Names are found by reading the source: every free name (and ``module.name`` chain) and what it
resolves to now, so that rebinding ``T = cj.f64`` at module level, or importing another
function under the same name, changes the identity even though the kernel's text did not.
Functions are followed transitively. A function reached only from a branch a comptime value
removes still counts: the identity must be known without translating the kernel, and being
conservative costs only a spare compile.
"""

from __future__ import annotations

import enum
import types
from typing import Any

import numpy as np

from cubejit.compile.id import stable_digest
from cubejit.ir.types import ArrayType, Scalar, TensorType
from cubejit.lang.annotations import ComptimeType
from cubejit.lang.function import Function
from cubejit.lang.source import PySource, is_missing


def _free_names(source: PySource) -> list[tuple[str, object]]:
    """Each free name or ``module.attr`` chain of ``source`` and the object it means now."""
    found: list[tuple[str, object]] = []
    for name, chain in source.free_chains:
        obj = source.lookup(name)
        for attr in chain:
            if not isinstance(obj, types.ModuleType):
                break
            obj = getattr(obj, attr, None)
        if not is_missing(obj):
            found.append((".".join((name, *chain)), obj))
    return found


def _meaning(obj: Any) -> Any:
    """A description of ``obj`` that is the same in every process for the same meaning."""
    if isinstance(obj, Function):
        return ("function", obj.source.digest())
    if isinstance(obj, Scalar | ArrayType | TensorType | ComptimeType):
        return ("type", str(obj))
    if isinstance(obj, enum.Enum):
        return ("enum", type(obj).__name__, obj.name)
    if isinstance(obj, types.ModuleType):
        return ("module", obj.__name__)
    if obj is None or isinstance(obj, bool | int | float | str):
        return ("value", obj)
    if isinstance(obj, np.bool_ | np.integer | np.floating):
        return ("value", obj.item())
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", None)
    if isinstance(name, str):
        return ("object", str(module), name)
    return ("object", type(obj).__module__, type(obj).__qualname__)


def reached_functions(source: PySource) -> list[Function]:
    """Every ``@cj.function`` that ``source`` reaches, sorted by qualified name."""
    seen: dict[int, Function] = {}
    pending = [obj for _, obj in _free_names(source) if isinstance(obj, Function)]
    while pending:
        fn = pending.pop()
        if id(fn) not in seen:
            seen[id(fn)] = fn
            pending.extend(o for _, o in _free_names(fn.source) if isinstance(o, Function))
    return sorted(seen.values(), key=lambda f: (f.name, f.source.text))


def _part(source: PySource) -> tuple[str, tuple[tuple[str, Any], ...]]:
    names = sorted({(spelling, _meaning(obj)) for spelling, obj in _free_names(source)}, key=repr)
    return source.text, tuple(names)


def source_digest(source: PySource) -> str:
    """A hash of the kernel's text and free names, and of every reached function's."""
    functions = tuple(sorted((_part(f.source) for f in reached_functions(source)), key=repr))
    return stable_digest("kernel source", _part(source), functions)
