"""Kernels that processes of the store's tests warm, launch and check against numpy.

One kernel, ``shift``, made distinct by its comptime ``seed`` (each seed is its own C text), so
that many kernels cost little to compile. :func:`warm` is what a child process runs: it prints
one JSON line saying what it compiled and what the batches did.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections import Counter
from contextlib import closing
from pathlib import Path

import numpy as np

import cubejit as cj
from cubejit.backends.cpu import compiler_runs
from cubejit.backends.cpu.launcher import MAX_ALIGN
from cubejit.compile import ArtifactId, recent_records

N = 777
CUBE = 64


@cj.kernel
def shift(x: cj.Array[cj.f32], out: cj.Array[cj.f32], seed: cj.Comptime[int]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * cj.f32(seed) + 0.5


def artifact(seed: int) -> ArtifactId[int]:
    """The artifact id of ``shift`` with ``seed`` for a client's own (64-byte aligned) buffers."""
    return ArtifactId(shift.specialize(CUBE, seed=seed).id(), MAX_ALIGN)


def cpu_entries(database: Path) -> dict[bytes, bytes]:
    """Every entry of the CPU's namespaces in the environment file ``database``, by key."""
    with closing(sqlite3.connect(database)) as db:
        query = "SELECT key, value FROM entries WHERE namespace LIKE 'cpu/%'"
        return {bytes(k): bytes(v) for k, v in db.execute(query)}


def launch_and_check(client: object, seed: int, rng: np.random.Generator) -> None:
    """Launches ``shift`` with ``seed`` on random data; AssertionError unless numpy agrees."""
    x = rng.random(N, dtype=np.float32)
    out = client.empty(N, cj.f32)  # type: ignore[attr-defined]
    shift.launch(client, cj.cdiv(N, CUBE), CUBE, client.to_device(x), out, seed=seed)  # type: ignore[attr-defined]
    expected = x * np.float32(seed) + np.float32(0.5)
    np.testing.assert_allclose(client.read(out), expected, rtol=1e-6)  # type: ignore[attr-defined]


def warm(seeds: list[int], wait_for_go: bool = False) -> None:
    """Queues ``shift`` for every seed, compiles them as one batch, launches each once and
    prints ``{"pid", "compiler_runs", "outcomes", "failed", "keys"}`` as one JSON line, where
    ``keys`` are the store keys of the kernels' artifacts under this process's build id. With
    ``wait_for_go``, prints ``ready`` first and waits for a line on stdin, so that many
    processes start their batch together."""
    client = cj.client("cpu")
    if wait_for_go:
        print("ready", flush=True)
        sys.stdin.readline()
    for seed in seeds:
        shift.prepare(client, CUBE, seed=seed)
    client.compile_queued()
    rng = np.random.default_rng(os.getpid())
    for seed in seeds:
        launch_and_check(client, seed, rng)
    records = recent_records()
    outcomes = Counter(r.outcome for batch in records for r in batch.kernels)
    report = {
        "pid": os.getpid(),
        "compiler_runs": compiler_runs.count,
        "outcomes": dict(outcomes),
        "failed": sum(batch.failed for batch in records),
        "keys": sorted(client.target.artifacts.key(artifact(seed)).decode() for seed in seeds),
    }
    print(json.dumps(report), flush=True)
