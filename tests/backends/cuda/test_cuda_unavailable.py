"""Without the CUDA packages, or without a GPU, asking for a CUDA client says what is missing."""

from __future__ import annotations

import sys

import pytest

from cubejit import runtime
from cubejit.backends.cuda.client import CudaClient
from cubejit.errors import BackendUnavailableError


def has_gpu() -> bool:
    try:
        CudaClient(0)
    except BackendUnavailableError:
        return False
    return True


def test_without_the_cuda_packages_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("cuda.bindings", "cuda.bindings.driver", "cuda.bindings.nvrtc"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(BackendUnavailableError, match=r"pip install 'cubejit\[cuda\]'"):
        runtime.client("cuda")


@pytest.mark.cuda_packages
@pytest.mark.skipif(has_gpu(), reason="this machine has a GPU")
def test_without_a_gpu_the_error_says_no_device_was_found() -> None:
    with pytest.raises(BackendUnavailableError, match="no CUDA device was found"):
        runtime.client("cuda", device=0)


@pytest.mark.cuda_packages
def test_a_device_number_beyond_the_machine_is_not_found() -> None:
    with pytest.raises(BackendUnavailableError, match="no CUDA device"):
        CudaClient(64)
