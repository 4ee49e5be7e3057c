"""Whether a stored entry holds an artifact its backend can read: what ``cubejit env verify``
checks beyond the checksum.

A value can pass its checksum and still be useless: metadata of another format, a payload that
is not a shared object or a cubin, a record naming a source entry or a pack that is gone. The
store's target drops such an entry when it meets it; this finds them all ahead of time, without
loading anything (no ``dlopen``, no driver).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cubejit.environment.artifacts import ID_PREFIX, PACK_PREFIX, SOURCE_KEY, SOURCE_PREFIX
from cubejit.environment.value import Decoded

ELF_MAGIC = b"\x7fELF"


def artifact_problem(
    namespace: str, key: bytes, decoded: Decoded, keys: Mapping[bytes, Any]
) -> str | None:
    """What is wrong with the entry ``key`` of ``namespace`` whose value ``decoded`` passed
    its checksum, ``None`` if nothing; ``keys`` holds every key of the namespace (a record's
    source entry must be among them). Entries of namespaces that are not a backend's, and keys
    that are not an artifact's, are not checked."""
    backend = namespace.split("/", 1)[0]
    if backend not in ("cpu", "cuda"):
        return None
    if key.startswith(PACK_PREFIX):
        return None if decoded.payload.startswith(ELF_MAGIC) else "its pack is not an ELF image"
    if not key.startswith((ID_PREFIX, SOURCE_PREFIX)):
        return None
    named = decoded.header.get(SOURCE_KEY)
    if named is not None:
        if not isinstance(named, str) or named.encode("ascii", "replace") not in keys:
            return f"its record names the entry {named!r}, which is not stored"
        return None
    metadata = decoded.header.get("metadata")
    if not isinstance(metadata, dict):
        return "it holds neither metadata nor a source entry's name"
    try:
        if backend == "cpu":
            from cubejit.backends.cpu.artifact import CpuArtifact

            artifact = CpuArtifact.from_parts(decoded.payload, metadata)
            payload = artifact.library
        else:
            from cubejit.backends.cuda.target import unpacked

            payload = unpacked(decoded.payload, metadata).cubin
    except (ValueError, KeyError, TypeError) as e:
        return f"its {backend} artifact cannot be read: {e}"
    if not payload.startswith(ELF_MAGIC):
        return f"its {backend} artifact is not an ELF image"
    return None
