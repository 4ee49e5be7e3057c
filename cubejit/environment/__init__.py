"""The compilation store: environments on SQLite, namespaces, bundles.

An **environment** is one database file, ``<root>/<name>.db``, that every process on a machine
shares; one is active at a time (:func:`activate`, :func:`set_root`, :func:`load`), and each
switch bumps :func:`generation`. Inside it, **namespaces** keep apart what was built for
different backends and machines; a :class:`Store` is one namespace as ``bytes -> bytes``
(insert-only, first writer wins), and an :class:`ArtifactStore` is what a backend's target
keeps there. **Bundles** carry entries to other machines (:func:`export_bundle`,
:func:`import_bundle`, or :func:`load` to serve one in place).

Store failures never fail a compilation: a damaged database is set aside and rebuilt, a root
that cannot be written falls back to memory, each with a WARNING on the
``cubejit.environment`` logger.
"""

from __future__ import annotations

from pathlib import Path

from cubejit.environment import bundle as _bundle
from cubejit.environment.artifacts import ArtifactStore
from cubejit.environment.bundle import ImportReport, export_bundle, import_bundle
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.environment.records import install as _keep_records
from cubejit.environment.storage import InsertOutcome, NamespaceSummary
from cubejit.environment.store import Store


def activate(name: str) -> None:
    """Makes ``<root>/<name>.db`` the active environment (the name sanitised so that it stays
    inside the root); bumps :func:`generation`."""
    ENVIRONMENTS.activate(name)


def active() -> str:
    """The active environment's name (a loaded file's stem)."""
    return ENVIRONMENTS.active()


def set_root(path: str | Path) -> None:
    """Makes ``path`` the directory holding environments; bumps :func:`generation`."""
    ENVIRONMENTS.set_root(path)


def root() -> Path:
    """The directory holding environments."""
    return ENVIRONMENTS.root()


def load(file: str | Path) -> None:
    """Makes the database or bundle ``file`` the active environment, served in place; bumps
    :func:`generation`. Raises :class:`~cubejit.errors.StoreError` for a file that is not one.
    With a signing key, a bundle's entries are served only when their signature checks."""
    _bundle.load(file)


def path() -> Path:
    """The active environment's database file."""
    return ENVIRONMENTS.path()


def generation() -> int:
    """A number that changes with every switch of the active environment."""
    return ENVIRONMENTS.generation()


def list() -> list[str]:
    """The names of the environments under :func:`root`, sorted."""
    return ENVIRONMENTS.names()


def namespaces() -> list[NamespaceSummary]:
    """Every namespace of the active environment with its entries and bytes."""
    return ENVIRONMENTS.namespaces()


__all__ = [
    "ArtifactStore",
    "ImportReport",
    "InsertOutcome",
    "NamespaceSummary",
    "Store",
    "activate",
    "active",
    "export_bundle",
    "generation",
    "import_bundle",
    "list",
    "load",
    "namespaces",
    "path",
    "root",
    "set_root",
]

_keep_records()
