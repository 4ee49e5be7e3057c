"""``cubejit doctor``: what this machine gives cubejit, and what its store needs."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from cli_runner import Cubejit, command, copy_root

from cubejit import config
from cubejit.cli import doctor
from cubejit.environment.manager import ENVIRONMENTS


def test_doctor_names_python_the_compiler_cuda_and_the_environment(cubejit: Cubejit) -> None:
    done = cubejit("doctor")
    for check in ("python", "cubejit", "C compiler", "CUDA driver", "NVRTC", "environment"):
        assert check in done.stdout
    assert "default" in done.stdout


def test_doctor_reports_a_root_on_a_network_filesystem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(config, "_current", config.settings())
    config.override(cache_dir=tmp_path / "root", compilation_cache=True)
    monkeypatch.setattr(ENVIRONMENTS, "filesystem_type", lambda path: 0x0BD00BD0)
    assert doctor.run(argparse.Namespace()) in (0, 1)
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "environment" in line)
    assert "warning" in line
    assert "the root is on Lustre: a rollback journal instead of WAL" in out


def test_files_set_aside_are_listed_and_reported(warmed: Path, tmp_path: Path) -> None:
    root = copy_root(warmed, tmp_path / "root")
    (root / "default.db").write_bytes(b"this is not a database; " * 500)
    cubejit = command(root, tmp_path)
    cubejit("env", "show")
    (aside,) = root.glob("default.db.damaged-*")
    listed = cubejit("env", "list").stdout
    assert "set aside as damaged" in listed and str(aside) in listed
    assert "1 files set aside as damaged" in cubejit("doctor", check=False).stdout
