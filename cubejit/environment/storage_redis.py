"""The compilation store on a Redis server, shared by every host of a fleet.

Selected by ``CUBEJIT_STORE=redis://host:port/db`` (:attr:`~cubejit.config.Settings.store`),
always behind a host's local environment (see :mod:`cubejit.environment.fleet`). It keeps the
semantics of the local storages: insert-only, first writer wins, a local entry replaces a
bundle one (never the reverse), namespaces and the value encoding unchanged.

Layout on the server (every name under a prefix, ``cubejit:`` by default)::

    <prefix>e:<namespace>:<key hex>                the entry record
    <prefix>c:<namespace>:<key hex>:<sha256>:<i>   chunk i of a value over CHUNK_BYTES

An entry record is ``b"CJR1"``, a flags byte (bit 0: from a bundle, bit 1: chunked), the signature's
length (0 or 32) as one byte, the signature (:mod:`cubejit.environment.signing`), then the body:
the value itself, or for a chunked value a manifest (u64 length, u32 chunk count, the value's
SHA-256; little-endian). Chunks are written first and the record last, so a reader sees a whole
value or none; chunk names carry the value's digest, so writers of different values never share
a chunk.

A server that cannot serve (unreachable, or answering with an error) is never an error to the
caller (see :mod:`cubejit.environment.redis_link`): its operations answer at once as a miss or
a failed write, and the run goes on with the local environment; the whole cost is compiling
what the fleet may already hold.
"""

from __future__ import annotations

import hashlib
import logging
import struct
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from cubejit.environment.redis_link import Offline, RedisLink
from cubejit.environment.signing import Signer, refusal_message, warn_unsigned_once
from cubejit.environment.storage import BUNDLE, LOCAL, InsertOutcome, NamespaceSummary

logger = logging.getLogger("cubejit.environment")

CHUNK_BYTES = 8 * 1024 * 1024
"""Values longer than this are written as chunks of this size under a manifest."""
MAX_VALUE_BYTES = 256 * 1024 * 1024
"""Values longer than this are not written to the shared store (logged, kept locally)."""

_MAGIC = b"CJR1"
_BUNDLE = 1
_CHUNKED = 2
_MANIFEST = struct.Struct("<QI32s")

# A local write: stores ARGV[1] over nothing or over a bundle entry (flags bit 0), as one
# step. Returns {1 if it wrote, the record that was there or false}.
_PUT_LOCAL = """
local cur = redis.call('GET', KEYS[1])
if cur and (string.byte(cur, 5) % 2) == 0 then return {0, cur} end
redis.call('SET', KEYS[1], ARGV[1])
return {1, cur}
"""

# Deletes KEYS[1] only while it still holds ARGV[1]: never another writer's newer value.
_DELETE_IF = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


@dataclass(frozen=True, slots=True)
class Record:
    """An entry record as read from the server."""

    bundle: bool
    """Whether the entry came from a bundle (a local write replaces it)."""
    chunked: bool
    signature: bytes
    body: bytes

    @staticmethod
    def parse(raw: bytes) -> Record | None:
        """The record in ``raw``, or ``None`` when it is not one."""
        if len(raw) < 6 or raw[:4] != _MAGIC:
            return None
        flags, sig_len = raw[4], raw[5]
        if sig_len not in (0, 32) or len(raw) < 6 + sig_len:
            return None
        body = raw[6 + sig_len :]
        if flags & _CHUNKED and len(body) != _MANIFEST.size:
            return None
        return Record(bool(flags & _BUNDLE), bool(flags & _CHUNKED), raw[6 : 6 + sig_len], body)

    def encode(self) -> bytes:
        """The bytes written to the server."""
        flags = (_BUNDLE if self.bundle else 0) | (_CHUNKED if self.chunked else 0)
        return _MAGIC + bytes((flags, len(self.signature))) + self.signature + self.body


class RedisStorage:
    """Entries of every namespace on one Redis server. Thread-safe.

    ``get`` answers ``None`` for a miss, a server that cannot serve, a damaged record, or (with a
    ``signer``) an entry whose signature is missing or wrong; such an entry is also deleted
    from the server, so that the value compiled again in its place can be written there.
    """

    persists = True

    def __init__(self, url: str, timeout: float, signer: Signer | None = None) -> None:
        self.link = RedisLink(url, timeout)
        self.last_failure: str | None = None
        self.prefix = self.link.prefix
        self._signer = signer
        self._put_local = self.link.client.register_script(_PUT_LOCAL)
        self._delete_if = self.link.client.register_script(_DELETE_IF)

    @property
    def name(self) -> str:
        """The server, for log lines (no credentials)."""
        return self.link.name

    def entry_key(self, namespace: str, key: bytes) -> str:
        """The server's name of an entry."""
        return f"{self.prefix}e:{namespace}:{key.hex()}"

    def _chunk_key(self, namespace: str, key: bytes, digest: bytes, index: int) -> str:
        return f"{self.prefix}c:{namespace}:{key.hex()}:{digest.hex()}:{index}"

    def get(self, namespace: str, key: bytes) -> bytes | None:
        """The value under ``key``, checked; ``None`` when there is none to load."""
        name = self.entry_key(namespace, key)
        try:
            raw = self.link.run(lambda r: r.get(name))
            if raw is None:
                return None
            return self._value_of(namespace, key, raw)
        except Offline:
            return None

    def _value_of(self, namespace: str, key: bytes, raw: bytes) -> bytes | None:
        record = Record.parse(raw)
        if record is None:
            logger.warning(
                "entry %s of namespace %r in %s is not a cubejit record; dropped",
                key.hex()[:16],
                namespace,
                self.name,
            )
            self._delete(namespace, key, raw)
            return None
        value = self._assemble(namespace, key, record)
        if value is None:
            return None
        if self._signer is not None:
            verdict = self._signer.verify(namespace, key, value, record.signature)
            if not verdict.accepted:
                logger.warning(refusal_message(verdict, self.name, namespace, key))
                self._delete(namespace, key, raw)
                return None
        return value

    def _assemble(self, namespace: str, key: bytes, record: Record) -> bytes | None:
        if not record.chunked:
            return record.body
        length, count, digest = _MANIFEST.unpack(record.body)
        parts = []
        for index in range(count):
            name = self._chunk_key(namespace, key, digest, index)
            part = self.link.run(lambda r, n=name: r.get(n))
            if part is None:
                return None
            parts.append(part)
        value = b"".join(parts)
        if len(value) != length or hashlib.sha256(value).digest() != digest:
            return None
        return value

    def insert(
        self, namespace: str, key: bytes, value: bytes, origin: str = LOCAL
    ) -> InsertOutcome:
        """Writes ``value`` unless another is there; a local write replaces a bundle entry.
        Never raises for the server's faults: they are :attr:`InsertOutcome.FAILED`."""
        if len(value) > MAX_VALUE_BYTES:
            self.last_failure = (
                f"{len(value)} bytes, over the {MAX_VALUE_BYTES} the shared store {self.name} takes"
            )
            logger.warning(
                "entry %s of namespace %r is %s; kept in the local environment only",
                key.hex()[:16],
                namespace,
                self.last_failure,
            )
            return InsertOutcome.FAILED
        if self._signer is None:
            warn_unsigned_once(self.name)
            signature = b""
        else:
            signature = self._signer.sign(namespace, key, value)
        try:
            return self._insert(namespace, key, value, signature, origin)
        except Offline:
            self.last_failure = f"shared store {self.name} unavailable"
            return InsertOutcome.FAILED

    def _insert(
        self, namespace: str, key: bytes, value: bytes, signature: bytes, origin: str
    ) -> InsertOutcome:
        chunked = len(value) > CHUNK_BYTES
        body = self._write_chunks(namespace, key, value) if chunked else value
        record = Record(origin == BUNDLE, chunked, signature, body).encode()
        name = self.entry_key(namespace, key)
        if origin == BUNDLE:
            wrote = bool(self.link.run(lambda r: r.set(name, record, nx=True)))
            found = None if wrote else self.link.run(lambda r: r.get(name))
        else:
            written, found = self.link.run(
                lambda r: self._put_local(keys=[name], args=[record], client=r)
            )
            wrote = bool(written)
        other = Record.parse(found) if found else None
        same = other is not None and other.chunked == chunked and other.body == body
        if wrote:
            if other is not None and other.chunked and not same:
                self._drop_chunks(namespace, key, other.body)
            return InsertOutcome.ALREADY_PRESENT if same else InsertOutcome.STORED
        if same:
            return InsertOutcome.ALREADY_PRESENT
        if chunked:
            self._drop_chunks(namespace, key, body)
        return InsertOutcome.REFUSED

    def _write_chunks(self, namespace: str, key: bytes, value: bytes) -> bytes:
        digest = hashlib.sha256(value).digest()
        count = -(-len(value) // CHUNK_BYTES)
        for index in range(count):
            name = self._chunk_key(namespace, key, digest, index)
            part = value[index * CHUNK_BYTES : (index + 1) * CHUNK_BYTES]
            self.link.run(lambda r, n=name, p=part: r.set(n, p))
        return _MANIFEST.pack(len(value), count, digest)

    def _drop_chunks(self, namespace: str, key: bytes, manifest: bytes) -> None:
        _, count, digest = _MANIFEST.unpack(manifest)
        names = [self._chunk_key(namespace, key, digest, i) for i in range(count)]
        if names:
            self.link.run(lambda r: r.delete(*names))

    def _delete(self, namespace: str, key: bytes, raw: bytes) -> None:
        name = self.entry_key(namespace, key)
        try:
            deleted = self.link.run(lambda r: self._delete_if(keys=[name], args=[raw], client=r))
            record = Record.parse(raw)
            if deleted and record is not None and record.chunked:
                self._drop_chunks(namespace, key, record.body)
        except Offline:
            pass

    def purge_key(self, namespace: str, key: bytes) -> None:
        """Deletes the entry under ``key`` and its chunks from the server."""
        name = self.entry_key(namespace, key)
        try:
            raw = self.link.run(lambda r: r.get(name))
            if raw is not None:
                self._delete(namespace, key, raw)
        except Offline:
            pass

    def _scan_names(self, pattern: str) -> Iterator[bytes]:
        cursor: Any = 0
        while True:
            cursor, names = self.link.run(
                lambda r, c=cursor: r.scan(cursor=c, match=pattern, count=512)
            )
            yield from names
            if int(cursor) == 0:
                return

    def _pattern(self, kind: str, namespace: str | None) -> str:
        if namespace is None:
            return f"{_glob_escape(self.prefix)}{kind}:*"
        return f"{_glob_escape(self.prefix)}{kind}:{_glob_escape(namespace)}:*"

    def purge(self, namespace: str) -> None:
        """Deletes every entry of ``namespace`` from the server."""
        try:
            for kind in ("e", "c"):
                names = list(self._scan_names(self._pattern(kind, namespace)))
                for start in range(0, len(names), 512):
                    batch = names[start : start + 512]
                    self.link.run(lambda r, b=batch: r.delete(*b))
        except Offline:
            pass

    def get_many(self, namespace: str, keys: Collection[bytes]) -> dict[bytes, bytes]:
        """Each value :meth:`get` would serve (each checked as it does)."""
        found = {}
        for key in keys:
            value = self.get(namespace, key)
            if value is not None:
                found[key] = value
        return found

    def scan(self, namespace: str) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, value) of ``namespace`` that :meth:`get` would serve, in key order."""
        head = len(self.entry_key(namespace, b""))
        try:
            names = list(self._scan_names(self._pattern("e", namespace)))
        except Offline:
            return
        for key in sorted(bytes.fromhex(name[head:].decode()) for name in names):
            value = self.get(namespace, key)
            if value is not None:
                yield key, value

    def summaries(self) -> list[NamespaceSummary]:
        """Every namespace on the server with its entries and bytes (records and chunks)."""
        found: dict[str, tuple[int, int]] = {}
        start = len(self.prefix) + 2
        try:
            for kind, tail in (("e", 1), ("c", 3)):
                for name in self._scan_names(self._pattern(kind, None)):
                    namespace = name.decode()[start:].rsplit(":", tail)[0]
                    size = int(self.link.run(lambda r, n=name: r.strlen(n)))
                    entries, total = found.get(namespace, (0, 0))
                    found[namespace] = (entries + (kind == "e"), total + size)
        except Offline:
            pass
        return [NamespaceSummary(ns, n, size) for ns, (n, size) in sorted(found.items()) if n]

    def close(self) -> None:
        """Closes the connections to the server."""
        self.link.close()


def _glob_escape(text: str) -> str:
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)
