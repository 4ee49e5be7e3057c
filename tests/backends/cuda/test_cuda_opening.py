"""Opening a device ahead, while the CUDA backend imports: the driver's initialisation and the
primary context's retain run on a thread of their own, through ``libcuda`` itself (no
``cuda.bindings`` import before them); making the context current is left to the client's
thread; a failure is forgotten (the client's own opening reports it)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from cubejit.backends import cuda_opening

ROOT = Path(__file__).resolve().parents[3]


class FakeLibrary:
    """Stands for ``libcuda`` as :mod:`ctypes` loads it: keeps each call and the thread that
    made it, and writes its results through the pointers it is given."""

    def __init__(self, fail: str | None = None) -> None:
        self.fail = fail
        self.calls: list[tuple[str, str]] = []

    def _record(self, name: str) -> int:
        self.calls.append((name, threading.current_thread().name))
        return 1 if name == self.fail else 0

    def cuInit(self, flags: int) -> int:
        return self._record("cuInit")

    def cuDeviceGet(self, device: Any, ordinal: int) -> int:
        device._obj.value = 40 + ordinal
        return self._record("cuDeviceGet")

    def cuDevicePrimaryCtxRetain(self, context: Any, device: ctypes.c_int) -> int:
        context._obj.value = 0x1000 + device.value
        return self._record("cuDevicePrimaryCtxRetain")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeLibrary:
    library = FakeLibrary()
    monkeypatch.setattr(cuda_opening, "_library", lambda: library)
    return library


def test_a_device_opened_ahead_is_retained_on_another_thread_and_not_made_current(
    fake: FakeLibrary,
) -> None:
    cuda_opening.start(3)
    cuda_opening.start(3)
    assert cuda_opening.take(3) == (43, 0x1000 + 43)
    assert [name for name, _ in fake.calls] == ["cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain"]
    assert {thread for _, thread in fake.calls} == {"cubejit-cuda-open"}
    assert cuda_opening.take(3) is None


@pytest.mark.parametrize("step", ["cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain"])
def test_a_failed_opening_ahead_hands_nothing_over(fake: FakeLibrary, step: str) -> None:
    fake.fail = step
    cuda_opening.start(0)
    assert cuda_opening.take(0) is None


def test_a_driver_library_that_cannot_be_loaded_hands_nothing_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cuda_opening, "LIBRARY", "libcubejit-no-such-driver.so.1")
    cuda_opening.start(5)
    assert cuda_opening.take(5) is None


def test_a_device_never_opened_ahead_is_not_waited_for() -> None:
    assert cuda_opening.take(7) is None


def test_opening_ahead_imports_no_cuda_bindings() -> None:
    code = (
        "import sys\nfrom cubejit.backends import cuda_opening\n"
        "cuda_opening.start(0)\ncuda_opening.take(0)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('cuda', 'cubejit.backends.'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.split() == ["['cubejit.backends.cuda_opening']"]


def test_an_opening_is_under_way_until_the_driver_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    library = FakeLibrary()
    real_init = library.cuInit

    def slow_init(flags: int) -> int:
        release.wait(60)
        return real_init(flags)

    library.cuInit = slow_init  # type: ignore[method-assign]
    monkeypatch.setattr(cuda_opening, "_library", lambda: library)
    cuda_opening.start(2)
    assert cuda_opening.under_way(2)
    release.set()
    assert cuda_opening.take(2) == (42, 0x1000 + 42)
    assert not cuda_opening.under_way(2)
