"""Many processes on one environment: nothing lost, nothing stored twice, nothing locked."""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path

from store_helpers import run, spawn

NS = "cpu/0.1.0/fp"

RACE = """
import json, os, sys
from cubejit.environment import Store
store = Store("cpu/0.1.0/fp")
store.storage()
print("ready", flush=True)
sys.stdin.readline()
outcomes = {}
for i in range(20):
    key = b"kernel-%d" % i
    outcomes[key.decode()] = store.insert(key, b"artifact %d from %d" % (i, os.getpid())).value
print(json.dumps({"pid": os.getpid(), "outcomes": outcomes}), flush=True)
"""


def test_eight_processes_store_each_of_twenty_keys_exactly_once(root: Path) -> None:
    processes = [spawn(RACE, root, stdin=-1) for _ in range(8)]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    results = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert "locked" not in err and "WARNING" not in err, err
        results.append(json.loads(out))
    with sqlite3.connect(root / "test.db") as db:
        stored = dict(db.execute("SELECT key, value FROM entries WHERE namespace = ?", (NS,)))
    assert len(stored) == 20
    for i in range(20):
        key = f"kernel-{i}"
        winners = [r["pid"] for r in results if r["outcomes"][key] == "stored"]
        assert len(winners) == 1, (key, [r["outcomes"][key] for r in results])
        assert {r["outcomes"][key] for r in results} <= {"stored", "refused"}
        assert stored[key.encode()] == f"artifact {i} from {winners[0]}".encode()


WRITER = """
import os
from cubejit.compile.id import ArtifactId, KernelId
from cubejit.environment import ArtifactStore
store = ArtifactStore("cpu", "fp")
i = 0
while True:
    kernel = ArtifactId(KernelId("k%d" % i), None)
    payload = bytes([i % 251]) * 40_000
    assert store.store(kernel, payload, {"i": i}, "source %d" % i)
    print(i, flush=True)
    i += 1
"""

CHECK = """
from cubejit.compile.id import ArtifactId, KernelId
from cubejit.environment import ArtifactStore
store = ArtifactStore("cpu", "fp")
count = {count}
for i in range(count):
    served = store.stored(ArtifactId(KernelId("k%d" % i), None))
    assert served == (bytes([i % 251]) * 40_000, {{"i": i}}), i
    assert store.stored_for_source("source %d" % i) is not None, i
print("served", count)
"""


def test_a_process_killed_while_writing_loses_nothing_it_committed(root: Path) -> None:
    writer = spawn(WRITER, root)
    assert writer.stdout is not None
    committed = -1
    for line in writer.stdout:
        committed = int(line)
        if committed >= 40:
            break
    writer.send_signal(signal.SIGKILL)
    writer.communicate(timeout=60)
    assert writer.returncode == -signal.SIGKILL
    out = run(CHECK.format(count=committed + 1), root)
    assert out.strip() == f"served {committed + 1}"


SIDE = """
from cubejit.environment import Store, active
store = Store("cpu/0.1.0/fp")
for i in range(10):
    assert store.insert(b"k%d" % i, ("%s %d" % (active(), i)).encode()).value == "stored"
print(sorted({v.decode().split()[0] for _, v in store.scan()}))
"""


def test_two_environments_side_by_side_never_see_each_other(root: Path) -> None:
    left, right = spawn(SIDE, root, env="left"), spawn(SIDE, root, env="right")
    for process, name in ((left, "left"), (right, "right")):
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert out.strip() == repr([name])
