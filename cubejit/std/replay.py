"""Calls of the standard kernels on CUDA, replayed from what the first such call launched.

A standard function's host work (reading its operands, folding their dimensions, choosing a
form, line sizes and a spec, making views) depends only on the operands' layouts and the other
arguments, never on the data, and on CUDA it cost several times a short kernel's run. So the
first call with a given signature runs as written while its launches are recorded: each spec,
cube count and argument, every argument said in terms of the call's own arrays (the same
memory at an offset, under a shape and strides), of the empty buffers the call made
(:func:`made_empty`) or of constants. A later call with the same signature reads its arrays'
addresses, orders the client after their producers' streams as the first call did, makes new
empty buffers and launches the same specs on views of them. When its arrays are at the
addresses of the last replay, one CUDA graph of that replay's launches (made at the first such
call) runs them all in one driver call; and a call of the very objects of one of the last
few such calls, its PyTorch tensors unchanged (address, shape, strides, element type, device,
gradient), runs that graph again without its signature being read. A call that launches
anything the record cannot say again (a buffer it filled, another library's array it made) is
recorded once more (a first call may have tuned, running candidates on copies of its arrays),
then never replayed: its signature runs as written every time.

The signature of an array argument is its element type, shape, strides, alignment to 16 bytes,
writeability and client (a PyTorch tensor's read from its own methods); of any other argument
its type and value. Host arrays (the CPU backend) always run as written.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

import cubejit as cj
from cubejit.errors import LaunchError
from cubejit.lang import Kernel
from cubejit.lang.kernel import KernelSpec

PLANS_KEPT = 1024
"""Signatures whose launches each standard function remembers."""

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Said:
    """Memory a recorded launch passed: the call's array argument ``index`` (``made`` false) or
    the ``index``-th empty buffer it made, as it is, or ``view`` (a view recorded without its
    owner) moved to that memory's address ``offset`` bytes on."""

    made: bool
    index: int
    offset: int = 0
    view: Any = None


@dataclass(slots=True)
class Plan:
    """What one signature's calls launch, and what they return.

    The empty buffers other than the result are the plan's own after its first replay, reused
    by every later one: a call's launches all run on the client's one stream, in order, so the
    next call's launches use them only after this call's are done with them; a lock keeps one
    call's launches together when several threads replay the plan."""

    made: tuple[tuple[tuple[int, ...], Any], ...]
    """Shape and element type of each empty buffer, in the order made."""
    launches: tuple[tuple[KernelSpec, Any, tuple[Any, ...]], ...]
    result: Said | None
    keeps_nothing: bool
    """Whether the launches pass the call's arrays only through views, so that the plan may
    keep the last replay's arguments (:attr:`bound`) without keeping any array alive."""
    scratch: list[Any] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    bound: tuple[tuple[KernelSpec, Any, tuple[Any, ...]], ...] = ()
    """The last replay's launches with their arguments, when they hold nothing of the call's
    own (views of its arrays, the plan's scratch): a replay on the same addresses launches the
    very same objects again, which the launch functions pass to the driver unchecked."""
    bound_at: tuple[int, ...] | None = None
    """The array addresses :attr:`bound` was made for."""
    objects: tuple[int, ...] = ()
    """The identities of the arguments of the last call that ran :attr:`graph`."""
    graph: Any = None
    """:attr:`bound` as one graph of the client's (:meth:`CudaClient.graph`), which a replay on
    the same addresses launches at half the host's cost of its launches one by one; ``None``
    until a replay makes it, ``False`` where the client makes none."""


@dataclass
class _Recording:
    arrays: list[tuple[Any, int]]
    """Each array argument and its address."""
    made: list[Any] = field(default_factory=list)
    launches: list[tuple[KernelSpec, Any, tuple[Any, ...]]] = field(default_factory=list)
    sayable: bool = True

    def say(self, value: Any) -> Any:
        """``value`` as a plan argument, or a constant; unsayable ones spoil the record."""
        from cubejit.backends.cuda.buffer import CudaBuffer, CudaView

        if isinstance(value, CudaView):
            place = self._place(value.owner)
            if place is None:
                self.sayable = False
                return None
            made, index, base = place
            return Said(made, index, value.ptr - base, value.moved(value.ptr, None))
        if isinstance(value, CudaBuffer) or hasattr(value, "__cuda_array_interface__"):
            place = self._place(value)
            if place is None:
                self.sayable = False
                return None
            return Said(place[0], place[1])
        return value

    def _place(self, owner: Any) -> tuple[bool, int, int] | None:
        """Whether ``owner`` is a buffer the call made, its index and its address."""
        for index, (array, address) in enumerate(self.arrays):
            if owner is array:
                return False, index, address
        for index, buffer in enumerate(self.made):
            if owner is buffer:
                return True, index, buffer.ptr
        return None


class _Now(threading.local):
    now: _Recording | None = None
    """The recording under way on this thread."""


_recording = _Now()


def launch(
    kernel: Kernel, client: Any, cube_count: Any, cube_dim: Any, *args: Any, **comptime: Any
) -> None:
    """``kernel.launch(client, cube_count, cube_dim, *args, **comptime)``, recorded when a
    replayable call is being recorded on this thread."""
    spec, plain = kernel.resolve(cube_dim, args, comptime)
    recording = _recording.now
    if recording is not None and client.backend == "cuda":
        recording.launches.append((spec, cube_count, tuple(recording.say(a) for a in plain)))
    client.launch(spec, cube_count, plain)


def made_empty(buffer: Any) -> Any:
    """Tells a recording that ``buffer`` was made empty by the call (a replay makes another)."""
    recording = _recording.now
    if recording is not None:
        recording.made.append(buffer)
    return buffer


def replayed(fn: F) -> F:
    """``fn``, a standard function, replayed on CUDA from its first call of each signature."""
    plans: dict[tuple[Any, ...], Plan | None] = {}
    recent: list[_Again] = []

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if _recording.now is not None:
            return fn(*args, **kwargs)
        if recent:
            values = (*args, *kwargs.values()) if kwargs else args
            ids = (*map(id, values), *kwargs)
            for again in recent:
                if again.ids == ids and _unchanged(again, values):
                    done, result = _run_again(again, values)
                    if done:
                        return result
                    recent[:] = [kept for kept in recent if kept is not again]
                    break
        seen = _signature(args, kwargs)
        if seen is None:
            return fn(*args, **kwargs)
        key, arrays, addresses, client = seen
        plan = plans.get(key, _UNKNOWN)
        if plan is _UNKNOWN or plan is _AGAIN:
            return _record(fn, args, kwargs, key, arrays, plans, plan is _AGAIN)
        if plan is None:
            return fn(*args, **kwargs)
        result = _replay(plan, arrays, addresses, client)
        if plan.graph and plan.bound_at == addresses:
            # Remembered from the second call of the same objects in a row: a loop making new
            # arrays at the same addresses each time pays only for this look.
            objects = (*map(id, args), *map(id, kwargs.values()))
            if objects == plan.objects:
                remembered = _again_of(args, kwargs, arrays, addresses, plan)
                if remembered is not None:
                    recent[:] = [remembered, *recent[: AGAINS_KEPT - 1]]
            plan.objects = objects
        return result

    return call  # type: ignore[return-value]


AGAINS_KEPT = 4
"""The last calls each standard function remembers for running its graph again at once."""


@dataclass(frozen=True, slots=True)
class _Again:
    """A call that ran its plan's graph. A call of the very same argument objects, whose
    PyTorch tensors are still where and as they were, under the same settings, runs that graph
    again without its signature being read: the graph was made for those very operands."""

    ids: tuple[int | str, ...]
    """The identity of each argument, positional then keyword, then the keywords in order."""
    arrays: tuple[weakref.ref[Any], ...]
    """A weak reference to each array argument: while each lives, an argument of its identity
    is that very array."""
    kept: tuple[Any, ...]
    """The other arguments, held so that their identities stay theirs."""
    tensors: tuple[tuple[int, tuple[Any, ...]], ...]
    """The position of each PyTorch tensor and what :func:`_layout` read of it."""
    positions: tuple[int, ...]
    """The position of each array, in the order of the signature's arrays."""
    addresses: tuple[int, ...]
    plan: Plan
    settings: Any
    returned: int
    """The position of the argument the call returns (``out``), ``-1`` for ``None``, ``-2``
    for another value (a view, a scratch buffer), made again each call."""


def _layout(tensor: Any) -> tuple[Any, ...]:
    """What a graph's launches rely on of a PyTorch tensor: its address, shape, strides,
    element type, device and gradient (an in-place change of any keeps the object)."""
    return (
        tensor.data_ptr(),
        tensor.shape,
        tensor.stride(),
        tensor.dtype,
        tensor.is_cuda,
        tensor.requires_grad,
    )


def _again_of(
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    arrays: list[tuple[Any, int, Any]],
    addresses: tuple[int, ...],
    plan: Plan,
) -> _Again | None:
    """The call as an :class:`_Again`; ``None`` when an array of it is another library's that
    is not a PyTorch tensor (whose producer's stream each call must read)."""
    values = (*args, *kwargs.values())
    place = {id(value): position for position, value in enumerate(values)}
    positions = []
    tensors = []
    for array, _, stream in arrays:
        position = place[id(array)]
        positions.append(position)
        if stream is _OWN:
            continue
        if not _torch_types.get(type(array)):
            return None
        tensors.append((position, _layout(array)))
    said = plan.result
    returned = -1 if said is None else -2
    if said is not None and not said.made and said.view is None:
        returned = positions[said.index]
    return _Again(
        (*map(id, values), *kwargs),
        tuple(weakref.ref(values[p]) for p in positions),
        tuple(v for p, v in enumerate(values) if p not in positions),
        tuple(tensors),
        tuple(positions),
        addresses,
        plan,
        _settings(),
        returned,
    )


def _unchanged(again: _Again, values: tuple[Any, ...]) -> bool:
    """Whether ``values``, of ``again``'s identities, are its very objects still, its tensors
    unchanged and the settings the same."""
    for array in again.arrays:
        if array() is None:
            return False
    for position, layout in again.tensors:
        if _layout(values[position]) != layout:
            return False
    return _settings() is again.settings


def _run_again(again: _Again, values: tuple[Any, ...]) -> tuple[bool, Any]:
    """Runs ``again``'s graph and gives what the call returns; ``(False, None)``, with nothing
    launched, when the plan has no graph for these addresses any more (another call moved it,
    or its kernels were loaded again)."""
    plan = again.plan
    with plan.lock:
        if plan.bound_at != again.addresses or not _kept_graph_launched(plan):
            return False, None
    returned = again.returned
    if returned >= 0:
        return True, values[returned]
    if returned == -1:
        return True, None
    arrays = [(values[p], a, None) for p, a in zip(again.positions, again.addresses, strict=True)]
    return True, _value(plan.result, arrays, plan.scratch, True)


_UNKNOWN: Any = object()
_AGAIN: Any = object()
"""A signature whose first call the record could not say again: the next is recorded too,
since the first may have tuned (run candidates on copies of its arrays) and the next will not."""


def _record(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    key: tuple[Any, ...],
    arrays: list[tuple[Any, int, Any]],
    plans: dict[tuple[Any, ...], Plan | None],
    again: bool,
) -> Any:
    recording = _Recording([(a, address) for a, address, _ in arrays])
    _recording.now = recording
    try:
        result = fn(*args, **kwargs)
    finally:
        _recording.now = None
    said = recording.say(result) if result is not None else None
    plan = None
    if recording.sayable and (result is None or said is not None):
        made = tuple((b.shape, b.scalar) for b in recording.made)
        launches = tuple(recording.launches)
        plan = Plan(made, launches, said, _keeps_nothing(launches))
    if len(plans) >= PLANS_KEPT:
        plans.clear()
    plans[key] = plan if plan is not None or again else _AGAIN
    return result


def _replay(
    plan: Plan, arrays: list[tuple[Any, int, Any]], addresses: tuple[int, ...], client: Any
) -> Any:
    result = plan.result
    again = addresses == plan.bound_at
    for _, address, stream in arrays:
        # On the addresses of the last replay, whose devices were checked then, only the
        # producers' streams are waited for again.
        if address and stream is not _OWN and not (again and stream is None):
            client.adopt_address(address, stream, "cubejit.std: an argument")
    if again:
        with plan.lock:
            if not _graph_launched(plan, client):
                for spec, cube_count, args in plan.bound:
                    client.launch(spec, cube_count, args)
        return None if result is None else _value(result, arrays, plan.scratch, True)
    fresh = result.index if result is not None and result.made else -1
    with plan.lock:
        if not plan.scratch:
            plan.scratch = [client.empty(shape, scalar) for shape, scalar in plan.made]
        made = plan.scratch
        if fresh >= 0:
            made = list(made)
            shape, scalar = plan.made[fresh]
            made[fresh] = client.empty(shape, scalar)
        launches = plan.bound
        if fresh >= 0 or addresses != plan.bound_at:
            launches = tuple(
                (spec, cube_count, tuple(_value(a, arrays, made, False) for a in said_args))
                for spec, cube_count, said_args in plan.launches
            )
            if fresh < 0 and plan.keeps_nothing:
                plan.bound, plan.bound_at, plan.graph = launches, addresses, None
        for spec, cube_count, args in launches:
            client.launch(spec, cube_count, args)
    return None if result is None else _value(result, arrays, made, True)


def _graph_launched(plan: Plan, client: Any) -> bool:
    """Whether :attr:`Plan.bound` ran as one graph (made at its first replay on the same
    addresses); ``False`` where the client makes none, with nothing launched."""
    if plan.graph is None:
        try:
            plan.graph = client.graph(plan.bound) or False
        except LaunchError:
            plan.graph = False
    return _kept_graph_launched(plan)


def _kept_graph_launched(plan: Plan) -> bool:
    """Whether the plan's graph, where it has one, ran; a graph whose kernels are no longer the
    client's is dropped (the next replay on these addresses makes another)."""
    graph = plan.graph
    if not graph:
        return False
    if graph.launch():
        return True
    plan.graph = None
    return False


def _keeps_nothing(launches: tuple[tuple[KernelSpec, Any, tuple[Any, ...]], ...]) -> bool:
    """Whether ``launches`` pass the call's arrays only through views (which a replay makes
    without an owner), so that keeping them keeps no array of the caller alive."""
    return all(
        type(a) is not Said or a.made or a.view is not None
        for _, _, said_args in launches
        for a in said_args
    )


def _value(said: Any, arrays: list[tuple[Any, int, Any]], made: list[Any], keep: bool) -> Any:
    """The argument ``said`` stands for in this call; a view of it keeps its owner alive only
    when ``keep`` (the call's result: a launch's argument lives while the call does)."""
    if type(said) is not Said:
        return said
    if said.made:
        owner = made[said.index]
        address = owner.ptr
    else:
        owner, address, _ = arrays[said.index]
    view = said.view
    if view is None:
        return owner
    return view.moved(address + said.offset, owner if keep else None)


_OWN: Any = object()
"""The stream of a client's own buffer: nothing to order after."""


def _signature(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], list[tuple[Any, int, Any]], tuple[int, ...], Any] | None:
    """The call's signature, its arrays (each with its address and producer's stream), their
    addresses and its client; ``None`` for a call that runs as written (host arrays, another
    backend's client, unhashable values). Until a call needs the CUDA backend, a call on numpy
    arrays or naming another backend's client is told so before it is imported: such calls
    alone never import it."""
    buffer_type = _buffer_type
    if buffer_type is None:
        if _runs_as_written(args, kwargs):
            return None
        buffer_type = _load_backend()
    key: list[Any] = []
    arrays: list[tuple[Any, int, Any]] = []
    addresses: list[int] = []
    client = None
    names: tuple[str, ...] = ()
    values = args
    if kwargs:
        client = kwargs.get("client")
        if client is None and len(kwargs) == 1:
            names = (*kwargs,)
            values = (*args, *kwargs.values())
        else:
            names = tuple(sorted(kwargs))
            values = (*args, *[kwargs[k] for k in names if k != "client"])
    for value in values:
        kind = type(value)
        torch_like = _torch_types.get(kind)
        if torch_like is None:
            torch_like = _is_torch_tensor(value)
        if torch_like:
            shape = value.shape
            if not value.is_cuda or 0 in shape:
                return None
            ptr = value.data_ptr()
            key.append((value.dtype, shape, value.stride(), ptr & 15, value.requires_grad))
            arrays.append((value, ptr, None))
            addresses.append(ptr)
            continue
        if kind is buffer_type:
            if client is None:
                client = value.client
            elif value.client is not client:
                return None
            ptr = value.ptr
            key.append((value.scalar, value.shape, ptr & 15))
            arrays.append((value, ptr, _OWN))
            addresses.append(ptr)
            continue
        interface = getattr(value, "__cuda_array_interface__", None)
        if interface is not None:
            ptr, readonly = interface["data"]
            ptr = int(ptr or 0)
            key.append(
                (
                    interface["typestr"],
                    tuple(interface["shape"]),
                    _hashable(interface.get("strides")),
                    ptr & 15,
                    not ptr,
                    readonly,
                )
            )
            arrays.append((value, ptr, interface.get("stream")))
            addresses.append(ptr)
            continue
        if value is None or kind in (int, bool, str):
            key.append((kind, value))
        elif kind is float:
            key.append((float, value.hex()))
        elif kind is tuple and all(type(v) in (int, float) for v in value):
            key.append((tuple, tuple((type(v), repr(v)) for v in value)))
        else:
            return None
    if not arrays:
        return None
    if client is None:
        client = cj.client("cuda")
    if getattr(client, "backend", None) != "cuda":
        return None
    key.append(client)
    key.append(names)
    return tuple(key), arrays, tuple(addresses), client


_buffer_type: type | None = None
""":class:`~cubejit.backends.cuda.buffer.CudaBuffer`, imported at the first call with the two
names below (the standard library imports no backend)."""
_torch_types: dict[type, bool] = {}
_is_torch_tensor: Callable[[Any], bool]
_settings: Callable[[], Any]


def _runs_as_written(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether a call is one :func:`_signature` refuses whatever else it holds: it names a
    client of another backend, or passes a numpy array."""
    named = kwargs.get("client") if kwargs else None
    if named is not None and getattr(named, "backend", None) != "cuda":
        return True
    return any(type(v) is np.ndarray for v in (*args, *kwargs.values()))


def _load_backend() -> type:
    """Imports what a signature reads of the CUDA backend: its buffer type, and the one reader
    of PyTorch's tensors that launches share (a tensor's signature is read from its methods);
    and the settings, which decide the client a call without one launches on."""
    global _buffer_type, _torch_types, _is_torch_tensor, _settings
    from cubejit import config
    from cubejit.backends.cuda import buffer

    _torch_types, _is_torch_tensor = buffer.TORCH_TYPES, buffer.is_torch_tensor
    _settings = config.settings
    _buffer_type = buffer.CudaBuffer
    return buffer.CudaBuffer


def _hashable(strides: Any) -> tuple[int, ...] | None:
    return None if strides is None else tuple(strides)
