"""Launches fixed in their arguments, run again as one CUDA graph.

On an H200 host a ``cuGraphLaunch`` of a graph costs the host half what one ``cuLaunchKernel``
does (2.8 against 5.8 µs through ``cuda.bindings``), whatever the graph holds: a sequence of
launches that repeats with the very same arguments (:mod:`cubejit.std`'s replays of a call on
the same memory) runs cheaper as a graph of them, made once. Each launch is checked when the
graph is made, as a launch would check it, and never again, so a graph is only right while its
arguments stay what they were: the memory at the same addresses, the same scalars.

A graph belongs to its client and to the kernels it loaded from the active store: after an
environment switch :meth:`LaunchGraph.launch` launches nothing and says so, and its maker makes
another (as every launch function is made again then).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

from cubejit.backends.cuda.driver import call, error_text
from cubejit.backends.cuda.launch import LaunchNode
from cubejit.errors import LaunchError


class LaunchGraph:
    """The launches of :class:`~cubejit.backends.cuda.launch.LaunchNode` s, in order, on one
    stream, instantiated once; freed with the object. The driver copies each node's values as
    it is added, so the nodes need not outlive the constructor; their functions stay loaded
    while the generation does."""

    __slots__ = (
        "_driver",
        "_exec",
        "_generation",
        "_generation_of",
        "_make_current",
        "_stream",
    )

    def __init__(
        self,
        driver: Any,
        nodes: Sequence[LaunchNode],
        stream: Any,
        generation: Callable[[], int],
        make_current: Callable[[], None],
    ) -> None:
        """``generation()`` is the client's loader's: the kernels of ``nodes`` stay the
        client's while it returns what it returns now. ``make_current()`` makes the client's
        context current on the calling thread. Raises :class:`~cubejit.errors.LaunchError` if
        the driver refuses the graph."""
        self._driver = driver
        self._stream = stream
        self._generation_of = generation
        self._generation = generation()
        self._make_current = make_current
        make_current()
        graph = call(driver.cuGraphCreate, 0, what="create a graph")
        try:
            previous: list[Any] = []
            for node in nodes:
                params = driver.CUDA_KERNEL_NODE_PARAMS()
                params.func = node.function
                params.gridDimX, params.gridDimY, params.gridDimZ = node.grid
                params.blockDimX, params.blockDimY, params.blockDimZ = node.block
                params.sharedMemBytes = node.shared
                params.kernelParams = ctypes.addressof(node.pointers)
                added = call(
                    driver.cuGraphAddKernelNode,
                    graph,
                    previous,
                    len(previous),
                    params,
                    what="add a launch to a graph",
                )
                previous = [added]
            self._exec = call(driver.cuGraphInstantiate, graph, 0, what="instantiate a graph")
        finally:
            driver.cuGraphDestroy(graph)

    def launch(self) -> bool:
        """Launches the graph on the stream; ``False``, with nothing launched, when its kernels
        are no longer the client's (make another graph)."""
        if self._generation_of() != self._generation:
            return False
        (status,) = self._driver.cuGraphLaunch(self._exec, self._stream)
        if status:
            raise LaunchError(f"CUDA could not launch a graph ({error_text(status)})")
        return True

    def __del__(self) -> None:
        graph_exec = getattr(self, "_exec", None)
        if graph_exec is not None:
            try:
                self._make_current()
                self._driver.cuGraphExecDestroy(graph_exec)
            except Exception:
                pass
