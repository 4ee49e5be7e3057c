"""Which files and directories cubejit trusts with the native code it loads, and how it makes
its own.

A compilation store holds shared objects that cubejit loads and runs, so whoever can write the
store can run code as its user. A cache root, an environment database or the
``active-environment`` file is therefore trusted only when it is owned by this user (or by
root, who can do anything to this user anyway) and no one else may write it (no group or
other write bit), and when it is not a symbolic link (a link in the root could point the store
at a file someone else controls). What cubejit creates there it creates private, whatever the
umask: directories ``0700``, files ``0600``.

These checks run when a store is opened, once per file and process, never on a launch.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_DIRECTORY = 0o700
PRIVATE_FILE = 0o600
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def refusal(path: Path) -> str | None:
    """Why ``path`` may not be trusted, or ``None`` when it may, or when it does not exist or
    cannot even be examined (then it cannot be read either, and opening it says why). The path
    itself is not followed if it is a symbolic link."""
    try:
        found = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(found.st_mode):
        return "it is a symbolic link, which cubejit does not follow there"
    if found.st_uid not in (os.geteuid(), 0):
        return f"it is owned by another user (uid {found.st_uid})"
    if found.st_mode & _OTHERS_WRITE:
        return f"group or others may write it (mode {stat.S_IMODE(found.st_mode):04o})"
    return None


def make_private_directory(path: Path) -> None:
    """Creates ``path`` and any missing parent as ``0700`` directories, whatever the umask;
    an existing directory is left as it is. Raises :class:`OSError` when it cannot."""
    missing = []
    for folder in (path, *path.parents):
        if folder.is_dir():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=PRIVATE_DIRECTORY)
        except FileExistsError:
            continue
        os.chmod(folder, PRIVATE_DIRECTORY)


def create_private_file(path: Path) -> bool:
    """Creates ``path`` as an empty ``0600`` file unless something is there already (a file,
    or a link, which is not followed); whether it created it. Raises :class:`OSError` when it
    cannot."""
    try:
        fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE
        )
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, PRIVATE_FILE)
    finally:
        os.close(fd)
    return True


def write_private_text(path: Path, text: str) -> None:
    """Replaces the contents of ``path`` with ``text`` in a ``0600`` file, never through a
    symbolic link: a link at ``path`` is an :class:`OSError` naming it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE)
    try:
        os.fchmod(fd, PRIVATE_FILE)
        os.ftruncate(fd, 0)
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)
