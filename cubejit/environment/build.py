"""Which cubejit wrote an artifact: its version, and the build id that keys every artifact.

The build id hashes cubejit's version and the bytes of every ``.py`` file of the ``cubejit``
package, so any change to code generation (an upgrade, a local edit) keys artifacts anew; the
by-source map of the store then re-keys those whose backend text did not change, so the
platform compiler does not run for them. It is computed once per process, and kept in the
cache root (``build-id.json``) under a stamp of every file's path, size and modification time:
a process whose files did not change reads it back instead of hashing the package again.

:func:`override_build_id` replaces it for the rest of the process: tools and benchmarks use it
to act as another build (an upgrade) without editing files.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import threading
from pathlib import Path

from cubejit import config

PACKAGE = Path(__file__).resolve().parent.parent
"""The ``cubejit`` package directory."""
CACHE_FILE = "build-id.json"
"""The file of the cache root that keeps the last build id beside its files' stamp."""

_lock = threading.Lock()
_version: str | None = None
_build_id: str | None = None


def version() -> str:
    """``cubejit.__version__``, read from the package's ``__init__.py`` without importing it
    (the store is used while the package is still importing)."""
    global _version
    if _version is None:
        tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
        found = "unknown"
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)
                and isinstance(node.value, ast.Constant)
            ):
                found = str(node.value.value)
        _version = found
    return _version


def build_id() -> str:
    """A hex digest of cubejit's version and of every ``.py`` file of the package (sorted by
    path relative to it): the same for one installed build, different after any change."""
    global _build_id
    with _lock:
        if _build_id is None:
            sources = _sources()
            stamp = _stamp(sources)
            cache = config.settings().cache_dir.expanduser() / CACHE_FILE
            _build_id = _cached(cache, stamp)
            if _build_id is None:
                _build_id = _hashed(sources)
                _keep(cache, stamp, _build_id)
        return _build_id


def _hashed(sources: list[tuple[str, str]]) -> str:
    digest = hashlib.sha256(b"cubejit-build\0" + version().encode() + b"\0")
    for relative, file in sources:
        with open(file, "rb") as f:
            content = f.read()
        name = relative.encode()
        digest.update(len(name).to_bytes(4, "little") + name)
        digest.update(len(content).to_bytes(8, "little") + content)
    return digest.hexdigest()


def _stamp(sources: list[tuple[str, str]]) -> str:
    """A digest of the package's place, version and every source's path, size and
    modification time: it changes whenever a file may have."""
    digest = hashlib.sha256(f"{PACKAGE}\0{version()}\0".encode())
    for relative, file in sources:
        stat = os.stat(file)
        digest.update(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def _cached(cache: Path, stamp: str) -> str | None:
    """The build id kept for ``stamp``, or ``None`` (no file, another stamp, not ours)."""
    try:
        fd = os.open(cache, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            if os.fstat(f.fileno()).st_uid != os.getuid():
                return None
            kept = json.loads(f.read(4096))
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("stamp") != stamp:
        return None
    found = kept.get("build_id")
    return found if isinstance(found, str) and len(found) == 64 else None


def _keep(cache: Path, stamp: str, build: str) -> None:
    """Writes the build id for ``stamp`` (a temporary file renamed over the old one); a root
    that cannot be written keeps nothing, and the next process hashes again."""
    if not cache.parent.is_dir():
        return
    temporary = cache.with_name(f".{CACHE_FILE}.{os.getpid()}")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"stamp": stamp, "build_id": build}, f)
        os.replace(temporary, cache)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass


def _sources() -> list[tuple[str, str]]:
    """Every ``.py`` file of the package as (path relative to it, with ``/``; full path),
    sorted by the relative path. On a client's creation path, so plain ``os`` calls."""
    found = []
    root = str(PACKAGE)
    for folder, folders, names in os.walk(root):
        folders[:] = [f for f in folders if f != "__pycache__"]
        prefix = folder[len(root) + 1 :].replace(os.sep, "/")
        for name in names:
            if name.endswith(".py"):
                relative = f"{prefix}/{name}" if prefix else name
                found.append((relative, os.path.join(folder, name)))
    return sorted(found)


def override_build_id(value: str | None) -> None:
    """Makes :func:`build_id` return ``value`` in this process from now on (``None``: compute
    it from the files again). For tools and benchmarks that simulate an upgrade."""
    global _build_id
    with _lock:
        _build_id = value
