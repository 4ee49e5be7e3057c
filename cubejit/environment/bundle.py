"""Bundles: an environment, or some namespaces of it, in one file to ship to other machines.

A bundle is a database of the same schema as an environment (see
:mod:`~cubejit.environment.storage_sqlite`) whose ``meta`` table says ``kind = bundle`` and
``name``, written in one file (no WAL files beside it). So :func:`~cubejit.environment.load`
can serve one in place, and :func:`import_bundle` copies its entries into the active
environment, marked as coming from a bundle: a local entry is never overwritten, and one
compiled here later replaces an imported one.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cubejit.environment.manager import ENVIRONMENTS
from cubejit.environment.storage import BUNDLE, LOCAL, InsertOutcome
from cubejit.environment.storage_sqlite import BUNDLE_KIND, SqliteStorage
from cubejit.environment.value import DamagedValueError, decode
from cubejit.errors import StoreError


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import did with the bundle's entries."""

    imported: int
    """Entries written into the environment."""
    skipped: int
    """Entries the environment already held (the same value, or a local one that stays)."""
    failed: int
    """Entries not imported: damaged values, or writes the environment refused."""


def export_bundle(
    dest: str | Path, namespaces: Iterable[str] | None = None, name: str | None = None
) -> int:
    """Writes the active environment's entries (those of namespaces starting with one of
    ``namespaces``, or all) to a bundle at ``dest``; how many entries it holds.

    The bundle is written under a temporary name beside ``dest`` and renamed over it, so
    ``dest`` is never half-written. A ``dest`` that exists and is not a bundle is refused with a
    :class:`StoreError` and left untouched; ``name`` (default: the file's stem) is recorded in it.
    """
    dest = Path(dest).expanduser().resolve()
    if dest.exists():
        _check_is_bundle(dest)
    prefixes = None if namespaces is None else tuple(namespaces)
    _, source = ENVIRONMENTS.current()
    chosen = [
        summary.namespace
        for summary in source.summaries()
        if prefixes is None or summary.namespace.startswith(prefixes)
    ]
    temporary = dest.with_name(f".{dest.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        bundle = SqliteStorage.open(temporary, kind=BUNDLE_KIND, wal=False, repair=False)
        try:
            bundle.set_meta("name", name or dest.stem)
            count = bundle.insert_all(
                (namespace, key, value, LOCAL)
                for namespace in chosen
                for key, value in source.scan(namespace)
            )
        finally:
            bundle.close()
        os.replace(temporary, dest)
    except OSError as e:
        raise StoreError(f"cannot write the bundle {dest}: {e}") from e
    finally:
        temporary.unlink(missing_ok=True)
    return count


def import_bundle(src: str | Path) -> ImportReport:
    """Copies every entry of the bundle (or environment file) ``src`` into the active
    environment, as coming from a bundle. Idempotent; never overwrites a local entry; a value
    that fails its checks is counted as failed, not imported. Raises :class:`StoreError` when
    ``src`` is not a cubejit bundle."""
    src = Path(src).expanduser().resolve()
    if not src.is_file():
        raise StoreError(f"cannot import {src}: no such file")
    bundle = SqliteStorage.open(src, readonly=True, repair=False)
    counts = {"imported": 0, "skipped": 0, "failed": 0}
    try:
        _, target = ENVIRONMENTS.current()
        for summary in bundle.summaries():
            for key, value in bundle.scan(summary.namespace):
                try:
                    decode(value)
                except DamagedValueError:
                    counts["failed"] += 1
                    continue
                outcome = target.insert(summary.namespace, key, value, BUNDLE)
                if outcome is InsertOutcome.FAILED:
                    target = ENVIRONMENTS.degrade(target, target.last_failure or "write refused")
                    outcome = target.insert(summary.namespace, key, value, BUNDLE)
                counts[_COUNTED[outcome]] += 1
    finally:
        bundle.close()
    return ImportReport(**counts)


_COUNTED = {
    InsertOutcome.STORED: "imported",
    InsertOutcome.ALREADY_PRESENT: "skipped",
    InsertOutcome.REFUSED: "skipped",
    InsertOutcome.FAILED: "failed",
}


def _check_is_bundle(path: Path) -> None:
    try:
        existing = SqliteStorage.open(path, readonly=True, repair=False)
    except StoreError:
        raise StoreError(
            f"{path} exists and is not a cubejit bundle; it was left untouched"
        ) from None
    try:
        kind = existing.kind
    finally:
        existing.close()
    if kind != BUNDLE_KIND:
        raise StoreError(f"{path} is a cubejit environment, not a bundle; it was left untouched")
