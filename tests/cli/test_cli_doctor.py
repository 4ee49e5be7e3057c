"""``cubejit doctor``: what this machine gives cubejit."""

from __future__ import annotations

from cli_runner import Cubejit


def test_doctor_names_python_the_compiler_cuda_and_the_environment(cubejit: Cubejit) -> None:
    done = cubejit("doctor")
    for check in ("python", "cubejit", "C compiler", "CUDA driver", "NVRTC", "environment"):
        assert check in done.stdout
    assert "default" in done.stdout
