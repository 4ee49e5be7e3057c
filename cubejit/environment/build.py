"""Which cubejit wrote an artifact: its version, and the build id that keys every artifact.

The build id hashes cubejit's version and the bytes of every ``.py`` file of the ``cubejit``
package, so any change to code generation (an upgrade, a local edit) keys artifacts anew; the
by-source map of the store then re-keys those whose backend text did not change, so the
platform compiler does not run for them. It is computed once per process.

:func:`override_build_id` replaces it for the rest of the process: tools and benchmarks use it
to act as another build (an upgrade) without editing files.
"""

from __future__ import annotations

import ast
import hashlib
import os
import threading
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
"""The ``cubejit`` package directory."""

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
            digest = hashlib.sha256(b"cubejit-build\0" + version().encode() + b"\0")
            for relative, file in _sources():
                with open(file, "rb") as f:
                    content = f.read()
                name = relative.encode()
                digest.update(len(name).to_bytes(4, "little") + name)
                digest.update(len(content).to_bytes(8, "little") + content)
            _build_id = digest.hexdigest()
        return _build_id


def _sources() -> list[tuple[str, str]]:
    """Every ``.py`` file of the package as (path relative to it, with ``/``; full path),
    sorted by the relative path. On the first load's path, so plain ``os`` calls."""
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
