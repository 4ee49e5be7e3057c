"""The CPU backend: IR to C11, compiled by the system C compiler, run over OpenMP threads.

:class:`CpuCompiler` and :class:`CpuTarget` are its two halves of the compile pipeline,
:class:`CpuClient` its device; :func:`cpu_fingerprint` names what its code is built for and
:data:`compiler_runs` counts every compile of a kernel's C, :data:`link_runs` every link of a
batch's objects into one library.
"""

from __future__ import annotations

from cubejit.backends.cpu.artifact import CpuArtifact
from cubejit.backends.cpu.client import CpuClient
from cubejit.backends.cpu.compiler import (
    CPU_LIMITS,
    CpuCompiler,
    CpuLowered,
    compiler_runs,
    link_runs,
)
from cubejit.backends.cpu.fingerprint import cpu_fingerprint
from cubejit.backends.cpu.launcher import CpuBuffer
from cubejit.backends.cpu.target import CpuLoaded, CpuTarget

__all__ = [
    "CPU_LIMITS",
    "CpuArtifact",
    "CpuBuffer",
    "CpuClient",
    "CpuCompiler",
    "CpuLoaded",
    "CpuLowered",
    "CpuTarget",
    "compiler_runs",
    "cpu_fingerprint",
    "link_runs",
]
