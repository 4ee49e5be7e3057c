"""The Redis storage keeps the rules of every storage, on a real redis-server."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time

import pytest

from cubejit.environment import signing, storage_redis
from cubejit.environment.signing import Signer
from cubejit.environment.storage import BUNDLE, LOCAL, InsertOutcome, NamespaceSummary
from cubejit.environment.storage_redis import RedisStorage

NS = "cpu/0.1.0/x86_64-test"


@pytest.fixture
def storage(redis_url: str) -> RedisStorage:
    return RedisStorage(redis_url, timeout=2.0, signer=Signer("fleet secret"))


def test_the_first_writer_wins_and_the_same_value_is_already_present(storage: RedisStorage):
    assert storage.insert(NS, b"k", b"first") is InsertOutcome.STORED
    assert storage.insert(NS, b"k", b"second") is InsertOutcome.REFUSED
    assert storage.insert(NS, b"k", b"first") is InsertOutcome.ALREADY_PRESENT
    assert storage.get(NS, b"k") == b"first"
    assert storage.get(NS, b"other") is None
    assert storage.get("gpu/0.1.0/sm_90", b"k") is None


def test_a_local_value_replaces_a_bundle_one_never_the_reverse(storage: RedisStorage):
    assert storage.insert(NS, b"a", b"from a bundle", BUNDLE) is InsertOutcome.STORED
    assert storage.insert(NS, b"a", b"compiled here", LOCAL) is InsertOutcome.STORED
    assert storage.insert(NS, b"a", b"another bundle", BUNDLE) is InsertOutcome.REFUSED
    assert storage.insert(NS, b"a", b"compiled again", LOCAL) is InsertOutcome.REFUSED
    assert storage.get(NS, b"a") == b"compiled here"


def test_values_over_a_chunk_round_trip_and_a_missing_chunk_is_a_miss(
    storage: RedisStorage, redis_server, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(storage_redis, "CHUNK_BYTES", 1000)
    value = os.urandom(3500)
    assert storage.insert(NS, b"big", value) is InsertOutcome.STORED
    assert storage.insert(NS, b"big", value) is InsertOutcome.ALREADY_PRESENT
    assert storage.insert(NS, b"big", os.urandom(3500)) is InsertOutcome.REFUSED
    assert storage.get(NS, b"big") == value
    chunks = redis_server.client().keys("cubejit:c:*")
    assert len(chunks) == 4
    redis_server.client().delete(chunks[0])
    assert storage.get(NS, b"big") is None


def test_a_value_over_the_limit_is_refused_with_a_log_line_never_truncated(
    storage: RedisStorage, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    monkeypatch.setattr(storage_redis, "MAX_VALUE_BYTES", 100)
    with caplog.at_level(logging.WARNING, "cubejit.environment"):
        assert storage.insert(NS, b"huge", b"x" * 101) is InsertOutcome.FAILED
    assert "101 bytes, over the 100" in caplog.text
    assert storage.get(NS, b"huge") is None


def test_scan_summaries_and_purge_see_one_namespace(storage: RedisStorage):
    storage.insert(NS, b"b", b"2")
    storage.insert(NS, b"a", b"1")
    storage.insert("other/ns:with:colons", b"c", b"3")
    assert list(storage.scan(NS)) == [(b"a", b"1"), (b"b", b"2")]
    summaries = storage.summaries()
    assert [s.namespace for s in summaries] == [NS, "other/ns:with:colons"]
    assert summaries[1] == NamespaceSummary("other/ns:with:colons", 1, summaries[1].bytes)
    storage.purge(NS)
    assert list(storage.scan(NS)) == []
    assert storage.get("other/ns:with:colons", b"c") == b"3"


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda value: value[:-1] + bytes([value[-1] ^ 1]), id="tampered value"),
        pytest.param(None, id="other key"),
        pytest.param(None, id="unsigned"),
    ],
)
def test_an_entry_that_fails_its_signature_is_refused_logged_and_deleted(
    redis_url: str, redis_server, spoil, request, caplog: pytest.LogCaptureFixture
):
    case = request.node.callspec.id
    checker = RedisStorage(redis_url, 2.0, Signer("fleet secret"))
    writer_key = {"other key": Signer("another secret"), "unsigned": None}.get(
        case, Signer("fleet secret")
    )
    RedisStorage(redis_url, 2.0, writer_key).insert(NS, b"k", b"native code")
    if spoil is not None:
        client = redis_server.client()
        name = checker.entry_key(NS, b"k")
        client.set(name, spoil(client.get(name)))
    with caplog.at_level(logging.WARNING, "cubejit.environment"):
        assert checker.get(NS, b"k") is None
    assert "signature" in caplog.text and "refused" in caplog.text
    assert checker.insert(NS, b"k", b"native code") is InsertOutcome.STORED
    assert checker.get(NS, b"k") == b"native code"


def test_without_a_key_entries_go_unsigned_with_one_warning(
    redis_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    monkeypatch.setattr(signing, "_warned_unsigned", False)
    storage = RedisStorage(redis_url, 2.0, signer=None)
    with caplog.at_level(logging.WARNING, "cubejit.environment"):
        storage.insert(NS, b"a", b"1")
        storage.insert(NS, b"b", b"2")
    warnings = [r for r in caplog.records if "unsigned" in r.getMessage()]
    assert len(warnings) == 1
    assert "lets any writer run code on every reader" in warnings[0].getMessage()
    assert storage.get(NS, b"a") == b"1"


def test_an_unreachable_server_is_a_miss_and_a_failed_write_with_one_warning(
    caplog: pytest.LogCaptureFixture,
):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    storage = RedisStorage(f"redis://127.0.0.1:{port}/0", timeout=2.0)
    with caplog.at_level(logging.WARNING, "cubejit.environment"):
        assert storage.get(NS, b"k") is None
        assert storage.insert(NS, b"k", b"v") is InsertOutcome.FAILED
        assert storage.get(NS, b"k") is None
    assert sum("unavailable" in r.getMessage() for r in caplog.records) == 1


def test_a_server_that_never_answers_costs_one_timeout_then_nothing():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"
        storage = RedisStorage(url, timeout=0.3)
        started = time.monotonic()
        assert storage.get(NS, b"k") is None
        first = time.monotonic() - started
        assert storage.insert(NS, b"k", b"v") is InsertOutcome.FAILED
        assert storage.get(NS, b"k") is None
        total = time.monotonic() - started
    assert 0.3 <= first < 1.0
    assert total - first < 0.1


def test_a_restarted_server_is_used_again_after_the_retry_interval(
    own_redis, caplog: pytest.LogCaptureFixture
):
    storage = RedisStorage(own_redis.url, timeout=2.0)
    storage.link.retry_every = 0.0
    assert storage.insert(NS, b"a", b"1") is InsertOutcome.STORED
    own_redis.kill()
    with caplog.at_level(logging.INFO, "cubejit.environment"):
        assert storage.insert(NS, b"b", b"2") is InsertOutcome.FAILED
        own_redis.start()
        assert storage.insert(NS, b"c", b"3") is InsertOutcome.STORED
    assert storage.get(NS, b"c") == b"3"
    assert "available again" in caplog.text


def test_a_server_that_drips_its_answer_cannot_stretch_an_operation_past_the_timeout():
    stop = threading.Event()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)

        def drip() -> None:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                with conn:
                    conn.recv(65536)
                    conn.sendall(b"$1000000\r\n")
                    for _ in range(50):
                        if stop.wait(0.1):
                            break
                        try:
                            conn.sendall(b"x")
                        except OSError:
                            break

        server = threading.Thread(target=drip, daemon=True)
        server.start()
        url = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
        storage = RedisStorage(url, timeout=0.5)
        started = time.monotonic()
        try:
            assert storage.get(NS, b"k") is None
            took = time.monotonic() - started
        finally:
            stop.set()
            storage.close()
    assert took < 1.5
