"""Who the C compiler is: the first line of ``cc --version``, asked once per compiler binary.

The answer joins the CPU fingerprint, so every process needs it before it can look a kernel up;
asking costs a compiler run (milliseconds, far more than a warm launch). It is therefore kept
per binary — its resolved path, modification time and size — in memory and in
``<cache_dir>/compilers.json``, so a process starting on a warm store runs no compiler at all,
and an upgraded compiler (another mtime or size) is asked again. The probe runs under the
compile timeout and in its own process group, like every compile (:mod:`.process`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import threading
from pathlib import Path

from cubejit import trust
from cubejit.backends.cpu.process import RunCount, run_bounded

_log = logging.getLogger("cubejit.compilation")

PROBES_FILE = "compilers.json"
"""The file under the cache root keeping each compiler binary's identity."""

UNKNOWN = "unknown"
"""The identity of a compiler that cannot be run or does not say who it is."""


probe_runs = RunCount()
"""Every run of a compiler's ``--version`` by this process."""

_lock = threading.Lock()
_known: dict[str, tuple[int, int, str]] = {}
_read_roots: set[Path] = set()


def compiler_identity(cc: str, timeout: float, cache_dir: Path | None) -> str:
    """The first line of ``cc --version`` (:data:`UNKNOWN` when it cannot run, fails or runs
    past ``timeout``), from what was kept for this binary when it is unchanged; with
    ``cache_dir``, what is kept there is read and written too."""
    found = shutil.which(cc)
    if found is None:
        return UNKNOWN
    path = os.path.realpath(found)
    try:
        stat = os.stat(path)
    except OSError:
        return UNKNOWN
    with _lock:
        if cache_dir is not None and cache_dir not in _read_roots:
            _read_roots.add(cache_dir)
            for name, entry in _read(cache_dir).items():
                _known.setdefault(name, entry)
        kept = _known.get(path)
    if kept is not None and kept[:2] == (stat.st_mtime_ns, stat.st_size):
        return kept[2]
    identity = _probe(path, timeout)
    with _lock:
        _known[path] = (stat.st_mtime_ns, stat.st_size, identity)
        known = dict(_known)
    if cache_dir is not None and identity != UNKNOWN:
        _write(cache_dir, known)
    return identity


def _probe(path: str, timeout: float) -> str:
    probe_runs.increment()
    try:
        finished = run_bounded([path, "--version"], None, timeout)
    except OSError:
        return UNKNOWN
    lines = finished.log.strip().splitlines()
    if finished.returncode != 0 or not lines:
        if finished.returncode is None:
            _log.warning(
                "%s --version ran past the compile timeout of %g s and was killed", path, timeout
            )
        return UNKNOWN
    return lines[0].strip()


def _read(cache_dir: Path) -> dict[str, tuple[int, int, str]]:
    """What was kept under ``cache_dir``; nothing when the root or the file is not trusted (a
    forged identity would file code under another compiler's namespace)."""
    path = cache_dir / PROBES_FILE
    why = trust.refusal(cache_dir) or trust.refusal(path)
    if why is not None:
        _log.debug("ignoring the compiler identities in %s: %s", path, why)
        return {}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            table = json.load(f)
    except (OSError, ValueError):
        return {}
    kept: dict[str, tuple[int, int, str]] = {}
    if isinstance(table, dict):
        for name, entry in table.items():
            if (
                isinstance(entry, list)
                and len(entry) == 3
                and all(isinstance(n, int) for n in entry[:2])
                and isinstance(entry[2], str)
            ):
                kept[str(name)] = (entry[0], entry[1], entry[2])
    return kept


def _write(cache_dir: Path, known: dict[str, tuple[int, int, str]]) -> None:
    """Writes ``known`` aside, then renames it over the file: readers see all or nothing. A
    root that cannot be written keeps nothing; the cost is a probe per process."""
    aside = cache_dir / f"{PROBES_FILE}.{os.getpid()}.{threading.get_ident()}"
    text = json.dumps({name: list(entry) for name, entry in sorted(known.items())}, indent=1)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(aside, cache_dir / PROBES_FILE)
    except OSError as e:
        _log.debug("cannot keep compiler identities in %s: %s", cache_dir, e)
        with contextlib.suppress(OSError):
            os.unlink(aside)
