"""Fixtures for the loader's tests: a fake compiler and target that count what they are asked."""

from __future__ import annotations

import pytest
from loader_fakes import FakeTarget

from cubejit import config


@pytest.fixture
def target() -> FakeTarget:
    return FakeTarget()


@pytest.fixture
def record_level(monkeypatch: pytest.MonkeyPatch):
    """Sets the record level for one test; the settings before it come back after."""
    monkeypatch.setattr(config, "_current", config.settings())

    def set_level(level: str) -> None:
        config.override(record_level=level)

    return set_level
