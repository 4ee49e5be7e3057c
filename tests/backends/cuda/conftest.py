"""Fixtures for the CUDA backend's tests: a store in a fresh root, and a client on the GPU when
this machine has one (tests that need it skip, saying why, otherwise). Lowering alone needs
neither the GPU nor the CUDA packages (``cuda_packages`` tests skip without them: see
``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cubejit import config
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.errors import BackendUnavailableError


@pytest.fixture(scope="module")
def store_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh root holding the active environment, for the module's tests; the settings and
    environments as they were come back after them."""
    before = config.settings()
    where = tmp_path_factory.mktemp("cuda-store")
    config.override(cache_dir=where, env="cuda-tests", compilation_cache=True)
    ENVIRONMENTS.reset()
    yield where
    config.override(**{f: getattr(before, f) for f in ("cache_dir", "env", "compilation_cache")})
    ENVIRONMENTS.reset()


@pytest.fixture(scope="module")
def gpu(store_root: Path):
    """A :class:`CudaClient` on device 0, storing in a fresh root; skips without a GPU."""
    from cubejit.backends.cuda.client import CudaClient

    try:
        return CudaClient(0)
    except BackendUnavailableError as e:
        pytest.skip(f"needs an NVIDIA GPU: {e}")
