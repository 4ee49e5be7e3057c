"""A tiled matrix product written from scratch, checked with numpy. ``cubejit.std.matmul`` is
the tuned, general form of this kernel (it also keeps a tile of results per unit in registers).

A cube of ``T x T`` units computes one ``T x T`` tile of the result. Stepping along the inner
dimension a tile at a time, the units copy one tile of ``a`` and one of ``b`` to shared memory
(each unit one element of each), wait for each other (``sync_cube``), and each multiplies a row
of the one by a column of the other into its own sum; a second ``sync_cube`` keeps the tiles
until everyone is done with them. Every element of ``a`` and ``b`` is then read from memory
``N / T`` times instead of ``N`` times.

    python examples/matmul.py [--backend cpu|cuda]
"""

from __future__ import annotations

import argparse

import numpy as np

import cubejit as cj


@cj.kernel
def matmul(
    a: cj.Tensor[cj.f32],
    b: cj.Tensor[cj.f32],
    out: cj.Tensor[cj.f32],
    T: cj.Comptime[int],
):
    tile_a = cj.SharedMemory[cj.f32](T * T)
    tile_b = cj.SharedMemory[cj.f32](T * T)
    x = cj.UNIT_POS_X
    y = cj.UNIT_POS_Y
    row = cj.CUBE_POS_Y * T + y
    col = cj.CUBE_POS_X * T + x
    m = a.shape(0)
    inner = a.shape(1)
    n = b.shape(1)
    acc = 0.0
    for k0 in range(0, inner, T):
        tile_a[y * T + x] = 0.0
        tile_b[y * T + x] = 0.0
        if row < m and k0 + x < inner:
            tile_a[y * T + x] = a[row, k0 + x]
        if k0 + y < inner and col < n:
            tile_b[y * T + x] = b[k0 + y, col]
        cj.sync_cube()
        for k in cj.unroll(range(T)):
            acc += tile_a[y * T + k] * tile_b[k * T + x]
        cj.sync_cube()
    if row < m and col < n:
        out[row, col] = acc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    client = cj.client(parser.parse_args().backend)
    m, k, n, t = 300, 200, 250, 16
    rng = np.random.default_rng(0)
    a_host = rng.standard_normal((m, k)).astype(np.float32)
    b_host = rng.standard_normal((k, n)).astype(np.float32)
    out = client.empty((m, n), cj.f32)
    cubes = (cj.cdiv(n, t), cj.cdiv(m, t))
    matmul.launch(
        client, cubes, (t, t), client.to_device(a_host), client.to_device(b_host), out, T=t
    )
    result = client.read(out)
    print(
        f"matmul of {m}x{k} by {k}x{n}: matches numpy: "
        f"{np.allclose(result, a_host @ b_host, rtol=1e-4, atol=1e-4)}"
    )


if __name__ == "__main__":
    main()
