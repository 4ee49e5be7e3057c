"""The saxpy of LANGUAGE.md: ``out = a * x + y`` over a million floats, checked with numpy.

Run it twice: the first run compiles the kernel, the second loads it from the store.
"""

from __future__ import annotations

import time

import numpy as np

import cubejit as cj


@cj.kernel
def saxpy(a: cj.f32, x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


def main() -> None:
    client = cj.client("cpu")  # or cj.client("cuda", device=0)
    n = 1_000_000
    rng = np.random.default_rng(0)
    x_host = rng.random(n, dtype=np.float32)
    y_host = rng.random(n, dtype=np.float32)
    x = client.to_device(x_host)
    y = client.to_device(y_host)
    out = client.empty(n, cj.f32)
    start = time.perf_counter()
    saxpy.launch(client, cj.cdiv(n, 256), 256, 2.0, x, y, out)  # cube_count, cube_dim, args
    result = client.read(out)  # a numpy array
    first = time.perf_counter() - start
    expected = np.float32(2.0) * x_host + y_host
    print(
        f"saxpy on {n} floats: first launch {first * 1e3:.1f} ms, "
        f"matches numpy: {np.allclose(result, expected, rtol=1e-6)}"
    )


if __name__ == "__main__":
    main()
