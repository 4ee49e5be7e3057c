"""``@cj.kernel``, the :class:`Kernel` it returns and the :class:`KernelSpec` a launch uses.

A kernel is specialised by its ``cube_dim`` and comptime values into a :class:`KernelSpec`, the
object backends compile: it knows its :class:`~cubejit.compile.id.KernelId` and, on demand,
its validated IR. Specs are cached on the kernel keyed by the launch's own arguments, so a
launch of a known specialisation costs one dict lookup before the client's launch.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cubejit.compile.id import KernelId
from cubejit.errors import CompilationError, LaunchError, UnsupportedError
from cubejit.ir.nodes import KernelIR, Param
from cubejit.ir.types import ArrayType, Scalar
from cubejit.ir.validate import validate
from cubejit.lang.annotations import ComptimeType, ParamAnnotation
from cubejit.lang.frontend import translate
from cubejit.lang.identity import source_digest
from cubejit.lang.signature import kernel_parameters
from cubejit.lang.source import Problem, PySource


class KernelSpec:
    """One specialisation of a kernel: fixed ``cube_dim`` and comptime values.

    ``params`` are the launch arguments (comptime parameters excluded) in signature order.
    ``id()`` and ``define()`` are computed once; ``define()`` may be called from any thread.
    """

    __slots__ = (
        "_id",
        "_ir",
        "_lock",
        "comptime",
        "cube_dim",
        "file",
        "kernel",
        "line",
        "name",
        "params",
    )

    def __init__(
        self,
        kernel: Kernel,
        cube_dim: tuple[int, int, int],
        comptime: dict[str, bool | int | float],
    ) -> None:
        self.kernel = kernel
        self.name = kernel.name
        self.params: tuple[Param, ...] = kernel.params
        self.cube_dim = cube_dim
        self.comptime = comptime
        self.file = kernel.file
        self.line = kernel.line
        self._id: KernelId | None = None
        self._ir: dict[int | None, KernelIR] = {}
        self._lock = threading.Lock()

    def id(self) -> KernelId:
        """Name, a hash of the source (and every ``@cj.function`` reached), the argument
        types, the comptime values and ``cube_dim``: equal in every process for equal code."""
        if self._id is None:
            info = (
                ("source", self.kernel.source_digest()),
                ("types", tuple((p.name, str(p.type)) for p in self.params)),
                ("comptime", tuple(sorted(self.comptime.items()))),
            )
            self._id = KernelId(self.name, info, self.cube_dim)
        return self._id

    def define(self, plane_dim: int | None = None) -> KernelIR:
        """The kernel's validated IR for these comptime values, on a target whose planes have
        ``plane_dim`` units (a backend passes its own; None where the kernel does not size
        anything by ``cj.PLANE_DIM``). Raises :class:`~cubejit.errors.CompilationError`
        (``UnsupportedError``, ``ValidationError``) naming the kernel, file and line."""
        ir = self._ir.get(plane_dim)
        if ir is None:
            with self._lock:
                if plane_dim not in self._ir:
                    built = translate(
                        self.kernel.source,
                        self.kernel.signature,
                        self.comptime,
                        self.cube_dim,
                        plane_dim,
                    )
                    validate(built)
                    self._ir[plane_dim] = built
                ir = self._ir[plane_dim]
        return ir

    def __repr__(self) -> str:
        x, y, z = self.cube_dim
        extra = "".join(f", {k}={v!r}" for k, v in self.comptime.items())
        return f"<KernelSpec {self.name} cube_dim=({x}, {y}, {z}){extra}>"


def _cube_dim(value: Any) -> tuple[int, int, int]:
    dims = (
        (value,)
        if isinstance(value, int)
        else tuple(value)
        if isinstance(value, tuple | list)
        else ()
    )
    if not 1 <= len(dims) <= 3 or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims
    ):
        raise LaunchError(
            f"cube_dim must be a positive int or a tuple of 1 to 3 of them, not {value!r}"
        )
    return (*dims, *(1,) * (3 - len(dims)))  # type: ignore[return-value]


class Kernel:
    """A function under ``@cj.kernel``: launched, specialised or prepared, never called.

    Specs are cached under the launch's own spelling of ``cube_dim`` and comptime values (the
    fast path: one dict lookup) and under their canonical form ``("spec", dims, values)``.
    """

    def __init__(self, fn: Callable[..., Any], warm: Iterable[Mapping[str, Any]] = ()) -> None:
        self.fn = fn
        self.source = PySource.of(fn, "kernel")
        self.name = self.source.name
        self.file = self.source.file
        self.line = self.source.def_line
        self.warm: list[dict[str, Any]] = [dict(w) for w in warm]
        """Specialisations to compile ahead of time: ``dict(cube_dim=..., **comptime)``."""
        try:
            self.signature: list[tuple[str, ParamAnnotation]] = kernel_parameters(self.source)
        except Problem as problem:
            kind = UnsupportedError if problem.unsupported else CompilationError
            node = problem.node or self.source.tree
            raise kind(
                self.source.message(node, self.name, problem.message), kernel=self.name
            ) from None
        self.params = tuple(
            Param(n, t) for n, t in self.signature if isinstance(t, Scalar | ArrayType)
        )
        self.comptime_params: dict[str, ComptimeType] = {
            n: t for n, t in self.signature if isinstance(t, ComptimeType)
        }
        self._specs: dict[Any, KernelSpec] = {}
        self._digest: str | None = None
        self.source.free_chains  # noqa: B018 -- found now, off the first launch's path
        functools.update_wrapper(self, fn)

    def source_digest(self) -> str:
        """The hash of the kernel's source and every function it reaches (computed once)."""
        if self._digest is None:
            self._digest = source_digest(self.source)
        return self._digest

    def launch(
        self, client: Any, cube_count: Any, cube_dim: Any, *args: Any, **comptime: Any
    ) -> Any:
        """Runs ``cube_count`` cubes of ``cube_dim`` units with ``args`` (comptime values by
        keyword) on ``client``, through ``client.launch(spec, cube_count, args)``."""
        try:
            spec = self._specs[(cube_dim, *comptime.items()) if comptime else cube_dim]
        except (KeyError, TypeError):
            spec = self._specialize_key(cube_dim, comptime)
        return client.launch(spec, cube_count, args)

    def specialize(self, cube_dim: Any, **comptime: Any) -> KernelSpec:
        """The :class:`KernelSpec` a launch with this ``cube_dim`` and comptime values uses."""
        try:
            return self._specs[(cube_dim, *comptime.items()) if comptime else cube_dim]
        except (KeyError, TypeError):
            return self._specialize_key(cube_dim, comptime)

    def prepare(self, client: Any, cube_dim: Any, **comptime: Any) -> Any:
        """Asks ``client`` to have this specialisation ready (``client.prepare(spec)``)."""
        return client.prepare(self.specialize(cube_dim, **comptime))

    def _specialize_key(self, cube_dim: Any, comptime: dict[str, Any]) -> KernelSpec:
        dims = _cube_dim(cube_dim)
        values = self._comptime_values(comptime)
        canonical = ("spec", dims, tuple(sorted(values.items())))
        spec = self._specs.get(canonical)
        if spec is None:
            spec = self._specs.setdefault(canonical, KernelSpec(self, dims, values))
        try:
            self._specs[(cube_dim, *comptime.items()) if comptime else cube_dim] = spec
        except TypeError:
            pass
        return spec

    def _comptime_values(self, given: dict[str, Any]) -> dict[str, bool | int | float]:
        expected = self.comptime_params
        unknown = [k for k in given if k not in expected]
        if unknown:
            names = ", ".join(expected) or "none"
            raise LaunchError(
                f"kernel {self.name} has no comptime parameter "
                f"{', '.join(repr(u) for u in unknown)} (its comptime parameters: "
                f"{names}); pass arguments positionally, comptime values by name"
            )
        missing = [k for k in expected if k not in given]
        if missing:
            raise LaunchError(
                f"kernel {self.name} needs the comptime parameter(s) "
                f"{', '.join(missing)}, passed by keyword: "
                f"{missing[0]}=..."
            )
        values = {}
        for name, kind in expected.items():
            try:
                values[name] = kind.convert(given[name])
            except TypeError as exc:
                raise LaunchError(
                    f"kernel {self.name}: comptime parameter {name} is {kind}: {exc}"
                ) from None
        return values

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise LaunchError(
            f"kernel {self.name} is not called directly; launch it: "
            f"{self.fn.__name__}.launch(client, cube_count, cube_dim, *args)"
        )

    def __repr__(self) -> str:
        return f"<cj.kernel {self.name} ({self.file}:{self.line})>"


def kernel(fn: Callable[..., Any] | None = None, *, warm: Iterable[Mapping[str, Any]] = ()) -> Any:
    """Makes ``fn`` a kernel: ``@cj.kernel`` or ``@cj.kernel(warm=[dict(cube_dim=256, N=4)])``.

    ``warm`` lists specialisations a tool may compile ahead of any launch. The signature is
    read now (every parameter annotated with a scalar type, ``cj.Array[T]`` or
    ``cj.Comptime[T]``); the body is translated when a specialisation is first defined.
    """
    if fn is None:
        return lambda f: Kernel(f, warm)
    return Kernel(fn, warm)
