"""Turning kernels into what a device runs: many at once, once per machine.

:class:`KernelLoader` is the one path that loads kernels; a backend contributes an
:class:`ArtifactCompiler` (runs on any thread) and a :class:`CompilationTarget` (the thread that
owns the device). Each compilation is recorded (:func:`recent_records`) and logged on the
``cubejit.compilation`` logger (:class:`ServerLogger`).

Only the ids are imported with the package (every kernel needs them); the loader, its workers
and the records are imported when first named, so ``import cubejit`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from cubejit.compile.id import ArtifactId, KernelId

if TYPE_CHECKING:
    from cubejit.compile.loader import KernelLoader
    from cubejit.compile.protocols import ArtifactCompiler, CompilationTarget
    from cubejit.compile.recording import (
        BatchRecord,
        CompilationRecording,
        Phase,
        ServerLogger,
        add_record_sink,
        recent_records,
        remove_record_sink,
    )

_HOMES = {
    "KernelLoader": "cubejit.compile.loader",
    "ArtifactCompiler": "cubejit.compile.protocols",
    "CompilationTarget": "cubejit.compile.protocols",
    "BatchRecord": "cubejit.compile.recording",
    "CompilationRecording": "cubejit.compile.recording",
    "Phase": "cubejit.compile.recording",
    "ServerLogger": "cubejit.compile.recording",
    "add_record_sink": "cubejit.compile.recording",
    "recent_records": "cubejit.compile.recording",
    "remove_record_sink": "cubejit.compile.recording",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'cubejit.compile' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


__all__ = [
    "ArtifactCompiler",
    "ArtifactId",
    "BatchRecord",
    "CompilationRecording",
    "CompilationTarget",
    "KernelId",
    "KernelLoader",
    "Phase",
    "ServerLogger",
    "add_record_sink",
    "recent_records",
    "remove_record_sink",
]
