"""``@cj.kernel``, the :class:`Kernel` it returns and the :class:`KernelSpec` a launch uses.

A kernel is specialised by its ``cube_dim``, comptime values and the rank of each
``cj.Tensor[T]`` parameter into a :class:`KernelSpec`, the object backends compile: it knows its
:class:`~cubejit.compile.id.KernelId` and, on demand, its validated IR. Specs are cached on the
kernel keyed by the launch's own arguments, so a launch of a known specialisation costs one dict
lookup before the client's launch (a kernel with tensors reads each tensor argument's ``ndim``
too: a rank is part of the kernel, a shape never is).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from cubejit.errors import CompilationError, LaunchError, UnsupportedError
from cubejit.ir.types import LINE_AT_LAUNCH, LINE_SIZES, ArrayType, Scalar, TensorType
from cubejit.lang.annotations import ComptimeType, ParamAnnotation
from cubejit.lang.declaration import declared_signature, qualified_name, remember_enclosing

if TYPE_CHECKING:
    from cubejit.compile.id import KernelId, KernelIdStem
    from cubejit.ir.nodes import KernelIR, Param
    from cubejit.lang.identity import Reading
    from cubejit.lang.source import PySource

LINE_SIZES_KEYWORD = "line_sizes"
"""The keyword ``specialize`` and ``prepare`` take the line size of each ``cj.Line[T]``
parameter by (``line_sizes=dict(x=4)``); a launch chooses them from its arguments."""


class Layout:
    """What the specs of one kernel with the same tensor ranks and line sizes share: the
    specialised signature, the launch parameters and their types as an id spells them. Made
    once per kernel and layout, not per spec."""

    __slots__ = ("_stem", "kernel", "params", "signature", "types")

    def __init__(self, kernel: Kernel, ranks: dict[str, int], lines: dict[str, int]) -> None:
        from cubejit.ir.nodes import Param

        self.signature: list[tuple[str, ParamAnnotation]] = [
            (n, _specialised(n, t, ranks, lines)) for n, t in kernel.signature
        ]
        self.params: tuple[Param, ...] = tuple(
            Param(n, t) for n, t in self.signature if isinstance(t, Scalar | ArrayType | TensorType)
        )
        self.types = tuple((p.name, str(p.type)) for p in self.params)
        self.kernel = kernel
        self._stem: KernelIdStem | None = None

    def stem(self) -> KernelIdStem:
        """What the ids of these specs share: the kernel's name, source and types (the source
        read when the first id is asked for)."""
        if self._stem is None:
            from cubejit.compile.id import KernelIdStem

            head = (("source", self.kernel.source_digest()), ("types", self.types))
            self._stem = KernelIdStem(self.kernel.name, head, 3)
        return self._stem


def _specialised(
    name: str, t: ParamAnnotation, ranks: dict[str, int], lines: dict[str, int]
) -> ParamAnnotation:
    if isinstance(t, TensorType) and name in ranks:
        t = dataclasses.replace(t, rank=ranks[name])
    if isinstance(t, ArrayType | TensorType) and name in lines:
        t = dataclasses.replace(t, line=lines[name])
    return t


class KernelSpec:
    """One specialisation of a kernel: fixed ``cube_dim``, comptime values and tensor ranks.

    ``params`` are the launch arguments (comptime parameters excluded) in signature order, each
    tensor with its rank.
    ``id()`` and ``define()`` are computed once; ``define()`` may be called from any thread.
    """

    __slots__ = (
        "_id",
        "_ir",
        "_layout",
        "_lock",
        "comptime",
        "cube_dim",
        "kernel",
        "lines",
        "name",
        "params",
        "ranks",
        "signature",
    )

    def __init__(
        self,
        kernel: Kernel,
        cube_dim: tuple[int, int, int],
        comptime: dict[str, bool | int | float],
        ranks: dict[str, int] | None = None,
        lines: dict[str, int] | None = None,
    ) -> None:
        import threading

        self.kernel = kernel
        self.name = kernel.name
        self.ranks = ranks or {}
        """The rank of each tensor parameter whose annotation leaves it to the launch."""
        self.lines = lines or {}
        """The line size of each ``cj.Line[T]`` parameter, chosen at launch."""
        layout = kernel.layout(self.ranks, self.lines)
        self.signature: list[tuple[str, ParamAnnotation]] = layout.signature
        """Shared by the specs of one kernel with these ranks and line sizes: never changed."""
        self.params: tuple[Param, ...] = layout.params
        self._layout = layout
        self.cube_dim = cube_dim
        self.comptime = comptime
        self._id: KernelId | None = None
        self._ir: dict[int | None, KernelIR] = {}
        self._lock = threading.Lock()

    @property
    def file(self) -> str:
        """The file the kernel is defined in (read when a message needs it: a warm launch
        never reads the kernel's source)."""
        return self.kernel.file

    @property
    def line(self) -> int:
        """The file line of the kernel's ``def``."""
        return self.kernel.line

    def id(self) -> KernelId:
        """Name, a hash of the source (and every ``@cj.function`` reached), the argument
        types, the comptime values and ``cube_dim``: equal in every process for equal code."""
        if self._id is None:
            comptime = ("comptime", tuple(sorted(self.comptime.items())))
            self._id = self._layout.stem().id((comptime,), self.cube_dim)
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
                    from cubejit.ir.validate import validate
                    from cubejit.lang.frontend import translate

                    built = translate(
                        self.kernel.source,
                        self.signature,
                        self.comptime,
                        self.cube_dim,
                        plane_dim,
                    )
                    validate(built)
                    self._ir[plane_dim] = built
                ir = self._ir[plane_dim]
        return ir

    def show(
        self, form: str = "source", backend: str = "cpu", checked: bool = False, arch: str = ""
    ) -> None:
        """Prints what cubejit generates for this specialisation: ``"ir"``, ``"source"`` (the
        C or CUDA C++ of ``backend``), ``"ptx"`` or ``"sass"`` (CUDA's, for ``arch``), of the
        checked variant when ``checked`` (see :mod:`cubejit.backends.show`)."""
        from cubejit.backends.show import kernel_text

        print(kernel_text(self, form, backend, checked, arch))

    def __repr__(self) -> str:
        x, y, z = self.cube_dim
        extra = "".join(f", {k}={v!r}" for k, v in (*self.comptime.items(), *self.ranks.items()))
        if self.lines:
            extra += f", {LINE_SIZES_KEYWORD}={self.lines!r}"
        return f"<KernelSpec {self.name} cube_dim=({x}, {y}, {z}){extra}>"


def _cube_dim(value: Any) -> tuple[int, int, int]:
    from cubejit.runtime.limits import as_dims

    dims = as_dims(value)
    if dims is None:
        raise LaunchError(
            f"cube_dim must be a positive int or a tuple of 1 to 3 of them, not {value!r}"
        )
    return dims


def _rank_of(value: Any) -> int:
    """The rank a tensor argument gives its parameter: its ``ndim`` (numpy, CuPy, PyTorch,
    cubejit's buffers), else its ``__cuda_array_interface__``'s; 1 for anything else, which the
    client's argument check then refuses with a message naming the parameter."""
    ndim = getattr(value, "ndim", None)
    if type(ndim) is int and ndim >= 1:
        return ndim
    interface = getattr(value, "__cuda_array_interface__", None)
    if isinstance(interface, dict) and isinstance(interface.get("shape"), tuple | list):
        return max(1, len(interface["shape"]))
    return 1


class Kernel:
    """A function under ``@cj.kernel``: launched, specialised or prepared, never called.

    Specs are cached under the launch's own spelling of ``cube_dim`` and comptime values (the
    fast path: one dict lookup) and under their canonical form ``("spec", dims, values)``.
    """

    def __init__(self, fn: Callable[..., Any], warm: Iterable[Mapping[str, Any]] = ()) -> None:
        self.fn = fn
        remember_enclosing(fn)
        self.warm: list[dict[str, Any]] = [dict(w) for w in warm]
        """Specialisations to compile ahead of time: ``dict(cube_dim=..., **comptime)``."""
        declared = declared_signature(fn)
        self.signature: list[tuple[str, ParamAnnotation]] = (
            self._signature_from_source() if declared is None else declared
        )
        self.name = qualified_name(fn)
        self.comptime_params: dict[str, ComptimeType] = {
            n: t for n, t in self.signature if isinstance(t, ComptimeType)
        }
        self._specs: dict[Any, KernelSpec] = {}
        self._layouts: dict[Any, Layout] = {}
        self._digest: str | None = None
        functools.update_wrapper(self, fn)

    def _signature_from_source(self) -> list[tuple[str, ParamAnnotation]]:
        """The signature read from the source, at once: what a wrong one fails with."""
        from cubejit.lang.signature import kernel_parameters
        from cubejit.lang.source import Problem

        try:
            return kernel_parameters(self.source)
        except Problem as problem:
            kind = UnsupportedError if problem.unsupported else CompilationError
            node = problem.node or self.source.tree
            name = self.source.name
            raise kind(self.source.message(node, name, problem.message), kernel=name) from None

    @functools.cached_property
    def source(self) -> PySource:
        """The kernel's source, read and parsed when first needed (its first specialisation),
        not when the kernel is defined."""
        from cubejit.lang.source import PySource

        return PySource.of(self.fn, "kernel")

    @functools.cached_property
    def reading(self) -> Reading:
        """What the kernel's identity reads of its source (see :mod:`cubejit.lang.identity`):
        on a warm first launch, without parsing it."""
        from cubejit.lang.identity import read

        return read(self.fn, lambda: self.source)

    @functools.cached_property
    def file(self) -> str:
        """The file the kernel is defined in."""
        return self.source.file

    @functools.cached_property
    def line(self) -> int:
        """The file line of the kernel's ``def``."""
        return self.source.def_line

    @functools.cached_property
    def params(self) -> tuple[Param, ...]:
        """The launch arguments (comptime parameters excluded), in signature order."""
        from cubejit.ir.nodes import Param

        return tuple(
            Param(n, t) for n, t in self.signature if isinstance(t, Scalar | ArrayType | TensorType)
        )

    @functools.cached_property
    def free_ranks(self) -> tuple[tuple[int, str], ...]:
        """``(position, name)`` of each tensor parameter whose rank its argument decides."""
        return tuple(
            (i, p.name)
            for i, p in enumerate(self.params)
            if isinstance(p.type, TensorType) and p.type.rank is None
        )

    @functools.cached_property
    def free_lines(self) -> tuple[tuple[int, Param], ...]:
        """``(position, parameter)`` of each ``cj.Line[T]`` parameter, whose line size each
        launch chooses from its argument."""
        return tuple(
            (i, p)
            for i, p in enumerate(self.params)
            if isinstance(p.type, ArrayType | TensorType) and p.type.line == LINE_AT_LAUNCH
        )

    def layout(self, ranks: dict[str, int], lines: dict[str, int]) -> Layout:
        """The :class:`Layout` of this kernel's specs with ``ranks`` and ``lines``."""
        key = (tuple(sorted(ranks.items())), tuple(sorted(lines.items()))) if ranks or lines else ()
        found = self._layouts.get(key)
        if found is None:
            found = self._layouts.setdefault(key, Layout(self, ranks, lines))
        return found

    def source_digest(self) -> str:
        """The hash of the kernel's source and every function it reaches (computed once)."""
        if self._digest is None:
            from cubejit.lang.identity import source_digest

            self._digest = source_digest(self.reading)
        return self._digest

    def launch(
        self, client: Any, cube_count: Any, cube_dim: Any, *args: Any, **comptime: Any
    ) -> Any:
        """Runs ``cube_count`` cubes of ``cube_dim`` units with ``args`` (comptime values by
        keyword) on ``client``, through ``client.launch(spec, cube_count, args)``; a kernel
        whose launches choose no rank or line size runs no other Python on the way."""
        if self.free_lines or self.free_ranks:
            spec, args = self.resolve(cube_dim, args, comptime)
            return client.launch(spec, cube_count, args)
        try:
            spec = self._specs[(cube_dim, *comptime.items()) if comptime else cube_dim]
        except (KeyError, TypeError):
            spec = self._specialize_key(cube_dim, comptime)
        return client.launch(spec, cube_count, args)

    def resolve(
        self, cube_dim: Any, args: tuple[Any, ...], comptime: dict[str, Any]
    ) -> tuple[KernelSpec, tuple[Any, ...]]:
        """The spec a launch with ``args`` runs and the arguments it passes (each ``cj.lined``
        unwrapped): what :meth:`launch` hands the client."""
        if self.free_lines:
            args, lines = self.line_sizes(args)
            ranks = tuple(_rank_of(args[i]) if i < len(args) else 1 for i, _ in self.free_ranks)
            key = (cube_dim, ranks, lines, *comptime.items())
            try:
                return self._specs[key], args
            except (KeyError, TypeError):
                named = {name: r for (_, name), r in zip(self.free_ranks, ranks, strict=True)}
                sizes = {p.name: n for (_, p), n in zip(self.free_lines, lines, strict=True)}
                given = {**comptime, **named, LINE_SIZES_KEYWORD: sizes}
                return self._specialize_key(cube_dim, given, key), args
        if self.free_ranks:
            ranks = tuple(_rank_of(args[i]) if i < len(args) else 1 for i, _ in self.free_ranks)
            key = (cube_dim, ranks, *comptime.items())
            try:
                return self._specs[key], args
            except (KeyError, TypeError):
                named = {name: r for (_, name), r in zip(self.free_ranks, ranks, strict=True)}
                return self._specialize_key(cube_dim, {**comptime, **named}, key), args
        try:
            return self._specs[(cube_dim, *comptime.items()) if comptime else cube_dim], args
        except (KeyError, TypeError):
            return self._specialize_key(cube_dim, comptime), args

    def line_sizes(self, args: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[int, ...]]:
        """``args`` with each ``cj.lined`` unwrapped, and the line size of each ``cj.Line[T]``
        parameter: the one forced, else the widest its argument allows."""
        from cubejit.runtime.lines import Lined, forced_size, line_size

        plain = list(args)
        sizes = []
        for i, p in self.free_lines:
            assert isinstance(p.type, ArrayType | TensorType)
            tensor = type(p.type) is TensorType
            arg = args[i] if i < len(args) else None
            if type(arg) is Lined:
                plain[i] = arg.arg
                sizes.append(forced_size(self.name, p.name, arg, p.type.elem, tensor))
            else:
                sizes.append(line_size(arg, p.type.elem, tensor))
        return tuple(plain), tuple(sizes)

    def specialize(self, cube_dim: Any, **comptime: Any) -> KernelSpec:
        """The :class:`KernelSpec` a launch with this ``cube_dim`` and comptime values uses; the
        rank of each ``cj.Tensor[T]`` parameter is passed by keyword too (``x=2``), and the
        line size of each ``cj.Line[T]`` one as ``line_sizes=dict(x=4)``."""
        if self.free_ranks or self.free_lines:
            return self._specialize_key(cube_dim, comptime)
        try:
            return self._specs[(cube_dim, *comptime.items()) if comptime else cube_dim]
        except (KeyError, TypeError):
            return self._specialize_key(cube_dim, comptime)

    def prepare(self, client: Any, cube_dim: Any, **comptime: Any) -> Any:
        """Asks ``client`` to have this specialisation ready (``client.prepare(spec)``)."""
        return client.prepare(self.specialize(cube_dim, **comptime))

    def _specialize_key(
        self, cube_dim: Any, comptime: dict[str, Any], key: Any = None
    ) -> KernelSpec:
        dims = _cube_dim(cube_dim)
        if self.free_ranks or self.free_lines or LINE_SIZES_KEYWORD in comptime:
            comptime = dict(comptime)
            lines = self._lines(comptime.pop(LINE_SIZES_KEYWORD, None))
            ranks = self._ranks(comptime)
            values = self._comptime_values({k: v for k, v in comptime.items() if k not in ranks})
        else:
            lines, ranks, values = {}, {}, self._comptime_values(comptime)
        canonical = (
            "spec",
            dims,
            tuple(sorted(values.items())),
            tuple(sorted(ranks.items())),
            tuple(sorted(lines.items())),
        )
        spec = self._specs.get(canonical)
        if spec is None:
            spec = self._specs.setdefault(canonical, KernelSpec(self, dims, values, ranks, lines))
        if key is None and not self.free_ranks and not self.free_lines:
            key = (cube_dim, *comptime.items()) if comptime else cube_dim
        try:
            if key is not None:
                self._specs[key] = spec
        except TypeError:
            pass
        return spec

    def _lines(self, given: Any) -> dict[str, int]:
        """The line sizes of the ``cj.Line[T]`` parameters, from ``given`` (name to size)."""
        if not self.free_lines:
            if given:
                raise LaunchError(f"kernel {self.name} has no cj.Line[T] parameter to size")
            return {}
        names = [p.name for _, p in self.free_lines]
        if not isinstance(given, dict) or any(n not in given for n in names):
            raise LaunchError(
                f"kernel {self.name} needs the line size of its cj.Line parameter(s) "
                f"{', '.join(names)}, passed as {LINE_SIZES_KEYWORD}=dict({names[0]}=4)"
            )
        sizes = {}
        for name in names:
            n = given[name]
            if isinstance(n, bool) or not isinstance(n, int | np.integer) or n not in LINE_SIZES:
                raise LaunchError(
                    f"kernel {self.name}: the line size of {name} is 8, 4, 2 or 1, not {n!r}"
                )
            sizes[name] = int(n)
        return sizes

    def _ranks(self, given: dict[str, Any]) -> dict[str, int]:
        """The ranks of the tensor parameters whose annotation leaves them to the launch, from
        ``given`` (a tensor's name as keyword, its rank as value)."""
        names = [name for _, name in self.free_ranks]
        missing = [n for n in names if n not in given]
        if missing:
            raise LaunchError(
                f"kernel {self.name} needs the rank of its tensor parameter(s) "
                f"{', '.join(missing)}, passed by keyword: {missing[0]}=2"
            )
        ranks = {}
        for name in names:
            rank = given[name]
            if isinstance(rank, bool) or not isinstance(rank, int | np.integer) or rank < 1:
                raise LaunchError(
                    f"kernel {self.name}: the rank of tensor parameter {name} is an int of 1 or "
                    f"more, not {rank!r}"
                )
            ranks[name] = int(rank)
        return ranks

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
    read now (every parameter annotated with a scalar type, ``cj.Array[T]``, ``cj.Tensor[T]`` or
    ``cj.Comptime[T]``); the body is translated when a specialisation is first defined.
    """
    if fn is None:
        return lambda f: Kernel(f, warm)
    return Kernel(fn, warm)
