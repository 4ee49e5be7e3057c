"""A warm process's first launch (every kernel in the store) imports no module: what it needs
came with the client; a standard call on the CPU imports nothing of the CUDA backend; and a
warm process's first tuned standard call reads no candidate's identity. Counted in fresh
processes sharing one store, on the CPU here and on the GPU where there is one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]

LAUNCH = """
import json, sys
import numpy as np
import cubejit as cj

@cj.function
def scaled(v, a):
    return a * v

@cj.kernel
def saxpy(a: cj.f32, x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32],
          K: cj.Comptime[int]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = scaled(x[i], a) + y[i] + cj.f32(K) + cj.exp(cj.f32(0))

client = cj.client(sys.argv[1])
rng = np.random.default_rng(3)
host_x, host_y = (rng.random(4096, dtype=np.float32) for _ in range(2))
x, y, out = client.to_device(host_x), client.to_device(host_y), client.empty(4096, cj.f32)
client.sync()
before = set(sys.modules)
saxpy.launch(client, 16, 256, 2.0, x, y, out, K=3)
client.sync()
imported = sorted(set(sys.modules) - before)
right = bool(np.allclose(client.read(out), 2.0 * host_x + host_y + 4))
print(json.dumps({"imported": imported, "right": right}))
"""


STANDARD = """
import json, sys
import numpy as np
import cubejit as cj
import cubejit.std as cs

client = cj.client("cpu")
x = np.random.default_rng(5).random((8, 64), dtype=np.float32)
before = set(sys.modules)
named = cs.softmax(x, client=client)
unnamed = cs.softmax(x)
imported = sorted(set(sys.modules) - before)
e = np.exp(x - x.max(axis=1, keepdims=True))
expected = e / e.sum(axis=1, keepdims=True)
right = all(np.allclose(r, expected, rtol=1e-5, atol=1e-6) for r in (named, unnamed))
print(json.dumps({"imported": imported, "right": right}))
"""


TUNED = """
import json, sys
import numpy as np
import cubejit as cj
import cubejit.std as cs

client = cj.client("cpu")
x = np.random.default_rng(6).standard_normal((256, 1024)).astype(np.float32)
before = set(sys.modules)
total = cs.sum(x, client=client)
imported = sorted(set(sys.modules) - before)
right = bool(np.allclose(total, x.astype(np.float64).sum(), rtol=1e-4, atol=1e-2))
print(json.dumps({"imported": imported, "right": right}))
"""


def launched(root: Path, backend: str, script_text: str = LAUNCH) -> dict[str, object]:
    """One fresh process's first launch (its kernel in a file, as a kernel's source must be)."""
    script = root / "first_launch.py"
    script.write_text(script_text)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CUBEJIT_")}
    environ.update(CUBEJIT_CACHE_DIR=str(root / "store"), PYTHONPATH=str(REPOSITORY))
    done = subprocess.run(
        [sys.executable, str(script), backend],
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_warm_first_launch_on_the_cpu_imports_no_module(tmp_path: Path) -> None:
    cold = launched(tmp_path, "cpu")
    warm = launched(tmp_path, "cpu")
    assert cold["right"] and warm["right"]
    assert "cubejit.lang.frontend" in cold["imported"]
    assert warm["imported"] == []


@pytest.mark.gpu
@pytest.mark.cuda_packages
def test_a_warm_first_launch_on_the_gpu_imports_no_module(tmp_path: Path) -> None:
    from cubejit.backends.cuda.client import CudaClient

    try:
        CudaClient(0)
    except Exception as e:
        pytest.skip(f"needs an NVIDIA GPU: {e}")
    cold = launched(tmp_path, "cuda")
    warm = launched(tmp_path, "cuda")
    assert cold["right"] and warm["right"]
    assert warm["imported"] == []


def test_a_standard_call_on_the_cpu_imports_nothing_of_the_cuda_backend(tmp_path: Path) -> None:
    for run in ("cold", "warm"):
        found = launched(tmp_path, "cpu", STANDARD)
        assert found["right"], run
        cuda = [m for m in found["imported"] if m.startswith("cubejit.backends.cuda")]
        assert cuda == [], f"{run}: {cuda}"


def test_a_warm_first_tuned_standard_call_reads_no_candidates_identity(tmp_path: Path) -> None:
    cold = launched(tmp_path, "cpu", TUNED)
    warm = launched(tmp_path, "cpu", TUNED)
    assert cold["right"] and warm["right"]
    assert "cubejit.tune.identity" in cold["imported"]
    assert "cubejit.tune.store" in warm["imported"]
    assert "cubejit.tune.identity" not in warm["imported"]
