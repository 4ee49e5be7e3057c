"""Fixtures for the loader's tests: a fake compiler and target that count what they are asked.

``cubejit`` is imported as a package; when a sibling part it imports is not there yet, only the
package path is set up, so the compile modules (which import nothing of those parts) still load.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

try:
    import cubejit  # noqa: F401
except ImportError:
    for name in [n for n in sys.modules if n == "cubejit" or n.startswith("cubejit.")]:
        del sys.modules[name]
    package = types.ModuleType("cubejit")
    package.__path__ = [str(Path(__file__).resolve().parents[2] / "cubejit")]
    sys.modules["cubejit"] = package

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
