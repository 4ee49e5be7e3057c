"""What CPU code is built for: the name under which its artifacts may be shared.

Code built for one fingerprint is never served to another: it changes with the machine's
architecture, the C compiler's identity and version, the flags, and, when code is built with
``-march=native``, the host CPU's model and feature flags.
"""

from __future__ import annotations

import functools
import platform
import subprocess

from cubejit import config
from cubejit.compile.id import stable_digest

BASE_FLAGS = ("-O3", "-fPIC", "-shared", "-std=c11", "-fopenmp", "-fno-math-errno")
"""Flags of every CPU compile; ``-march=native`` joins them when the settings ask for it."""


def compile_flags(settings: config.Settings) -> tuple[str, ...]:
    """The C compiler's flags under ``settings``."""
    return (*BASE_FLAGS, "-march=native") if settings.march_native else BASE_FLAGS


@functools.cache
def compiler_identity(cc: str) -> str:
    """The first line of ``cc --version``, read once per compiler; ``"unknown"`` when it
    cannot run (finalizing then fails with the compiler's own error)."""
    try:
        done = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    lines = done.stdout.splitlines()
    return lines[0].strip() if lines else "unknown"


@functools.cache
def host_cpu() -> str:
    """The host CPU's model name and feature flags (from ``/proc/cpuinfo`` where there is
    one, else what ``platform`` knows)."""
    model, flags = platform.processor(), ""
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
    return f"{model} [{flags}]"


def fingerprint_parts(settings: config.Settings | None = None) -> list[tuple[str, str]]:
    """The named parts of :func:`cpu_fingerprint`, in order, for explaining a difference."""
    settings = settings or config.settings()
    parts = [
        ("machine", platform.machine()),
        ("compiler", compiler_identity(settings.cc)),
        ("flags", " ".join(compile_flags(settings))),
    ]
    if settings.march_native:
        parts.append(("host_cpu", host_cpu()))
    return parts


def cpu_fingerprint(settings: config.Settings | None = None) -> str:
    """A short stable name of what CPU code is built for: ``<arch>-<16 hex digits>``."""
    parts = fingerprint_parts(settings)
    return f"{platform.machine()}-{stable_digest(parts)[:16]}"
