"""The build id: hashed from cubejit's sources once, then read back from the cache root while
no source changed; any change (size or modification time) hashes again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cubejit import config
from cubejit.environment import build


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small package standing in for cubejit, and a cache root of its own."""
    folder = tmp_path / "pkg"
    (folder / "sub").mkdir(parents=True)
    (folder / "__init__.py").write_text('__version__ = "9.9.9"\n')
    (folder / "sub" / "codegen.py").write_text("EMIT = 'a'\n")
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setattr(config, "_current", config.settings())
    config.override(cache_dir=root)
    monkeypatch.setattr(build, "PACKAGE", folder)
    monkeypatch.setattr(build, "_version", None)
    build.override_build_id(None)
    yield folder
    build.override_build_id(None)
    monkeypatch.setattr(build, "_version", None)


def hashes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    counted: list[int] = []
    real = build._hashed

    def counting(sources: list[tuple[str, str]]) -> str:
        counted.append(len(sources))
        return real(sources)

    monkeypatch.setattr(build, "_hashed", counting)
    return counted


def test_a_second_process_reads_the_build_id_back_without_hashing(
    package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = hashes(monkeypatch)
    first = build.build_id()
    assert counted == [2]
    kept = json.loads((config.settings().cache_dir / build.CACHE_FILE).read_text())
    assert kept["build_id"] == first
    build.override_build_id(None)
    assert build.build_id() == first
    assert counted == [2], "read back, not hashed"


def test_a_changed_source_hashes_again_and_keys_anew(
    package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = hashes(monkeypatch)
    first = build.build_id()
    source = package / "sub" / "codegen.py"
    source.write_text("EMIT = 'b'\n")
    os.utime(source, ns=(1, 1))
    build.override_build_id(None)
    assert build.build_id() != first
    assert len(counted) == 2


def test_a_kept_build_id_for_other_sources_or_behind_a_link_is_not_used(
    package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = build.build_id()
    cache = config.settings().cache_dir / build.CACHE_FILE
    cache.write_text('{"stamp": "x", "build_id": "forged"}')
    build.override_build_id(None)
    assert build.build_id() == first
    cache.unlink()
    cache.symlink_to(package / "__init__.py")
    build.override_build_id(None)
    assert build.build_id() == first
