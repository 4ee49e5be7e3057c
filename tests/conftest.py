"""Every test runs against compilation stores of its own, never the user's cache.

The root is set before cubejit reads its settings, so child processes inherit it too; each
test module then gets a fresh root, so compile counts and store contents are the module's own.
Tests marked ``cuda_packages`` (NVRTC and cuda-bindings, the ``cuda`` extra that ``.ci/run``
installs; no GPU) skip, saying what to install, wherever they are missing.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cuda_packages import missing_cuda_packages

os.environ["CUBEJIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="cubejit-tests-")
os.environ.pop("CUBEJIT_ENV", None)
os.environ.pop("CUBEJIT_STORE", None)
os.environ.pop("CUBEJIT_SIGNING_KEY", None)

from cubejit import config
from cubejit.environment.manager import ENVIRONMENTS

config.reset()


@pytest.fixture(autouse=True, scope="module")
def module_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh, empty compilation-store root for each test module."""
    root = tmp_path_factory.mktemp("store")
    config.override(cache_dir=root)
    ENVIRONMENTS.reset()
    yield root
    ENVIRONMENTS.reset()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("cuda_packages") is not None:
        missing = missing_cuda_packages()
        if missing is not None:
            pytest.skip(f"needs the CUDA packages: {missing}")
