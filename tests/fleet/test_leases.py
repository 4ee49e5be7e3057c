"""Single flight across hosts: leases on a real redis-server, each host a FleetStore here."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fleet_local import NS, LocalMemory

from cubejit import config
from cubejit.environment.fleet import Claim, FleetStore, Shared
from cubejit.environment.storage import InsertOutcome


@pytest.fixture
def host(redis_url: str, tmp_path: Path):
    """Makes hosts: each its own local memory and its own connection (its own lease token)."""
    made: list[Shared] = []

    def make(lease: float = 10.0, compile_timeout: float = 300.0) -> FleetStore:
        settings = config.Settings(
            cache_dir=tmp_path,
            store=redis_url,
            signing_key="secret",
            compile_timeout=compile_timeout,
        )
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


def test_a_lease_is_renewed_while_its_holder_compiles(host, redis_server):
    a, b = host(lease=0.3), host(lease=0.3)
    assert a.claim(b"k") is None
    threading.Event().wait(1.0)
    assert redis_server.client().pttl(a.fleet.leases.lease_key(NS, b"k")) > 0
    assert b.fleet.leases.acquire(NS, b"k", b._entry(b"k"))[0] is Claim.HELD
    a.abandon(b"k")
    assert b.fleet.leases.acquire(NS, b"k", b._entry(b"k"))[0] is Claim.TAKEN


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


def _stated(client, seconds: float) -> str:
    """A lease value of another host whose stated expiry is ``seconds`` from the server's now."""
    now_s, now_us = client.time()
    return f"another-host:1:abc|{now_s * 1000 + now_us // 1000 + int(seconds * 1000)}"


@pytest.mark.parametrize(
    "plant",
    [
        pytest.param(lambda client, name: client.set(name, "a host without a TTL"), id="no TTL"),
        pytest.param(
            lambda client, name: client.set(name, _stated(client, -5), px=60_000),
            id="past its stated expiry",
        ),
    ],
)
def test_a_lease_without_a_ttl_or_past_its_stated_expiry_is_taken_at_once(
    host, redis_server, plant
):
    b = host(lease=1.0, compile_timeout=1.0)
    plant(redis_server.client(), b.fleet.leases.lease_key(NS, b"k"))
    with ThreadPoolExecutor(1) as pool:
        claiming = pool.submit(b.claim, b"k")
        assert claiming.result(timeout=1.5) is None
    assert b.fleet.leases.holds_any()
    value = redis_server.client().get(b.fleet.leases.lease_key(NS, b"k"))
    assert value.decode().startswith(b.fleet.leases.token + "|")


def _commands_of_others(redis_server, during) -> list[str]:
    """The commands that clients other than scripts sent while ``during()`` ran, by MONITOR."""
    end = f"end-of-monitor-{time.monotonic_ns()}"
    seen: list[str] = []
    client = redis_server.client()
    with client.monitor() as monitor:
        started = threading.Event()

        def listen() -> None:
            started.set()
            for command in monitor.listen():
                if end in command["command"]:
                    return
                if command.get("client_type") != "lua":
                    seen.append(command["command"])

        listener = threading.Thread(target=listen)
        listener.start()
        started.wait()
        during()
        redis_server.client().echo(end)
        listener.join(10)
    return seen


def test_a_waiting_host_backs_off_to_a_few_commands_a_second(host, redis_server):
    b = host(lease=0.1, compile_timeout=2.0)
    client = redis_server.client()
    name = b.fleet.leases.lease_key(NS, b"k")
    client.set(name, _stated(client, 60), px=300)
    stop = threading.Event()

    def hold() -> None:
        while not stop.wait(0.05):
            client.pexpire(name, 300)

    holder = threading.Thread(target=hold)
    holder.start()
    waited: list[float] = []

    def wait() -> None:
        started = time.monotonic()
        assert b.claim(b"k") is None
        waited.append(time.monotonic() - started)

    try:
        seen = _commands_of_others(redis_server, wait)
    finally:
        stop.set()
        holder.join()
    mine = [c for c in seen if not c.startswith(("PEXPIRE", "HELLO"))]
    assert waited and waited[0] >= 2.0
    assert len(mine) <= 4 * waited[0] + 6, "\n".join(c[:60] for c in mine)


def test_a_host_waits_on_a_lease_no_longer_than_the_lease_and_the_compile_timeout(host):
    a = host(lease=1.0, compile_timeout=60.0)
    b = host(lease=0.2, compile_timeout=2.0)
    assert a.claim(b"k") is None
    started = time.monotonic()
    assert b.claim(b"k") is None
    waited = time.monotonic() - started
    a.abandon(b"k")
    assert 2.2 <= waited < 3.8
