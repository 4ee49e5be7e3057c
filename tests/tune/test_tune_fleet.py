"""Tuning on a fleet: hosts (processes, each with its own local environment) sharing one real
redis-server, tuning real CPU kernels."""

from __future__ import annotations

import pytest
from tune_hosts import SECRET, Host, run_hosts
from tune_kernels import plus_one_tuner

import cubejit as cj
from cubejit.environment.signing import Signer
from cubejit.environment.storage_redis import Record, RedisStorage
from cubejit.tune import Decision, Outcome
from cubejit.tune.decision import CandidateTimes
from cubejit.tune.store import Decisions, decision_key, device_fingerprint

SIZES = [60, 200, 500, 1000]
KEYS = [64, 256, 512, 1024]


def test_four_hosts_tune_each_key_exactly_once_and_agree_on_every_winner(tmp_path, redis_url):
    reports = run_hosts(tmp_path, 4, SIZES, redis_url)
    assert all(r["right"] for r in reports)
    tuned = sorted(key for r in reports for key in r["tuned"])
    assert tuned == KEYS
    winners = [r["winners"] for r in reports]
    assert all(w == winners[0] for w in winners)
    assert not [w for r in reports for w in r["warnings"]]


def test_a_host_that_dies_mid_tune_loses_the_lease_and_another_takes_over(tmp_path, redis_url):
    url = f"{redis_url}?lease=1"
    dying = Host(tmp_path / "dying", [1000], url, "--die-while-tuning")
    dying.go()
    dying.line("tuning")
    dying.process.wait()
    assert dying.process.returncode == 3
    (taker,) = run_hosts(tmp_path / "taker", 1, [1000], url)
    assert taker["right"]
    assert taker["tuned"] == [1024]
    assert taker["timed_runs"] > 0


def forged(way: str, namespace: str, key: bytes) -> bytes:
    """A decision naming ``slow`` the winner, as a Redis record spoiled in ``way``."""
    tuner = plus_one_tuner()
    decision = Decision(
        tuner=tuner.name,
        key=[1024],
        checksum=tuner.checksum(),
        winner="slow",
        candidates=tuple(
            CandidateTimes(c.name, Outcome.WON if c.name == "slow" else Outcome.TIMED, (1,), {})
            for c in tuner.candidates
        ),
        session={"host": "forger", "pid": 0},
    )
    value = decision.encode()
    if way == "unsigned":
        return Record(False, False, b"", value).encode()
    if way == "another key":
        return Record(
            False, False, Signer("another key").sign(namespace, key, value), value
        ).encode()
    signature = Signer(SECRET).sign(namespace, key, value)
    tampered = value[:-40] + bytes([value[-40] ^ 1]) + value[-39:]
    return Record(False, False, signature, tampered).encode()


@pytest.mark.parametrize("way", ["unsigned", "another key", "tampered"])
def test_a_tampered_or_unsigned_decision_is_refused_on_a_host_with_the_key(
    tmp_path, redis_url, redis_server, way
):
    tuner = plus_one_tuner()
    namespace = Decisions(device_fingerprint(cj.client("cpu"))).namespace
    key = decision_key(tuner.name, tuner.checksum(), (1024,))
    storage = RedisStorage(redis_url, 2.0)
    redis_server.client().set(storage.entry_key(namespace, key), forged(way, namespace, key))
    storage.close()

    (host,) = run_hosts(tmp_path, 1, [1000], redis_url)
    assert host["right"]
    assert host["tuned"] == [1024]
    assert host["timed_runs"] > 0
    assert [w for w in host["warnings"] if "signature" in w]
