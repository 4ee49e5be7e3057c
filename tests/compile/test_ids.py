"""Kernel and artifact ids: one encoding per value whatever was encoded before, and the parts
kernels share (source, types) encoded once per process."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from cubejit.compile import id as ids
from cubejit.compile.id import ArtifactId, KernelId, canonical, encode, stable_digest


def test_a_value_encodes_as_it_always_did() -> None:
    value = ("kernel", None, True, False, -5, 2**70, 1.5, "é", b"\x00", ("a", ("b",)), ())
    assert encode(canonical(value)) == (
        b"L\x0b\x00\x00\x00S\x06\x00\x00\x00kernelNTFI\x02\x00\x00\x00-5"
        b"I\x16\x00\x00\x001180591620717411303424D\x00\x00\x00\x00\x00\x00\xf8?"
        b"S\x02\x00\x00\x00\xc3\xa9B\x01\x00\x00\x00\x00"
        b"L\x02\x00\x00\x00S\x01\x00\x00\x00aL\x01\x00\x00\x00S\x01\x00\x00\x00bL\x00\x00\x00\x00"
    )
    assert (
        stable_digest("x", [1, {"b": 2, "a": 1}])
        == hashlib.sha256(encode(("x", (1, (("a", 1), ("b", 2)))))).hexdigest()
    )


@pytest.mark.parametrize("first", [("k", 1), ("k", 1.0), ("k", True), ("k", "1"), ("k", None)])
def test_equal_values_of_other_types_keep_their_own_encodings(first: tuple[Any, ...]) -> None:
    encode(first)
    encodings = {encode(v) for v in (("k", 1), ("k", 1.0), ("k", True), ("k", "1"), ("k", None))}
    assert len(encodings) == 5


def test_kernels_differing_in_comptime_encode_their_shared_parts_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ids, "_words", {})
    encoded: list[Any] = []
    real = ids._encode

    def counting(value: Any) -> tuple[bytes, bool]:
        encoded.append(value)
        return real(value)

    monkeypatch.setattr(ids, "_encode", counting)
    types = tuple((name, "Array[f32]") for name in "abcdefgh")

    def kernel(k: int) -> KernelId:
        info = (("source", "f" * 64), ("types", types), ("comptime", (("k", k),)))
        return KernelId("saxpy", info, 256)

    first = kernel(1).stable_hash()
    first_count = len(encoded)
    encoded.clear()
    second = kernel(2).stable_hash()
    assert first != second
    assert types not in encoded
    assert len(encoded) < first_count / 2
    assert ArtifactId(kernel(2), None).stable_hash() == ArtifactId(kernel(2), None).stable_hash()


@pytest.mark.parametrize("comptime", [(("k", 1),), (("k", 1.0),), (("k", True),), ()])
def test_an_id_made_from_a_stem_is_the_id_made_whole(comptime: tuple[Any, ...]) -> None:
    head = (("source", "f" * 64), ("types", (("x", "Array[f32]"), ("n", "u32"))))
    stem = ids.KernelIdStem("saxpy", head, 3)
    made = stem.id((("comptime", comptime),), (256, 1, 1))
    whole = KernelId("saxpy", (*head, ("comptime", comptime)), 256)
    assert made == whole and hash(made) == hash(whole)
    assert made.stable_hash() == whole.stable_hash()
    assert str(made) == str(whole)
