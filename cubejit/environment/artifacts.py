"""What a backend's compilation target keeps in the store: artifacts, by kernel and by source.

An :class:`ArtifactStore` is one namespace, ``"<backend>/<cubejit version>/<fingerprint>"``, of
the active environment; the fingerprint names what the code was built for, so code built for
one machine is never served to another. It holds two maps in that namespace:

- by artifact: key ``b"id:"`` + the hex digest of the artifact id (kernel id and variant) and
  the build id (:func:`~cubejit.environment.build.build_id`);
- by source: key ``b"source:"`` + the hex SHA-256 of the backend text, so that after an upgrade
  (a new build id) a kernel whose text did not change is re-keyed, not compiled again.

Values are :mod:`~cubejit.environment.value` encodings whose JSON header holds
``{"metadata": …, "ingredients": …, "build_id": …, "artifact": …, "source_sha256": …}``;
``ingredients`` are the named parts of the key (kernel name, source hash, types, comptime,
cube_dim, variant, build id, fingerprint), kept so that a miss can be explained. A value that
fails its checks is purged and logged once at WARNING: it is never loaded, and its kernel
compiles again.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from typing import Any

from cubejit.compile.id import ArtifactId, stable_digest
from cubejit.environment import fleet
from cubejit.environment.build import build_id, version
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.environment.storage import InsertOutcome
from cubejit.environment.store import Store
from cubejit.environment.value import DamagedValueError, decode, encode

log = logging.getLogger("cubejit.environment")

ID_PREFIX = b"id:"
SOURCE_PREFIX = b"source:"


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
        build_id()  # every key needs it: computed with the store, not on the first launch
        self._warned: set[bytes] = set()
        self._lock = threading.Lock()

    def persists(self) -> bool:
        """Whether stored artifacts outlive this process (false with the compilation cache
        off, or once the environment fell back to memory)."""
        return self._store.storage().persists

    def generation(self) -> int:
        """The active environment's generation: it changes with every switch, and what was
        loaded from the store before must then be loaded again."""
        return ENVIRONMENTS.generation()

    def on_switch(self, callback: Callable[[], None]) -> None:
        """Calls the bound method ``callback`` whenever :meth:`generation` changes, while its
        object lives (see :meth:`~cubejit.environment.manager.Environments.watch`)."""
        ENVIRONMENTS.watch(callback)

    def key(self, id: ArtifactId[Any]) -> bytes:
        """The by-artifact key of ``id`` under this process's build id."""
        return ID_PREFIX + stable_digest("artifact", id.stable_hash(), build_id()).encode()

    @staticmethod
    def source_key(source: str) -> bytes:
        """The by-source key of a backend text."""
        return SOURCE_PREFIX + hashlib.sha256(source.encode("utf-8")).hexdigest().encode()

    def stored(self, id: ArtifactId[Any]) -> tuple[bytes, dict[str, Any]] | None:
        """The payload and metadata stored for ``id``, taken out of memory (the environment
        keeps them); ``None`` when absent or damaged. With a fleet's shared store, a miss
        everywhere claims the kernel first (:meth:`~cubejit.environment.fleet.FleetStore.claim`):
        this waits while another host compiles it and returns its artifact; ``None`` means this
        host compiles it, and :meth:`store` or :meth:`abandon` ends the claim."""
        key = self.key(id)
        found = self._take(key)
        if found is None and fleet.claim(self._store, key) is not None:
            found = self._take(key)
        return found

    def abandon(self, id: ArtifactId[Any]) -> None:
        """Says that ``id``, claimed by :meth:`stored`, will not be stored (its kernel failed),
        so that a host of the fleet waiting for it compiles it now."""
        fleet.abandon(self._store, self.key(id))

    def stored_for_source(self, source: str) -> tuple[bytes, dict[str, Any]] | None:
        """The payload and metadata another kernel finalized from ``source``; ``None`` when
        absent or damaged."""
        return self._take(self.source_key(source))

    def store(
        self,
        id: ArtifactId[Any],
        payload: bytes,
        metadata: dict[str, Any],
        source: str | None,
        ingredients: dict[str, Any] | None = None,
    ) -> bool:
        """Keeps ``payload`` and ``metadata`` (JSON values: tuples come back as lists) under
        ``id`` and, when given, under ``source``, with the key's ``ingredients`` beside them.
        Whether the entry under ``id`` now holds this value; a refused write is routine."""
        source_sha = None if source is None else hashlib.sha256(source.encode()).hexdigest()
        named = {
            **key_parts(id),
            "build_id": build_id(),
            "fingerprint": self.fingerprint,
            **(ingredients or {}),
        }
        header = {
            "metadata": jsonable(metadata),
            "ingredients": jsonable(named),
            "build_id": build_id(),
            "artifact": id.stable_hash(),
            "source_sha256": source_sha,
        }
        value = encode(payload, header)
        key = self.key(id)
        outcome = self._store.insert(key, value)
        self._store.remove(key)
        if source is not None:
            by_source = self.source_key(source)
            self._store.insert(by_source, value)
            self._store.remove(by_source)
        return outcome in (InsertOutcome.STORED, InsertOutcome.ALREADY_PRESENT)

    def header(self, id: ArtifactId[Any]) -> dict[str, Any] | None:
        """The whole JSON header stored for ``id`` (metadata, ingredients, build id), for tools
        that explain what the store holds; ``None`` when absent or damaged."""
        key = self.key(id)
        value = self._store.get(key)
        self._store.remove(key)
        decoded = None if value is None else self._decoded(key, value)
        return None if decoded is None else decoded[1]

    def _take(self, key: bytes) -> tuple[bytes, dict[str, Any]] | None:
        value = self._store.get(key)
        if value is None:
            return None
        self._store.remove(key)
        decoded = self._decoded(key, value)
        if decoded is None:
            return None
        payload, header = decoded
        metadata = header.get("metadata")
        return payload, metadata if isinstance(metadata, dict) else {}

    def _decoded(self, key: bytes, value: bytes) -> tuple[bytes, dict[str, Any]] | None:
        try:
            decoded = decode(value)
        except DamagedValueError as e:
            self._store.purge_key(key)
            with self._lock:
                first = key not in self._warned
                self._warned.add(key)
            if first:
                log.warning(
                    "cubejit: dropped a damaged entry of the compilation store "
                    "(namespace %s, key %s): %s; it compiles again",
                    self.namespace,
                    key.decode("ascii", "replace"),
                    e,
                )
            return None
        return decoded.payload, decoded.header
