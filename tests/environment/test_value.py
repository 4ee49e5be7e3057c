"""The value encoding: what is written reads back, and no damaged value reads back at all."""

from __future__ import annotations

import hashlib
import json
import pickle
import struct

import pytest

from cubejit.environment.value import FORMAT_VERSION, MAGIC, DamagedValueError, decode, encode


def test_a_value_reads_back_its_payload_and_header() -> None:
    payload = bytes(range(256)) * 3
    decoded = decode(encode(payload, {"entry": "cubejit_kernel", "params": [1, 2]}))
    assert decoded.payload == payload
    assert decoded.header == {"entry": "cubejit_kernel", "params": [1, 2]}


def test_the_layout_is_the_documented_one() -> None:
    payload = b"\x7fELF shared object"
    value = encode(payload, {"a": 1})
    header = json.dumps({"a": 1}, sort_keys=True, separators=(",", ":")).encode()
    fixed = struct.pack("<4sHIQ", MAGIC, FORMAT_VERSION, len(header), len(payload))
    body = fixed + header + payload
    assert value == body + hashlib.sha256(body).digest()


def test_every_single_changed_byte_is_refused() -> None:
    value = encode(b"artifact bytes", {"entry": "k"})
    for position in range(len(value)):
        damaged = bytearray(value)
        damaged[position] ^= 0x5A
        with pytest.raises(DamagedValueError):
            decode(bytes(damaged))


@pytest.mark.parametrize("cut", [0, 1, 17, 40])
def test_a_truncated_value_is_refused(cut: int) -> None:
    value = encode(b"artifact bytes", {"entry": "k"})
    with pytest.raises(DamagedValueError):
        decode(value[:cut])
    with pytest.raises(DamagedValueError):
        decode(value[: len(value) - 1 - cut])


def test_a_pickle_is_never_read_as_a_value() -> None:
    with pytest.raises(DamagedValueError, match="starts with"):
        decode(pickle.dumps({"payload": b"x" * 64}))


def test_another_format_version_is_refused_by_name() -> None:
    value = bytearray(encode(b"x", {}))
    value[4:6] = struct.pack("<H", FORMAT_VERSION + 1)
    with pytest.raises(DamagedValueError, match="format version"):
        decode(bytes(value))
