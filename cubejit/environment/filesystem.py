"""Which filesystem holds the store: SQLite's WAL needs memory shared between the processes of
one file, which network filesystems (NFS, Lustre, GPFS, CIFS/SMB) do not give across hosts. On
one of them an environment keeps a rollback journal instead (slower with many writers, but
safe), with one WARNING saying so, and ``cubejit doctor`` reports it.

The type is ``statfs``'s ``f_type`` magic, read through the process's own libc on Linux (no
subprocess, a few microseconds, once per database opened); elsewhere it is not known and the
store keeps its WAL.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

NETWORK_FILESYSTEMS = {
    0x6969: "NFS",
    0x0BD00BD0: "Lustre",
    0x47504653: "GPFS",
    0xFF534D42: "CIFS",
    0xFE534D42: "SMB2",
    0x517B: "SMB",
}
"""``statfs`` magic numbers of the filesystems on which SQLite's WAL is unsafe, and names."""

_STATFS_BYTES = 512


def filesystem_type(path: Path) -> int | None:
    """The ``statfs`` magic of the filesystem holding ``path`` (or its nearest existing
    parent); ``None`` where it cannot be read (not Linux, or no such call)."""
    if not sys.platform.startswith("linux"):
        return None
    folder = path
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        statfs = libc.statfs
    except (OSError, AttributeError):
        return None
    buffer = ctypes.create_string_buffer(_STATFS_BYTES)
    if statfs(os.fsencode(folder), buffer) != 0:
        return None
    return ctypes.c_long.from_buffer(buffer).value & 0xFFFFFFFF


def network_filesystem(kind: int | None) -> str | None:
    """The name of the network filesystem of magic ``kind``; ``None`` for a local one."""
    return None if kind is None else NETWORK_FILESYSTEMS.get(kind)
