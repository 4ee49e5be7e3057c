"""The CUDA client: one GPU's memory, its kernels and one stream to run them on.

``cubejit.client("cuda", device=0)`` makes one :class:`CudaClient` per device. It opens the
device's primary context, creates its own stream (a blocking one, so work that CuPy or PyTorch
put on the legacy default stream is ordered before its launches without a wait), compiles with
NVRTC for the device's exact architecture and keeps artifacts in the active environment under
``cuda/<version>/sm_<major><minor>-nvrtc<major>.<minor>``.

Launches are asynchronous: :meth:`CudaClient.read` and :meth:`CudaClient.sync` wait for them.
Without the CUDA packages a client cannot be made and says what to install; without a GPU, it
says that no device was found.
"""

from __future__ import annotations

import functools
import importlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cubejit.backends import cuda_opening
from cubejit.backends.cuda import nvrtc
from cubejit.backends.cuda.buffer import (
    LEGACY_DEFAULT_STREAM,
    CudaBuffer,
    DeviceArray,
    UnusableArray,
    device_array,
)
from cubejit.backends.cuda.checked_launch import checked_launcher
from cubejit.backends.cuda.coarsening import NO_ALIAS
from cubejit.backends.cuda.compiler import LinkingCudaCompiler
from cubejit.backends.cuda.driver import (
    CudaLimits,
    arch_name,
    call,
    driver_module,
    open_device,
)
from cubejit.backends.cuda.graphs import LaunchGraph
from cubejit.backends.cuda.launch import Launcher, LaunchNode, arrays_apart, first_mask
from cubejit.backends.cuda.memory import DeviceMemory
from cubejit.backends.cuda.target import CudaTarget, fingerprint, link_cubins
from cubejit.compile.id import ArtifactId
from cubejit.compile.loader import KernelLoader
from cubejit.compile.mirror import Mirror
from cubejit.compile.recording import ServerLogger
from cubejit.environment import ArtifactStore
from cubejit.environment.artifacts import ready_reads
from cubejit.environment.build import build_id
from cubejit.errors import BackendUnavailableError, LaunchError
from cubejit.ir.types import Scalar, TensorType, from_dtype
from cubejit.runtime.checking import checked_variant
from cubejit.runtime.layout import U32_MAX, all_contiguous, param_slots

ORDINALS_KEPT = 4096
"""The addresses of other libraries' arrays whose device a client remembers."""


def _ready_store() -> None:
    """What the client's store needs that no device does, done while the driver opens the
    device on a thread of its own (:mod:`cubejit.backends.cuda_opening`) rather than after:
    NVRTC's version, which names the namespace, the build id, which keys every artifact, and
    the active environment's database, opened and read once (:func:`ready_reads`)."""
    nvrtc.version()
    build_id()
    ready_reads()


FIRST_LAUNCH = ("cubejit.lang.identity",)
"""What a first launch needs that creating a client does not: reading a kernel's identity."""

COMPILING = (
    "cubejit.lang.frontend",
    "cubejit.ir.validate",
    "cubejit.backends.cuda.cooperation",
    "cubejit.backends.cuda.dialect",
)
"""The modules only compiling a kernel needs: the parser and the lowering to CUDA C++."""


def _import_while_opening(device: int) -> None:
    """Imports the :data:`FIRST_LAUNCH` modules, then the :data:`COMPILING` ones, one by one
    while the driver is still opening ``device``, and no more once it is done: a client that
    would wait for the device anyway then has them at no cost for its first launch and its
    first compile, and a warm process whose device opened quickly never imports the compiling
    ones (NVRTC is never loaded here: only a compile loads it)."""
    for name in (*FIRST_LAUNCH, *COMPILING):
        if not cuda_opening.under_way(device):
            return
        importlib.import_module(name)


class CudaClient:
    """Device buffers, kernel loading and launches on one GPU."""

    backend = "cuda"

    def __init__(
        self, device: int = 0, parallelism: int | None = None, check_bounds: bool = False
    ) -> None:
        if not nvrtc.available():
            nvrtc.nvrtc_module()
        driver = driver_module()
        self._driver = driver
        self.device = device
        """The device's ordinal."""
        cuda_opening.start(device)
        _ready_store()
        _import_while_opening(device)
        handle, self._context, self.limits = open_device(device)
        self.limits: CudaLimits
        """What the device allows, read from the driver; kernels are validated against it."""
        self.arch = arch_name(self.limits.compute_capability)
        """The architecture cubins are built for (``sm_90a`` on an H100 or H200)."""
        self._stream = call(
            driver.cuStreamCreate, 0, what="create a stream", error=BackendUnavailableError
        )
        self.stream_handle = int(self._stream)
        """The client's stream, as its address: every launch and copy runs on it."""
        self._event = call(
            driver.cuEventCreate,
            driver.CUevent_flags.CU_EVENT_DISABLE_TIMING.value,
            what="create an event",
            error=BackendUnavailableError,
        )
        self._memory = DeviceMemory(driver, handle, device, self._stream)
        """Where the client's buffers live: a stream-ordered pool where the device has one."""
        self._ordinals: dict[int, int] = {}
        """The device of each address another library's array was seen at."""
        self.compiler = LinkingCudaCompiler(
            self.arch, self.limits, functools.partial(link_cubins, self._context)
        )
        """The compiler of this client's kernels (``compiler.compilations`` counts NVRTC runs),
        which links the kernels a batch compiles into one cubin. NVRTC is loaded, and told the
        device's architecture, only when it first compiles: a process the store serves entirely
        never loads it."""
        store = ArtifactStore("cuda", fingerprint(self.limits.compute_capability))
        self.loader = KernelLoader(CudaTarget(self._context, self.compiler, store), parallelism)
        """The loader of this client's kernels."""
        self._logger = ServerLogger()
        self._launchers: Mirror[Any, Callable[[Any, tuple[Any, ...]], None]] = Mirror(
            self.loader.generation
        )
        """The launch function of each spec launched, by the spec itself (specs compare by
        identity, and the kernel keeps each of them for good). A mirror of the store, as the
        loader's loaded kernels are: a switch of environment drops them, so that each kernel
        loads again from (or is stored into) the new one."""
        self._nodes: Mirror[Any, Callable[[Any, tuple[Any, ...]], LaunchNode]] = Mirror(
            self.loader.generation
        )
        """What a launch of each spec launched hands the driver, as a graph's node
        (:meth:`graph`): made with its launch function, and dropped with it."""
        self.check_bounds = check_bounds
        """Whether this client launches checked variants (:mod:`cubejit.runtime.checking`),
        synchronising after each launch to read their records."""
        if check_bounds:
            self._launcher = self._checked_launcher  # type: ignore[method-assign]

    def __repr__(self) -> str:
        return f"CudaClient(device={self.device}, {self.limits.name}, {self.arch})"

    # Kernels.

    def launch(self, spec: Any, cube_count: int | tuple[int, ...], args: tuple[Any, ...]) -> None:
        """Runs ``spec`` on ``cube_count`` cubes with ``args``, asynchronously on the client's
        stream; loads it first (compiling the queue with it) on its first launch. Raises
        :class:`LaunchError`, with nothing run, for arguments that do not fit."""
        launcher = self._launchers.get(spec)
        if launcher is None:
            launcher = self._launcher(spec, args)
        launcher(cube_count, args)

    def _checked_launcher(
        self, spec: Any, args: tuple[Any, ...]
    ) -> Callable[[Any, tuple[Any, ...]], None]:
        """A checked client's ``_launcher``: the checked variants' launch function
        (:mod:`cubejit.backends.cuda.checked_launch`)."""
        launch = checked_launcher(self, spec, args)
        self._launchers.put(spec, launch)
        return launch

    def prepare(self, spec: Any) -> None:
        """Queues ``spec`` for the next batch (the next first launch, or
        :meth:`compile_queued`), so that many kernels compile at once: in the form for launches
        whose arrays do not overlap, the one a launch takes unless an array it writes is another
        argument too (a kernel with tensors: that, for tensors contiguous innermost)."""
        variant: Any = NO_ALIAS
        if any(isinstance(p.type, TensorType) for p in spec.params):
            variant = (NO_ALIAS, all_contiguous(spec.params))
        self.loader.enqueue(spec, checked_variant(variant) if self.check_bounds else variant)

    def compile_queued(self) -> None:
        """Compiles every queued kernel now, in one batch."""
        self.loader.compile_queued(self._logger)

    def _launcher(self, spec: Any, args: tuple[Any, ...]) -> Callable[[Any, tuple[Any, ...]], None]:
        """The launch function of ``spec``, made at its first launch, with ``args``. Which
        arrays the kernel writes is known once an artifact is loaded; until then the variant is
        the no-alias one only if no two buffer arguments overlap at all. A kernel with tensors
        starts with the contiguity its first arguments have too."""
        variant: Any = NO_ALIAS if arrays_apart(spec.params, args) else None
        if any(isinstance(p.type, TensorType) for p in spec.params):
            variant = (variant, first_mask(param_slots(spec.params), args))
        handle = self.loader.load(spec, ArtifactId(spec.id(), variant), self._logger)

        def load(other: Any) -> Any:
            return self.loader.load(spec, ArtifactId(spec.id(), other), self._logger).function

        cached: list[Callable[[Any, tuple[Any, ...]], None]] = []

        def specialised(generated: Callable[[Any, tuple[Any, ...]], None]) -> None:
            # Told during construction too (a layout generated before): nothing is cached yet,
            # and the launcher's own function is already the generated one.
            if cached and self._launchers.get(spec) is cached[0]:
                self._launchers.put(spec, generated)
                cached[0] = generated

        launcher = Launcher(
            self,
            handle.function,
            handle.params,
            spec.cube_dim,
            spec.name,
            self._driver.cuLaunchKernel,
            self._stream,
            coarsening=handle.coarsening,
            shared_bytes=handle.dynamic_shared,
            variant=variant,
            load=load,
            specialised=specialised,
        )
        launch = launcher.launch
        cached.append(launch)
        self._launchers.put(spec, launch)
        self._nodes.put(spec, launcher.node)
        return launch

    def graph(self, launches: Sequence[tuple[Any, Any, tuple[Any, ...]]]) -> LaunchGraph | None:
        """``launches`` (each a spec, a cube count and its arguments) as one graph that runs
        them in order on the client's stream, each checked now as its launch would be (raising
        :class:`LaunchError` as it would); ``None`` for a checked client, whose launches each
        read their bounds records. The graph is right only while the arguments stay what they
        are (:mod:`~cubejit.backends.cuda.graphs`)."""
        if self.check_bounds or not launches:
            return None
        nodes = []
        for spec, cube_count, args in launches:
            node = self._nodes.get(spec)
            if node is None:
                self._launcher(spec, args)
                node = self._nodes.get(spec)
                assert node is not None
            nodes.append(node(cube_count, args))
        return LaunchGraph(
            self._driver, nodes, self._stream, self.loader.generation, self._make_current
        )

    # Memory.

    def to_device(self, array: Any, dtype: Scalar | None = None) -> CudaBuffer:
        """A new device buffer holding a copy of ``array``'s elements, a C-contiguous tensor of
        its shape. ``dtype`` names the element type where numpy's cannot (``cj.bf16`` for
        ``uint16`` bits)."""
        try:
            host = np.ascontiguousarray(array)
        except (TypeError, ValueError) as e:
            raise LaunchError(f"cannot copy {type(array).__name__} to the device: {e}") from None
        scalar = dtype if dtype is not None else from_dtype(host.dtype)
        if scalar is None or host.dtype.itemsize != scalar.itemsize:
            raise LaunchError(f"cubejit has no element type for numpy dtype {host.dtype}")
        buffer = self._allocate(host.shape, scalar)
        if host.size:
            self._make_current()
            call(
                self._driver.cuMemcpyHtoDAsync,
                buffer.ptr,
                host.ctypes.data,
                host.nbytes,
                self._stream,
                what="copy to the device",
            )
        return buffer

    def empty(self, shape: Any, dtype: Any) -> CudaBuffer:
        """A new device buffer of ``shape`` (a number of elements, or a tuple for a C-contiguous
        tensor) of ``dtype`` (a cubejit scalar or a numpy dtype), not initialised."""
        try:
            scalar = dtype if isinstance(dtype, Scalar) else from_dtype(np.dtype(dtype))
        except TypeError:
            scalar = None
        if scalar is None:
            raise LaunchError(f"cubejit has no element type for {dtype!r}")
        dims = tuple(shape) if isinstance(shape, tuple | list) else (shape,)
        if not dims or not all(
            isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= 0 for d in dims
        ):
            raise LaunchError(
                f"a buffer's shape is a number of elements or a tuple of them, not {shape!r}"
            )
        return self._allocate(tuple(int(d) for d in dims), scalar)

    def read(self, buffer: Any) -> np.ndarray:
        """The elements of ``buffer`` (this client's, or any device array with
        ``__cuda_array_interface__`` or DLPack, C-contiguous) as a new numpy array of its shape,
        once every launch before has finished."""
        if isinstance(buffer, CudaBuffer):
            ptr, shape, dtype = buffer.ptr, buffer.shape, buffer.scalar.dtype
        else:
            try:
                foreign = device_array(buffer, self.stream_handle)
            except (UnusableArray, LookupError) as e:
                raise LaunchError(
                    f"client.read cannot read this {type(buffer).__name__}: {e}"
                ) from None
            if foreign is None or not foreign.view.is_c_contiguous():
                raise LaunchError(
                    f"client.read takes a buffer or a C-contiguous device array, not "
                    f"{type(buffer).__name__}"
                )
            ptr, shape = foreign.ptr, foreign.view.shape
            dtype = np.dtype(foreign.view.dtype if foreign.view.dtype != "bfloat16" else "uint16")
        host = np.empty(shape, dtype)
        n = host.size
        self._make_current()
        if n:
            call(
                self._driver.cuMemcpyDtoHAsync,
                host.ctypes.data,
                ptr,
                host.nbytes,
                self._stream,
                what="copy from the device",
            )
        self.sync()
        return host

    def sync(self) -> None:
        """Waits until every launch and copy of this client has finished. A kernel that
        failed on the device (an illegal address) is reported here, as a ``LaunchError``."""
        self._make_current()
        call(self._driver.cuStreamSynchronize, self._stream, what="finish the client's work")

    def adopt(self, array: DeviceArray, where: str) -> None:
        """Checks that another library's ``array`` lives on this device and orders this
        client's stream after the stream its producer named.

        The device of each address is asked once: addresses are unified across devices, so an
        address of this device stays one while anything allocated there lives (a library's
        caching allocator hands the same addresses out again and again)."""
        self.adopt_address(array.ptr, array.stream, where)

    def adopt_address(self, ptr: int, stream: int | None, where: str) -> None:
        """:meth:`adopt` for the address ``ptr`` of an array whose producer named ``stream``."""
        driver = self._driver
        ordinal = self._ordinals.get(ptr)
        if ordinal is None:
            self._make_current()
            ordinal = int(
                call(
                    driver.cuPointerGetAttribute,
                    driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                    ptr,
                    what=f"locate {where}",
                )
            )
            if len(self._ordinals) >= ORDINALS_KEPT:
                self._ordinals.clear()
            self._ordinals[ptr] = ordinal
        if ordinal != self.device:
            raise LaunchError(
                f"{where} lives on CUDA device {ordinal}, not on this client's device {self.device}"
            )
        if stream in (None, LEGACY_DEFAULT_STREAM, self.stream_handle):
            return
        self._make_current()
        call(driver.cuEventRecord, self._event, stream, what=f"wait for {where}")
        call(driver.cuStreamWaitEvent, self._stream, self._event, 0, what=f"wait for {where}")

    def _allocate(self, shape: tuple[int, ...], scalar: Scalar) -> CudaBuffer:
        n = math.prod(shape)
        if n > U32_MAX:
            raise LaunchError(
                f"a buffer of shape {shape} has {n} elements; at most {U32_MAX} fit a u32 length"
            )
        if n == 0:
            return CudaBuffer(self, 0, 0, scalar, None, shape)
        self._make_current()
        ptr = self._memory.allocate(
            n * scalar.itemsize, f"allocate {n} x {scalar.name} on the device"
        )
        return CudaBuffer(self, ptr, n, scalar, self._free, shape)

    def _make_current(self) -> None:
        """Makes the client's context current on the calling thread, which any thread may be."""
        call(self._driver.cuCtxSetCurrent, self._context, what="make the context current")

    def _free(self, ptr: int) -> None:
        self._driver.cuCtxSetCurrent(self._context)
        self._memory.free(ptr)
