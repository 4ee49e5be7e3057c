"""Every error a Redis server answers with is the shared store being unavailable: one WARNING
for the outage, misses and failed writes meanwhile, no lease left held, the renewer stopped."""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from fleet_local import LocalMemory

from cubejit import config
from cubejit.environment.fleet import FleetStore, Shared
from cubejit.environment.redis_link import Offline, RedisLink
from cubejit.environment.storage import InsertOutcome


@dataclass
class Fault:
    """How to make a healthy server refuse cubejit, and how to heal it."""

    inject: Callable[[redis.Redis, Path], None]
    heal: Callable[[redis.Redis], None] | None
    """``None``: the fault cannot be healed, and the host meets it from its start."""
    database: int = 0


def _out_of_memory(admin: redis.Redis, folder: Path) -> None:
    admin.config_set("maxmemory-policy", "noeviction")
    admin.config_set("maxmemory", 1)


def _read_only(admin: redis.Redis, folder: Path) -> None:
    admin.replicaof("127.0.0.1", 1)


def _failed_save(admin: redis.Redis, folder: Path) -> None:
    admin.config_set("save", "3600 1")
    shutil.rmtree(folder)
    admin.bgsave()
    deadline = time.monotonic() + 10
    while admin.info("persistence")["rdb_last_bgsave_status"] != "err":
        assert time.monotonic() < deadline, "the background save did not fail"
        threading.Event().wait(0.05)


def _no_permission(admin: redis.Redis, folder: Path) -> None:
    admin.acl_setuser("default", enabled=True, nopass=True, commands=["-@all", "+@read"])


def _too_many_clients(admin: redis.Redis, folder: Path) -> None:
    admin.config_set("maxclients", 1)
    admin.client_kill_filter(_type="normal", skipme=True)


def _admin(own_redis) -> redis.Redis:
    """A client that keeps every right whatever the fault does to the default user."""
    own_redis.client().acl_setuser(
        "admin", enabled=True, passwords=["+admin"], keys=["*"], channels=["*"], commands=["+@all"]
    )
    return redis.Redis(host="127.0.0.1", port=own_redis.port, username="admin", password="admin")


def _all_permissions(admin: redis.Redis) -> None:
    admin.acl_setuser(
        "default", enabled=True, nopass=True, commands=["+@all"], keys=["*"], channels=["*"]
    )


def _nothing(admin: redis.Redis, folder: Path) -> None:
    pass


FAULTS = {
    "OOM under noeviction": Fault(_out_of_memory, lambda admin: admin.config_set("maxmemory", 0)),
    "READONLY replica": Fault(_read_only, lambda admin: admin.replicaof("NO", "ONE")),
    "MISCONF after a failed save": Fault(_failed_save, lambda admin: admin.config_set("save", "")),
    "NOPERM": Fault(_no_permission, _all_permissions),
    "-ERR max clients": Fault(_too_many_clients, lambda admin: admin.config_set("maxclients", 100)),
    "a bad database index": Fault(_nothing, None, database=99),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_any_error_of_the_server_is_one_outage_with_every_lease_let_go(
    own_redis, tmp_path: Path, fault: str, caplog: pytest.LogCaptureFixture
):
    case = FAULTS[fault]
    admin = _admin(own_redis)
    settings = config.Settings(cache_dir=tmp_path, signing_key="secret", compile_timeout=5.0)
    url = own_redis.url.replace("/0", f"/{case.database}")
    shared = Shared(f"{url}?lease=0.3", settings)
    shared.storage.link.retry_every = 0.0
    host = FleetStore(LocalMemory(), shared)  # type: ignore[arg-type]
    try:
        if case.heal is not None:
            assert host.claim(b"held") is None
            assert host.fleet.leases.holds_any() and host.fleet.leases.renewing()
        with caplog.at_level(logging.INFO, "cubejit.environment"):
            case.inject(admin, own_redis.folder)
            keys = [b"held", *(bytes([k]) for k in range(5))]
            for key in keys:
                assert host.get(key) is None
                assert host.claim(key) is None
                assert host.insert(key, b"artifact " + key) is InsertOutcome.STORED
                host.abandon(key)
            assert not host.fleet.leases.holds_any()
            deadline = time.monotonic() + 5
            while host.fleet.leases.renewing():
                assert time.monotonic() < deadline, "the lease renewer did not stop"
                threading.Event().wait(0.05)
            warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
            assert len(warnings) == 1, [r.getMessage() for r in warnings]
            assert "unavailable" in warnings[0].getMessage()
            if case.heal is None:
                return
            case.heal(admin)
            assert host.insert(b"after", b"healed") is InsertOutcome.STORED
        assert "available again" in caplog.text
        assert admin.exists(shared.storage.entry_key(host.namespace, b"after"))
    finally:
        shared.storage.close()


def test_an_outage_one_thread_meets_leaves_another_threads_operation_to_finish(redis_url):
    link = RedisLink(redis_url, timeout=5.0, retry_every=0.0)
    waiting = threading.Event()
    outcome: list[object] = []

    def blocked(client: redis.Redis) -> object:
        waiting.set()
        return client.blpop(["cubejit:nothing"], timeout=1)

    def wait() -> None:
        try:
            outcome.append(link.run(blocked, waiting=1.0))
        except Exception as e:
            outcome.append(e)

    other = threading.Thread(target=wait)
    other.start()
    assert waiting.wait(5)
    _until_a_client_blocks_in("blpop", redis.Redis.from_url(redis_url))
    with pytest.raises(Offline):
        link.run(lambda client: client.execute_command("NO-SUCH-COMMAND"))
    other.join(10)
    link.close()
    assert outcome == [None], "the blocked read ran to its end, untouched by the outage"


def _until_a_client_blocks_in(command: str, admin: redis.Redis) -> None:
    """Returns once the server lists a connection running ``command`` (a read under way)."""
    deadline = time.monotonic() + 5
    while not any(c.get("cmd") == command for c in admin.client_list()):
        assert time.monotonic() < deadline, f"no connection came to run {command}"
    admin.close()
