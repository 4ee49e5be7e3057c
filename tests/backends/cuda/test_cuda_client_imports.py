"""What creating a CUDA client imports, counted in a fresh interpreter through ``sys.modules``:
the driver's bindings and what a warm first launch needs, never NVRTC (its bindings or its
library) nor the lowering to C++, which only a compile needs. The driver is a stand-in
module answering like ``cuda.bindings.driver`` (the seam the opening-ahead tests use too), so
that this runs without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]

FAKE_DRIVER = """
import enum, json, sys, types
import cuda.bindings

calls = []
ATTRIBUTES = {
    "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR": 9,
    "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR": 0,
    "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK": 48 * 1024,
    "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 227 * 1024,
}


class Named:
    def __getattr__(self, name):
        return name


class Flags(enum.Enum):
    CU_EVENT_DISABLE_TIMING = 2


def answer(name, *values):
    def fn(*args):
        calls.append(name)
        return (0, *values)
    return fn


driver = types.ModuleType("cuda.bindings.driver")
driver.CUdevice = int
driver.CUcontext = int
driver.CUdevice_attribute = Named()
driver.CUevent_flags = Flags
driver.cuInit = answer("cuInit")
driver.cuDeviceGetCount = answer("cuDeviceGetCount", 1)
driver.cuDeviceGet = answer("cuDeviceGet", 0)
driver.cuDevicePrimaryCtxRetain = answer("cuDevicePrimaryCtxRetain", 0x1000)
driver.cuCtxSetCurrent = answer("cuCtxSetCurrent")
driver.cuDeviceGetName = answer("cuDeviceGetName", b"Fake H200\\0")
driver.cuStreamCreate = answer("cuStreamCreate", 0x2000)
driver.cuEventCreate = answer("cuEventCreate", 0x3000)


def attribute(which, device):
    calls.append("cuDeviceGetAttribute")
    return (0, ATTRIBUTES.get(which, 65535 if "GRID" in which else 1024))


driver.cuDeviceGetAttribute = attribute
sys.modules["cuda.bindings.driver"] = driver
cuda.bindings.driver = driver

import numpy
before = set(sys.modules)
import cubejit as cj
import threading
from cubejit.backends import cuda_opening

opening, taking = cuda_opening.start, cuda_opening.take
took = threading.Event()
started, taken = [], []


class SlowLibrary:
    # libcuda, opening the device until the client's thread waits for it.

    def cuInit(self, flags):
        took.wait(60)
        return 0

    def cuDeviceGet(self, device, ordinal):
        device._obj.value = ordinal
        return 0

    def cuDevicePrimaryCtxRetain(self, context, device):
        context._obj.value = 0x1000
        return 0


SLOW = "slow" in sys.argv
if SLOW:
    cuda_opening._library = SlowLibrary
else:
    cuda_opening.LIBRARY = "libcubejit-no-such-driver.so.1"


def start(ordinal):
    later = ("cubejit.config", "cubejit.backends.cuda.client")
    started.append([ordinal, *(m in sys.modules for m in later)])
    opening(ordinal)
    if not SLOW:
        taking(ordinal)


def take(ordinal):
    from cubejit.backends.cuda import nvrtc
    from cubejit.environment import build

    taken.append([build._build_id is not None, nvrtc.version.cache_info().currsize == 1])
    took.set()
    return taking(ordinal)


cuda_opening.start, cuda_opening.take = start, take
client = cj.client("cuda")
print(json.dumps({
    "repr": repr(client),
    "calls": sorted(set(calls)),
    "started": started,
    "taken": taken,
    "imported": sorted(set(sys.modules) - before),
}))
"""

COMPILING = (
    "cubejit.backends.cuda.dialect",
    "cubejit.backends.cuda.cooperation",
    "cubejit.backends.cstyle",
    "cubejit.ir.validate",
    "cubejit.lang.frontend",
)
"""The parser and the lowering of a kernel to CUDA C++."""

NOT_FOR_A_CLIENT = (
    "cuda.bindings.nvrtc",
    "cuda.bindings.runtime",
    "cuda.pathfinder",
    *COMPILING,
)
"""What only compiling needs: NVRTC (its bindings, and the finder that loads its library) and
the lowering, when the device opened before the client would have waited for it."""


@pytest.mark.cuda_packages
def test_a_cuda_client_starts_opening_its_device_before_reading_settings_or_importing_more(
    tmp_path: Path,
) -> None:
    found = create_client(tmp_path)
    assert found["started"][0] == [0, False, False]


@pytest.mark.cuda_packages
def test_a_cuda_client_keys_its_store_before_waiting_for_the_device(tmp_path: Path) -> None:
    found = create_client(tmp_path)
    assert found["taken"] == [[True, True]], "the build id and NVRTC's version come first"


@pytest.mark.cuda_packages
def test_creating_a_cuda_client_imports_neither_nvrtc_nor_the_lowering_to_cpp(
    tmp_path: Path,
) -> None:
    found = create_client(tmp_path)
    assert found["repr"] == "CudaClient(device=0, Fake H200, sm_90a)"
    assert "cuStreamCreate" in found["calls"]
    imported = set(found["imported"])
    assert {"cubejit.backends.cuda.client", "cubejit.backends.cuda.launch"} <= imported
    assert [m for m in NOT_FOR_A_CLIENT if m in imported] == []


@pytest.mark.cuda_packages
def test_a_client_waiting_for_its_device_imports_identity_and_lowering_meanwhile_not_nvrtc(
    tmp_path: Path,
) -> None:
    found = create_client(tmp_path, "slow")
    assert found["repr"] == "CudaClient(device=0, Fake H200, sm_90a)"
    assert "cuDevicePrimaryCtxRetain" not in found["calls"], "the device was opened ahead"
    imported = set(found["imported"])
    assert "cubejit.lang.identity" in imported, "what a first launch reads, imported first"
    assert [m for m in COMPILING if m not in imported] == []
    assert [m for m in NOT_FOR_A_CLIENT if m in imported and m not in COMPILING] == []


def create_client(tmp_path: Path, *how: str) -> dict[str, Any]:
    """What the stand-in script printed: a client made in a fresh interpreter, its device
    opened at once (``"slow"``: opened ahead until the client waits for it)."""
    done = subprocess.run(
        [sys.executable, "-c", FAKE_DRIVER, *how],
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "CUBEJIT_CACHE_DIR": str(tmp_path),
            "CUBEJIT_ENV": "client-imports",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found
