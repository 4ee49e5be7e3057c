"""``cubejit.runtime.client``: one client per backend and device, and the CPU's buffers."""

from __future__ import annotations

import numpy as np
import pytest

from cubejit.errors import BackendUnavailableError
from cubejit.ir.types import f32, u64
from cubejit.runtime import client


def test_the_same_backend_and_device_give_the_same_client() -> None:
    cpu = client("cpu")
    assert client() is cpu and client("cpu", 0) is cpu
    assert cpu.backend == "cpu"
    assert cpu.limits.max_units_per_cube == 1024


def test_an_unknown_backend_or_device_is_unavailable() -> None:
    with pytest.raises(BackendUnavailableError, match="no backend 'tpu'; cubejit has cpu, cuda"):
        client("tpu")
    with pytest.raises(BackendUnavailableError, match="one device, 0"):
        client("cpu", 3)


def test_cpu_buffers_are_aligned_copies_read_back_as_copies_of_their_shape() -> None:
    cpu = client("cpu")
    source = np.random.default_rng(3).random((3, 5))
    buffer = cpu.to_device(source)
    assert buffer.address % 64 == 0 and len(buffer) == 15 and buffer.shape == (3, 5)
    source[0, 0] = -1.0
    back = cpu.read(buffer)
    assert back.shape == (3, 5) and back[0, 0] != -1.0
    back[1] = -2.0
    np.testing.assert_array_equal(cpu.read(buffer)[1:], source[1:])
    assert cpu.empty(7, f32).dtype == np.float32 and len(cpu.empty(0, u64)) == 0
    cpu.sync()


def test_every_client_is_a_runtime_client_whose_compiler_counts_its_compiles() -> None:
    import cubejit as cj
    from cubejit.backends.cpu.client import CpuClient
    from cubejit.runtime import Client

    @cj.kernel
    def double(x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
        i = cj.ABSOLUTE_POS
        if i < out.len():
            out[i] = x[i] * 2.0

    cpu = CpuClient()
    assert isinstance(cpu, Client) and isinstance(client("cpu"), Client)
    before = cpu.compiler.compilations
    x = np.random.default_rng(1).random(100, dtype=np.float32)
    out = cpu.empty(100, f32)
    for _ in range(3):
        double.launch(cpu, 1, 128, cpu.to_device(x), out)
    np.testing.assert_array_equal(cpu.read(out), x * 2)
    assert cpu.compiler.compilations == before + 1
