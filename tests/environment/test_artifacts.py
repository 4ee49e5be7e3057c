"""What a backend target keeps: artifacts by id and by source, keyed by the build id."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from cubejit import config, environment
from cubejit.compile.id import ArtifactId, KernelId
from cubejit.environment import ArtifactStore, build
from cubejit.environment.storage_sqlite import SELECT_VALUE


def kernel(name: str, variant: object = 16) -> ArtifactId[object]:
    return ArtifactId(KernelId(name, {"types": ("f32", "f32")}, 256), variant)


def test_the_namespace_names_backend_version_and_fingerprint(root: Path) -> None:
    store = ArtifactStore("cpu", "x86_64-gcc12-O3")
    assert store.namespace == f"cpu/{build.version()}/x86_64-gcc12-O3"
    assert build.version() == "0.1.0"


def test_a_stored_artifact_is_served_with_its_metadata(root: Path) -> None:
    store = ArtifactStore("cpu", "fp")
    assert store.persists()
    assert store.stored(kernel("saxpy")) is None
    assert store.store(
        kernel("saxpy"),
        b"\x7fELF...",
        {"entry": "cubejit_kernel", "n": (1, 2)},
        "int main;",
        {"source_hash": "abc", "comptime": {"unroll": True}},
    )
    assert store.stored(kernel("saxpy")) == (
        b"\x7fELF...",
        {"entry": "cubejit_kernel", "n": [1, 2]},
    )
    assert store.stored(kernel("saxpy", variant=32)) is None
    assert store.stored_for_source("int main;") == (
        b"\x7fELF...",
        {"entry": "cubejit_kernel", "n": [1, 2]},
    )
    assert store.stored_for_source("int main; ") is None


def test_the_key_ingredients_are_kept_beside_the_artifact(root: Path) -> None:
    store = ArtifactStore("cpu", "fp")
    store.store(kernel("saxpy"), b"so", {}, None, {"source_hash": "abc", "cube_dim": (256, 1, 1)})
    header = store.header(kernel("saxpy"))
    assert header is not None
    assert header["ingredients"] == {
        "kernel": "saxpy",
        "variant": 16,
        "build_id": build.build_id(),
        "fingerprint": "fp",
        "source_hash": "abc",
        "types": ["f32", "f32"],
        "cube_dim": [256, 1, 1],
    }


def test_the_first_artifact_stored_under_an_id_wins(root: Path) -> None:
    store = ArtifactStore("cpu", "fp")
    assert store.store(kernel("k"), b"first", {}, None)
    assert store.store(kernel("k"), b"first", {}, None)
    assert not store.store(kernel("k"), b"second", {}, None)
    assert store.stored(kernel("k")) == (b"first", {})


def test_a_new_build_id_misses_by_id_and_finds_by_source(root: Path) -> None:
    store = ArtifactStore("cpu", "fp")
    store.store(kernel("k"), b"artifact", {"entry": "e"}, "the C text")
    build.override_build_id("an-upgraded-build")
    try:
        assert store.stored(kernel("k")) is None
        assert store.stored_for_source("the C text") == (b"artifact", {"entry": "e"})
    finally:
        build.override_build_id(None)
    assert store.stored(kernel("k")) == (b"artifact", {"entry": "e"})


def test_the_build_id_covers_the_package_sources_and_is_computed_once() -> None:
    first = build.build_id()
    assert len(first) == 64 and first == build.build_id()
    build.override_build_id("x")
    assert build.build_id() == "x"
    build.override_build_id(None)
    assert build.build_id() == first


def test_a_damaged_value_is_purged_logged_once_and_never_served(
    root: Path, store_warnings: list[logging.LogRecord]
) -> None:
    store = ArtifactStore("cpu", "fp")
    store.store(kernel("k"), b"artifact", {}, None)
    key = store.key(kernel("k"))
    with sqlite3.connect(environment.path()) as db:
        db.execute("UPDATE entries SET value = ? WHERE key = ?", (b"garbage" * 20, key))
    assert store.stored(kernel("k")) is None
    assert store.stored(kernel("k")) is None
    assert len(store_warnings) == 1
    message = store_warnings[0].getMessage()
    assert store.namespace in message and key.decode() in message
    with sqlite3.connect(environment.path()) as db:
        assert db.execute(SELECT_VALUE, (store.namespace, key)).fetchone() is None
    assert store.store(kernel("k"), b"artifact", {}, None)
    assert store.stored(kernel("k")) == (b"artifact", {})


def test_without_the_compilation_cache_nothing_persists(root: Path) -> None:
    config.override(compilation_cache=False)
    store = ArtifactStore("cpu", "fp")
    assert not store.persists()
    assert store.store(kernel("k"), b"artifact", {}, "text")
    assert store.stored(kernel("k")) == (b"artifact", {})
    assert not root.exists()


@pytest.mark.parametrize("variant", [None, 8, "aligned"])
def test_variants_key_apart(root: Path, variant: object) -> None:
    store = ArtifactStore("cpu", "fp")
    store.store(kernel("k", variant), repr(variant).encode(), {}, None)
    assert store.stored(kernel("k", variant)) == (repr(variant).encode(), {})
    assert store.stored(kernel("k", "never")) is None
