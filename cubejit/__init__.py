"""cubejit: Python kernels, compiled many at a time, once per machine, for CPUs and NVIDIA GPUs.

A kernel is a Python function under :func:`kernel`; cubejit expands it to its IR, lowers it to
C or CUDA C++, compiles it with the platform compiler on several threads at once, keeps the
artifact in a persistent store and never compiles the same text twice. See LANGUAGE.md.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from cubejit.compile.id import ArtifactId, KernelId
from cubejit.errors import (
    BackendUnavailableError,
    CompilationError,
    ConfigError,
    CubejitError,
    LaunchError,
    StoreError,
    UnsupportedError,
    ValidationError,
)
from cubejit.ir.nodes import Position
from cubejit.ir.types import bf16, bool_, f16, f32, f64, i32, i64, u32, u64
from cubejit.lang import (
    Array,
    Comptime,
    Kernel,
    KernelSpec,
    abs,
    cdiv,
    ceil,
    cos,
    erf,
    exp,
    floor,
    fma,
    function,
    kernel,
    log,
    max,
    min,
    pow,
    sin,
    sqrt,
    tan,
    tanh,
    unroll,
)
from cubejit.runtime import client

__version__ = "0.1.0"

_LAZY = ("environment",)
"""Subpackages reached as attributes (``cj.environment``) but imported only when first used:
importing cubejit loads no backend, no store (SQLite), no ``rich`` and no CUDA bindings."""


def __getattr__(name: str) -> ModuleType:
    if name in _LAZY:
        return importlib.import_module(f"cubejit.{name}")
    raise AttributeError(f"module 'cubejit' has no attribute {name!r}")


ABSOLUTE_POS = Position.ABSOLUTE_POS
ABSOLUTE_POS_X = Position.ABSOLUTE_POS_X
ABSOLUTE_POS_Y = Position.ABSOLUTE_POS_Y
ABSOLUTE_POS_Z = Position.ABSOLUTE_POS_Z
UNIT_POS = Position.UNIT_POS
UNIT_POS_X = Position.UNIT_POS_X
UNIT_POS_Y = Position.UNIT_POS_Y
UNIT_POS_Z = Position.UNIT_POS_Z
CUBE_POS = Position.CUBE_POS
CUBE_POS_X = Position.CUBE_POS_X
CUBE_POS_Y = Position.CUBE_POS_Y
CUBE_POS_Z = Position.CUBE_POS_Z
CUBE_DIM = Position.CUBE_DIM
CUBE_DIM_X = Position.CUBE_DIM_X
CUBE_DIM_Y = Position.CUBE_DIM_Y
CUBE_DIM_Z = Position.CUBE_DIM_Z
CUBE_COUNT = Position.CUBE_COUNT
CUBE_COUNT_X = Position.CUBE_COUNT_X
CUBE_COUNT_Y = Position.CUBE_COUNT_Y
CUBE_COUNT_Z = Position.CUBE_COUNT_Z

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
    "UNIT_POS",
    "UNIT_POS_X",
    "UNIT_POS_Y",
    "UNIT_POS_Z",
    "Array",
    "ArtifactId",
    "BackendUnavailableError",
    "CompilationError",
    "Comptime",
    "ConfigError",
    "CubejitError",
    "Kernel",
    "KernelId",
    "KernelSpec",
    "LaunchError",
    "StoreError",
    "UnsupportedError",
    "ValidationError",
    "abs",
    "bf16",
    "bool_",
    "cdiv",
    "ceil",
    "client",
    "cos",
    "environment",
    "erf",
    "exp",
    "f16",
    "f32",
    "f64",
    "floor",
    "fma",
    "function",
    "i32",
    "i64",
    "kernel",
    "log",
    "max",
    "min",
    "pow",
    "sin",
    "sqrt",
    "tan",
    "tanh",
    "u32",
    "u64",
    "unroll",
]
