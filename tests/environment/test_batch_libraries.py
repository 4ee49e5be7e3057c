"""The kernels a batch compiles share one library: linked once, stored once, opened once.

Real kernels on the CPU backend, a real C compiler and SQLite file; compiles and links counted
by :data:`~cubejit.backends.cpu.compiler_runs` and :data:`~cubejit.backends.cpu.link_runs`,
libraries opened counted around the target's one ``dlopen``.
"""

from __future__ import annotations

import logging
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from store_kernels import CUBE, cpu_entries, launch_and_check, shift

from cubejit import environment
from cubejit.backends.cpu import CpuClient, CpuTarget, compiler_runs, link_runs
from cubejit.backends.cpu import target as cpu_target
from cubejit.environment import build
from cubejit.environment.artifacts import ID_PREFIX, PACK_PREFIX, SOURCE_KEY, SOURCE_PREFIX
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.environment.value import decode

KERNELS = 5
SEEDS = range(1, KERNELS + 1)
"""``shift`` with each seed is a C text of its own."""


def launch_all(seeds: range = SEEDS) -> None:
    """Prepares ``shift`` with ``seeds`` on a new client (a new process's target, the store's
    environment read afresh) as one batch and checks each kernel's result."""
    ENVIRONMENTS.reset()
    client = CpuClient(target=CpuTarget())
    for seed in seeds:
        shift.prepare(client, CUBE, seed=seed)
    client.compile_queued()
    rng = np.random.default_rng(3)
    for seed in seeds:
        launch_and_check(client, seed, rng)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every library the CPU target opens."""
    sizes: list[int] = []
    real = cpu_target._open_library

    def counting(folder: str, library: bytes):  # type: ignore[no-untyped-def]
        sizes.append(len(library))
        return real(folder, library)

    monkeypatch.setattr(cpu_target, "_open_library", counting)
    return sizes


def test_a_batch_of_distinct_kernels_is_linked_once_and_its_library_stored_once(
    root: Path, opened: list[int]
) -> None:
    compiles, links = compiler_runs.count, link_runs.count
    launch_all()
    assert compiler_runs.count - compiles == KERNELS and link_runs.count - links == 1
    assert len(opened) == 1, "the batch's kernels load from the one library"
    stored = cpu_entries(environment.path())
    [(pack_key, pack)] = [(k, v) for k, v in stored.items() if k.startswith(PACK_PREFIX)]
    library = decode(pack).payload
    assert library.startswith(b"\x7fELF") and len(pack) < len(library), "kept compressed"
    records = [v for k, v in stored.items() if k.startswith((ID_PREFIX, SOURCE_PREFIX))]
    assert len(records) == 2 * KERNELS and len(stored) == 2 * KERNELS + 1
    for value in records:
        decoded = decode(value)
        assert decoded.payload == b"" and decoded.header[SOURCE_KEY] == pack_key.decode()
        assert decoded.header["metadata"]["pack"] == pack_key.decode()[len("packed:") :]
    entries = {decode(v).header["metadata"]["entry"] for v in records}
    assert len(entries) == KERNELS, "each kernel has an entry of its own in the library"


def test_a_fresh_process_loads_every_kernel_of_the_batch_opening_one_library(
    root: Path, opened: list[int], outcomes: list[str]
) -> None:
    launch_all()
    compiles, links, before = compiler_runs.count, link_runs.count, len(opened)
    launch_all()
    assert (compiler_runs.count, link_runs.count) == (compiles, links)
    assert outcomes[-KERNELS:] == ["loaded"] * KERNELS
    assert len(opened) - before == 1


def test_after_an_upgrade_the_kernels_are_rekeyed_from_the_library_their_texts_name(
    root: Path, opened: list[int], outcomes: list[str]
) -> None:
    launch_all()
    build.override_build_id("an upgrade")
    try:
        compiles, before = compiler_runs.count, len(opened)
        launch_all()
        assert compiler_runs.count == compiles
        assert outcomes[-KERNELS:] == ["rekeyed"] * KERNELS
        assert len(opened) - before == 1
    finally:
        build.override_build_id(None)


def test_a_pruned_library_drops_the_records_naming_it_and_its_kernels_compile_once_more(
    root: Path, outcomes: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    launch_all()
    with closing(sqlite3.connect(environment.path())) as db, db:
        db.execute("DELETE FROM entries WHERE key >= ? AND key < ?", (PACK_PREFIX, b"packee"))
    caplog.set_level(logging.WARNING)
    compiles = compiler_runs.count
    launch_all()
    assert compiler_runs.count - compiles == KERNELS
    assert outcomes[-KERNELS:] == ["compiled"] * KERNELS
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    compiles = compiler_runs.count
    launch_all()
    assert compiler_runs.count == compiles
    assert outcomes[-KERNELS:] == ["loaded"] * KERNELS


def test_a_kernel_compiled_alone_keeps_a_library_of_its_own(
    root: Path, outcomes: list[str]
) -> None:
    links = link_runs.count
    launch_all(range(1, 2))
    launch_all(range(1, 3))
    assert link_runs.count == links, "one kernel to compile in each batch: nothing to link"
    stored = cpu_entries(environment.path())
    assert not [k for k in stored if k.startswith(PACK_PREFIX)]
    assert outcomes == ["compiled", "loaded", "compiled"]
