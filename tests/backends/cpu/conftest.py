"""Fixtures for the CPU backend's tests: one client shared by the module's kernels, and a
settings override undone after each test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cubejit import config
from cubejit.backends.cpu.client import CpuClient


@pytest.fixture(scope="module")
def cpu() -> CpuClient:
    """A client of its own per test module, so compile counts are the module's alone."""
    return CpuClient()


@pytest.fixture
def settings_restored() -> Iterator[None]:
    before = config.settings()
    yield
    config.override(**{f: getattr(before, f) for f in ("cc", "compile_timeout", "march_native")})
