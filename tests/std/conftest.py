"""The backends every standard-kernel test runs on: the CPU always, CUDA where this machine has
an NVIDIA GPU (those cases are marked ``gpu`` and skip, saying why, elsewhere)."""

from __future__ import annotations

import pytest
from std_devices import Device

import cubejit as cj
from cubejit.errors import BackendUnavailableError


@pytest.fixture(
    scope="module",
    params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)],
)
def device(request: pytest.FixtureRequest) -> Device:
    try:
        return Device(cj.client(request.param))
    except BackendUnavailableError as e:
        pytest.skip(f"needs an NVIDIA GPU: {e}")
