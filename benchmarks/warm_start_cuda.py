"""A warm start on a GPU, phase by phase, side by side with CuPy: what a fresh process pays
before its first result when every kernel is in the store (CuPy: in its kernel cache).

Each measure is the median of ``--runs`` fresh processes after one cold process filled the
caches (the cold one is reported too); cubejit's bytecode is compiled first, as installing it
does (the peers' was), and each library runs once on a cache of its own before its cold run,
so that both cold runs find their shared libraries (NVRTC's above all) read from disk before,
whichever ran first. Inside a process, with ``time.perf_counter()``:

- ``import cubejit`` / ``import cupy``, after ``import numpy``;
- ``cj.client("cuda")`` / CuPy's device and context set-up (``Device(0).use()`` and a first
  allocation, which creates the context);
- the first launch of the stored saxpy (launch and synchronise; arrays made before);
- the whole process, from its start to the first saxpy read back, measured by the parent
  around the child (interpreter start included, the same for both);
- ``--kernels`` distinct stored kernels (a saxpy plus a different constant each) launched once
  each: cubejit queues them and compiles the queue as one batch (all from the store), CuPy
  makes one ``RawKernel`` each (all from its cache).

Used by ``benchmarks/warm_start.py --cuda`` and ``benchmarks/cuda_vs_peers.py``; needs a GPU,
CuPy optional.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from fresh_process import ROOT, SAXPY, environment, run_fresh

N = 1 << 20

CUBEJIT = """
import time
start = time.perf_counter()
import json
import numpy as np
numpy_at = time.perf_counter()
import cubejit as cj
import_at = time.perf_counter()
client = cj.client("cuda")
client_at = time.perf_counter()
{saxpy}
n, kernels = {n}, {kernels}
host = np.random.default_rng(0).random(n, dtype=np.float32)
x, y, out = client.to_device(host), client.to_device(host), client.empty(n, cj.f32)
client.sync()
first = time.perf_counter()
saxpy.launch(client, n // 256, 256, 2.0, x, y, out, k=0)
client.sync()
first_at = time.perf_counter()
result = client.read(out)
read_at = time.perf_counter()
assert np.allclose(result, 3 * host)
many = time.perf_counter()
for k in range(1, kernels + 1):
    saxpy.prepare(client, 256, k=k)
client.compile_queued()
for k in range(1, kernels + 1):
    saxpy.launch(client, n // 256, 256, 2.0, x, y, out, k=k)
client.sync()
many_at = time.perf_counter()
assert np.allclose(client.read(out), 3 * host + kernels)
print(json.dumps({{
    "import": import_at - numpy_at, "client": client_at - import_at,
    "first": first_at - first, "to_result": read_at - start, "many": many_at - many,
    "compiles": client.compiler.compilations,
}}))
"""

CUPY = """
import time
start = time.perf_counter()
import json
import numpy as np
numpy_at = time.perf_counter()
import cupy as cp
import_at = time.perf_counter()
cp.cuda.Device(0).use()
cp.empty(1, cp.float32)
cp.cuda.Device().synchronize()
client_at = time.perf_counter()
SOURCE = r'''
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out,
                                 unsigned int n) {{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i] + %d.0f;
}}
'''
n, kernels = {n}, {kernels}
host = np.random.default_rng(0).random(n, dtype=np.float32)
x, y, out = cp.asarray(host), cp.asarray(host), cp.empty(n, cp.float32)
cp.cuda.Device().synchronize()
first = time.perf_counter()
cp.RawKernel(SOURCE % 0, "saxpy")((n // 256,), (256,), (cp.float32(2.0), x, y, out, cp.uint32(n)))
cp.cuda.Device().synchronize()
first_at = time.perf_counter()
result = cp.asnumpy(out)
read_at = time.perf_counter()
assert np.allclose(result, 3 * host)
many = time.perf_counter()
for k in range(1, kernels + 1):
    cp.RawKernel(SOURCE % k, "saxpy")((n // 256,), (256,), (cp.float32(2.0), x, y, out,
                                                           cp.uint32(n)))
cp.cuda.Device().synchronize()
many_at = time.perf_counter()
assert np.allclose(cp.asnumpy(out), 3 * host + kernels)
print(json.dumps({{
    "import": import_at - numpy_at, "client": client_at - import_at,
    "first": first_at - first, "to_result": read_at - start, "many": many_at - many,
}}))
"""


def _run(script: str, environ: dict[str, str]) -> dict[str, Any] | str:
    """One fresh process: its JSON line with ``process`` (its wall time, from the parent) for
    the whole run, or why it failed."""
    ran = run_fresh(script, environ)
    if ran.report is None:
        return ran.failure[:60]
    return {**ran.report, "process": ran.seconds}


def _compile_bytecode() -> None:
    """Compiles cubejit's bytecode, as installing it does: a cold run then measures a cold
    store, not Python compiling cubejit's modules (the peers' were compiled when installed)."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "cubejit")],
        env=environment(),
        check=True,
        capture_output=True,
    )


def measure(runs: int, kernels: int) -> dict[str, dict[str, Any] | str]:
    """Per library: the cold run's report and the median of ``runs`` warm ones, per key."""
    _compile_bytecode()
    work = Path(tempfile.mkdtemp(prefix="cubejit-warm-cuda-"))
    libraries = {"cubejit": (CUBEJIT, "CUBEJIT_CACHE_DIR"), "CuPy": (CUPY, "CUPY_CACHE_DIR")}
    results: dict[str, dict[str, Any] | str] = {}
    for name, (template, cache) in libraries.items():
        script = template.format(n=N, kernels=kernels, saxpy=SAXPY)
        _run(script, {cache: str(work / f"{name}-first")})
        environ = {cache: str(work / name)}
        cold = _run(script, environ)
        if isinstance(cold, str):
            results[name] = cold
            continue
        warm = [_run(script, environ) for _ in range(runs)]
        good = [w for w in warm if isinstance(w, dict)]
        if not good:
            results[name] = str(warm[0])
            continue
        median = {k: statistics.median(w[k] for w in good) for k in good[0]}
        results[name] = {"cold": cold, "warm": median}
    return results


Row = tuple[str, str, str, str, str]


def _ms(value: float) -> str:
    return f"{value * 1e3:.3g} ms"


def rows(runs: int = 5, kernels: int = 100) -> list[Row]:
    """The table's rows: measure, cubejit, CuPy, (no third peer), ratio and target."""
    found = measure(runs, kernels)
    ours, cupy = found["cubejit"], found["CuPy"]
    if isinstance(ours, str):
        return [("warm start (CUDA): failed", ours, "", "", "")]
    table: list[Row] = []
    measures = (
        ("import cubejit / cupy, over numpy", "import", "target <= 20 ms"),
        ('cj.client("cuda") warm / device + context', "client", "target <= CuPy"),
        ("warm first launch of the stored saxpy", "first", "target <= 0.3 ms, <= 0.7x CuPy"),
        ("fresh process, start -> first saxpy read", "process", "target <= 0.9x CuPy"),
        (f"{kernels} distinct stored kernels", "many", "target >= 3x faster than CuPy"),
    )
    for label, key, target in measures:
        mine = ours["warm"][key]
        theirs = cupy["warm"][key] if isinstance(cupy, dict) else None
        ratio = "-" if theirs is None else f"{mine / theirs:.2f}x CuPy's time"
        table.append(
            (label, _ms(mine), "-" if theirs is None else _ms(theirs), "", f"{ratio}; {target}")
        )
    cold_theirs = cupy["cold"]["first"] if isinstance(cupy, dict) else None
    table.append(
        (
            "cold first launch (empty caches)",
            _ms(ours["cold"]["first"]),
            "-" if cold_theirs is None else _ms(cold_theirs),
            "",
            "target <= CuPy",
        )
    )
    table.append(
        ("  NVRTC runs in a warm process", str(ours["warm"]["compiles"]), "", "", "must be 0")
    )
    return table


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kernels", type=int, default=100)
    options = parser.parse_args()
    main_rows(options.runs, options.kernels)


def main_rows(runs: int, kernels: int) -> None:
    """Measures and prints the table."""
    table = rows(runs, kernels)
    header = ("measure", "cubejit", "CuPy", "", "ratio / target")
    widths = [max(len(r[i]) for r in (header, *table)) for i in range(5)]
    for row in (header, tuple("-" * w for w in widths), *table):
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
