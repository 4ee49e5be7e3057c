"""Fixtures for the command's tests: an empty root per test, and one environment warmed once
for the whole run."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import EXAMPLES, Cubejit, command


@pytest.fixture
def cubejit(tmp_path: Path) -> Cubejit:
    """The command, with an empty root of its own."""
    return command(tmp_path / "root", tmp_path)


@pytest.fixture(scope="session")
def warmed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root whose ``default`` environment holds the kernels of ``examples/warm_module.py``,
    compiled by one ``cubejit warm``; tests that change it copy it first (``copy_root``)."""
    root = tmp_path_factory.mktemp("warmed") / "root"
    command(root, root.parent)("warm", str(EXAMPLES / "warm_module.py"))
    return root
