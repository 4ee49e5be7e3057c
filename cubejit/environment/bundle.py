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
refused with a WARNING, and its kernel compiles again. The check follows from how a file is
used (imported, or loaded in place), never from what its ``meta`` table says it is: a bundle
relabelled ``environment`` is checked all the same. Without a key, bundles are written
unsigned, with one WARNING per process, and importing or loading one says, in one WARNING,
that its native code is trusted unverified.

Loading a bundle never writes into it: kernels compiled while it is active are kept by the
local environment, in front of it (:mod:`~cubejit.environment.storage_layered`). Export and
import stream entries, so a bundle of any size takes at most a few megabytes of memory beyond
its largest entry. An export never writes through a symbolic link at its destination.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cubejit import config
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.environment.signing import Signer, refusal_message, signer, warn_unsigned_once
from cubejit.environment.sqlite_file import BUNDLE_KIND
from cubejit.environment.storage import BUNDLE, LOCAL, InsertOutcome, NamespaceSummary
from cubejit.environment.storage_layered import ReadLayer
from cubejit.environment.storage_sqlite import SqliteStorage
from cubejit.environment.value import DamagedValueError, decode
from cubejit.errors import StoreError
from cubejit.trust import create_private_file

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
    ``dest`` is never half-written. A ``dest`` that exists and is not a bundle, or is a
    symbolic link, is refused with a :class:`StoreError` and left untouched, and so is a
    ``namespaces`` that matches no namespace; ``name`` (default: the file's stem) is recorded
    in it. Entries are streamed: memory stays within a few megabytes beyond the largest one.
    """
    given = Path(dest).expanduser()
    dest = given.parent.resolve() / given.name
    if dest.is_symlink():
        raise StoreError(
            f"{dest} is a symbolic link; cubejit does not write a bundle through one: remove it "
            "or choose another path"
        )
    if dest.exists():
        _check_is_bundle(dest)
    prefixes = None if namespaces is None else tuple(namespaces)
    _, source = ENVIRONMENTS.current()
    held = [summary.namespace for summary in source.summaries()]
    chosen = [ns for ns in held if prefixes is None or ns.startswith(prefixes)]
    if prefixes is not None and not chosen:
        raise StoreError(
            f"no namespace of {ENVIRONMENTS.active()!r} starts with {', '.join(prefixes)}; it "
            f"holds {', '.join(held) or 'none'}; nothing was written"
        )
    temporary = dest.with_name(f".{dest.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    signing = signer(config.settings())
    if signing is None:
        warn_unsigned_once(f"bundle {dest}")
    entries = (
        (namespace, key, value, LOCAL)
        for namespace in chosen
        for key, value in source.scan(namespace)
    )
    try:
        create_private_file(temporary)
        bundle = SqliteStorage.open(temporary, kind=BUNDLE_KIND, wal=False, repair=False)
        try:
            bundle.set_meta("name", name or dest.stem)
            count = bundle.insert_all(entries, None if signing is None else signing.sign)
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
    if signing is None:
        _warn_unverified(src)
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
    """Makes the database or bundle ``file`` the active environment, served in place and
    read-only, behind the local environment. With a signing key, its entries are served only
    when their signature checks, whatever the file says it is; without one, a WARNING says its
    code runs unverified."""
    signing = signer(config.settings())

    def serve(storage: SqliteStorage) -> ReadLayer:
        if signing is None:
            _warn_unverified(storage.path)
            return storage
        return SignedBundle(storage, signing)

    ENVIRONMENTS.load(file, serve)


def _warn_unverified(path: Path) -> None:
    log.warning(
        "cubejit: the bundle %s is trusted unverified: without a signing key its native code "
        "runs as it came, and whoever wrote it can run code here; set CUBEJIT_SIGNING_KEY (the "
        "key it was exported with) to check its signatures",
        path,
    )


class SignedBundle:
    """A bundle served in place on a machine holding a signing key: an entry whose signature
    does not check is refused (logged) as if absent. It is only read (a
    :class:`~cubejit.environment.storage_layered.ReadLayer`): writes go to the local
    environment in front of it, and no read reaches the file unchecked."""

    def __init__(self, storage: SqliteStorage, signing: Signer) -> None:
        self._storage = storage
        self._signing = signing

    def get(self, namespace: str, key: bytes) -> bytes | None:
        value = self._storage.get(namespace, key)
        if value is None or not _signed(self._signing, self._storage, namespace, key, value):
            return None
        return value

    def scan(self, namespace: str) -> Iterator[tuple[bytes, bytes]]:
        for key, value in self._storage.scan(namespace):
            if _signed(self._signing, self._storage, namespace, key, value):
                yield key, value

    def summaries(self) -> list[NamespaceSummary]:
        """What the bundle holds, checked or not: for tools, which load nothing."""
        return self._storage.summaries()

    def close(self) -> None:
        self._storage.close()


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
