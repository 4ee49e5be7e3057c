"""What a backend's compilation target keeps in the store: artifacts, by kernel, source and pack.

An :class:`ArtifactStore` is one namespace, ``"<backend>/<cubejit version>/<fingerprint>"``, of
the active environment; the fingerprint names what the code was built for, so code built for
one machine is never served to another. It holds three maps in that namespace:

- by source: key ``b"source:"`` + the hex SHA-256 of the backend text, holding the artifact's
  bytes and metadata, once however many kernels lower to that text (content addressed);
- by artifact: key ``b"id:"`` + the hex digest of the artifact id (kernel id and variant) and
  the build id (:func:`~cubejit.environment.build.build_id`), holding a small *record*: the
  source key it is served by and the key's ingredients. After an upgrade (a new build id) a
  kernel whose text did not change is re-keyed through the source map, not compiled again.
  A kernel with no source keeps its bytes under its id;
- by pack: key ``b"packed:"`` + the hex SHA-256 of the bytes, holding the one library that the
  kernels a batch compiled share (each with an entry of its own). Their records, and their
  source entries, name the pack and hold each kernel's own metadata, so that a warm batch
  reads its records in one query, the one pack in a second, and decodes the pack once.

Values are :mod:`~cubejit.environment.value` encodings (payloads compressed when that shrinks
them) whose JSON header holds ``{"ingredients": …, "build_id": …, "artifact": …,
"source_sha256": …}`` and either ``"metadata"`` (the bytes are there) or ``"source_key"`` (a
record naming the entry that holds the bytes: a source entry, or a pack beside the kernel's own
``"metadata"``). ``ingredients`` are the named parts of the key (kernel name, source hash, types,
comptime, cube_dim, variant, build id, fingerprint), kept so that a miss can be explained.
Entries written before records existed hold the bytes under the id too, and are read as ever.
A value that fails its checks, or whose artifact the backend cannot load, is purged and logged
once at WARNING: it is never loaded again, and its kernel compiles again, once. A record naming
an entry that is gone (a pack pruned) is purged too, so that the compile's record replaces it.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from typing import Any, TypeVar

from cubejit.compile.id import ArtifactId, canonical_digest
from cubejit.compile.protocols import Flight
from cubejit.environment import fleet
from cubejit.environment.build import build_id, version
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.environment.storage import InsertOutcome
from cubejit.environment.store import Store
from cubejit.environment.value import DamagedValueError, decode, encode

log = logging.getLogger("cubejit.environment")

ID_PREFIX = b"id:"
SOURCE_PREFIX = b"source:"
PACK_PREFIX = b"packed:"
SOURCE_KEY = "source_key"
"""The header key of a record: the key of the entry that holds the bytes (a source entry or a
pack; the name is the first format's)."""
V = TypeVar("V")
Stored = tuple[bytes, dict[str, Any]]
"""An artifact as the store gives it back: its bytes and its metadata."""


def jsonable(value: Any) -> Any:
    """``value`` with tuples as lists, bytes as hex text and anything unknown as its text, so
    that it fits a value's JSON header."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return str(value)


def key_parts(id: ArtifactId[Any]) -> dict[str, Any]:
    """The named parts of ``id`` that decide its key: kernel name, cube_dim, variant, and the
    named parts of the kernel id's ``info`` (source hash, types, comptime values) when it is a
    sequence of ``(name, value)`` pairs, as the kernel language makes it."""
    parts: dict[str, Any] = {"kernel": id.kernel.name}
    info = id.kernel.info
    if isinstance(info, tuple) and all(
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in info
    ):
        parts.update(info)
    elif info is not None:
        parts["info"] = info
    parts["cube_dim"] = id.kernel.cube_dim
    parts["variant"] = id.variant
    return parts


def ready_reads() -> None:
    """Readies this process's first look-up of artifacts: on an environment file, the batch
    look-up runs once for a key no entry has, so that SQLite has parsed the schema, prepared
    the statement and read the index's first pages before a first launch asks (on a 2-core
    machine the first look-up then takes 0.18 to 0.21 ms instead of 0.26 to 0.43). For a
    client with idle time before its first launch: the CUDA client calls it while the driver
    opens the device."""
    Store("").get_many([ID_PREFIX + bytes(64)])


class ArtifactStore:
    """The artifacts of one backend and fingerprint in the active environment.

    Used by a compilation target on the thread that owns its device; it follows environment
    switches (its :meth:`generation` changes and it reads the new environment).
    """

    def __init__(self, backend: str, fingerprint: str) -> None:
        self.backend = backend
        """The backend's name, e.g. ``cpu``."""
        self.fingerprint = fingerprint
        """What the artifacts were built for."""
        self.namespace = f"{backend}/{version()}/{fingerprint}"
        """``"<backend>/<cubejit version>/<fingerprint>"``."""
        self._store = fleet.layered(Store(self.namespace))
        self._warned: set[bytes] = set()
        self._lock = threading.Lock()
        self._keys: dict[ArtifactId[Any], bytes] = {}
        self._keys_build = build_id()
        self._packs: set[tuple[int, bytes]] = set()
        """The packs stored by this process, with the generation they were stored in."""
        self._last_pack: tuple[bytes, bytes] | None = None
        """The last pack read for a source, key and payload: a re-keyed batch reads one pack
        for many sources."""

    def persists(self) -> bool:
        """Whether stored artifacts outlive this process (false with the compilation cache
        off, or once the environment fell back to memory)."""
        return self._store.storage().persists

    def generation(self) -> int:
        """The active environment's generation: it changes with every switch, and what was
        loaded from the store before must then be loaded again."""
        return ENVIRONMENTS.generation()

    def key(self, id: ArtifactId[Any]) -> bytes:
        """The by-artifact key of ``id`` under this process's build id: hashed once per id
        (and build id), since a batch, its claims and its stores all ask for it."""
        build = build_id()
        if build != self._keys_build:
            self._keys = {}
            self._keys_build = build
        key = self._keys.get(id)
        if key is None:
            key = ID_PREFIX + canonical_digest("artifact", id.stable_hash(), build).encode()
            self._keys[id] = key
        return key

    @staticmethod
    def source_key(source: str) -> bytes:
        """The by-source key of a backend text."""
        return SOURCE_PREFIX + hashlib.sha256(source.encode("utf-8")).hexdigest().encode()

    def stored(self, id: ArtifactId[Any]) -> Stored | None:
        """The payload and metadata stored for ``id``; ``None`` when absent or damaged."""
        return self.stored_many([id]).get(id)

    def stored_many(self, ids: Sequence[ArtifactId[V]]) -> dict[ArtifactId[V], Stored]:
        """The payload and metadata stored for each of ``ids`` that has them: a batch's whole
        look-up: one query for the records, a second for the entries they name (each once,
        however many records name it: a batch's pack)."""
        keys = {self.key(id): id for id in ids}
        values = self._store.get_many(list(keys))
        found: dict[ArtifactId[V], Stored] = {}
        pointing: dict[bytes, list[tuple[bytes, dict[str, Any]]]] = {}
        for key, value in values.items():
            decoded = self._decoded(key, value)
            if decoded is None:
                continue
            payload, header = decoded
            source_key = header.get(SOURCE_KEY)
            if isinstance(source_key, str):
                pointing.setdefault(source_key.encode("ascii"), []).append((key, header))
            else:
                found[keys[key]] = _stored(payload, header)
        sources = self._store.get_many(list(pointing))
        for source_key, records in pointing.items():
            source_value = sources.get(source_key)
            decoded = None if source_value is None else self._decoded(source_key, source_value)
            for key, header in records:
                if decoded is not None:
                    found[keys[key]] = _stored(
                        decoded[0], header if "metadata" in header else decoded[1]
                    )
                elif source_value is None:
                    self._dangling(key, source_key)
        return found

    def own_many(self, ids: Sequence[ArtifactId[V]]) -> dict[ArtifactId[V], bytes]:
        """The bytes of its own (``store``'s ``own``) kept beside a pack for each of ``ids``
        that has them: its record, then the entry of its source. Two queries, for what a warm
        load never needs (a CUDA kernel's PTX, for a GPU newer than the pack's)."""
        keys = {self.key(id): id for id in ids}
        by_source: dict[bytes, list[ArtifactId[V]]] = {}
        for key, value in self._store.get_many(list(keys)).items():
            decoded = self._decoded(key, value)
            sha = None if decoded is None else decoded[1].get("source_sha256")
            if isinstance(sha, str):
                by_source.setdefault(SOURCE_PREFIX + sha.encode("ascii"), []).append(keys[key])
        found: dict[ArtifactId[V], bytes] = {}
        for key, value in self._store.get_many(list(by_source)).items():
            decoded = self._decoded(key, value)
            if decoded is not None and decoded[0] and isinstance(decoded[1].get(SOURCE_KEY), str):
                found.update(dict.fromkeys(by_source[key], decoded[0]))
        return found

    def _dangling(self, key: bytes, named: bytes) -> None:
        """Purges the record ``key``, which names the missing entry ``named``: its kernel
        compiles again, and the record its store writes takes the place of this one."""
        self._store.purge_key(key)
        log.debug("dropped %s, which names the missing %s", key.decode(), named.decode())

    def claim(self, id: ArtifactId[Any]) -> Stored | Flight:
        """After a miss, one look that never waits: with a fleet's shared store, the artifact
        when another host stored it, :attr:`~cubejit.compile.protocols.Flight.ELSEWHERE` when
        another host is compiling it (see :meth:`wait_for`), else
        :attr:`~cubejit.compile.protocols.Flight.HERE`: this host compiles it, and
        :meth:`store` or :meth:`abandon` ends the claim (see
        :meth:`~cubejit.environment.fleet.FleetStore.claim_now`)."""
        found = fleet.claim_now(self._store, self.key(id))
        if found is fleet.Claim.HELD:
            return Flight.ELSEWHERE
        if isinstance(found, bytes):
            stored = self.stored(id)
            if stored is not None:
                return stored
        return Flight.HERE

    def wait_for(self, id: ArtifactId[Any]) -> Stored | None:
        """The artifact of a kernel another host was compiling, once stored; ``None`` when
        this host compiles it after all (and then holds its claim)."""
        if fleet.wait_for(self._store, self.key(id)) is None:
            return None
        return self.stored(id)

    def abandon(self, id: ArtifactId[Any]) -> None:
        """Says that ``id``, claimed by :meth:`claim`, will not be stored (its kernel failed),
        so that a host of the fleet waiting for it compiles it now."""
        fleet.abandon(self._store, self.key(id))

    def stored_for_source(self, source: str) -> Stored | None:
        """The payload and metadata another kernel finalized from ``source`` (a pack's
        library, when the source's entry names one); ``None`` when absent or damaged."""
        key = self.source_key(source)
        value = self._store.get(key)
        decoded = None if value is None else self._decoded(key, value)
        if decoded is None:
            return None
        named = decoded[1].get(SOURCE_KEY)
        if not isinstance(named, str):
            return _stored(*decoded)
        pack = self._pack(named.encode("ascii"))
        if pack is None:
            self._dangling(key, named.encode("ascii"))
            return None
        return _stored(pack, decoded[1])

    def _pack(self, key: bytes) -> bytes | None:
        """The payload of the pack ``key``; the last one read is kept."""
        if self._last_pack is not None and self._last_pack[0] == key:
            return self._last_pack[1]
        value = self._store.get(key)
        decoded = None if value is None else self._decoded(key, value)
        if decoded is None:
            return None
        self._last_pack = (key, decoded[0])
        return decoded[0]

    def discard(self, id: ArtifactId[Any] | None, source: str | None, why: str) -> None:
        """Purges what is stored for ``id`` (its record and the entry it names) and for
        ``source`` (its entry and the pack it names), which decoded intact but could not be
        used (the backend refused the artifact): the kernel compiles again and its store
        replaces them, so the caller's warning and the recompile happen once, not on every
        run."""
        asked = [] if id is None else [self.key(id)]
        if source is not None:
            asked.append(self.source_key(source))
        keys = dict.fromkeys(asked)
        for key in asked:
            value = self._store.get(key)
            decoded = None if value is None else self._decoded(key, value)
            named = None if decoded is None else decoded[1].get(SOURCE_KEY)
            if isinstance(named, str):
                keys[named.encode("ascii")] = None
        self._last_pack = None
        for key in keys:
            self._store.purge_key(key)
            log.debug("dropped %s of namespace %s: %s", key.decode(), self.namespace, why)

    def store(
        self,
        id: ArtifactId[Any],
        payload: bytes,
        metadata: dict[str, Any],
        source: str | None,
        ingredients: dict[str, Any] | None = None,
        compress: bool = True,
        pack: str | None = None,
        own: bytes = b"",
    ) -> bool:
        """Keeps ``payload`` and ``metadata`` (JSON values: tuples come back as lists) under
        ``source`` when given, with a record of ``id`` naming it beside the key's
        ``ingredients``; under ``id`` itself otherwise. ``pack``, the SHA-256 of a payload
        that other kernels share, keeps the payload once under that name, the first time this
        process stores it, and the record and the source's entry hold ``metadata`` and name
        the pack; ``own``, bytes of this kernel alone that the pack does not hold (a CUDA
        kernel's PTX), is kept in the source's entry, read only by :meth:`own_many`. The
        payload is compressed when that shrinks it, unless not ``compress`` (a backend that
        compressed it in parts). Whether the entry under ``id`` now holds this value; a refused
        write is routine (logged at DEBUG)."""
        source_sha = None if source is None else hashlib.sha256(source.encode()).hexdigest()
        named = {
            **key_parts(id),
            "build_id": build_id(),
            "fingerprint": self.fingerprint,
            **(ingredients or {}),
        }
        header: dict[str, Any] = {
            "ingredients": jsonable(named),
            "build_id": build_id(),
            "artifact": id.stable_hash(),
            "source_sha256": source_sha,
        }
        key = self.key(id)
        content = {"metadata": jsonable(metadata), "source_sha256": source_sha}
        if pack is not None and source is not None:
            held = self._stored_pack(pack, payload, compress)
            if held is None:
                return False
            named_pack = {**content, SOURCE_KEY: held}
            by_source = self.source_key(source)
            self._refused(by_source, self._store.insert(by_source, encode(own, named_pack)))
            record = encode(b"", {**header, **named_pack})
        elif source is None:
            record = encode(payload, {**header, **content}, compress)
        else:
            by_source = self.source_key(source)
            stored = encode(payload, content, compress)
            self._refused(by_source, self._store.insert(by_source, stored))
            record = encode(b"", {**header, SOURCE_KEY: by_source.decode("ascii")})
        outcome = self._store.insert(key, record)
        self._refused(key, outcome)
        return outcome in (InsertOutcome.STORED, InsertOutcome.ALREADY_PRESENT)

    def _stored_pack(self, pack: str, payload: bytes, compress: bool) -> str | None:
        """The key the pack ``pack`` is stored under, storing it unless this process did in
        this generation; ``None`` when the store failed to. Another value under the key holds
        the same bytes (the key is their hash) unless it is damaged: then it is replaced."""
        key = PACK_PREFIX + pack.encode("ascii")
        held = (self.generation(), key)
        if held not in self._packs:
            value = encode(payload, {"pack": pack}, compress)
            outcome = self._store.insert(key, value)
            if outcome is InsertOutcome.REFUSED and self._pack(key) is None:
                outcome = self._store.insert(key, value)
            self._refused(key, outcome)
            if outcome is InsertOutcome.FAILED:
                return None
            self._packs.add(held)
        return key.decode("ascii")

    def _refused(self, key: bytes, outcome: InsertOutcome) -> None:
        if outcome is InsertOutcome.REFUSED:
            log.debug(
                "the store kept another value under %s (namespace %s): the first writer wins",
                key.decode("ascii", "replace"),
                self.namespace,
            )
        elif outcome is InsertOutcome.FAILED:
            log.debug("the store refused %s (namespace %s)", key.decode(), self.namespace)

    def header(self, id: ArtifactId[Any]) -> dict[str, Any] | None:
        """The whole JSON header stored for ``id`` (ingredients, build id, and the metadata or
        the source key), for tools that explain what the store holds; ``None`` when absent or
        damaged."""
        key = self.key(id)
        value = self._store.get(key)
        decoded = None if value is None else self._decoded(key, value)
        return None if decoded is None else decoded[1]

    def _decoded(self, key: bytes, value: bytes) -> tuple[bytes, dict[str, Any]] | None:
        try:
            decoded = decode(value)
        except DamagedValueError as e:
            self._store.purge_key(key)
            self._warn(key, f"{e}; it compiles again")
            return None
        return decoded.payload, decoded.header

    def _warn(self, key: bytes, what: str) -> None:
        with self._lock:
            first = key not in self._warned
            self._warned.add(key)
        if first:
            log.warning(
                "cubejit: dropped a damaged entry of the compilation store "
                "(namespace %s, key %s): %s",
                self.namespace,
                key.decode("ascii", "replace"),
                what,
            )


def _stored(payload: bytes, header: dict[str, Any]) -> Stored:
    metadata = header.get("metadata")
    return payload, metadata if isinstance(metadata, dict) else {}
