"""What CPU code is built with and for: the toolchain, and the name under which its artifacts
may be shared.

A :class:`Toolchain` (the compiler, its identity, its flags, its timeout) is built once per
target from the settings, and both the compiles and the fingerprint read that one object: a
setting changed later in the process can never have code compiled one way stored under the
name of another. Code built for one fingerprint is never served to another: it changes with the
machine's architecture, the C compiler's identity and version, the flags, and, when code is
built with ``-march=native``, the host CPU's model and feature flags.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
from dataclasses import dataclass

from cubejit import config
from cubejit.backends.cpu.probe import compiler_identity
from cubejit.compile.id import stable_digest

BASE_FLAGS = ("-O3", "-fPIC", "-shared", "-std=c11", "-fopenmp", "-fno-math-errno")
"""Flags of every CPU compile; ``-march=native`` joins them when the settings ask for it."""

GCC_VECTORISER_FLAGS = ("--param", "vect-max-version-for-alias-checks=64")
"""GCC gives up vectorising a loop that needs more than 10 run-time checks that its arrays do not
overlap (a kernel of two inputs and four outputs); 64 lets a kernel of ten arrays vectorise."""


def compile_flags(settings: config.Settings) -> tuple[str, ...]:
    """The C compiler's flags under ``settings``."""
    return (*BASE_FLAGS, "-march=native") if settings.march_native else BASE_FLAGS


@functools.cache
def vectoriser_flags(cc: str) -> tuple[str, ...]:
    """:data:`GCC_VECTORISER_FLAGS` when ``cc`` is GCC by the name of the file it resolves to
    (no compiler run), else none: they tune speed only, never what a kernel computes."""
    found = shutil.which(cc)
    name = os.path.basename(os.path.realpath(found)) if found else ""
    return GCC_VECTORISER_FLAGS if "gcc" in name and "clang" not in name else ()


@functools.cache
def host_cpu() -> str:
    """The host CPU's model name and feature flags (from ``/proc/cpuinfo`` where there is
    one, else what ``platform`` knows: on Linux that runs ``uname -p``, which a warm process
    must not pay for)."""
    model, flags = "", ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not model:
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = " ".join(sorted(value.split()))
                if model and flags:
                    break
    except OSError:
        pass
    return f"{model or platform.processor()} [{flags}]"


@dataclass(frozen=True, slots=True)
class Toolchain:
    """How CPU code is compiled: what every compile of one target runs, and what its
    fingerprint names."""

    cc: str
    """The C compiler command."""
    identity: str
    """The first line of its ``--version`` (see :mod:`cubejit.backends.cpu.probe`)."""
    flags: tuple[str, ...]
    """The flags that decide the code: part of the fingerprint."""
    tuning: tuple[str, ...]
    """Flags that tune the compiler's effort only (never what a kernel computes)."""
    timeout: float
    """Seconds one compile may run before its process group is killed."""
    host_cpu: str | None
    """The host CPU, when code is built for it (``-march=native``)."""

    @staticmethod
    def from_settings(settings: config.Settings | None = None) -> Toolchain:
        """The toolchain ``settings`` (default: this process's) describe, its compiler asked
        who it is (once per binary, see :func:`~cubejit.backends.cpu.probe.compiler_identity`)."""
        settings = settings or config.settings()
        kept = settings.cache_dir.expanduser() if settings.compilation_cache else None
        return Toolchain(
            cc=settings.cc,
            identity=compiler_identity(settings.cc, settings.compile_timeout, kept),
            flags=compile_flags(settings),
            tuning=vectoriser_flags(settings.cc),
            timeout=settings.compile_timeout,
            host_cpu=host_cpu() if settings.march_native else None,
        )

    def fingerprint_parts(self) -> list[tuple[str, str]]:
        """The named parts of :meth:`fingerprint`, in order, for explaining a difference."""
        parts = [
            ("machine", platform.machine()),
            ("compiler", self.identity),
            ("flags", " ".join(self.flags)),
        ]
        if self.host_cpu is not None:
            parts.append(("host_cpu", self.host_cpu))
        return parts

    def fingerprint(self) -> str:
        """A short stable name of what this toolchain builds for: ``<arch>-<16 hex digits>``."""
        return f"{platform.machine()}-{stable_digest(self.fingerprint_parts())[:16]}"


def cpu_fingerprint(settings: config.Settings | None = None) -> str:
    """The fingerprint of the toolchain ``settings`` (default: this process's) describe."""
    return Toolchain.from_settings(settings).fingerprint()
