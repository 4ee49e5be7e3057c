"""A row softmax written from scratch: one cube per row, reductions through planes and shared
memory, checked with numpy. ``cubejit.std.softmax`` is the tuned, general form of this kernel.

Each unit walks its row a cube-width at a time. The cube needs two facts about the whole row,
its maximum and the sum of ``exp(x - max)``; each is found in two steps: ``plane_max`` (or
``plane_sum``) combines the lanes of a plane (a CUDA warp: 32 units; on the CPU a plane is one
unit), then the planes' results meet in shared memory, after ``sync_cube``, and the first unit
combines them for everyone.

    python examples/softmax.py [--backend cpu|cuda]
"""

from __future__ import annotations

import argparse

import numpy as np

import cubejit as cj


@cj.function
def cube_max(v: cj.f32) -> cj.f32:
    partial = cj.SharedMemory[cj.f32](cj.CUBE_DIM // cj.PLANE_DIM)
    m = cj.plane_max(v)
    if cj.UNIT_POS_PLANE == 0:
        partial[cj.UNIT_POS // cj.PLANE_DIM] = m
    cj.sync_cube()
    result = partial[0]
    for p in range(1, cj.CUBE_DIM // cj.PLANE_DIM):
        result = max(result, partial[p])
    cj.sync_cube()
    return result


@cj.function
def cube_sum(v: cj.f32) -> cj.f32:
    partial = cj.SharedMemory[cj.f32](cj.CUBE_DIM // cj.PLANE_DIM)
    s = cj.plane_sum(v)
    if cj.UNIT_POS_PLANE == 0:
        partial[cj.UNIT_POS // cj.PLANE_DIM] = s
    cj.sync_cube()
    result = partial[0]
    for p in range(1, cj.CUBE_DIM // cj.PLANE_DIM):
        result += partial[p]
    cj.sync_cube()
    return result


@cj.kernel
def softmax_rows(x: cj.Tensor[cj.f32], out: cj.Tensor[cj.f32], lowest: cj.f32):
    row = cj.CUBE_POS
    n = x.shape(1)
    m = lowest
    for j in range(cj.UNIT_POS, n, cj.CUBE_DIM):
        m = max(m, x[row, j])
    top = cube_max(m)
    s = 0.0
    for j in range(cj.UNIT_POS, n, cj.CUBE_DIM):
        s += cj.exp(x[row, j] - top)
    scale = 1.0 / cube_sum(s)
    for j in range(cj.UNIT_POS, n, cj.CUBE_DIM):
        out[row, j] = cj.exp(x[row, j] - top) * scale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    client = cj.client(parser.parse_args().backend)
    rows, cols = 512, 1000
    host = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    x = client.to_device(host)
    out = client.empty((rows, cols), cj.f32)
    softmax_rows.launch(client, rows, 128, x, out, -np.inf)  # a cube of 128 units per row
    result = client.read(out)
    e = np.exp(host - host.max(axis=1, keepdims=True))
    expected = e / e.sum(axis=1, keepdims=True)
    print(
        f"softmax of {rows} rows of {cols}: matches numpy: "
        f"{np.allclose(result, expected, rtol=1e-5, atol=1e-7)}"
    )


if __name__ == "__main__":
    main()
