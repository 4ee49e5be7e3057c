"""cubejit: Python kernels, compiled many at a time, once per machine, for CPUs and NVIDIA GPUs.

A kernel is a Python function under :func:`kernel`; cubejit expands it to its IR, lowers it to
C or CUDA C++, compiles it with the platform compiler on several threads at once, keeps the
artifact in a persistent store and never compiles the same text twice. See LANGUAGE.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from cubejit.errors import (
    BackendUnavailableError,
    CompilationError,
    ConfigError,
    CubejitError,
    LaunchError,
    StoreError,
    TuneError,
    UnsupportedError,
    ValidationError,
)
from cubejit.lang import Kernel, KernelSpec

if TYPE_CHECKING:
    from cubejit import environment
    from cubejit.compile.id import ArtifactId, KernelId

    # What the language means inside a kernel, for mypy, pyright and editors (see the stub).
    from cubejit.lang.editor_types import (
        ABSOLUTE_POS,
        ABSOLUTE_POS_X,
        ABSOLUTE_POS_Y,
        ABSOLUTE_POS_Z,
        CUBE_COUNT,
        CUBE_COUNT_X,
        CUBE_COUNT_Y,
        CUBE_COUNT_Z,
        CUBE_DIM,
        CUBE_DIM_X,
        CUBE_DIM_Y,
        CUBE_DIM_Z,
        CUBE_POS,
        CUBE_POS_X,
        CUBE_POS_Y,
        CUBE_POS_Z,
        PLANE_DIM,
        UNIT_POS,
        UNIT_POS_PLANE,
        UNIT_POS_X,
        UNIT_POS_Y,
        UNIT_POS_Z,
        Array,
        Atomic,
        Comptime,
        Line,
        LocalArray,
        SharedMemory,
        Tensor,
        abs,
        acos,
        acosh,
        asin,
        asinh,
        atan,
        atan2,
        atanh,
        bf16,
        bitcast,
        bool_,
        cdiv,
        ceil,
        cos,
        cosh,
        erf,
        exp,
        exp2,
        f16,
        f32,
        f64,
        floor,
        fma,
        function,
        hypot,
        i8,
        i16,
        i32,
        i64,
        isinf,
        isnan,
        kernel,
        line,
        log,
        log2,
        max,
        min,
        plane_all,
        plane_any,
        plane_ballot,
        plane_broadcast,
        plane_elect,
        plane_exclusive_prod,
        plane_exclusive_sum,
        plane_inclusive_prod,
        plane_inclusive_sum,
        plane_max,
        plane_min,
        plane_prod,
        plane_shuffle,
        plane_shuffle_down,
        plane_shuffle_up,
        plane_shuffle_xor,
        plane_sum,
        pow,
        round,
        sin,
        sinh,
        sqrt,
        sync_cube,
        sync_plane,
        tan,
        tanh,
        trunc,
        u8,
        u16,
        u32,
        u64,
        unroll,
    )
    from cubejit.runtime import client
    from cubejit.runtime.lines import lined
    from cubejit.tune import Tunable, Tuner, anchor
else:
    from cubejit.ir.types import bf16, bool_, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
    from cubejit.lang import Array, Comptime, Line, Tensor, function, kernel

    def __getattr__(name: str) -> object:
        """The rest of ``__all__``, imported when first named (PEP 562): the builtins and
        positions are objects of the IR, the ids, the clients and the tuner need what only a
        specialised kernel, a device or a tuning does, so a module that only defines kernels
        imports none of them."""
        if name in _LAZY:
            return importlib.import_module(f"cubejit.{name}")
        if name not in __all__:
            raise AttributeError(f"module 'cubejit' has no attribute {name!r}")
        home = _HOMES.get(name)
        lang = importlib.import_module("cubejit.lang")
        if home is not None:
            value = getattr(importlib.import_module(home), name)
        elif name in lang.__all__:
            value = getattr(lang, name)
        else:
            from cubejit.ir.nodes import Position

            value = getattr(Position, name)
        globals()[name] = value
        return value


__version__ = "0.1.0"

_LAZY = ("environment",)
"""Subpackages reached as attributes (``cj.environment``) but imported only when first used:
importing cubejit loads no backend, no store (SQLite), no ``rich`` and no CUDA bindings."""

_HOMES = {
    "ArtifactId": "cubejit.compile.id",
    "KernelId": "cubejit.compile.id",
    "Tunable": "cubejit.tune",
    "Tuner": "cubejit.tune",
    "anchor": "cubejit.tune",
    "client": "cubejit.runtime",
    "lined": "cubejit.runtime.lines",
}
"""Where the names of ``__all__`` that are neither the language's (:mod:`cubejit.lang`) nor
positions (``cj.ABSOLUTE_POS``...) live."""


__all__ = [
    "ABSOLUTE_POS",
    "ABSOLUTE_POS_X",
    "ABSOLUTE_POS_Y",
    "ABSOLUTE_POS_Z",
    "CUBE_COUNT",
    "CUBE_COUNT_X",
    "CUBE_COUNT_Y",
    "CUBE_COUNT_Z",
    "CUBE_DIM",
    "CUBE_DIM_X",
    "CUBE_DIM_Y",
    "CUBE_DIM_Z",
    "CUBE_POS",
    "CUBE_POS_X",
    "CUBE_POS_Y",
    "CUBE_POS_Z",
    "PLANE_DIM",
    "UNIT_POS",
    "UNIT_POS_PLANE",
    "UNIT_POS_X",
    "UNIT_POS_Y",
    "UNIT_POS_Z",
    "Array",
    "ArtifactId",
    "Atomic",
    "BackendUnavailableError",
    "CompilationError",
    "Comptime",
    "ConfigError",
    "CubejitError",
    "Kernel",
    "KernelId",
    "KernelSpec",
    "LaunchError",
    "Line",
    "LocalArray",
    "SharedMemory",
    "StoreError",
    "Tensor",
    "Tunable",
    "TuneError",
    "Tuner",
    "UnsupportedError",
    "ValidationError",
    "abs",
    "acos",
    "acosh",
    "anchor",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bf16",
    "bitcast",
    "bool_",
    "cdiv",
    "ceil",
    "client",
    "cos",
    "cosh",
    "environment",
    "erf",
    "exp",
    "exp2",
    "f16",
    "f32",
    "f64",
    "floor",
    "fma",
    "function",
    "hypot",
    "i8",
    "i16",
    "i32",
    "i64",
    "isinf",
    "isnan",
    "kernel",
    "line",
    "lined",
    "log",
    "log2",
    "max",
    "min",
    "plane_all",
    "plane_any",
    "plane_ballot",
    "plane_broadcast",
    "plane_elect",
    "plane_exclusive_prod",
    "plane_exclusive_sum",
    "plane_inclusive_prod",
    "plane_inclusive_sum",
    "plane_max",
    "plane_min",
    "plane_prod",
    "plane_shuffle",
    "plane_shuffle_down",
    "plane_shuffle_up",
    "plane_shuffle_xor",
    "plane_sum",
    "pow",
    "round",
    "sin",
    "sinh",
    "sqrt",
    "sync_cube",
    "sync_plane",
    "tan",
    "tanh",
    "trunc",
    "u8",
    "u16",
    "u32",
    "u64",
    "unroll",
]
