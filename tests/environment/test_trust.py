"""Which stores cubejit trusts with the native code it loads: its own, private ones."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from cubejit import config, environment
from cubejit.compile.id import ArtifactId, KernelId
from cubejit.environment import ArtifactStore
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.errors import StoreError

STRANGER = 12345
"""A uid nobody on the test machine has."""

as_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="giving a file to another user takes root (os.chown)"
)


def kernel(i: int) -> ArtifactId[None]:
    return ArtifactId(KernelId(f"kernel_{i}", {"types": ["f32"]}, 64), None)


def fill(count: int) -> None:
    store = ArtifactStore("cpu", "fp")
    for i in range(count):
        store.store(kernel(i), b"code %d" % i, {"i": i}, f"text {i}")


def served(count: int) -> list[bool]:
    store = ArtifactStore("cpu", "fp")
    return [store.stored(kernel(i)) is not None for i in range(count)]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def given_away(path: Path) -> None:
    os.chown(path, STRANGER, STRANGER)


def database_of(root: Path) -> Path:
    return root / "test.db"


UNTRUSTED: dict[str, Callable[[Path], None]] = {
    "a root owned by another user": given_away,
    "a root writable by its group": lambda root: root.chmod(0o770),
    "a root writable by others": lambda root: root.chmod(0o707),
    "a database owned by another user": lambda root: given_away(database_of(root)),
    "a database writable by others": lambda root: database_of(root).chmod(0o666),
}


@as_root
@pytest.mark.parametrize("case", list(UNTRUSTED))
def test_an_untrusted_store_is_refused_with_one_warning_and_its_code_never_loads(
    root: Path, store_warnings: list[logging.LogRecord], case: str
) -> None:
    fill(4)
    ENVIRONMENTS.reset()
    UNTRUSTED[case](root)
    assert served(4) == [False] * 4
    store = ArtifactStore("cpu", "fp")
    assert not store.persists()
    fill(4)
    assert served(4) == [True] * 4
    assert len(store_warnings) == 1
    message = store_warnings[0].getMessage()
    assert "not trusted" in message and str(database_of(root)) in message


def test_a_symbolic_link_in_the_root_is_refused_with_a_warning_naming_it(
    root: Path, tmp_path: Path, store_warnings: list[logging.LogRecord]
) -> None:
    config.override(cache_dir=tmp_path / "elsewhere")
    fill(2)
    ENVIRONMENTS.reset()
    config.override(cache_dir=root)
    root.mkdir(mode=0o700)
    database_of(root).symlink_to(tmp_path / "elsewhere" / "test.db")
    assert served(2) == [False, False]
    assert len(store_warnings) == 1
    message = store_warnings[0].getMessage()
    assert f"{database_of(root)}: it is a symbolic link" in message


@as_root
def test_an_active_environment_file_of_another_user_is_ignored_with_a_warning(
    tmp_path: Path, store_warnings: list[logging.LogRecord]
) -> None:
    chosen = tmp_path / config.CHOSEN_ENVIRONMENT_FILE
    chosen.write_text("theirs\n")
    chosen.chmod(0o600)
    assert config.chosen_environment(tmp_path) == "theirs"
    given_away(chosen)
    assert config.chosen_environment(tmp_path) == ""
    assert len(store_warnings) == 1
    assert "not trusted" in store_warnings[0].getMessage()


def test_the_root_and_its_files_are_private_whatever_the_umask(root: Path, tmp_path: Path) -> None:
    config.override(cache_dir=tmp_path / "made" / "root")
    old = os.umask(0)
    try:
        fill(2)
        environment.export_bundle(tmp_path / "shipped.cjb")
    finally:
        os.umask(old)
    made = tmp_path / "made" / "root"
    assert mode(tmp_path / "made") == 0o700
    assert mode(made) == 0o700
    files = sorted(made.iterdir())
    assert {f.name for f in files} >= {"test.db", "test.db-wal", "test.db-shm"}
    assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
    assert mode(tmp_path / "shipped.cjb") == 0o600
    ENVIRONMENTS.reset()


def test_export_refuses_a_destination_that_is_a_symbolic_link(root: Path, tmp_path: Path) -> None:
    fill(1)
    victim = tmp_path / "victim.cjb"
    environment.export_bundle(victim)
    before = victim.read_bytes()
    link = tmp_path / "link.cjb"
    link.symlink_to(victim)
    with pytest.raises(StoreError, match=f"{link} is a symbolic link"):
        environment.export_bundle(link)
    assert link.is_symlink() and victim.read_bytes() == before
