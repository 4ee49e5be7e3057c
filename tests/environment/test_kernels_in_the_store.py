"""Real kernels in the compilation store, across real processes: warmed by many at once, loaded
by the next, re-keyed after an upgrade, recompiled when damaged, dropped on a switch.

Child processes run :func:`store_kernels.warm`, which checks every result against numpy and
prints what the C compiler did; compiles are counted, never guessed from time.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from store_kernels import artifact, launch_and_check

from cubejit import environment
from cubejit.backends.cpu import CpuClient, CpuTarget, compiler_runs
from cubejit.compile import ArtifactId, BatchRecord, add_record_sink, remove_record_sink
from cubejit.environment.artifacts import ID_PREFIX, PACK_PREFIX, SOURCE_KEY, SOURCE_PREFIX
from cubejit.environment.value import decode

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 300


def child(seeds: list[int], wait_for_go: bool = False, first: str = "") -> str:
    """A child's code: ``first``, then :func:`store_kernels.warm` over ``seeds``."""
    return f"""
import sys
sys.path.insert(0, {str(HERE)!r})
{first}
from store_kernels import warm
warm({seeds!r}, wait_for_go={wait_for_go!r})
"""


@pytest.fixture(autouse=True)
def no_inherited_parallelism(monkeypatch: pytest.MonkeyPatch) -> None:
    """Children pick their own worker count (one per CPU), whatever this process was told."""
    monkeypatch.delenv("CUBEJIT_COMPILE_PARALLELISM", raising=False)
    monkeypatch.setitem(os.environ, "CUBEJIT_RECORD_LEVEL", "basic")


UPGRADE = "from cubejit.environment import build\nbuild.override_build_id('an-upgrade')"
"""What a child runs before anything loads to act as another build of cubejit."""

ONE_BUILD = "from cubejit.environment import build\nbuild.override_build_id('one-build')"
"""Pins the build id of the many processes of one test, so that they share keys even while
cubejit's own files change under a running suite."""


def start(code: str, root: Path, **variables: str) -> subprocess.Popen[str]:
    """A Python process running ``code`` on the environment ``test`` under ``root``."""
    environ = {
        **os.environ,
        "CUBEJIT_CACHE_DIR": str(root),
        "CUBEJIT_ENV": "test",
        "CUBEJIT_COMPILATION_CACHE": "1",
        **variables,
    }
    return subprocess.Popen(
        [sys.executable, "-c", code],
        env=environ,
        cwd=root.parent,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def finish(process: subprocess.Popen[str]) -> tuple[dict[str, Any], str]:
    """The report a child printed last, and its stderr; fails the test if the child failed."""
    out, err = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 0, err
    return json.loads(out.splitlines()[-1]), err


def warm(root: Path, seeds: list[int], first: str = "", **variables: str) -> dict[str, Any]:
    report, err = finish(start(child(seeds, first=first), root, **variables))
    assert err == "", err
    return report


def stored_keys(database: Path) -> list[bytes]:
    """Every key of the CPU's namespaces in ``database``."""
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT key FROM entries WHERE namespace LIKE 'cpu/%'").fetchall()
    return [key for (key,) in rows]


def test_eight_processes_warming_twenty_kernels_at_once_compute_right_and_store_each_once(
    root: Path,
) -> None:
    seeds = list(range(1, 21))
    code = child(seeds, wait_for_go=True, first=ONE_BUILD)
    processes = [start(code, root) for _ in range(8)]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    reports = []
    for process in processes:
        report, err = finish(process)
        assert "locked" not in err and err == "", err
        assert report["failed"] == 0
        assert sum(report["outcomes"].values()) == 20
        reports.append(report)

    keys = stored_keys(root / "test.db")
    ids = [k for k in keys if k.startswith(ID_PREFIX)]
    sources = [k for k in keys if k.startswith(SOURCE_PREFIX)]
    packs = {k for k in keys if k.startswith(PACK_PREFIX)}
    assert len(ids) == len(sources) == 20, "one entry per kernel id and one per C text"
    assert 1 <= len(packs) <= 8 and len(keys) == 40 + len(packs)
    [wanted] = {tuple(report["keys"]) for report in reports}
    assert sorted(k.decode() for k in ids) == list(wanted)
    with sqlite3.connect(root / "test.db") as db:
        rows = db.execute("SELECT key, value FROM entries WHERE namespace LIKE 'cpu/%'")
        values = [bytes(v) for k, v in rows if not bytes(k).startswith(PACK_PREFIX)]
    named = {decode(v).header[SOURCE_KEY].encode() for v in values}
    assert named <= packs, "every record and source entry names a stored pack"

    after = warm(root, seeds, first=ONE_BUILD)
    assert after["compiler_runs"] == 0 and after["outcomes"] == {"loaded": 20}


def test_a_second_process_loads_what_the_first_compiled(root: Path) -> None:
    first = warm(root, [1, 2, 3])
    assert first["compiler_runs"] == 3 and first["outcomes"] == {"compiled": 3}
    second = warm(root, [1, 2, 3])
    assert second["compiler_runs"] == 0 and second["outcomes"] == {"loaded": 3}


def test_after_an_upgrade_an_unchanged_c_text_is_rekeyed_and_not_compiled(root: Path) -> None:
    assert warm(root, [4, 5])["compiler_runs"] == 2
    upgraded = warm(root, [4, 5], first=UPGRADE)
    assert upgraded["compiler_runs"] == 0 and upgraded["outcomes"] == {"rekeyed": 2}
    again = warm(root, [4, 5], first=UPGRADE)
    assert again["compiler_runs"] == 0 and again["outcomes"] == {"loaded": 2}


def test_random_bytes_over_stored_artifacts_warn_and_compile_again_with_right_results(
    root: Path,
) -> None:
    assert warm(root, [6, 7])["compiler_runs"] == 2
    rng = np.random.default_rng(11)
    with sqlite3.connect(root / "test.db") as db:
        rows = db.execute(
            "SELECT namespace, key, value FROM entries WHERE namespace LIKE 'cpu/%'"
        ).fetchall()
        assert len(rows) == 5, "two records, two sources and the pack they share"
        for namespace, key, value in rows:
            half = len(value) // 2
            damaged = value[:half] + rng.bytes(len(value) - half)
            db.execute(
                "UPDATE entries SET value = ? WHERE namespace = ? AND key = ?",
                (damaged, namespace, key),
            )
    report, err = finish(start(child([6, 7]), root))
    assert report["compiler_runs"] == 2 and report["outcomes"] == {"compiled": 2}
    assert "damaged entry" in err and "Traceback" not in err, err
    assert warm(root, [6, 7])["outcomes"] == {"loaded": 2}


class SwitchingTarget(CpuTarget):
    """A CPU target that activates another environment while it loads its first kernel."""

    def __init__(self, switch_to: str) -> None:
        super().__init__()
        self.switch_to: str | None = switch_to

    def load(self, id: ArtifactId[Any], artifact: Any) -> Any:
        loaded = super().load(id, artifact)
        if self.switch_to is not None:
            environment.activate(self.switch_to)
            self.switch_to = None
        return loaded


def test_an_environment_switch_mid_run_makes_a_loaded_kernel_load_again(root: Path) -> None:
    batches: list[BatchRecord] = []
    add_record_sink(batches.append)
    try:
        rng = np.random.default_rng(5)
        cpu = CpuClient()
        before = compiler_runs.count
        launch_and_check(cpu, 8, rng)
        environment.activate("other")
        assert cpu.loader.get(artifact(8)) is None
        launch_and_check(cpu, 8, rng)
        assert compiler_runs.count - before == 2, "the environment other held nothing"
        environment.activate("test")
        launch_and_check(cpu, 8, rng)
        assert compiler_runs.count - before == 2
        assert [r.outcome for r in batches[-1].kernels] == ["loaded"]

        switching = CpuClient(target=SwitchingTarget("side"))
        launch_and_check(switching, 8, rng)
        assert environment.active() == "side"
        assert switching.loader.get(artifact(8)) is None, "loaded across the switch: dropped"
        launched = len(batches)
        launch_and_check(switching, 8, rng)
        assert len(batches) == launched + 1, "it loaded again"
        assert switching.loader.get(artifact(8)) is not None
    finally:
        remove_record_sink(batches.append)


def test_with_the_compilation_cache_off_nothing_persists_and_every_process_compiles(
    root: Path,
) -> None:
    for _ in range(2):
        report = warm(root, [9, 10], CUBEJIT_COMPILATION_CACHE="0")
        assert report["compiler_runs"] == 2 and report["outcomes"] == {"compiled": 2}
    databases = list(root.glob("*.db")) if root.exists() else []
    assert all(stored_keys(db) == [] for db in databases)
