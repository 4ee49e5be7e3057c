"""The byte encoding of a stored value: a versioned header, the artifact, a checksum.

A store or a bundle may come from another machine, so a value is read back as plain data,
never unpickled, and checked before anything of it is used. The layout, all integers
little-endian::

    offset      size  field
    0           4     magic, the bytes ``CJV1``
    4           2     format version, uint16 (this module writes 2, reads 1 and 2)
    6           4     header length H, uint32
    10          8     payload length P, uint64
    18          H     header: a UTF-8 JSON object (the artifact's metadata), keys sorted
    18+H        P     payload: the artifact's bytes (a shared object, a cubin)
    18+H+P      32    SHA-256 of every byte before it

In format 2 the payload is compressed with ``zlib`` when that makes it smaller, and the header
then says so (``"compression": "zlib"``, a key :func:`decode` removes); format 1 values, written
before, never are. Shared objects and cubins shrink to a third or less, and a warm start reads
less from disk than it decompresses.

Anything else (another magic or version, lengths that do not add up to the value's size, a
header that is not a JSON object, a checksum that does not match) makes :func:`decode` raise
:class:`DamagedValueError`: the caller drops the entry and compiles again.
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from dataclasses import dataclass
from typing import Any

from cubejit.errors import StoreError

MAGIC = b"CJV1"
FORMAT_VERSION = 2
READS = (1, 2)
"""The format versions :func:`decode` reads."""
COMPRESSION = "compression"
"""The header key naming how the payload is compressed (absent: not compressed)."""
_ZLIB_LEVEL = 6
_FIXED = struct.Struct("<4sHIQ")
_CHECKSUM_SIZE = 32


class DamagedValueError(StoreError):
    """A stored value that is not one this version of cubejit wrote intact: a wrong magic or
    format version, inconsistent lengths, a header that is not a JSON object, or a checksum
    mismatch. Never loaded; the entry is dropped and its kernel compiled again."""


@dataclass(frozen=True, slots=True)
class Decoded:
    """A value read back intact."""

    payload: bytes
    """The artifact's bytes."""
    header: dict[str, Any]
    """The JSON header written with it."""


def encode(payload: bytes, header: dict[str, Any], compress: bool = True) -> bytes:
    """``payload`` and its ``header`` (JSON-serialisable) as one value in the layout above,
    the payload compressed when that shrinks it (never when not ``compress``: a payload its
    owner compressed already, in parts it decompresses apart)."""
    packed = zlib.compress(payload, _ZLIB_LEVEL) if payload and compress else payload
    if len(packed) < len(payload):
        payload, header = packed, {**header, COMPRESSION: "zlib"}
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    body = _FIXED.pack(MAGIC, FORMAT_VERSION, len(text), len(payload)) + text + payload
    return body + hashlib.sha256(body).digest()


def decode(value: bytes) -> Decoded:
    """The payload and header of ``value``; :class:`DamagedValueError` unless intact."""
    if len(value) < _FIXED.size + _CHECKSUM_SIZE:
        raise DamagedValueError(f"value of {len(value)} bytes is shorter than any encoded value")
    magic, version, header_size, payload_size = _FIXED.unpack_from(value)
    if magic != MAGIC:
        raise DamagedValueError(f"value starts with {magic!r}, not {MAGIC!r}")
    if version not in READS:
        raise DamagedValueError(
            f"value has format version {version}; this cubejit reads "
            f"{' and '.join(map(str, READS))}"
        )
    end = _FIXED.size + header_size + payload_size
    if end + _CHECKSUM_SIZE != len(value):
        raise DamagedValueError(
            f"value is {len(value)} bytes; its lengths say {end + _CHECKSUM_SIZE}"
        )
    if hashlib.sha256(value[:end]).digest() != value[end:]:
        raise DamagedValueError("value fails its checksum")
    try:
        header = json.loads(value[_FIXED.size : _FIXED.size + header_size].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise DamagedValueError(f"value header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise DamagedValueError("value header is not a JSON object")
    payload = value[_FIXED.size + header_size : end]
    compression = header.pop(COMPRESSION, None) if version >= 2 else None
    if compression == "zlib":
        try:
            payload = zlib.decompress(payload)
        except zlib.error as e:
            raise DamagedValueError(f"value payload does not decompress: {e}") from None
    elif compression is not None:
        raise DamagedValueError(f"value payload is compressed with unknown {compression!r}")
    return Decoded(payload=payload, header=header)
