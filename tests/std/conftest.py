"""The backends every standard-kernel test runs on: the CPU always, CUDA where this machine has
an NVIDIA GPU (those cases are marked ``gpu`` and skip, saying why, elsewhere)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from std_devices import Device

import cubejit as cj
from cubejit import config
from cubejit.errors import BackendUnavailableError


@pytest.fixture(autouse=True, scope="session")
def short_tuning() -> Iterator[None]:
    """A twentieth of a second of timed runs for each key the standard functions tune: a test
    checks what a call computes, whichever form wins."""
    before = config.settings().tune_budget
    config.override(tune_budget=0.05)
    yield
    config.override(tune_budget=before)


@pytest.fixture(
    scope="module",
    params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)],
)
def device(request: pytest.FixtureRequest) -> Device:
    try:
        return Device(cj.client(request.param))
    except BackendUnavailableError as e:
        pytest.skip(f"needs an NVIDIA GPU: {e}")
