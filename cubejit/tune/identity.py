"""What a candidate is, as a store key sees it: its name, the kernels it launches and its code.

A decision must be found before anything runs (a process that finds one tunes nothing, and
compiles only the winner), so what a candidate launches is read from the candidate itself, not
from a run:

- the kernels it declares (``cj.Tunable(name, fn, kernels=[k, ...])``): a ``@cj.kernel`` counts
  with its source (and every ``@cj.function`` it reaches), a ``KernelSpec`` or ``KernelId``
  with its whole id (types, comptime values, cube_dim);
- and always the kernels its launch function reaches: those it names (globals, closure cells,
  default values), followed through plain functions and ``functools.partial`` it names too, so
  that a candidate calling a helper still counts the helper's kernels (functions of installed
  libraries, the standard library and cubejit count by their names alone);
- and that function's own code: its bytecode, constants and the plain values it reads
  (``BLOCK = 256`` at module level), so that editing ``256`` into ``128`` in a lambda re-tunes.

The first run of each candidate while tuning (its warm-up) goes through a
:class:`LaunchRecorder`: the ids of the kernels it really launched are kept in the decision,
and a kernel the identity did not count is named in a WARNING, with what to declare.

The bytecode is Python's, so another Python version tunes again. A kernel reached only through
an object the walk cannot see into (a method of a class instance) is missed unless declared:
declare it, and a change to its source re-tunes.
"""

from __future__ import annotations

import functools
import hashlib
import os
import site
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cubejit.compile.id import KernelId, stable_digest
from cubejit.lang.kernel import Kernel, KernelSpec

_PLAIN = (type(None), bool, int, float, str, bytes)
_MAX_DEPTH = 8
_LIBRARIES = tuple(
    sorted(
        {
            str(Path(place).resolve()) + "/"
            for place in (os.path.dirname(os.__file__), *site.getsitepackages())
        }
        | {str(Path(__file__).resolve().parents[1]) + "/"}
    )
)
"""Where installed code lives (the standard library, site-packages, cubejit itself): a
function from there counts by its name, not its code, so the walk stays short and an upgrade
of a library does not re-tune (an upgrade of cubejit does, by the namespace). Read off
:mod:`os` and :mod:`site`, not :mod:`sysconfig`, whose paths took a warm process's first tuned
call 3 ms to expand."""


def _in_library(fn: types.FunctionType) -> bool:
    return str(Path(fn.__code__.co_filename).resolve()).startswith(_LIBRARIES)


@dataclass(frozen=True, slots=True)
class CandidateIdentity:
    """The named parts of one candidate's identity, kept in a decision so that a re-tune can
    be explained."""

    name: str
    """The candidate's name."""
    kernels: tuple[tuple[str, str], ...]
    """``(kernel name, digest)`` of every kernel it declares or reaches, sorted."""
    code: str
    """A digest of its launch function's code and the plain values it reads."""

    def digest(self) -> str:
        return stable_digest("candidate", self.name, self.kernels, self.code)

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "kernels": [list(k) for k in self.kernels], "code": self.code}


def kernel_part(item: Any) -> tuple[str, str]:
    """``(name, digest)`` of a declared kernel, spec or kernel id. TypeError for anything
    else."""
    if isinstance(item, Kernel):
        return item.name, f"source:{item.source_digest()}"
    if isinstance(item, KernelSpec):
        return item.name, f"id:{item.id().stable_hash()}"
    if isinstance(item, KernelId):
        return item.name, f"id:{item.stable_hash()}"
    raise TypeError(
        f"a Tunable declares kernels as @cj.kernel functions, KernelSpecs or KernelIds, "
        f"not {type(item).__name__}"
    )


def identify(name: str, fn: Callable[..., Any], declared: Iterable[Any]) -> CandidateIdentity:
    """The identity of the candidate ``name`` launching through ``fn``."""
    walk = _Walk()
    walk.visit(fn, 0)
    kernels = {kernel_part(k) for k in declared} | walk.kernels
    code = hashlib.sha256(b"".join(walk.code)).hexdigest()
    return CandidateIdentity(name, tuple(sorted(kernels)), code)


class _Walk:
    """Follows a launch function through what it names, collecting kernels and code."""

    def __init__(self) -> None:
        self.kernels: set[tuple[str, str]] = set()
        self.code: list[bytes] = []
        self._seen: set[int] = set()

    def visit(self, obj: Any, depth: int) -> None:
        if depth > _MAX_DEPTH or id(obj) in self._seen:
            return
        if isinstance(obj, Kernel | KernelSpec | KernelId):
            self.kernels.add(kernel_part(obj))
            return
        self._seen.add(id(obj))
        if isinstance(obj, functools.partial):
            self.visit(obj.func, depth + 1)
            for value in (*obj.args, *obj.keywords.values()):
                self._value(value, depth + 1)
        elif isinstance(obj, types.MethodType):
            self.visit(obj.__func__, depth + 1)
        elif isinstance(obj, types.FunctionType):
            if _in_library(obj):
                self.code.append(f"{obj.__module__}.{obj.__qualname__}".encode())
            else:
                self._function(obj, depth)

    def _function(self, fn: types.FunctionType, depth: int) -> None:
        names: list[str] = []
        self._code(fn.__code__, names)
        for cell in fn.__closure__ or ():
            try:
                self._value(cell.cell_contents, depth + 1)
            except ValueError:
                continue
        for value in (*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()):
            self._value(value, depth + 1)
        module = fn.__globals__
        for name in names:
            if name in module:
                self.code.append(name.encode() + b"=")
                self._value(module[name], depth + 1)

    def _code(self, code: types.CodeType, names: list[str]) -> None:
        self.code.append(code.co_code)
        self.code.append(repr([c for c in code.co_consts if isinstance(c, _PLAIN)]).encode())
        self.code.append(repr(code.co_names).encode())
        names.extend(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                self._code(const, names)

    def _value(self, value: Any, depth: int) -> None:
        if isinstance(value, _PLAIN):
            self.code.append(repr(value).encode())
        elif isinstance(value, tuple) and all(isinstance(v, _PLAIN) for v in value):
            self.code.append(repr(value).encode())
        elif isinstance(value, Kernel | KernelSpec | KernelId):
            self.kernels.add(kernel_part(value))
        elif isinstance(value, types.FunctionType | functools.partial | types.MethodType):
            self.visit(value, depth)


class LaunchRecorder:
    """A client as a candidate's warm-up sees it: the same client, which also keeps the id of
    every kernel launched through it, so that a kernel the identity missed can be named."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.launched: list[KernelId] = []
        """The ids of the kernels launched, in order, each once."""

    def launch(self, spec: Any, cube_count: Any, args: tuple[Any, ...]) -> Any:
        kernel_id = spec.id()
        if kernel_id not in self.launched:
            self.launched.append(kernel_id)
        return self._client.launch(spec, cube_count, args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)
