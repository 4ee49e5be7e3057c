# Kernels here compute on element types chosen when each is made, which mypy cannot follow.
# mypy: disable-error-code="valid-type, operator, type-arg"
"""``matmul(a, b)``: the product of two matrices, tiled through shared memory and registers.

Each cube computes a ``BM x BN`` tile of the result with ``TX x TY`` units. Stepping along the
inner dimension ``BK`` at a time, the cube copies an ``BM x BK`` tile of ``a`` and a
``BK x BN`` tile of ``b`` to shared memory (``a``'s transposed, so a step reads a column of it
contiguously), and each unit multiplies ``RM`` values of one by ``RN`` of the other into
``RM x RN`` accumulators in its local array (registers on CUDA). Unit ``(x, y)`` owns rows
``y, y + TY, ...`` and columns ``x, x + TX, ...`` of the tile, so neighbouring units read
neighbouring shared-memory words and write neighbouring results. Floats accumulate in ``f32``
(``f64`` for ``f64``). A :class:`~cubejit.tune.Tuner` picks the tile sizes per size class
among each backend's candidates (:data:`TILES`); the first is its best fixed configuration.

Kernels here are made per element type; a kernel names each type in its body as well as in its
signature, because the frontend resolves annotations through the kernel's closure.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import cubejit as cj
from cubejit.errors import LaunchError
from cubejit.ir.types import Scalar
from cubejit.lang import Kernel
from cubejit.std import cpu_tiles
from cubejit.std.views import accumulator, floating, operand, output
from cubejit.tune import Tunable, Tuner, anchor


@dataclass(frozen=True)
class Tiles:
    """One configuration of the tiled kernel: units per cube and elements per unit."""

    tx: int
    ty: int
    rm: int
    rn: int
    bk: int

    @property
    def bm(self) -> int:
        return self.ty * self.rm

    @property
    def bn(self) -> int:
        return self.tx * self.rn


TILES = {
    "cpu": (Tiles(16, 16, 4, 4, 16), Tiles(32, 32, 2, 2, 16)),
    "cuda": (Tiles(16, 16, 8, 8, 8), Tiles(16, 16, 4, 4, 16), Tiles(32, 8, 4, 8, 8)),
}
"""Each backend's candidate configurations, the best fixed one first (the tuner's default)."""


@functools.cache
def matmul_kernel(T: Scalar) -> Kernel:
    A = accumulator(T)

    @cj.kernel
    def matmul_tiles(
        a: cj.Tensor[T, 2],  # type: ignore[valid-type]
        b: cj.Tensor[T, 2],  # type: ignore[valid-type]
        out: cj.Tensor[T, 2],  # type: ignore[valid-type]
        RM: cj.Comptime[int],
        RN: cj.Comptime[int],
        BK: cj.Comptime[int],
    ):
        tile_a = cj.SharedMemory[A](BK * cj.CUBE_DIM_Y * RM)
        tile_b = cj.SharedMemory[A](BK * cj.CUBE_DIM_X * RN)
        acc = cj.LocalArray[A](RM * RN)
        ra = cj.LocalArray[A](RM)
        rb = cj.LocalArray[A](RN)
        bm = cj.CUBE_DIM_Y * RM
        bn = cj.CUBE_DIM_X * RN
        m = a.shape(0)
        inner = a.shape(1)
        n = b.shape(1)
        m0 = cj.CUBE_POS_Y * bm
        n0 = cj.CUBE_POS_X * bn
        x = cj.UNIT_POS_X
        y = cj.UNIT_POS_Y
        u = cj.UNIT_POS
        for i in cj.unroll(range(RM * RN)):
            acc[i] = A(0)
        for k0 in range(0, inner, BK):
            for e in cj.unroll(range(BK * cj.CUBE_DIM_Y * RM // cj.CUBE_DIM)):
                idx = u + e * cj.CUBE_DIM
                r = idx // BK
                c = idx % BK
                v = A(0)
                if m0 + r < m and k0 + c < inner:
                    v = A(T(a[m0 + r, k0 + c]))
                tile_a[c * bm + r] = v
            for e in cj.unroll(range(BK * cj.CUBE_DIM_X * RN // cj.CUBE_DIM)):
                idx = u + e * cj.CUBE_DIM
                r = idx // bn
                c = idx % bn
                w = A(0)
                if k0 + r < inner and n0 + c < n:
                    w = A(b[k0 + r, n0 + c])
                tile_b[r * bn + c] = w
            cj.sync_cube()
            for kk in cj.unroll(range(BK)):
                for i in cj.unroll(range(RM)):
                    ra[i] = tile_a[kk * bm + y + i * cj.CUBE_DIM_Y]
                for j in cj.unroll(range(RN)):
                    rb[j] = tile_b[kk * bn + x + j * cj.CUBE_DIM_X]
                for i in cj.unroll(range(RM)):
                    for j in cj.unroll(range(RN)):
                        acc[i * RN + j] += ra[i] * rb[j]
            cj.sync_cube()
        for i in cj.unroll(range(RM)):
            for j in cj.unroll(range(RN)):
                row = m0 + y + i * cj.CUBE_DIM_Y
                col = n0 + x + j * cj.CUBE_DIM_X
                if row < m and col < n:
                    out[row, col] = T(acc[i * RN + j])

    return matmul_tiles


def matmul(a: Any, b: Any, *, out: Any = None, client: Any = None) -> Any:
    """The matrix product of ``a`` (``M x K``) and ``b`` (``K x N``), of any strides, as a new
    ``M x N`` array or into ``out``; accumulated in ``f32`` (``f64`` for ``f64``), with no
    reduced-precision (TF32) steps.

    >>> import numpy as np, cubejit.std as cs
    >>> cs.matmul(np.eye(2, dtype=np.float32), np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    array([[1., 2.],
           [3., 4.]], dtype=float32)
    """
    left = operand(a, client, "a")
    right = operand(b, left.client, "b")
    scalar = floating(left, "matmul")
    if right.scalar != scalar:
        raise LaunchError(
            f"cubejit.std.matmul: a holds {scalar.name} and b {right.scalar.name}; cast one"
        )
    if left.ndim != 2 or right.ndim != 2 or left.shape[1] != right.shape[0]:
        raise LaunchError(
            f"cubejit.std.matmul multiplies an M x K matrix by a K x N one, not {left.shape} "
            f"by {right.shape}"
        )
    m, n = left.shape[0], right.shape[1]
    result, dst = output(out, left.client, (m, n), scalar, "matmul")
    if m == 0 or n == 0:
        return result
    if left.client.backend == "cpu":
        cpu_tiles.matmul(left.client, left, right, dst)
        return result
    tuner(left.client.backend, scalar).launch(
        left.client,
        left.view(left.shape, left.strides),
        right.view(right.shape, right.strides),
        dst.view(dst.shape, dst.strides),
    )
    return result


def _candidate(kernel: Kernel, tiles: Tiles) -> Tunable:
    def run(client: Any, a: Any, b: Any, out: Any) -> None:
        cubes = (-(-b.shape[1] // tiles.bn), -(-a.shape[0] // tiles.bm))
        kernel.launch(
            client, cubes, (tiles.tx, tiles.ty), a, b, out, RM=tiles.rm, RN=tiles.rn, BK=tiles.bk
        )

    name = f"{tiles.tx}x{tiles.ty} units, {tiles.rm}x{tiles.rn} each, k-step {tiles.bk}"
    return Tunable(name, run, kernels=(kernel,))


@functools.cache
def tuner(backend: str, scalar: Scalar) -> Tuner:
    """The tuner of :func:`matmul` on ``backend`` for ``scalar``: one decision per size class
    of ``M``, ``K`` and ``N`` (powers of two) among :data:`TILES`."""
    kernel = matmul_kernel(scalar)
    return Tuner(
        f"cubejit.std.matmul.{scalar.name}",
        key=lambda a, b, out: (anchor(a.shape[0]), anchor(a.shape[1]), anchor(b.shape[1])),
        candidates=[_candidate(kernel, t) for t in TILES[backend]],
    )


__all__ = ["matmul"]
