"""Bundles: an environment, or some namespaces of it, in one file to ship to other machines.

A bundle is a database of the same schema as an environment (see
:mod:`~cubejit.environment.storage_sqlite`) whose ``meta`` table says ``kind = bundle`` and
``name``, written in one file (no WAL files beside it). So :func:`~cubejit.environment.load`
can serve one in place, and :func:`import_bundle` copies its entries into the active
environment, marked as coming from a bundle: a local entry is never overwritten, and one
compiled here later replaces an imported one.

A bundle is a shared store: whoever writes one can make every machine that reads it run code.
With a signing key (``CUBEJIT_SIGNING_KEY``), :func:`export_bundle` keeps an HMAC-SHA256 of
each entry (:mod:`~cubejit.environment.signing`) in the bundle's ``signatures`` table, and a
machine holding the key imports or serves only entries whose signature checks: any other is
refused with a WARNING, and its kernel compiles again. Without a key, bundles are written
unsigned, with one WARNING per process.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cubejit import config
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.environment.signing import Signer, refusal_message, signer, warn_unsigned_once
from cubejit.environment.sqlite_file import BUNDLE_KIND
from cubejit.environment.storage import BUNDLE, LOCAL, InsertOutcome
from cubejit.environment.storage_sqlite import SqliteStorage
from cubejit.environment.value import DamagedValueError, decode
from cubejit.errors import StoreError

log = logging.getLogger("cubejit.environment")


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
            entries = [
                (namespace, key, value)
                for namespace in chosen
                for key, value in source.scan(namespace)
            ]
            count = bundle.insert_all((ns, key, value, LOCAL) for ns, key, value in entries)
            signing = signer(config.settings())
            if signing is None:
                warn_unsigned_once(f"bundle {dest}")
            else:
                bundle.write_signatures(
                    (ns, key, signing.sign(ns, key, value)) for ns, key, value in entries
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
    signing = signer(config.settings())
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
                if signing is not None and not _signed(
                    signing, bundle, summary.namespace, key, value
                ):
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


def load(file: str | Path) -> None:
    """Makes the database or bundle ``file`` the active environment, served in place. With a
    signing key, a bundle's entries are served only when their signature checks."""
    signing = signer(config.settings())

    def serve(storage: SqliteStorage) -> Any:
        if signing is None or storage.kind != BUNDLE_KIND:
            return storage
        return SignedBundle(storage, signing)

    ENVIRONMENTS.load(file, serve)


class SignedBundle:
    """A bundle served in place on a machine holding a signing key: an entry whose signature
    does not check is refused (logged once) as if absent, and entries written into the bundle
    are signed, so that they are served on the next run too."""

    def __init__(self, storage: SqliteStorage, signing: Signer) -> None:
        self._storage = storage
        self._signing = signing

    def __getattr__(self, name: str) -> Any:
        return getattr(self._storage, name)

    def get(self, namespace: str, key: bytes) -> bytes | None:
        value = self._storage.get(namespace, key)
        if value is None or not _signed(self._signing, self._storage, namespace, key, value):
            return None
        return value

    def scan(self, namespace: str) -> Iterator[tuple[bytes, bytes]]:
        for key, value in self._storage.scan(namespace):
            if _signed(self._signing, self._storage, namespace, key, value):
                yield key, value

    def insert(
        self, namespace: str, key: bytes, value: bytes, origin: str = LOCAL
    ) -> InsertOutcome:
        outcome = self._storage.insert(namespace, key, value, origin)
        if outcome is InsertOutcome.STORED:
            try:
                signature = self._signing.sign(namespace, key, value)
                self._storage.write_signatures([(namespace, key, signature)])
            except StoreError as e:
                log.warning("cannot sign an entry of the bundle %s: %s", self._storage.path, e)
        return outcome


def _signed(
    signing: Signer, bundle: SqliteStorage, namespace: str, key: bytes, value: bytes
) -> bool:
    """Whether the bundle's signature of an entry checks; logs a refusal when it does not."""
    verdict = signing.verify(namespace, key, value, bundle.signature(namespace, key))
    if not verdict.accepted:
        log.warning(refusal_message(verdict, f"bundle {bundle.path}", namespace, key))
    return verdict.accepted


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
