"""Running ``python -m cubejit`` in a subprocess for the command's tests, and reading what it
left in an environment's database."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLES = REPOSITORY / "examples"

Cubejit = Callable[..., subprocess.CompletedProcess[str]]


def command(root: Path, cwd: Path) -> Cubejit:
    """Runs ``cubejit ARGS`` in a new interpreter with environments under ``root``."""

    def run(*args: str, check: bool = True, **variables: str) -> subprocess.CompletedProcess[str]:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("CUBEJIT_")}
        environ.update(
            CUBEJIT_CACHE_DIR=str(root), CUBEJIT_COMPILE_PARALLELISM="2", COLUMNS="200", **variables
        )
        done = subprocess.run(
            [sys.executable, "-m", "cubejit", *args],
            cwd=cwd,
            env=environ,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if check:
            assert done.returncode == 0, f"cubejit {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done

    return run


def copy_root(root: Path, dest: Path) -> Path:
    """A copy of the environments under ``root`` at ``dest``, consistent (WAL included)."""
    dest.mkdir(parents=True, mode=0o700)
    for database in root.glob("*.db"):
        with closing(sqlite3.connect(database)) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        shutil.copy2(database, dest / database.name)
    return dest


def entries(database: Path) -> list[tuple[str, bytes, int]]:
    """``(namespace, key, value size)`` of every entry of an environment database."""
    with closing(sqlite3.connect(database)) as db:
        rows = db.execute("SELECT namespace, key, length(value) FROM entries").fetchall()
    return [(ns, bytes(key), size) for ns, key, size in rows]
