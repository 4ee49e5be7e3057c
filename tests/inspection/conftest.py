"""The backends the inspection tests run on: the CPU always, CUDA where this machine has an
NVIDIA GPU (those cases are marked ``gpu`` and skip, saying why, elsewhere)."""

from __future__ import annotations

from typing import Any

import pytest

import cubejit as cj
from cubejit.errors import BackendUnavailableError


@pytest.fixture(scope="module", params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def checked(backend: str) -> Any:
    """A checked client of ``backend``."""
    try:
        return cj.client(backend, check_bounds=True)
    except BackendUnavailableError as e:
        pytest.skip(f"needs an NVIDIA GPU: {e}")


@pytest.fixture(scope="module")
def plain(backend: str) -> Any:
    """An unchecked client of ``backend``."""
    try:
        return cj.client(backend, check_bounds=False)
    except BackendUnavailableError as e:
        pytest.skip(f"needs an NVIDIA GPU: {e}")
