"""``cubejit doctor``: what this machine gives cubejit, and what it does not, with why.

Each line is one check: Python and cubejit, the C compiler of the CPU backend, the CUDA driver
and its devices, NVRTC, and the active environment (its file, size and health). A missing
backend is reported with the reason, never raised: the command exists to say what is missing.
"""

from __future__ import annotations

import argparse
import platform
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from cubejit import config
from cubejit.cli.console import console, size_text, table
from cubejit.errors import StoreError


def register(commands: Any) -> None:
    command = commands.add_parser(
        "doctor",
        help="check Python, the C compiler, CUDA and the active environment",
        description="Reports Python and cubejit versions, the backends found (the C compiler "
        "and its version; the CUDA driver, devices and NVRTC, or why not), and the active "
        "environment: its path, size and health, files set aside, a network filesystem.",
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    checks: list[tuple[str, str, str]] = []
    checks.append(("python", "ok", f"{platform.python_version()} ({sys.executable})"))
    checks.append(("cubejit", "ok", _cubejit_text()))
    checks.append(("platform", "ok", f"{platform.system()} {platform.machine()}"))
    checks.append(_check("C compiler", _c_compiler))
    checks.append(_check("CUDA driver", _cuda_driver))
    checks.append(_check("NVRTC", _nvrtc))
    checks.append(_check("environment", _environment))
    out = console()
    out.print(table("cubejit doctor", ("check", "status", "details"), checks))
    return 1 if any(status == "broken" for _, status, _ in checks) else 0


def _check(name: str, probe: Callable[[], tuple[str, str]]) -> tuple[str, str, str]:
    try:
        status, details = probe()
    except Exception as e:
        return name, "missing", f"{type(e).__name__}: {e}"
    return name, status, details


def _cubejit_text() -> str:
    from cubejit.environment.build import build_id, version

    return f"{version()} (build {build_id()[:12]}) at {Path(__file__).resolve().parents[1]}"


def _c_compiler() -> tuple[str, str]:
    compiler = config.settings().cc
    try:
        result = subprocess.run(
            [compiler, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return "broken", f"{compiler!r} cannot be run ({e}); set CC to a C compiler"
    first = (result.stdout or result.stderr).strip().splitlines()
    if result.returncode != 0 or not first:
        return "broken", f"{compiler} --version failed with status {result.returncode}"
    return "ok", f"{compiler}: {first[0]}"


def _cuda_driver() -> tuple[str, str]:
    from cubejit.backends.cuda.driver import call, driver_module, read_limits
    from cubejit.errors import BackendUnavailableError

    driver = driver_module()
    try:
        status, *_ = driver.cuInit(0)
    except Exception as e:
        return "missing", f"the NVIDIA driver library (libcuda) cannot be loaded: {e}"
    if status != 0:
        return "missing", f"cuInit failed: {status}"
    version = int(
        call(
            driver.cuDriverGetVersion, what="read the driver version", error=BackendUnavailableError
        )
    )
    count = int(call(driver.cuDeviceGetCount, what="count devices", error=BackendUnavailableError))
    devices = []
    for ordinal in range(count):
        device = call(
            driver.cuDeviceGet, ordinal, what="open a device", error=BackendUnavailableError
        )
        limits = read_limits(device)
        major, minor = limits.compute_capability
        devices.append(f"{ordinal}: {limits.name} (compute {major}.{minor})")
    text = f"driver {version // 1000}.{version % 1000 // 10}; {count} device(s)"
    return ("ok" if count else "missing"), "; ".join([text, *devices])


def _nvrtc() -> tuple[str, str]:
    from cubejit.backends.cuda.nvrtc import supported_architectures, version

    major, minor = version()
    archs = supported_architectures()
    return "ok", f"NVRTC {major}.{minor}, sm_{archs[0]} to sm_{archs[-1]}"


def _environment() -> tuple[str, str]:
    from cubejit import environment, trust
    from cubejit.environment.manager import ENVIRONMENTS
    from cubejit.environment.sqlite_file import aside_files, on_disk
    from cubejit.environment.storage_sqlite import SqliteStorage

    settings = config.settings()
    name, path = environment.active(), Path(environment.path())
    if not settings.compilation_cache:
        return "ok", f"{name}: memory only (CUBEJIT_COMPILATION_CACHE is off)"
    notes = []
    network = ENVIRONMENTS.network_filesystem()
    if network is not None:
        notes.append(
            f"the root is on {network}: a rollback journal instead of WAL, slower with many "
            "writers (set CUBEJIT_CACHE_DIR to a node-local directory)"
        )
    aside = aside_files(path)
    if aside:
        notes.append(
            f"{len(aside)} files set aside as damaged "
            f"({size_text(sum(on_disk(f) for f in aside))}; cubejit env clear --aside deletes them)"
        )
    status = "warning" if notes else "ok"
    for folder in (path.parent, path):
        refused = trust.refusal(folder)
        if refused is not None:
            return (
                "broken",
                f"{name} at {path}: {folder} is not trusted ({refused}); runs use memory",
            )
    if not path.exists():
        return status, "; ".join([f"{name} at {path}: empty (created on first compile)", *notes])
    size = on_disk(path)
    try:
        with closing(SqliteStorage.open(path, readonly=True, repair=False)) as storage:
            health = storage.health()
            summaries = storage.summaries()
    except (StoreError, sqlite3.Error) as e:
        return "broken", f"{name} at {path} ({size_text(size)}): {e}; the next run sets it aside"
    if health != "ok":
        return "broken", f"{name} at {path} ({size_text(size)}): {health}"
    entries, stored = sum(s.entries for s in summaries), sum(s.bytes for s in summaries)
    found = (
        f"{name} at {path}: {size_text(size)} on disk, {entries} entries "
        f"({size_text(stored)}), healthy"
    )
    return status, "; ".join([found, *notes])
