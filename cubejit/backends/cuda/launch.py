"""The launch path: from ``(cube_count, args)`` to one ``cuLaunchKernel`` on a client's stream.

Everything a launch can know in advance is built once per kernel spec by :class:`Launcher`: a
buffer holding every parameter value in an 8-byte slot, the array of pointers into it that
``cuLaunchKernel`` reads, one ``struct`` packer writing all values in one call, and a launch
function written for this signature (its checks unrolled, one per parameter, so a launch runs
no loop and no per-parameter call). ``cuLaunchKernel`` of ``cuda.bindings`` takes the prebuilt
function and stream handles and the pointer array as one address: measured on an H200 host,
that is the cheapest way into the driver (cheaper than ``ctypes`` with prebuilt ``c_void_p``
handles, and half the cost of ``cuda.bindings`` packing Python argument tuples).

A kernel with a coarsened no-alias form (:mod:`cubejit.backends.cuda.coarsening`) has two
artifacts. Its launch function checks, in a few comparisons, whether an array the kernel writes
overlaps another array argument: if none does it launches the coarsened artifact on one block
per four cubes (loading it on first need), passing the user's cube count along x in one more slot
that the plain artifact does not read; else the plain one. Any other kernel's launch checks
nothing of the kind.

A launch with the very objects of the last launch of the same kernel (a loop launching on the
same buffers) finds the parameter buffer already filled and calls the driver at once.

Every check happens before the launch: a wrong argument raises
:class:`~cubejit.errors.LaunchError` and nothing runs. The common case (this client's own
buffers of the right type, an int cube_count) takes the fast branch of each check; anything
else (another library's arrays, tuples, errors) goes through the launcher's methods.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import struct
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from cubejit.backends.cuda.artifact import ParamSlot
from cubejit.backends.cuda.buffer import U32_MAX, CudaBuffer, foreign_array
from cubejit.backends.cuda.coarsening import NO_ALIAS
from cubejit.backends.cuda.driver import error_text
from cubejit.errors import LaunchError
from cubejit.ir.types import ArrayType
from cubejit.runtime.limits import dims3

_UNSEEN = object()
"""What a launch function remembers before its first launch, and after a launch it must not
repeat: no cube_count or argument is ever this object."""


def _unseen() -> object:
    return _UNSEEN


SLOT_BYTES = 8
"""Every parameter value takes one slot this wide, so each is aligned whatever its type."""

_FORMATS = {
    "bool": "?",
    "i8": "b",
    "i16": "h",
    "i32": "i",
    "i64": "q",
    "u8": "B",
    "u16": "H",
    "u32": "I",
    "u64": "Q",
    "f16": "e",
    "bf16": "H",
    "f32": "f",
    "f64": "d",
}


def bf16_bits(value: float) -> int:
    """The bf16 nearest ``value`` (ties to even), as its 16 bits."""
    bits = int(np.array(value, np.float32).view(np.uint32))
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x007FFFFF:
        return (bits >> 16) | 0x40
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def arrays_apart(params: tuple[Any, ...], args: tuple[Any, ...]) -> bool:
    """Whether no two array arguments among ``args`` (for parameters ``params``, each with a
    ``type``) share a byte. ``False`` when that cannot be told, as for arguments that do not fit,
    which the launch then reports."""
    if len(args) != len(params):
        return False
    spans = []
    for param, arg in zip(params, args, strict=True):
        if not isinstance(param.type, ArrayType):
            continue
        if isinstance(arg, CudaBuffer):
            spans.append((arg.ptr, arg.ptr + arg.nbytes))
            continue
        try:
            foreign = foreign_array(arg)
        except (ValueError, KeyError, TypeError):
            return False
        if foreign is None:
            return False
        spans.append((foreign.ptr, foreign.ptr + foreign.n * foreign.dtype.itemsize))
    spans.sort()
    return all(end <= start for (_, end), (start, _) in itertools.pairwise(spans))


def _apart_check(params: tuple[ParamSlot, ...]) -> tuple[list[str], str]:
    """The lines computing array ends, and the condition that no written array overlaps another
    array argument (``p`` its pointer, ``n`` its length, ``e`` its end)."""
    arrays = [j for j, p in enumerate(params) if p.is_array]
    written = [j for j in arrays if params[j].written]
    pairs = [(w, a) for w in written for a in arrays if a != w and (a not in written or a > w)]
    ends = sorted({j for pair in pairs for j in pair})
    lines = [f"    e{j} = p{j} + n{j} * {params[j].scalar.itemsize}" for j in ends]
    condition = " and ".join(f"(e{w} <= p{a} or e{a} <= p{w})" for w, a in pairs)
    return lines, condition or "True"


def _launch_source(
    params: tuple[ParamSlot, ...],
    cube_dim: tuple[int, int, int],
    max_x: int,
    coarsening: int = 1,
    shared_bytes: int = 0,
) -> str:
    """The text of the launch function for ``params`` and ``cube_dim`` (see
    :meth:`Launcher._namespace` for the names it reads); ``max_x`` is the most cubes along x,
    ``coarsening`` the cubes per block of the kernel's no-alias form, ``shared_bytes`` the
    dynamic shared memory of every launch.

    A launch with the very objects of the last one (the same buffers, the same scalar objects,
    an equal cube_count) finds the parameter buffer already holding its values and goes
    straight to the driver: the last arrays are remembered by weak reference (a buffer is never
    kept alive for it), and a launch with another library's arrays is never remembered, since
    each such launch must order the client's stream after the array's producer."""
    count = len(params)
    memo = ["m_count", "m_function", "m_blocks", "m_gy", "m_gz"]
    memo += [f"w{j}" if p.is_array else f"m{j}" for j, p in enumerate(params)]
    lines = ["def launch(cube_count, args):", f"    global {', '.join(memo)}"]
    lines += [f"    if len(args) != {count}:", "        raise count_error(args)"]
    if params:
        lines.append(f"    {', '.join(f'a{j}' for j in range(count))}, = args")
    same = [f"w{j}() is a{j}" if p.is_array else f"a{j} is m{j}" for j, p in enumerate(params)]
    bx, by, bz = cube_dim
    lines += [
        "    acquire()",
        "    try:",
        "        if (cube_count is m_count or (type(cube_count) is int and cube_count == m_count))"
        + "".join(f" and {c}" for c in same)
        + ":",
        "            status, = launch_kernel(",
        f"                m_function, m_blocks, m_gy, m_gz, {bx}, {by}, {bz}, {shared_bytes},",
        "                stream, pointers, 0,",
        "            )",
        "        else:",
        *(
            f"        {line}"
            for line in _first_sight(params, max_x, coarsening, cube_dim, shared_bytes)
        ),
        "    finally:",
        "        release()",
        "    if status:",
        "        raise launch_error(status)",
    ]
    return "\n".join(lines) + "\n"


def _first_sight(
    params: tuple[ParamSlot, ...],
    max_x: int,
    coarsening: int,
    cube_dim: tuple[int, int, int],
    shared_bytes: int = 0,
) -> list[str]:
    """The lines of a launch whose arguments differ from the last one's: every check, the
    packing, the driver call, and remembering the arguments."""
    lines = ["    own = True"]
    values = []
    for j, p in enumerate(params):
        if p.is_array:
            lines += [
                f"    if type(a{j}) is Buffer and a{j}.client is client and a{j}.scalar is s{j}:",
                f"        p{j} = a{j}.ptr",
                f"        n{j} = a{j}.n",
                "    else:",
                f"        p{j}, n{j} = array_arg({j}, a{j})",
                "        own = False",
            ]
            values += [f"p{j}", f"n{j}"]
        elif p.scalar.name == "bf16":
            lines.append(f"    b{j} = bf16_arg(a{j})")
            values.append(f"b{j}")
        else:
            values.append(f"a{j}")
    lines += [
        f"    if type(cube_count) is int and 0 < cube_count <= {max_x}:",
        "        gx = cube_count",
        "        gy = gz = 1",
        "    else:",
        "        gx, gy, gz = grid(cube_count)",
    ]
    function, blocks = "function", "gx"
    if coarsening > 1:
        ends, condition = _apart_check(params)
        lines += [
            *ends,
            f"    if {condition}:",
            "        f = fast",
            "        if f is None:",
            "            f = load_fast()",
            f"        bx = (gx + {coarsening - 1}) // {coarsening}",
            "    else:",
            "        f = plain",
            "        if f is None:",
            "            f = load_plain()",
            "        bx = gx",
        ]
        values.append("gx")
        function, blocks = "f", "bx"
    lines.append("    m_count = unseen")
    if values:
        lines += [
            "    try:",
            f"        pack(values, 0, {', '.join(values)})",
            "    except struct_error:",
            "        raise scalar_error(args) from None",
        ]
    bx, by, bz = cube_dim
    lines += [
        "    status, = launch_kernel(",
        f"        {function}, {blocks}, gy, gz, {bx}, {by}, {bz}, {shared_bytes}, stream, pointers,"
        " 0",
        "    )",
        "    if own and not status:",
        f"        m_function, m_blocks, m_gy, m_gz = {function}, {blocks}, gy, gz",
        *(
            f"        w{j} = ref(a{j})" if p.is_array else f"        m{j} = a{j}"
            for j, p in enumerate(params)
        ),
        "        m_count = cube_count",
    ]
    return lines


@functools.cache
def _launch_code(source: str) -> Any:
    """``source`` compiled once per process: specs of one signature share the code."""
    return compile(source, "<cubejit launch>", "exec")


class Launcher:
    """Launches one loaded kernel, specialised for one cube_dim, on one client's stream.

    :attr:`launch` is the function a launch calls, ``launch(cube_count, args)``. Safe to call
    from several threads: the parameter buffer is filled and handed to the driver under a lock
    (the driver copies the values before ``cuLaunchKernel`` returns).
    """

    def __init__(
        self,
        client: Any,
        function: Any,
        params: tuple[ParamSlot, ...],
        cube_dim: tuple[int, int, int],
        kernel: str,
        launch_kernel: Callable[..., tuple[Any, ...]],
        stream: Any,
        *,
        coarsening: int = 1,
        variant: Any = None,
        load: Callable[[Any], Any] | None = None,
        shared_bytes: int = 0,
    ) -> None:
        """``function`` and ``stream`` are the handles ``launch_kernel`` (``cuLaunchKernel`` of
        ``cuda.bindings``) takes; it is called with the pointer array's address.

        ``coarsening`` is the cubes per block of the kernel's no-alias form; when it is above 1,
        ``function`` is the artifact of ``variant`` (``None`` or
        :data:`~cubejit.backends.cuda.coarsening.NO_ALIAS`) and ``load(other_variant)`` gives
        the other's function the first time a launch needs it. ``shared_bytes`` is the dynamic
        shared memory each launch passes."""
        self._client = client
        self._params = params
        self._kernel = kernel
        self._load = load
        fmt = "<"
        for p in params:
            if p.is_array:
                fmt += "QI4x"
            else:
                fmt += _FORMATS[p.scalar.name] + f"{SLOT_BYTES - p.scalar.itemsize}x"
        count = max(1, sum(2 if p.is_array else 1 for p in params))
        if coarsening > 1:
            if load is None:
                raise ValueError("a kernel with a coarsened form needs a loader of its variants")
            fmt += "I4x"
            count += 1
        self._values = ctypes.create_string_buffer(SLOT_BYTES * count)
        base = ctypes.addressof(self._values)
        self._pointers = (ctypes.c_void_p * count)(*(base + SLOT_BYTES * i for i in range(count)))
        namespace = self._namespace(function, stream, launch_kernel, struct.Struct(fmt))
        if coarsening > 1:
            fast = variant is NO_ALIAS
            namespace.update(
                fast=function if fast else None,
                plain=None if fast else function,
                load_fast=lambda: self._load_variant(namespace, "fast", NO_ALIAS),
                load_plain=lambda: self._load_variant(namespace, "plain", None),
            )
        max_x = client.limits.max_cube_count[0]
        source = _launch_source(params, cube_dim, max_x, coarsening, shared_bytes)
        exec(_launch_code(source), namespace)
        self.launch: Callable[[Any, tuple[Any, ...]], None] = namespace["launch"]
        """Launches the kernel on ``cube_count`` cubes with ``args``."""

    def __call__(self, cube_count: Any, args: tuple[Any, ...]) -> None:
        self.launch(cube_count, args)

    def _namespace(
        self,
        function: Any,
        stream: Any,
        launch_kernel: Callable[..., tuple[Any, ...]],
        packer: struct.Struct,
    ) -> dict[str, Any]:
        lock = threading.Lock()
        names: dict[str, Any] = {
            "Buffer": CudaBuffer,
            "client": self._client,
            "array_arg": self._array,
            "bf16_arg": self._bf16,
            "count_error": self._count_error,
            "scalar_error": self._scalar_error,
            "launch_error": self._launch_error,
            "grid": self._grid,
            "acquire": lock.acquire,
            "release": lock.release,
            "pack": packer.pack_into,
            "values": self._values,
            "struct_error": struct.error,
            "launch_kernel": launch_kernel,
            "function": function,
            "stream": stream,
            "pointers": ctypes.addressof(self._pointers),
        }
        names.update({f"s{j}": p.scalar for j, p in enumerate(self._params)})
        names.update(unseen=_UNSEEN, ref=weakref.ref, m_count=_UNSEEN, m_function=None)
        names.update(m_blocks=0, m_gy=0, m_gz=0)
        for j, p in enumerate(self._params):
            names[f"w{j}" if p.is_array else f"m{j}"] = _unseen if p.is_array else _UNSEEN
        return names

    def _load_variant(self, namespace: dict[str, Any], name: str, variant: Any) -> Any:
        assert self._load is not None
        function = namespace[name] = self._load(variant)
        return function

    def _array(self, index: int, arg: Any) -> tuple[int, int]:
        param = self._params[index]
        where = f"argument {param.name} of kernel {self._kernel} ({param.describe()})"
        if isinstance(arg, CudaBuffer):
            if arg.client is not self._client:
                raise LaunchError(
                    f"{where} is a buffer of another client: copy it to this "
                    f"one with client.to_device(other.read(buffer))"
                )
            if arg.scalar != param.scalar:
                raise LaunchError(f"{where} is a buffer of {arg.scalar.name}")
            return arg.ptr, arg.n
        if isinstance(arg, np.ndarray):
            raise LaunchError(
                f"{where} is a numpy array, in host memory: copy it to the "
                f"device with client.to_device(array)"
            )
        try:
            foreign = foreign_array(arg)
        except (ValueError, KeyError, TypeError) as e:
            raise LaunchError(f"{where} has an unusable __cuda_array_interface__: {e}") from None
        if foreign is None:
            raise LaunchError(f"{where} is a {type(arg).__name__}, not a device buffer")
        if not foreign.matches(param.scalar):
            raise LaunchError(f"{where} holds {foreign.dtype} elements")
        if foreign.n > U32_MAX:
            raise LaunchError(f"{where} has {foreign.n} elements; at most {U32_MAX} fit a u32")
        self._client.adopt(foreign, where)
        return foreign.ptr, foreign.n

    @staticmethod
    def _bf16(arg: Any) -> Any:
        try:
            return bf16_bits(float(arg))
        except (TypeError, ValueError):
            return arg

    def _grid(self, cube_count: Any) -> tuple[int, int, int]:
        dims = dims3(cube_count, "cube_count", self._kernel)
        self._client.limits.check_cube_count(dims, self._kernel)
        return dims

    def _count_error(self, args: tuple[Any, ...]) -> LaunchError:
        names = ", ".join(p.name for p in self._params)
        return LaunchError(
            f"kernel {self._kernel} takes {len(self._params)} arguments ({names}), got {len(args)}"
        )

    def _scalar_error(self, args: tuple[Any, ...]) -> LaunchError:
        for param, arg in zip(self._params, args, strict=True):
            if param.is_array:
                continue
            value = self._bf16(arg) if param.scalar.name == "bf16" else arg
            try:
                struct.pack("<" + _FORMATS[param.scalar.name], value)
            except struct.error:
                return LaunchError(
                    f"argument {param.name} of kernel {self._kernel} must be a "
                    f"{param.scalar.name}, got {type(arg).__name__} {arg!r}"
                )
        return LaunchError(f"kernel {self._kernel}: arguments do not fit its signature")

    def _launch_error(self, status: int) -> LaunchError:
        return LaunchError(f"CUDA refused to launch kernel {self._kernel} ({error_text(status)})")
