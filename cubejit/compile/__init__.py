"""Turning kernels into what a device runs: many at once, once per machine.

:class:`KernelLoader` is the one path that loads kernels; a backend contributes an
:class:`ArtifactCompiler` (runs on any thread) and a :class:`CompilationTarget` (the thread that
owns the device). Each compilation is recorded (:func:`recent_records`) and logged on the
``cubejit.compilation`` logger (:class:`ServerLogger`).
"""

from __future__ import annotations

from cubejit.compile.id import ArtifactId, KernelId
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
