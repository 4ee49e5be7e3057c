"""On a GPU, in fresh processes sharing one store: a warm first launch compiles no Python and
runs no NVRTC, computes what numpy does, and so do the launches after the generated launch
function takes over; the context opened ahead of the client is current on its thread. Skips
without a GPU."""

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

LAUNCH = """
import ast, builtins, json, os
import numpy as np
import cubejit as cj
from cuda.bindings import driver
from cubejit.backends.cuda.launch import GENERIC_LAUNCHES

@cj.kernel
def saxpy(a: cj.f32, x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]

client = cj.client("cuda")
_, current = driver.cuCtxGetCurrent()
rng = np.random.default_rng(5)
host_x, host_y = (rng.random(4096, dtype=np.float32) for _ in range(2))
x, y = client.to_device(host_x), client.to_device(host_y)
out = client.empty(4096, cj.f32)
compiled = []
real_compile = builtins.compile

def counting_compile(*a, **k):
    # Generated code only: reading a kernel's source parses it (an AST, no code), and a module
    # imported without its bytecode cache is compiled from its file.
    flags = a[3] if len(a) > 3 else k.get("flags", 0)
    if not flags & ast.PyCF_ONLY_AST and not os.path.isfile(str(a[1])):
        compiled.append(a[1])
    return real_compile(*a, **k)

builtins.compile = counting_compile
saxpy.launch(client, 16, 256, 2.0, x, y, out)
first_compiles = len(compiled)
first_right = bool(np.allclose(client.read(out), 2.0 * host_x + host_y))
for i in range(GENERIC_LAUNCHES + 2):
    saxpy.launch(client, 16, 256, float(i), x, y, out)
builtins.compile = real_compile
print(json.dumps({
    "first_compiles": first_compiles,
    "first_right": first_right,
    "later_compiles": len(compiled),
    "later_right": bool(
        np.allclose(client.read(out), float(GENERIC_LAUNCHES + 1) * host_x + host_y)
    ),
    "nvrtc_runs": client.compiler.compilations,
    "context_current": int(current) == int(client._context),
}))
"""


@pytest.fixture(scope="module")
def gpu() -> None:
    try:
        CudaClient(0)
    except Exception as e:
        pytest.skip(f"needs an NVIDIA GPU: {e}")


def launched(root: Path) -> dict[str, object]:
    """One fresh process's launches (its kernel in a file, as a kernel's source must be)."""
    script = root / "first_launch.py"
    script.write_text(LAUNCH)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CUBEJIT_")}
    environ.update(CUBEJIT_CACHE_DIR=str(root / "store"), PYTHONPATH=str(REPOSITORY))
    done = subprocess.run(
        [sys.executable, str(script)], env=environ, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_warm_first_launch_compiles_nothing_and_computes_what_numpy_does(
    gpu: None, tmp_path: Path
) -> None:
    cold = launched(tmp_path)
    warm = launched(tmp_path)
    assert cold["nvrtc_runs"] >= 1 and cold["first_right"] and cold["later_right"]
    assert warm["first_compiles"] == 0
    assert warm["nvrtc_runs"] == 0
    assert warm["first_right"] and warm["later_right"]
    assert warm["later_compiles"] == 1
    assert warm["context_current"]
