"""A fleet of hosts (processes, each with its own local environment) sharing one real Redis,
compiling real kernels through the CPU backend. Each host is ``fleet_host.py``."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cubejit.environment.signing import Signer
from cubejit.environment.storage_redis import Record
from cubejit.environment.value import decode

HOST = Path(__file__).with_name("fleet_host.py")
SECRET = "the fleet's secret"


class Host:
    """One host process; ``ready`` and ``go`` start its batch, ``report`` waits for its end."""

    def __init__(self, folder: Path, url: str, first: int, count: int, *options: str) -> None:
        env = dict(
            os.environ,
            CUBEJIT_CACHE_DIR=str(folder),
            CUBEJIT_STORE=url,
            CUBEJIT_SIGNING_KEY=SECRET,
            CUBEJIT_COMPILE_PARALLELISM="2",
        )
        self.process = subprocess.Popen(
            [sys.executable, str(HOST), str(first), str(count), *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.line("ready")

    def line(self, expected: str | None = None, seconds: float = 120) -> str:
        """Reads the host's output up to the line ``expected`` (any line when None; others are
        kept for the message); a host that ends, or says nothing of the kind in ``seconds``,
        fails the test at once rather than leaving it waiting on a process that may not end."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + seconds
        seen: list[str] = []
        while True:
            left = deadline - time.monotonic()
            ready = left > 0 and select.select([self.process.stdout], [], [], left)[0]
            text = self.process.stdout.readline().strip() if ready else ""
            if text and (expected is None or text == expected):
                return text
            if not text:
                self.process.kill()
                rest, errors = self.process.communicate()
                pytest.fail(f"host said {seen!r}, then {rest!r}, not {expected!r}:\n{errors}")
            seen.append(text)

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def report(self) -> dict:
        output, errors = self.process.communicate(timeout=240)
        assert self.process.returncode == 0, errors
        return json.loads(output.splitlines()[-1])


def hosts(tmp_path: Path, url: str, count: int, first: int, kernels: int) -> list[Host]:
    made = [Host(tmp_path / f"host{i}", url, first, kernels) for i in range(count)]
    for host in made:
        host.go()
    return made


def test_four_hosts_compile_each_kernel_once_and_a_fifth_starts_warm(tmp_path, redis_url):
    reports = [h.report() for h in hosts(tmp_path, redis_url, 4, first=0, kernels=20)]
    batches = [r["batches"][0] for r in reports]
    assert all(b["right"] for b in batches)
    assert sum(b["compiler_runs"] for b in batches) == 20
    compiled = [id for b in batches for id in b["compiled"]]
    assert len(compiled) == len(set(compiled)) == 20

    fifth = hosts(tmp_path / "fifth", redis_url, 1, first=0, kernels=20)[0].report()
    assert fifth["batches"][0]["right"]
    assert fifth["batches"][0]["compiler_runs"] == 0


def test_redis_lost_mid_batch_costs_one_warning_and_is_written_again_once_back(tmp_path, own_redis):
    pid = own_redis.process.pid
    host = Host(tmp_path, own_redis.url, 1000, 10, "--kill-after", "4", str(pid), "--second-batch")
    host.go()
    assert json.loads(host.line()) == {"first_batch_done": True}
    own_redis.start()
    host.go()
    report = host.report()
    first, second = report["batches"]
    assert first["right"] and first["compiler_runs"] == 10
    assert second["right"] and second["compiler_runs"] == 10
    assert len([w for w in report["warnings"] if "unavailable" in w]) == 1
    assert len(own_redis.client().keys("cubejit:e:*")) == 2 * 10 + 1, "and the batch's library"


def test_a_lease_holder_killed_is_taken_over_once_its_lease_expires(tmp_path, redis_url):
    url = f"{redis_url}?lease=1.5"
    holder = Host(tmp_path / "a", url, 2000, 6, "--hang-in-compile")
    holder.go()
    holder.line("compiling")
    holder.process.send_signal(signal.SIGKILL)
    holder.process.communicate()
    taker = hosts(tmp_path / "b", url, 1, first=2000, kernels=6)[0].report()["batches"][0]
    assert taker["right"]
    assert taker["compiler_runs"] == 6


def spoil(client, kernels: int) -> None:
    """Spoils the records and source entries of ``kernels`` kernels on the server (not the
    library they share): one kernel's values tampered with, one's signed with another key,
    one's unsigned."""
    by_kernel: dict[str, list[bytes]] = {}
    names = sorted(client.keys("cubejit:e:*"))
    for name in names:
        header = decode(Record.parse(client.get(name)).body).header
        if "artifact" in header:
            namespace = name.decode()[len("cubejit:e:") :].rsplit(":", 1)[0]
            source_key = f"source:{header['source_sha256']}".encode()
            source = f"cubejit:e:{namespace}:{source_key.hex()}".encode()
            by_kernel[header["artifact"]] = [name, source]
    ways = ["tampered", "another key", "unsigned"]
    for way, names in zip(ways, list(by_kernel.values())[:kernels], strict=True):
        for name in names:
            record = Record.parse(client.get(name))
            namespace, key = name.decode()[len("cubejit:e:") :].rsplit(":", 1)
            if way == "tampered":
                body = record.body[:-40] + bytes([record.body[-40] ^ 1]) + record.body[-39:]
                spoiled = Record(record.bundle, False, record.signature, body)
            elif way == "another key":
                signature = Signer("another key").sign(namespace, bytes.fromhex(key), record.body)
                spoiled = Record(record.bundle, False, signature, record.body)
            else:
                spoiled = Record(record.bundle, False, b"", record.body)
            client.set(name, spoiled.encode())


def test_entries_tampered_signed_with_another_key_or_unsigned_are_refused_and_recompiled(
    tmp_path, redis_url, redis_server
):
    writer = hosts(tmp_path / "a", redis_url, 1, first=3000, kernels=6)[0].report()
    assert writer["batches"][0]["compiler_runs"] == 6
    spoil(redis_server.client(), 3)
    reader = hosts(tmp_path / "b", redis_url, 1, first=3000, kernels=6)[0].report()
    assert reader["batches"][0]["right"]
    assert reader["batches"][0]["compiler_runs"] == 3
    refusals = [w for w in reader["warnings"] if "signature" in w]
    assert len(refusals) == 6
