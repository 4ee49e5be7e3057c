"""The autotune tests' fixtures: the fleet tests' real redis-server (``redis_server``,
``redis_url``), and a small tuning budget, so that tuning stays quick."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest
from tune_hosts import BUDGET_S

from cubejit import config

_spec = importlib.util.spec_from_file_location(
    "fleet_servers", Path(__file__).parents[1] / "fleet" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
fleet_servers = importlib.util.module_from_spec(_spec)
try:
    _spec.loader.exec_module(fleet_servers)
except pytest.skip.Exception as missing:
    _why = str(missing)

    @pytest.fixture
    def redis_url() -> str:
        pytest.skip(_why)

else:
    redis_server = fleet_servers.redis_server
    redis_url = fleet_servers.redis_url


@pytest.fixture(autouse=True)
def small_budget() -> Iterator[None]:
    before = config.settings().tune_budget
    config.override(tune_budget=float(BUDGET_S))
    yield
    config.override(tune_budget=before)
