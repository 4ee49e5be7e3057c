"""The benchmark's grid-stride cube sum, against numpy on every backend and through NVRTC: row
counts that leave a partial round, lines of one and four lanes, and 16-byte loads in its PTX."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from cooperation_devices import Device

import cubejit as cj

_spec = importlib.util.spec_from_file_location(
    "cooperation_benchmark", Path(__file__).parents[2] / "benchmarks" / "cooperation.py"
)
assert _spec is not None and _spec.loader is not None
benchmark = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(benchmark)

RNG = np.random.default_rng(28)


@pytest.mark.parametrize(
    ("rows", "units", "lanes", "cubes"), [(37, 64, 1, 5), (200, 64, 4, 3), (13, 256, 4, 16)]
)
def test_the_grid_stride_sum_adds_every_row_once(
    device: Device, rows: int, units: int, lanes: int, cubes: int
) -> None:
    x = RNG.random((rows, units * lanes), dtype=np.float32)
    out = device.put(np.zeros(1, np.float32))
    benchmark.cube_sum.launch(device.client, cubes, units, cj.lined(device.put(x), lanes), out, K=4)
    np.testing.assert_allclose(device.get(out)[0], x.sum(dtype=np.float64), rtol=1e-5)


def test_the_cuda_sum_moves_sixteen_bytes_a_load() -> None:
    from cubejit.backends.cuda.compiler import CudaCompiler
    from cubejit.backends.cuda.nvrtc import nvrtc_module
    from cubejit.compile.id import ArtifactId
    from cubejit.compile.recording import CompilationRecording
    from cubejit.errors import BackendUnavailableError

    try:
        nvrtc_module()
    except BackendUnavailableError as missing:
        pytest.skip(f"needs the CUDA packages: {missing}")
    settings = benchmark.SUM_SETTINGS["cuda"]
    spec = benchmark.cube_sum.specialize(
        settings["units"], line_sizes=dict(x=settings["lanes"]), K=settings["rows"]
    )
    id = ArtifactId(spec.id(), (None, 1))
    compiler = CudaCompiler("sm_90a")
    lowered = compiler.lower(spec, id, CompilationRecording.for_artifact(id, keep_text=False), None)
    ptx = compiler.finalize(id, lowered).ptx.decode()
    assert ptx.count("ld.global.v4.f32") >= settings["rows"]
    assert "ld.global.f32" not in ptx
