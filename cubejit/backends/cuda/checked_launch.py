"""A checked CUDA client's launches: the checked variants, and their records read after each.

:func:`checked_launcher` makes the launch function of one kernel as
:meth:`CudaClient._launcher <cubejit.backends.cuda.client.CudaClient>` does, but of checked
variants only (:mod:`cubejit.runtime.checking`). Each checked module's record (a ``__device__``
global found by name) is cleared on the client's stream before the launch; after it the client
synchronises, reads every record of the kernel's loaded variants, and raises the LaunchError of
the first one filled. An unchecked client never comes here: its launch path is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cubejit.backends.cuda.coarsening import NO_ALIAS
from cubejit.backends.cuda.driver import call
from cubejit.backends.cuda.launch import Launcher, arrays_apart, first_mask
from cubejit.compile.id import ArtifactId
from cubejit.errors import LaunchError
from cubejit.ir.types import TensorType
from cubejit.runtime.checking import RECORD_BYTES, RECORD_SYMBOL, bounds_error, checked_variant
from cubejit.runtime.layout import param_slots


def checked_launcher(
    client: Any, spec: Any, args: tuple[Any, ...]
) -> Callable[[Any, tuple[Any, ...]], None]:
    """The checked launch function of ``spec`` on ``client``, made at its first launch."""
    driver = client._driver
    variant: Any = NO_ALIAS if arrays_apart(spec.params, args) else None
    if any(isinstance(p.type, TensorType) for p in spec.params):
        variant = (variant, first_mask(param_slots(spec.params), args))
    records: dict[int, Any] = {}
    plane_dim = client.compiler.capabilities.plane_size

    def loaded(other: Any) -> Any:
        aid = ArtifactId(spec.id(), checked_variant(other))
        handle = client.loader.load(spec, aid, client._logger)
        if id(handle.module) not in records:
            pointer, size = call(
                driver.cuModuleGetGlobal,
                handle.module,
                RECORD_SYMBOL.encode(),
                what=f"find the bounds record of {spec.name}",
            )
            if size != RECORD_BYTES:
                raise LaunchError(f"kernel {spec.name}: its bounds record has {size} bytes")
            records[id(handle.module)] = (handle.module, pointer)
        return handle

    handle = loaded(variant)
    inner = Launcher(
        client,
        handle.function,
        handle.params,
        spec.cube_dim,
        spec.name,
        driver.cuLaunchKernel,
        client._stream,
        coarsening=handle.coarsening,
        shared_bytes=handle.dynamic_shared,
        variant=variant,
        load=lambda other: loaded(other).function,
    ).launch

    def launch(cube_count: Any, launch_args: tuple[Any, ...]) -> None:
        client._make_current()
        for _, pointer in records.values():
            call(
                driver.cuMemsetD8Async,
                pointer,
                0,
                RECORD_BYTES,
                client._stream,
                what="clear the bounds record",
            )
        inner(cube_count, launch_args)
        client.sync()
        for _, pointer in list(records.values()):
            host = np.zeros(RECORD_BYTES, np.uint8)
            call(
                driver.cuMemcpyDtoH,
                host.ctypes.data,
                pointer,
                RECORD_BYTES,
                what="read the bounds record",
            )
            error = bounds_error(spec, host.tobytes(), plane_dim=plane_dim)
            if error is not None:
                raise error

    return launch
