"""Single flight across hosts: leases on a real redis-server, each host a FleetStore here."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cubejit import config
from cubejit.environment.fleet import FleetStore, Shared
from cubejit.environment.storage import LOCAL, InsertOutcome
from cubejit.environment.storage_memory import MemoryStorage

NS = "cpu/0.1.0/x86_64-test"


class LocalMemory:
    """A host's local environment, as the Store API over memory."""

    def __init__(self) -> None:
        self.namespace = NS
        self.lazy = True
        self._storage = MemoryStorage()

    def storage(self) -> MemoryStorage:
        return self._storage

    def get(self, key: bytes) -> bytes | None:
        return self._storage.get(NS, key)

    def insert(self, key: bytes, value: bytes, origin: str = LOCAL) -> InsertOutcome:
        return self._storage.insert(NS, key, value, origin)

    def remove(self, key: bytes) -> None:
        self._storage.remove(NS, key)

    def purge_key(self, key: bytes) -> None:
        self._storage.purge_key(NS, key)

    def purge(self) -> None:
        self._storage.purge(NS)

    def scan(self) -> Iterator[tuple[bytes, bytes]]:
        return self._storage.scan(NS)


@pytest.fixture
def host(redis_url: str, tmp_path: Path):
    """Makes hosts: each its own local memory and its own connection (its own lease token)."""
    made: list[Shared] = []

    def make(lease: float = 10.0) -> FleetStore:
        settings = config.Settings(cache_dir=tmp_path, store=redis_url, signing_key="secret")
        shared = Shared(f"{redis_url}?lease={lease}", settings)
        made.append(shared)
        return FleetStore(LocalMemory(), shared)  # type: ignore[arg-type]

    yield make
    for shared in made:
        shared.storage.close()


def test_one_host_claims_a_missing_key_and_the_other_gets_its_value(host):
    a, b = host(), host()
    assert a.claim(b"k") is None
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(b.claim, b"k")
        assert a.insert(b"k", b"artifact") is InsertOutcome.STORED
        assert waiting.result(timeout=10) == b"artifact"
    assert b.local.get(b"k") == b"artifact"
    assert not a.fleet.leases.holds_any() and not b.fleet.leases.holds_any()


def test_a_lease_whose_holder_died_is_taken_over_when_it_expires(host, redis_server):
    b = host()
    lease_key = b.fleet.leases.lease_key(NS, b"k")
    redis_server.client().set(lease_key, "a host that was killed", px=400)
    started = time.monotonic()
    assert b.claim(b"k") is None
    waited = time.monotonic() - started
    assert 0.3 <= waited < 3.0
    assert b.fleet.leases.holds_any()


def test_a_lease_is_renewed_while_its_holder_compiles(host):
    a, b = host(lease=0.3), host(lease=0.3)
    assert a.claim(b"k") is None
    threading.Event().wait(1.0)
    assert a.fleet.leases.remaining(NS, b"k") > 0
    assert not b.fleet.leases.acquire(NS, b"k")
    a.abandon(b"k")
    assert b.fleet.leases.acquire(NS, b"k")


def test_a_holder_that_gives_up_wakes_the_waiting_host_at_once(host):
    a, b = host(lease=30.0), host(lease=30.0)
    assert a.claim(b"k") is None
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        waiting = pool.submit(b.claim, b"k")
        a.abandon(b"k")
        assert waiting.result(timeout=10) is None
        assert time.monotonic() - started < 5.0
    assert b.fleet.leases.holds_any()


def test_a_host_holding_a_lease_never_waits_for_another(host):
    a, b = host(lease=30.0), host(lease=30.0)
    assert a.claim(b"one") is None
    assert b.claim(b"two") is None
    started = time.monotonic()
    assert a.claim(b"two") is None
    assert b.claim(b"one") is None
    assert time.monotonic() - started < 1.0


def test_a_value_already_on_the_server_is_served_and_kept_locally(host):
    a, b = host(), host()
    a.insert(b"k", b"artifact")
    assert b.get(b"k") == b"artifact"
    assert b.local.get(b"k") == b"artifact"


def test_without_a_server_a_claim_answers_compile_at_once(tmp_path: Path):
    settings = config.Settings(cache_dir=tmp_path, store_timeout=2.0)
    shared = Shared("redis://127.0.0.1:1/0", settings)
    store = FleetStore(LocalMemory(), shared)  # type: ignore[arg-type]
    started = time.monotonic()
    assert store.get(b"k") is None
    assert store.claim(b"k") is None
    assert store.insert(b"k", b"v") is InsertOutcome.STORED
    assert time.monotonic() - started < 2.0
