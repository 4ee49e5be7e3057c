"""Environments: where they live, which one is active, and switches between them."""

from __future__ import annotations

from pathlib import Path

import pytest

from cubejit import config, environment
from cubejit.compile.id import ArtifactId, KernelId
from cubejit.environment import ArtifactStore, Store
from cubejit.environment.manager import ENVIRONMENTS, sanitise
from cubejit.errors import StoreError

NS = "cpu/0.1.0/test"


def test_the_environment_is_a_database_under_the_root(root: Path) -> None:
    Store(NS).insert(b"k", b"v")
    assert environment.root() == root.resolve()
    assert environment.active() == "test"
    assert environment.path() == root.resolve() / "test.db"
    assert environment.path().is_file()
    assert environment.list() == ["test"]


def test_settings_name_the_root_and_the_environment(
    root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CUBEJIT_CACHE_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("CUBEJIT_ENV", "nightly")
    config.reset()
    ENVIRONMENTS.reset()
    assert environment.path() == (tmp_path / "elsewhere").resolve() / "nightly.db"


@pytest.mark.parametrize(
    "name", ["../escape", "/etc/passwd", "..", "a/../../b", ".hidden", "x\x00y", "C:\\evil"]
)
def test_no_name_escapes_the_root(root: Path, name: str) -> None:
    environment.activate(name)
    Store(NS).insert(b"k", b"v")
    assert environment.path().parent == root.resolve()
    assert not environment.path().name.startswith(".")
    assert sanitise(name) in environment.list()


def test_an_empty_name_is_refused(root: Path) -> None:
    with pytest.raises(ValueError, match="empty"):
        environment.activate("")


def test_every_switch_bumps_the_generation(root: Path, tmp_path: Path) -> None:
    seen = [environment.generation()]
    environment.activate("other")
    seen.append(environment.generation())
    environment.set_root(tmp_path / "second-root")
    seen.append(environment.generation())
    Store(NS).insert(b"k", b"v")
    environment.load(environment.path())
    seen.append(environment.generation())
    config.override(env="from-settings")
    environment.activate("from-settings")
    seen.append(environment.generation())
    assert seen == sorted(set(seen))


class Cache:
    """Something a launch path keeps that a switch must drop."""

    def __init__(self) -> None:
        self.dropped = 0

    def drop(self) -> None:
        self.dropped += 1


def test_a_watcher_is_told_of_every_switch_while_it_lives(root: Path, tmp_path: Path) -> None:
    ArtifactStore("cpu", "fp").persists()
    cache = Cache()
    ENVIRONMENTS.watch(cache.drop)
    environment.activate("other")
    environment.set_root(tmp_path / "elsewhere")
    ArtifactStore("cpu", "fp").persists()
    assert cache.dropped == 2
    config.override(compilation_cache=False)
    ArtifactStore("cpu", "fp").persists()
    assert cache.dropped == 3
    del cache
    environment.activate("fourth")
    assert all(w() is not None for w in ENVIRONMENTS._watchers)


def test_a_change_of_settings_is_a_switch(root: Path) -> None:
    before = environment.generation()
    config.override(env="changed")
    assert environment.generation() > before
    assert environment.active() == "changed"


def test_an_environment_switch_mid_run_serves_the_new_environment(root: Path) -> None:
    artifacts = ArtifactStore("cpu", "fp")
    first = ArtifactId(KernelId("first"), None)
    second = ArtifactId(KernelId("second"), None)
    assert artifacts.store(first, b"first artifact", {}, "text one")
    generation = artifacts.generation()
    environment.activate("other")
    assert artifacts.generation() != generation
    assert artifacts.stored(first) is None
    assert artifacts.stored_for_source("text one") is None
    assert artifacts.store(second, b"second artifact", {}, "text two")
    environment.activate("test")
    assert artifacts.stored(first) == (b"first artifact", {})
    assert artifacts.stored(second) is None


def test_loading_a_file_that_is_not_a_store_is_refused_and_leaves_it(
    root: Path, tmp_path: Path
) -> None:
    stranger = tmp_path / "notes.db"
    stranger.write_bytes(b"my notes, not a database" * 100)
    with pytest.raises(StoreError, match="not a cubejit store"):
        environment.load(stranger)
    assert stranger.read_bytes() == b"my notes, not a database" * 100
    with pytest.raises(StoreError, match="no such file"):
        environment.load(tmp_path / "missing.db")


def test_the_compilation_cache_variable_set_to_0_selects_memory(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUBEJIT_CACHE_DIR", str(root))
    monkeypatch.setenv("CUBEJIT_COMPILATION_CACHE", "0")
    config.reset()
    artifacts = ArtifactStore("cpu", "fp")
    assert not artifacts.persists()
    assert artifacts.store(ArtifactId(KernelId("k"), None), b"so", {}, "text")
    assert artifacts.stored_for_source("text") == (b"so", {})
    assert not root.exists()
