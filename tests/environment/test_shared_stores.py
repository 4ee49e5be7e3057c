"""Stores this user may read but not write, or not even read: served as far as they can be,
with one WARNING, never a traceback."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

from store_helpers import ANOTHER_USER, run, run_as_another_user, shared_place

HERE = Path(__file__).resolve().parent


IMPORTS = (
    f"import sys\nsys.path.insert(0, {str(HERE)!r})\n"
    "import numpy.testing\nimport cubejit.compile.loader\nimport cubejit.lang.frontend\n"
    "import cubejit.lang.identity\nfrom store_kernels import warm"
)
"""What a child imports while still root (see :func:`store_helpers.run_as_another_user`): the
loader, and the language's translator and identities, which a kernel imports only when it is
first specialised."""


def warming(*batches: list[int]) -> str:
    """A child's code: one batch of :func:`store_kernels.warm` per list of seeds."""
    return "\n".join(f"warm({seeds!r})" for seeds in batches)


def shared(root: Path) -> None:
    """Lets every user read the environment ``default`` under ``root``, as whoever shares a
    store does: the root ``0755``, the database and its WAL files ``0644``."""
    root.chmod(0o755)
    for file in root.glob("default.db*"):
        file.chmod(0o644)


def sqlite_entries(database: Path) -> list[tuple[str, bytes]]:
    with closing(sqlite3.connect(database)) as db:
        return [(ns, bytes(k)) for ns, k in db.execute("SELECT namespace, key FROM entries")]


def reports(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_a_root_owned_store_in_a_directory_this_user_cannot_write_is_served_read_only() -> None:
    with shared_place() as place:
        root = place / "root"
        run(f"{IMPORTS}\n{warming([1, 2])}", root, env="default")
        shared(root)
        done = run_as_another_user(IMPORTS, warming([1, 2], [3]), root)
        assert done.returncode == 0, done.stderr
        served, new = reports(done.stdout)
        assert served["compiler_runs"] == 0
        assert served["outcomes"] == {"loaded": 2}
        assert new["compiler_runs"] == 1
        assert "Traceback" not in done.stderr
        assert done.stderr.count("cubejit: ") == 1, done.stderr
        assert "kept in memory" in done.stderr


def test_an_unreadable_cache_root_gives_one_warning_and_no_traceback_per_batch() -> None:
    with shared_place() as place:
        root = place / "root"
        root.mkdir(mode=0o700)
        os.chown(root, ANOTHER_USER, ANOTHER_USER)
        root.chmod(0)
        done = run_as_another_user(IMPORTS, warming([1], [2], [3]), root)
        assert done.returncode == 0, done.stderr
        assert [r["compiler_runs"] for r in reports(done.stdout)] == [1, 2, 3]
        assert "Traceback" not in done.stderr and "failed" not in done.stderr, done.stderr
        assert done.stderr.count("cubejit: ") == 1, done.stderr
        assert str(root) in done.stderr


def test_env_commands_on_a_store_this_user_cannot_write_report_its_real_entries() -> None:
    with shared_place() as place:
        root = place / "root"
        run(f"{IMPORTS}\n{warming([1, 2])}", root, env="default")
        entries = len(sqlite_entries(root / "default.db"))
        assert entries > 0
        shared(root)
        before = (root / "default.db").read_bytes()

        def cubejit(*args: str) -> subprocess.CompletedProcess[str]:
            return run_as_another_user(
                "import argparse, shutil, subprocess, tempfile\nimport cubejit.cli",
                f"raise SystemExit(cubejit.cli.main({list(args)!r}))",
                root,
            )

        listed, shown, verified = (
            cubejit("env", "list"),
            cubejit("env", "show"),
            cubejit("env", "verify", "--fix"),
        )
        for done in (listed, shown, verified):
            assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        row = next(line for line in listed.stdout.splitlines() if "default.db" in line)
        assert str(entries) in [cell.strip() for cell in row.split("│")], listed.stdout
        assert f"entries:     {entries} in 1 namespaces" in shown.stdout
        assert "writes:      refused here" in shown.stdout
        assert f"checked {entries} entries of 'default': all intact" in verified.stdout
        cleared = cubejit("env", "clear")
        assert cleared.returncode == 1 and "Traceback" not in cleared.stderr
        assert "cubejit: error: cannot clear 'default'" in cleared.stderr
        assert "nothing was changed" in cleared.stderr
        assert (root / "default.db").read_bytes() == before
