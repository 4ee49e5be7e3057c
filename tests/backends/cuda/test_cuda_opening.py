"""Opening a device ahead, while the CUDA backend imports: the driver's initialisation and the
primary context's retain run on a thread of their own; making the context current is left to
the client's thread; a failure is forgotten (the client's own opening reports it)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from cubejit.backends import cuda_opening


class FakeDriver:
    """Stands for ``cuda.bindings.driver``: keeps each call and the thread that made it."""

    def __init__(self, fail: str | None = None) -> None:
        self.fail = fail
        self.calls: list[tuple[str, str]] = []

    def _record(self, name: str, *values: Any) -> tuple[Any, ...]:
        self.calls.append((name, threading.current_thread().name))
        return (1 if name == self.fail else 0, *values)

    def cuInit(self, flags: int) -> tuple[Any, ...]:
        return self._record("cuInit")

    def cuDeviceGet(self, ordinal: int) -> tuple[Any, ...]:
        return self._record("cuDeviceGet", f"device {ordinal}")

    def cuDevicePrimaryCtxRetain(self, device: str) -> tuple[Any, ...]:
        return self._record("cuDevicePrimaryCtxRetain", f"context of {device}")

    def cuCtxSetCurrent(self, context: Any) -> tuple[Any, ...]:
        return self._record("cuCtxSetCurrent")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    import cuda.bindings

    driver = FakeDriver()
    monkeypatch.setattr(cuda.bindings, "driver", driver)
    return driver


@pytest.mark.cuda_packages
def test_a_device_opened_ahead_is_retained_on_another_thread_and_not_made_current(
    fake: FakeDriver,
) -> None:
    cuda_opening.start(3)
    cuda_opening.start(3)
    assert cuda_opening.take(3) == ("device 3", "context of device 3")
    assert [name for name, _ in fake.calls] == ["cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain"]
    assert {thread for _, thread in fake.calls} == {"cubejit-cuda-open"}
    assert cuda_opening.take(3) is None


@pytest.mark.cuda_packages
@pytest.mark.parametrize("step", ["cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain"])
def test_a_failed_opening_ahead_hands_nothing_over(fake: FakeDriver, step: str) -> None:
    fake.fail = step
    cuda_opening.start(0)
    assert cuda_opening.take(0) is None


def test_a_device_never_opened_ahead_is_not_waited_for() -> None:
    assert cuda_opening.take(7) is None
