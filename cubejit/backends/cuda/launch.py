"""The launch path: from ``(cube_count, args)`` to one ``cuLaunchKernel`` on a client's stream.

Everything a launch can know in advance is built once per kernel spec by :class:`Launcher`: a
buffer holding every parameter value in an 8-byte slot, the array of pointers into it that
``cuLaunchKernel`` reads, one ``struct`` packer writing all values in one call (made once per
parameter list, with the rest that depends on the list alone, and shared by the specs that have
that list), and a launch function for this parameter layout (its checks unrolled, one per
parameter, so a launch runs no loop and no per-parameter call). The function's code depends on
the layout alone (:func:`launch_code`: the kinds of the slots, never a kernel's names or
cube_dim, which it reads as globals), so it is generated and compiled once per layout and
process, registered with ``linecache`` so that a traceback shows its lines; a kernel of a
layout compiled before only binds it. Until then, the first :data:`GENERIC_LAUNCHES` launches
of a kernel run a generic launch function that reads the layout slot by slot, so a warm start's
first launch compiles no Python. ``cuLaunchKernel`` of ``cuda.bindings`` takes the prebuilt
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

A kernel with tensors has one artifact per contiguity of its tensors' innermost dimensions
(variant ``(None, mask)``, or ``(NO_ALIAS, mask)`` for its coarsened form; see
:func:`~cubejit.runtime.layout.contiguity`): its launch computes the mask from the arguments
(and, when coarsened, whether a written buffer's span overlaps another's) and takes, or loads,
that artifact.

Every check happens before the launch: a wrong argument raises
:class:`~cubejit.errors.LaunchError` and nothing runs. The common case (this client's own
buffers of the right type, an int cube_count) takes the fast branch of each check; anything
else (another library's arrays, tuples, errors) goes through the launcher's methods and the
shared :class:`~cubejit.runtime.arguments.ArgumentChecker`, so that a mistake reads as it does
on the CPU.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import linecache
import struct
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cubejit.backends.cuda.buffer import (
    CudaBuffer,
    CudaView,
    DeviceArray,
    UnusableArray,
    device_array,
    spans_of,
)
from cubejit.backends.cuda.coarsening import NO_ALIAS
from cubejit.backends.cuda.driver import error_text
from cubejit.errors import LaunchError
from cubejit.ir.types import ArrayType, TensorType
from cubejit.runtime.arguments import ArgumentChecker, TensorValues
from cubejit.runtime.layout import SCALAR_FORMATS, ParamSlot, SlotKind
from cubejit.runtime.limits import dims3

_UNSEEN = object()
"""What a launch function remembers before its first launch, and after a launch it must not
repeat: no cube_count or argument is ever this object."""

OURS = (CudaBuffer, CudaView)
"""A client's own memory, which a launch takes as it is: a buffer, or a view of one (each
with its pointer, element count, tensor words and contiguity, under the same names)."""


def _unseen() -> object:
    return _UNSEEN


SLOT_BYTES = 8
"""Every parameter value takes one slot this wide, so each is aligned whatever its type."""


def bf16_bits(value: float) -> int:
    """The bf16 nearest ``value`` (ties to even), as its 16 bits."""
    bits = int(np.array(value, np.float32).view(np.uint32))
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x007FFFFF:
        return (bits >> 16) | 0x40
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def arrays_apart(params: tuple[Any, ...], args: tuple[Any, ...]) -> bool:
    """Whether no two array or tensor arguments among ``args`` (for parameters ``params``, each
    with a ``type``) share a byte of their spans. ``False`` when that cannot be told, as for
    arguments that do not fit, which the launch then reports."""
    if len(args) != len(params):
        return False
    spans = []
    for param, arg in zip(params, args, strict=True):
        if not isinstance(param.type, ArrayType | TensorType):
            continue
        if isinstance(arg, CudaBuffer):
            spans.append((arg.ptr, arg.ptr + arg.nbytes))
            continue
        if isinstance(arg, np.ndarray):
            return False
        try:
            foreign = device_array(arg, 0)
        except (UnusableArray, LookupError):
            return False
        if foreign is None:
            return False
        spans.append(spans_of(foreign.view))
    spans.sort()
    return all(end <= start for (_, end), (start, _) in itertools.pairwise(spans))


def first_mask(params: tuple[ParamSlot, ...], args: tuple[Any, ...]) -> int:
    """The contiguity mask a launch with ``args`` needs, read before anything is loaded (an
    argument that cannot be read counts as contiguous: the launch then refuses it)."""
    mask = bit = 0
    for param, arg in zip(params, args, strict=False):
        if not param.is_tensor:
            continue
        contiguous = True
        if not isinstance(arg, CudaBuffer | np.ndarray):
            try:
                foreign = device_array(arg, None)
            except (UnusableArray, LookupError):
                foreign = None
            strides = None if foreign is None else foreign.view.strides
            if foreign is not None and strides and foreign.view.shape[-1] != 1:
                contiguous = strides[-1] == foreign.view.itemsize
        mask |= contiguous << bit
        bit += 1
    return mask


def layout_key(params: tuple[ParamSlot, ...], coarsening: int) -> tuple[Any, ...]:
    """What a launch function's code depends on: each slot's kind, rank and whether it needs a
    conversion (bf16) or takes part in the overlap check (a written array of a coarsened
    kernel)."""
    coarsened = coarsening > 1
    return (
        tuple(
            (p.kind.value, p.rank, p.scalar.name == "bf16", coarsened and p.written) for p in params
        ),
        coarsened,
    )


def _apart_check(key: tuple[Any, ...]) -> tuple[list[str], str]:
    """The lines computing buffer ends, and the condition that no written buffer overlaps another
    buffer argument (``p`` its pointer, ``n`` its length, or for a tensor the elements its span
    covers, ``e`` its end, ``z`` its item size)."""
    slots = key[0]
    arrays = [j for j, (kind, _, _, _) in enumerate(slots) if kind != "scalar"]
    written = [j for j in arrays if slots[j][3]]
    pairs = [(w, a) for w in written for a in arrays if a != w and (a not in written or a > w)]
    ends = sorted({j for pair in pairs for j in pair})
    lines = [f"    e{j} = p{j} + n{j} * z{j}" for j in ends]
    condition = " and ".join(f"(e{w} <= p{a} or e{a} <= p{w})" for w, a in pairs)
    return lines, condition or "True"


def _launch_source(key: tuple[Any, ...]) -> str:
    """The text of the launch function for the layout ``key`` (see :meth:`Launcher._namespace`
    for the names it reads).

    A launch with the very objects of the last one (the same buffers or views, the same scalar
    objects, an equal cube_count) finds the parameter buffer already holding its values and goes
    straight to the driver: the last buffers are remembered by weak reference (a buffer is never
    kept alive for it), and a launch with another library's arrays is never remembered, since
    each such launch must order the client's stream after the array's producer (a
    :class:`CudaView` was ordered by its maker, and never changes)."""
    slots = key[0]
    count = len(slots)
    memo = ["m_count", "m_function", "m_blocks", "m_gy", "m_gz"]
    memo += [f"w{j}" if kind != "scalar" else f"m{j}" for j, (kind, *_) in enumerate(slots)]
    lines = ["def launch(cube_count, args):", f"    global {', '.join(memo)}"]
    lines += [f"    if len(args) != {count}:", "        raise count_error(args)"]
    if slots:
        lines.append(f"    {', '.join(f'a{j}' for j in range(count))}, = args")
    same = [
        f"w{j}() is a{j}" if kind != "scalar" else f"a{j} is m{j}"
        for j, (kind, *_) in enumerate(slots)
    ]
    lines += [
        "    acquire()",
        "    try:",
        "        if (cube_count is m_count or (type(cube_count) is int and cube_count == m_count))"
        + "".join(f" and {c}" for c in same)
        + ":",
        "            status, = launch_kernel(",
        "                m_function, m_blocks, m_gy, m_gz, BX, BY, BZ, SHARED, stream, pointers,",
        "                0,",
        "            )",
        "        else:",
        *(f"        {line}" for line in _first_sight(key)),
        "    finally:",
        "        release()",
        "    if status:",
        "        raise launch_error(status)",
    ]
    return "\n".join(lines) + "\n"


def _first_sight(key: tuple[Any, ...]) -> list[str]:
    """The lines of a launch whose arguments differ from the last one's: every check, the
    packing, the driver call, and remembering the arguments."""
    slots, coarsened = key
    lines = ["    own = True"]
    values = []
    tensors = []
    for j, (kind, rank, is_bf16, _) in enumerate(slots):
        own = f"type(a{j}) in OURS and a{j}.client is client and a{j}.scalar is s{j}"
        if kind == "array":
            lines += [
                f"    if {own} and a{j}.flat >= 0:",
                f"        p{j} = a{j}.ptr",
                f"        n{j} = a{j}.flat",
                "    else:",
                f"        p{j}, n{j} = array_arg({j}, a{j})",
                "        own = False",
            ]
            values += [f"p{j}", f"n{j}"]
        elif kind == "tensor":
            lines += [
                f"    if {own} and a{j}.ndim == {rank}:",
                f"        p{j} = a{j}.ptr",
                f"        n{j} = a{j}.n",
                f"        t{j} = a{j}.words",
                f"        c{j} = a{j}.contiguous",
                "    else:",
                f"        p{j}, n{j}, t{j}, c{j} = tensor_arg({j}, a{j})",
                "        own = False",
            ]
            values += [f"p{j}", f"*t{j}"]
            tensors.append(j)
        elif is_bf16:
            lines.append(f"    b{j} = bf16_arg(a{j})")
            values.append(f"b{j}")
        else:
            values.append(f"a{j}")
    lines += [
        "    if type(cube_count) is int and 0 < cube_count <= MAX_X:",
        "        gx = cube_count",
        "        gy = gz = 1",
        "    else:",
        "        gx, gy, gz = grid(cube_count)",
    ]
    function, blocks = "function", "gx"
    if tensors:
        mask = " | ".join(f"(c{j} << {bit})" for bit, j in enumerate(tensors))
        lines.append(f"    mask = {mask}")
        function = "f"
    if tensors and not coarsened:
        lines += [
            "    f = functions.get((None, mask))",
            "    if f is None:",
            "        f = load_variant((None, mask))",
        ]
    if tensors and coarsened:
        ends, condition = _apart_check(key)
        lines += [
            *ends,
            f"    if {condition}:",
            "        f = functions.get((NO_ALIAS, mask))",
            "        if f is None:",
            "            f = load_variant((NO_ALIAS, mask))",
            "        bx = (gx + COARSENING - 1) // COARSENING",
            "    else:",
            "        f = functions.get((None, mask))",
            "        if f is None:",
            "            f = load_variant((None, mask))",
            "        bx = gx",
        ]
        values.append("gx")
        blocks = "bx"
    if coarsened and not tensors:
        ends, condition = _apart_check(key)
        lines += [
            *ends,
            f"    if {condition}:",
            "        f = fast",
            "        if f is None:",
            "            f = load_fast()",
            "        bx = (gx + COARSENING - 1) // COARSENING",
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
    lines += [
        "    status, = launch_kernel(",
        f"        {function}, {blocks}, gy, gz, BX, BY, BZ, SHARED, stream, pointers, 0",
        "    )",
        "    if own and not status:",
        f"        m_function, m_blocks, m_gy, m_gz = {function}, {blocks}, gy, gz",
        *(
            f"        w{j} = ref(a{j})" if kind != "scalar" else f"        m{j} = a{j}"
            for j, (kind, *_) in enumerate(slots)
        ),
        "        m_count = cube_count",
    ]
    return lines


_layouts = itertools.count()

GENERIC_LAUNCHES = 8
"""Launches of a kernel that go through the generic launch function while its layout has no
generated one yet; the launch after them compiles it. A process that launches a kernel a few
times (a warm start, a script) never pays for the ``compile()``; one that launches it in a loop
pays once, then runs the generated function."""

_codes: dict[tuple[Any, ...], Any] = {}
"""The compiled launch function of each layout generated in this process."""
_codes_lock = threading.Lock()


def launch_code(key: tuple[Any, ...]) -> Any:
    """The compiled launch function of the layout ``key``, generated once per process (every
    kernel of that layout shares it) and registered with ``linecache``."""
    code = _codes.get(key)
    if code is None:
        with _codes_lock:
            code = _codes.get(key)
            if code is None:
                source = _launch_source(key)
                filename = f"<cubejit launch {next(_layouts)}>"
                linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
                code = _codes[key] = compile(source, filename, "exec")
    return code


def has_launch_code(key: tuple[Any, ...]) -> bool:
    """Whether the launch function of the layout ``key`` was compiled in this process."""
    return key in _codes


def _pack_format(params: tuple[ParamSlot, ...], coarsening: int) -> tuple[str, int]:
    """The ``struct`` format of every parameter value, one 8-byte slot each, and the count of
    slots."""
    fmt = "<"
    count = 0
    for p in params:
        if p.kind is SlotKind.SCALAR:
            code = SCALAR_FORMATS[p.scalar.name]
            fmt += code + f"{SLOT_BYTES - struct.calcsize(code)}x"
        elif p.kind is SlotKind.ARRAY:
            fmt += "QI4x"
        else:
            fmt += "Q" + "I4x" * (1 + 2 * p.rank)
        count += p.words
    if coarsening > 1:
        fmt += "I4x"
        count += 1
    return fmt, max(1, count)


def _parameter_buffers(
    count: int,
) -> tuple[ctypes.Array[ctypes.c_char], ctypes.Array[ctypes.c_void_p]]:
    """A buffer of ``count`` parameter slots and the array of their addresses, which
    ``kernelParams`` reads."""
    values = ctypes.create_string_buffer(SLOT_BYTES * count)
    base = ctypes.addressof(values)
    return values, (ctypes.c_void_p * count)(*(base + SLOT_BYTES * i for i in range(count)))


@dataclass(frozen=True, slots=True)
class _LayoutPlan:
    """What every launcher of one parameter list and coarsening shares: the packer, the count
    of slots, the layout its launch function is generated for, and the globals of that function
    that hold no launcher's own handle or buffer (each launcher copies them). Made once per
    process and parameter list: the specialisations of one kernel loaded from the store share
    their list (:func:`~cubejit.backends.cuda.artifact.param_slots`), so that a warm process
    loading many builds it once."""

    params: tuple[ParamSlot, ...]
    packer: struct.Struct
    count: int
    layout: tuple[Any, ...]
    has_tensors: bool
    names: dict[str, Any]


PLANS_KEPT = 4096
"""The parameter lists whose :class:`_LayoutPlan` a process keeps."""

_plans: dict[tuple[int, int], _LayoutPlan] = {}


def _plan(params: tuple[ParamSlot, ...], coarsening: int) -> _LayoutPlan:
    """The plan of ``params`` (found by identity: the plan keeps them, so their ``id`` is not
    reused while it is kept) and ``coarsening``."""
    key = (id(params), coarsening)
    plan = _plans.get(key)
    if plan is not None and plan.params is params:
        return plan
    fmt, count = _pack_format(params, coarsening)
    packer = struct.Struct(fmt)
    names: dict[str, Any] = {
        "OURS": OURS,
        "bf16_arg": Launcher.bf16_arg,
        "pack": packer.pack_into,
        "struct_error": struct.error,
        "unseen": _UNSEEN,
        "ref": weakref.ref,
        "m_count": _UNSEEN,
        "m_function": None,
        "m_blocks": 0,
        "m_gy": 0,
        "m_gz": 0,
    }
    for j, p in enumerate(params):
        names[f"s{j}"] = p.scalar
        names[f"z{j}"] = p.scalar.itemsize
        names[f"w{j}" if p.is_buffer else f"m{j}"] = _unseen if p.is_buffer else _UNSEEN
    plan = _LayoutPlan(
        params,
        packer,
        count,
        layout_key(params, coarsening),
        any(p.is_tensor for p in params),
        names,
    )
    if len(_plans) >= PLANS_KEPT:
        _plans.clear()
    _plans[key] = plan
    return plan


@dataclass(frozen=True, slots=True)
class LaunchNode:
    """One checked launch as the driver takes it, for a graph's kernel node: the function, the
    grid in blocks, the block, the dynamic shared memory and the parameter values, held in
    buffers of the node's own (``pointers`` is the array of their addresses that
    ``kernelParams`` reads)."""

    function: Any
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    values: ctypes.Array[ctypes.c_char]
    pointers: ctypes.Array[ctypes.c_void_p]


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
        specialised: Callable[[Callable[[Any, tuple[Any, ...]], None]], None] | None = None,
    ) -> None:
        """``function`` and ``stream`` are the handles ``launch_kernel`` (``cuLaunchKernel`` of
        ``cuda.bindings``) takes; it is called with the pointer array's address.

        ``coarsening`` is the cubes per block of the kernel's no-alias form; when it is above 1,
        ``function`` is the artifact of ``variant`` (``None`` or
        :data:`~cubejit.backends.cuda.coarsening.NO_ALIAS`) and ``load(other_variant)`` gives
        the other's function the first time a launch needs it. For a kernel with tensors,
        ``variant`` is ``(None, mask)`` and ``load((None, other_mask))`` gives the artifact of
        another contiguity. ``shared_bytes`` is the dynamic shared memory every launch passes.
        ``specialised(launch)`` is told when :attr:`launch` becomes the generated function
        (for a caller that keeps the launch function itself)."""
        self._client = client
        self._params = params
        self._kernel = kernel
        self._load = load
        self.checker = ArgumentChecker(kernel, params)
        """The shared argument checker: every refusal of a launch is its."""
        plan = _plan(params, coarsening)
        has_tensors = plan.has_tensors
        if (coarsening > 1 or has_tensors) and load is None:
            raise ValueError("a kernel of several artifacts needs a loader of its variants")
        self._values, self._pointers = _parameter_buffers(plan.count)
        namespace = self._namespace(plan, function, stream, launch_kernel, cube_dim)
        namespace["SHARED"] = shared_bytes
        if coarsening > 1 and not has_tensors:
            fast = variant is NO_ALIAS
            namespace.update(
                COARSENING=coarsening,
                fast=function if fast else None,
                plain=None if fast else function,
                load_fast=lambda: self._load_variant(namespace, "fast", NO_ALIAS),
                load_plain=lambda: self._load_variant(namespace, "plain", None),
            )
        if has_tensors:
            functions: dict[Any, Any] = {}
            if isinstance(variant, tuple):
                functions[variant] = function
                if coarsening == 1:
                    functions[(None, variant[1])] = function
            namespace.update(
                COARSENING=coarsening,
                NO_ALIAS=NO_ALIAS,
                functions=functions,
                load_variant=self._variant_loader(functions),
            )
        self._namespace_of_launch = namespace
        self._plan = plan
        self._coarsening = coarsening
        self._specialised = specialised
        self._generic_left = GENERIC_LAUNCHES
        self.launch: Callable[[Any, tuple[Any, ...]], None]
        """Launches the kernel on ``cube_count`` cubes with ``args``: the generic launch
        function for the first :data:`GENERIC_LAUNCHES` launches of a layout this process has
        not generated one for, the generated one after."""
        if has_launch_code(plan.layout):
            self._specialise()
        else:
            self.launch = self._generic(namespace)

    def __call__(self, cube_count: Any, args: tuple[Any, ...]) -> None:
        self.launch(cube_count, args)

    @functools.cached_property
    def _slots(self) -> list[tuple[int, SlotKind, int, Any, bool, bool]]:
        """What :meth:`_resolve` reads of each parameter, made at its first need: a layout
        whose launch function this process generated before never reads them."""
        return [
            (j, p.kind, p.rank, p.scalar, p.scalar.name == "bf16", p.written)
            for j, p in enumerate(self._params)
        ]

    def _specialise(self) -> None:
        """Binds the generated launch function of this layout (compiling it when this process
        has not) and hands it to ``specialised``."""
        namespace = self._namespace_of_launch
        exec(launch_code(self._plan.layout), namespace)
        self.launch = namespace["launch"]
        if self._specialised is not None:
            self._specialised(self.launch)

    def _generic(self, ns: dict[str, Any]) -> Callable[[Any, tuple[Any, ...]], None]:
        """The launch function of any layout, reading it slot by slot (:meth:`_resolve`): what
        the generated one does, without its memory of the last arguments, in a loop (a few
        microseconds more per launch) and with nothing to compile."""
        acquire, release = ns["acquire"], ns["release"]
        pack, values_buffer = ns["pack"], ns["values"]
        launch_kernel, stream, pointers = ns["launch_kernel"], ns["stream"], ns["pointers"]
        bx, by, bz, shared = ns["BX"], ns["BY"], ns["BZ"], ns["SHARED"]
        resolve = self._resolve

        def launch(cube_count: Any, args: tuple[Any, ...]) -> None:
            acquire()
            try:
                function, (gx, gy, gz), values = resolve(cube_count, args)
                ns["m_count"] = _UNSEEN
                if values:
                    try:
                        pack(values_buffer, 0, *values)
                    except struct.error:
                        raise self._scalar_error(args) from None
                (status,) = launch_kernel(
                    function, gx, gy, gz, bx, by, bz, shared, stream, pointers, 0
                )
                self._generic_left -= 1
                due = self._generic_left == 0
            finally:
                release()
            if due:
                self._specialise()
            if status:
                raise self._launch_error(status)

        return launch

    def node(self, cube_count: Any, args: tuple[Any, ...]) -> LaunchNode:
        """What a launch with ``cube_count`` and ``args`` hands the driver, with its parameter
        values in buffers of their own: a kernel node of a graph (:mod:`.graphs`). Checks the
        arguments as a launch does, raising :class:`LaunchError` for any that do not fit."""
        ns = self._namespace_of_launch
        ns["acquire"]()
        try:
            function, grid, values = self._resolve(cube_count, args)
        finally:
            ns["release"]()
        buffer, pointers = _parameter_buffers(len(self._pointers))
        if values:
            try:
                ns["pack"](buffer, 0, *values)
            except struct.error:
                raise self._scalar_error(args) from None
        block = (ns["BX"], ns["BY"], ns["BZ"])
        return LaunchNode(function, grid, block, ns["SHARED"], buffer, pointers)

    def _resolve(
        self, cube_count: Any, args: tuple[Any, ...]
    ) -> tuple[Any, tuple[int, int, int], list[Any]]:
        """The function of the variant ``args`` take, the grid in blocks and every parameter
        value, read slot by slot; raises :class:`LaunchError` for arguments that do not fit.
        Called under the launch lock (a variant may be loaded)."""
        ns = self._namespace_of_launch
        slots = self._slots
        if len(args) != len(slots):
            raise self.checker.count_error(args)
        coarsening = self._coarsening
        coarsened = coarsening > 1
        client = self._client
        values: list[Any] = []
        spans: list[tuple[int, int, bool]] = []
        mask = bit = 0
        for (j, kind, rank, scalar, is_bf16, written), a in zip(slots, args, strict=True):
            if kind is SlotKind.SCALAR:
                values.append(self.bf16_arg(a) if is_bf16 else a)
                continue
            own = type(a) in OURS and a.client is client and a.scalar is scalar
            if kind is SlotKind.ARRAY:
                if own and a.flat >= 0:
                    p, n = a.ptr, a.flat
                else:
                    p, n = self._array(j, a)
                values += (p, n)
            else:
                if own and a.ndim == rank:
                    p, n, words, contiguous = a.ptr, a.n, a.words, a.contiguous
                else:
                    p, n, words, contiguous = self._tensor(j, a)
                values += (p, *words)
                mask |= contiguous << bit
                bit += 1
            spans.append((p, p + n * scalar.itemsize, coarsened and written))
        if type(cube_count) is int and 0 < cube_count <= ns["MAX_X"]:
            gx, gy, gz = cube_count, 1, 1
        else:
            gx, gy, gz = self._grid(cube_count)
        apart = coarsened and all(
            end <= other or other_end <= start
            for i, (start, end, written) in enumerate(spans)
            if written
            for k, (other, other_end, _) in enumerate(spans)
            if k != i
        )
        blocks = (gx + coarsening - 1) // coarsening if apart else gx
        if self._plan.has_tensors:
            variant = (NO_ALIAS if apart else None, mask)
            function = ns["functions"].get(variant)
            if function is None:
                function = ns["load_variant"](variant)
        elif coarsened:
            name = "fast" if apart else "plain"
            function = ns[name]
            if function is None:
                function = ns[f"load_{name}"]()
        else:
            function = ns["function"]
        if coarsened:
            values.append(gx)
        return function, (blocks, gy, gz), values

    def _namespace(
        self,
        plan: _LayoutPlan,
        function: Any,
        stream: Any,
        launch_kernel: Callable[..., tuple[Any, ...]],
        cube_dim: tuple[int, int, int],
    ) -> dict[str, Any]:
        """The globals of this launcher's launch function: the plan's, and its own handles,
        buffers, lock and methods."""
        lock = threading.Lock()
        bx, by, bz = cube_dim
        names = dict(plan.names)
        names.update(
            client=self._client,
            array_arg=self._array,
            tensor_arg=self._tensor,
            count_error=self.checker.count_error,
            scalar_error=self._scalar_error,
            launch_error=self._launch_error,
            grid=self._grid,
            acquire=lock.acquire,
            release=lock.release,
            values=self._values,
            launch_kernel=launch_kernel,
            function=function,
            stream=stream,
            pointers=ctypes.addressof(self._pointers),
            BX=bx,
            BY=by,
            BZ=bz,
            MAX_X=self._client.limits.max_cube_count[0],
        )
        return names

    def _load_variant(self, namespace: dict[str, Any], name: str, variant: Any) -> Any:
        assert self._load is not None
        function = namespace[name] = self._load(variant)
        return function

    def _variant_loader(self, functions: dict[Any, Any]) -> Callable[[Any], Any]:
        def load_variant(variant: Any) -> Any:
            assert self._load is not None
            function = functions[variant] = self._load(variant)
            return function

        return load_variant

    def _foreign(self, index: int, arg: Any) -> DeviceArray:
        """Another library's array as the checker sees it, or the LaunchError saying why it
        cannot be one."""
        checker = self.checker
        if isinstance(arg, CudaBuffer):
            raise checker.other_client(index)
        if isinstance(arg, np.ndarray):
            raise checker.host_memory(index)
        try:
            foreign = device_array(arg, self._client.stream_handle)
        except UnusableArray as e:
            raise checker.refuse(index, f"cannot be read: {e}") from None
        except LookupError as e:
            raise checker.device_memory(index, str(e)) from None
        if foreign is None:
            raise checker.not_a_buffer(index, arg)
        return foreign

    def _own(self, index: int, arg: Any) -> bool:
        """Whether ``arg`` is this client's buffer (checked as any other array if so)."""
        return isinstance(arg, CudaBuffer) and arg.client is self._client

    def _array(self, index: int, arg: Any) -> tuple[int, int]:
        if self._own(index, arg):
            return self.checker.array(index, arg.view())
        foreign = self._foreign(index, arg)
        found = self.checker.array(index, foreign.view)
        if found[1]:
            self._client.adopt(foreign, self.checker.where(index))
        return found

    def _tensor(self, index: int, arg: Any) -> tuple[int, int, tuple[int, ...], bool]:
        """A tensor's address, the elements its span covers (for the overlap check), its
        rank, shape and strides, and whether it is contiguous innermost."""
        if self._own(index, arg):
            values: TensorValues = self.checker.tensor(index, arg.view())
        else:
            foreign = self._foreign(index, arg)
            values = self.checker.tensor(index, foreign.view)
            if values.shape and all(values.shape):
                self._client.adopt(foreign, self.checker.where(index))
        span = 0
        if all(values.shape):
            span = 1 + sum((e - 1) * s for e, s in zip(values.shape, values.strides, strict=True))
        return values.address, span, values.words(), values.contiguous

    @staticmethod
    def bf16_arg(arg: Any) -> Any:
        """A bf16 argument's bits; anything that is no number as it is (the packing refuses
        it)."""
        try:
            return bf16_bits(float(arg))
        except (TypeError, ValueError):
            return arg

    def _grid(self, cube_count: Any) -> tuple[int, int, int]:
        dims = dims3(cube_count, "cube_count", self._kernel)
        self._client.limits.check_cube_count(dims, self._kernel)
        return dims

    def _scalar_error(self, args: tuple[Any, ...]) -> LaunchError:
        return self.checker.scalar_error(args)

    def _launch_error(self, status: int) -> LaunchError:
        return LaunchError(f"CUDA refused to launch kernel {self._kernel} ({error_text(status)})")
