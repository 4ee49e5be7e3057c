"""``CUBEJIT_STORE`` puts a shared store behind every ArtifactStore: local first, then Redis."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cubejit import config
from cubejit.compile.id import ArtifactId, KernelId
from cubejit.compile.protocols import Flight
from cubejit.environment import ArtifactStore, fleet
from cubejit.environment.manager import ENVIRONMENTS

KERNEL = ArtifactId(KernelId("saxpy", ("f32",), 256), 64)


@pytest.fixture
def on_a_fleet(tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(config, "_current", config.settings())
    monkeypatch.setattr(fleet, "_shared", {})
    config.override(
        cache_dir=tmp_path / "host-a", env="test", store=redis_url, signing_key="secret"
    )
    ENVIRONMENTS.reset()
    yield tmp_path
    ENVIRONMENTS.reset()


def test_what_one_host_compiles_another_loads_and_keeps_locally(on_a_fleet: Path, redis_server):
    here = ArtifactStore("cpu", "fp")
    assert here.stored(KERNEL) is None
    assert here.store(KERNEL, b"shared object", {"entry": "k"}, "the C text")

    ENVIRONMENTS.set_root(on_a_fleet / "host-b")
    there = ArtifactStore("cpu", "fp")
    assert there.stored(KERNEL) == (b"shared object", {"entry": "k"})
    assert there.stored_for_source("the C text") == (b"shared object", {"entry": "k"})
    redis_server.client().flushall()
    assert there.stored(KERNEL) == (b"shared object", {"entry": "k"})
    assert there.stored_for_source("the C text") == (b"shared object", {"entry": "k"})


def test_a_claimed_kernel_that_fails_gives_its_lease_back(on_a_fleet: Path, redis_server):
    store = ArtifactStore("cpu", "fp")
    assert store.stored(KERNEL) is None
    assert not redis_server.client().keys("cubejit:l:*"), "a look-up claims nothing"
    assert store.claim(KERNEL) is Flight.HERE
    assert redis_server.client().keys("cubejit:l:*")
    store.abandon(KERNEL)
    assert not redis_server.client().keys("cubejit:l:*")


def test_without_a_shared_store_an_artifact_store_is_local_only(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "_current", config.settings())
    config.override(cache_dir=tmp_path, env="test", store=None)
    ENVIRONMENTS.reset()
    try:
        store = ArtifactStore("cpu", "fp")
        assert store.stored(KERNEL) is None
        assert not isinstance(store._store, fleet.FleetStore)
    finally:
        ENVIRONMENTS.reset()
