"""On a GPU: kernels built ahead with no GPU (``cubejit warm --arch``) launch with zero NVRTC
runs; a GPU newer than every stored cubin loads the portable PTX through the driver once, and
the cubin the driver made the next time. Fresh processes, counted compiles; skips without a
GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cubejit.backends.cuda.client import CudaClient

pytestmark = pytest.mark.gpu

REPOSITORY = Path(__file__).resolve().parents[3]
EXAMPLES = REPOSITORY / "examples"

LAUNCH = f"""
import json, sys
import numpy as np
sys.path.insert(0, {str(EXAMPLES)!r})
import cubejit as cj
import warm_module
client = cj.client("cuda")
rng = np.random.default_rng(11)
right = True
for cube, launch, expected in (
    (256, lambda x, out: warm_module.scale.launch(client, 8, 256, 1.5, x, out), lambda x: 1.5 * x),
    (64, lambda x, out: warm_module.scale.launch(client, 32, 64, 1.5, x, out), lambda x: 1.5 * x),
    (256, lambda x, out: warm_module.power.launch(client, 8, 256, x, out, n=2), lambda x: x * x),
    (256, lambda x, out: warm_module.power.launch(client, 8, 256, x, out, n=3), lambda x: x**3),
):
    host = rng.random(2048, dtype=np.float32)
    out = client.empty(2048, cj.f32)
    launch(client.to_device(host), out)
    right = right and np.allclose(client.read(out), expected(host), rtol=1e-5)
print(json.dumps({{
    "compilations": client.compiler.compilations,
    "right": bool(right),
    "nvrtc_loaded": "cuda.bindings.nvrtc" in sys.modules,
}}))
"""


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CUBEJIT_")}
    environ.update(CUBEJIT_CACHE_DIR=str(root), PYTHONPATH=str(REPOSITORY))
    done = subprocess.run(
        [sys.executable, *args], env=environ, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{args}:\n{done.stdout}\n{done.stderr}"
    return done


def launched(root: Path) -> tuple[dict[str, object], str]:
    done = run(root, "-c", LAUNCH)
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


@pytest.fixture(scope="module")
def arch() -> str:
    try:
        return CudaClient(0).arch
    except Exception as e:
        pytest.skip(f"needs an NVIDIA GPU: {e}")


def test_a_bundle_warmed_without_a_gpu_launches_here_with_zero_nvrtc_runs(
    arch: str, tmp_path: Path
) -> None:
    builder = tmp_path / "builder"
    archs = ",".join(dict.fromkeys(("sm_80", arch, "sm_100a")))
    run(
        builder,
        "-m",
        "cubejit",
        "warm",
        str(EXAMPLES / "warm_module.py"),
        "--backend",
        "cuda",
        "--arch",
        archs,
    )
    bundle = tmp_path / "kernels.db"
    run(builder, "-m", "cubejit", "env", "export", str(bundle))
    host = tmp_path / "gpu-host"
    run(host, "-m", "cubejit", "env", "import", str(bundle))
    report, _ = launched(host)
    assert report == {"compilations": 0, "right": True, "nvrtc_loaded": False}


def test_a_gpu_newer_than_every_stored_cubin_loads_the_ptx_once_then_the_drivers_cubin(
    arch: str, tmp_path: Path
) -> None:
    if arch == "sm_80":
        pytest.skip("needs a GPU newer than sm_80")
    root = tmp_path / "root"
    run(
        root,
        "-m",
        "cubejit",
        "warm",
        str(EXAMPLES / "warm_module.py"),
        "--backend",
        "cuda",
        "--arch",
        "sm_80",
    )
    first, warnings = launched(root)
    assert first == {"compilations": 0, "right": True, "nvrtc_loaded": False}
    assert warnings.count("the driver compiled the PTX") == 1
    second, warnings = launched(root)
    assert second == {"compilations": 0, "right": True, "nvrtc_loaded": False}
    assert "the driver compiled the PTX" not in warnings
