"""What a kernel's identity hashes from its source: its text, what its free names mean, and the
same for every ``@cj.function`` it reaches.

Names are found by reading the source: every free name (and ``module.name`` chain) and what it
resolves to now, so that rebinding ``T = cj.f64`` at module level, or importing another
function under the same name, changes the identity even though the kernel's text did not.
Functions are followed transitively. A function reached only from a branch a comptime value
removes still counts: the identity must be known without translating the kernel, and being
conservative costs only a spare compile.

A warm process computes identities on its first launches, so :func:`read` parses nothing when it
can: the text is the definition's lines up to its last code line, found by indentation and
checked against the code object (:func:`~cubejit.lang.source_lines.unparsed_source_lines`), and
the names come off that text (:func:`~cubejit.lang.free_names.free_chains`). Where either is not
sure, the parsed source answers that part, as it always did.
"""

from __future__ import annotations

import enum
import hashlib
import textwrap
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from cubejit.compile.id import canonical_digest
from cubejit.ir.types import ArrayType, Scalar, TensorType
from cubejit.lang.annotations import ComptimeType
from cubejit.lang.declaration import MISSING, lookup
from cubejit.lang.free_names import free_chains
from cubejit.lang.function import Function
from cubejit.lang.source_lines import unparsed_source_lines

if TYPE_CHECKING:
    from cubejit.lang.source import PySource

_TYPES = (Scalar, ArrayType, TensorType, ComptimeType)
_NUMPY_SCALARS = (np.bool_, np.integer, np.floating)


class Reading:
    """What an identity reads of one function's source: its text and its free chains (each
    free name read, with the attribute chain read off it). A plain class: one is made per
    kernel and function on a warm first launch."""

    __slots__ = ("_names", "chains", "fn", "text")

    def __init__(
        self, fn: Callable[..., Any], text: str, chains: tuple[tuple[str, tuple[str, ...]], ...]
    ) -> None:
        self.fn = fn
        self.text = text
        """The dedented source the identity hashes."""
        self.chains = chains
        self._names: list[tuple[str, object]] | None = None

    def digest(self) -> str:
        """SHA-256 of :attr:`text`."""
        return hashlib.sha256(self.text.encode()).hexdigest()


def read(fn: Callable[..., Any], parsed: Callable[[], PySource]) -> Reading:
    """``fn``'s reading, without parsing its source where the code object makes that sure;
    ``parsed()`` gives the parsed source for what is not."""
    lines = unparsed_source_lines(fn) if isinstance(fn, types.FunctionType) else None
    text = parsed().text if lines is None else textwrap.dedent("".join(lines[0]))
    chains = free_chains(fn, text) if isinstance(fn, types.FunctionType) else None
    return Reading(fn, text, parsed().free_chains if chains is None else chains)


def _free_names(reading: Reading) -> list[tuple[str, object]]:
    """Each free name or ``module.attr`` chain of ``reading`` and the object it means now
    (looked up once per reading: an identity asks twice, for its functions and its names)."""
    if reading._names is not None:
        return reading._names
    found: list[tuple[str, object]] = []
    for name, chain in reading.chains:
        obj = lookup(reading.fn, name)
        for at, attr in enumerate(chain):
            if not isinstance(obj, types.ModuleType):
                break
            if obj.__name__ == "cubejit" or obj.__name__.startswith("cubejit."):
                obj = _Own(".".join((obj.__name__, *chain[at:])))
                break
            obj = getattr(obj, attr, None)
        if obj is not MISSING:
            found.append((".".join((name, *chain)), obj))
    reading._names = found
    return found


class _Own:
    """A name of cubejit's own, read off one of its modules (``cj.exp``, ``cj.f32``): the build
    id covers what it means, so it is not looked up, which would import the language's modules
    on a warm process's first launch."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path


def _meaning(obj: Any) -> Any:
    """A description of ``obj`` that is the same in every process for the same meaning."""
    if isinstance(obj, _Own):
        return ("cubejit", obj.path)
    if isinstance(obj, Function):
        return ("function", obj.reading.digest())
    if isinstance(obj, _TYPES):
        return ("type", str(obj))
    if isinstance(obj, enum.Enum):
        return ("enum", type(obj).__name__, obj.name)
    if isinstance(obj, types.ModuleType):
        return ("module", obj.__name__)
    if obj is None or isinstance(obj, bool | int | float | str):
        return ("value", obj)
    if isinstance(obj, _NUMPY_SCALARS):
        return ("value", obj.item())
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", None)
    if isinstance(name, str):
        return ("object", str(module), name)
    return ("object", type(obj).__module__, type(obj).__qualname__)


def reached_functions(reading: Reading) -> list[Function]:
    """Every ``@cj.function`` that ``reading``'s source reaches, sorted by qualified name."""
    seen: dict[int, Function] = {}
    pending = [obj for _, obj in _free_names(reading) if isinstance(obj, Function)]
    while pending:
        fn = pending.pop()
        if id(fn) not in seen:
            seen[id(fn)] = fn
            pending.extend(o for _, o in _free_names(fn.reading) if isinstance(o, Function))
    return sorted(seen.values(), key=lambda f: (f.name, f.reading.text))


def _part(reading: Reading) -> tuple[str, tuple[tuple[str, Any], ...]]:
    names = sorted({(spelling, _meaning(obj)) for spelling, obj in _free_names(reading)}, key=repr)
    return reading.text, tuple(names)


def source_digest(reading: Reading) -> str:
    """A hash of the kernel's text and free names, and of every reached function's (made of
    strings and plain values only, so hashed as they are)."""
    functions = tuple(sorted((_part(f.reading) for f in reached_functions(reading)), key=repr))
    return canonical_digest("kernel source", _part(reading), functions)
