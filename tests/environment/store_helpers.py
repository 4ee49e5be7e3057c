"""Processes and mounts for the store's tests: children that use an environment (as this user
or another), a tmpfs, a read-only directory, a directory shared by users."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def child_environ(root: Path, env: str = "test") -> dict[str, str]:
    """The variables of a child process using the environment ``env`` under ``root``."""
    environ = dict(os.environ)
    environ.update(CUBEJIT_CACHE_DIR=str(root), CUBEJIT_ENV=env, CUBEJIT_COMPILATION_CACHE="1")
    return environ


def spawn(code: str, root: Path, env: str = "test", **options: object) -> subprocess.Popen[str]:
    """A Python process running ``code`` against the environment ``env`` under ``root``."""
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-c", code],
        env=child_environ(root, env),
        cwd=root.parent,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **options,
    )


def run(code: str, root: Path, env: str = "test") -> str:
    """Runs ``code`` in a new process; its stdout. Fails the test if the process fails."""
    process = spawn(code, root, env)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return out


@contextlib.contextmanager
def mounted_tmpfs(where: Path, options: str) -> Iterator[Path]:
    """A ``tmpfs`` mounted at ``where`` with ``options`` for the block, private (``0700``) as a
    cache root must be; skips the test where this machine does not let it mount one (not root,
    or no permission)."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"mode=0700,{options}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'mount failed'})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


@contextlib.contextmanager
def read_only_directory(where: Path) -> Iterator[Path]:
    """A directory nothing may be created in: a read-only tmpfs as root (chmod does not stop
    root), else a directory without write permission."""
    if os.geteuid() == 0:
        with mounted_tmpfs(where, "ro,size=1m") as mounted:
            yield mounted
        return
    where.mkdir(parents=True, exist_ok=True)
    where.chmod(0o555)
    try:
        yield where
    finally:
        where.chmod(0o755)


ANOTHER_USER = 65534
"""The uid (and gid) children run as to be a user other than the store's owner: ``nobody``."""


def run_as_another_user(imports: str, code: str, root: Path) -> subprocess.CompletedProcess[str]:
    """Runs ``imports`` then ``code`` in a new process, on the environment ``default`` under
    ``root``, as :data:`ANOTHER_USER` from ``code`` on: the process drops root's privileges
    between the two, as a daemon does, because this interpreter's own files may be where that
    user cannot read them. Skips the test where this process is not root."""
    if os.geteuid() != 0:
        pytest.skip("running a child as another user takes root")
    drop = (
        f"import os\nos.setgroups([])\nos.setresgid({ANOTHER_USER}, {ANOTHER_USER}, "
        f"{ANOTHER_USER})\nos.setresuid({ANOTHER_USER}, {ANOTHER_USER}, {ANOTHER_USER})\n"
    )
    return subprocess.run(
        [sys.executable, "-c", f"{imports}\n{drop}{code}"],
        env=child_environ(root, "default"),
        cwd=root.parent,
        text=True,
        capture_output=True,
        timeout=300,
        check=False,
    )


@contextlib.contextmanager
def shared_place() -> Iterator[Path]:
    """A directory every user may enter and read but only root may write (``0755``), outside
    the test's private temporary directory, removed afterwards."""
    where = Path(tempfile.mkdtemp(prefix="cubejit-shared-"))
    where.chmod(0o755)
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)
