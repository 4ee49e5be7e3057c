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
(``f64`` for ``f64``).

Contiguous ``f32`` operands whose sizes divide the tiles take a second kernel,
:func:`lined_matmul_kernel`, which moves everything in lines of four: global memory to
registers to shared memory 16 bytes at a time (the next tile's lines are read while the
current one is multiplied), and each step of the inner loop reads two lines of ``a``'s
(transposed) tile and two of ``b``'s for every ``8 x 8`` accumulators, all of whose indices are
constants or hoisted. The general kernel serves every other case: strides, edges, ``f64``,
``f16``/``bf16``.

On CUDA a :class:`~cubejit.tune.Tuner` picks the tile sizes per size class among the
candidates (:data:`TILES`); the first is its best fixed configuration. The CPU takes its own
form, one unit per cube (:mod:`~cubejit.std.cpu_tiles`); these kernels still run there when
asked for directly (:func:`matmul_candidate`), which is how their CPU tests check them.

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
from cubejit.std.tuned import StandardTuner
from cubejit.std.views import Operand, accumulator, floating, operand, output
from cubejit.tune import Tunable, Tuner, anchor


@dataclass(frozen=True)
class Tiles:
    """One configuration of the tiled kernel: units per cube and elements per unit."""

    tx: int
    ty: int
    rm: int
    rn: int
    bk: int
    lined: bool = False
    """Whether this is a configuration of :func:`lined_matmul_kernel` (``tx * ty`` units in one
    dimension), which only contiguous ``f32`` operands whose sizes divide the tiles take."""
    stages: int = 1
    """The lined kernel's shared tiles: 1, refilled between two barriers each k-step; 2, one
    filled while the other is read, one barrier a k-step (twice the shared memory)."""

    @property
    def bm(self) -> int:
        return self.ty * self.rm

    @property
    def bn(self) -> int:
        return self.tx * self.rn

    @property
    def name(self) -> str:
        kind = "lines, " if self.lined else ""
        kind += "2 stages, " if self.stages == 2 else ""
        return f"{kind}{self.tx}x{self.ty} units, {self.rm}x{self.rn} each, k-step {self.bk}"

    def fits(self, m: int, k: int, n: int) -> bool:
        """Whether the lined kernel covers an ``m x k`` by ``k x n`` product with these tiles."""
        return m % self.bm == 0 and n % self.bn == 0 and k % self.bk == 0


TILES = {
    "cuda": (
        Tiles(16, 16, 8, 8, 8, lined=True),
        Tiles(16, 16, 8, 8, 8, lined=True, stages=2),
        Tiles(16, 16, 8, 8, 16, lined=True),
        Tiles(16, 16, 8, 4, 16, lined=True),
        Tiles(8, 32, 4, 8, 16, lined=True),
        Tiles(16, 16, 4, 4, 16, lined=True),
        Tiles(16, 16, 8, 8, 8),
        Tiles(16, 16, 4, 4, 16),
        Tiles(32, 8, 4, 8, 8),
    ),
}
"""CUDA's candidate configurations, the best fixed one first (the tuner's default).
Lined ones are candidates only where every lined configuration of the backend fits."""

LINE = 4
"""Lanes of the lined kernel's lines: 16 bytes of ``f32``."""

PAD = 4
"""Elements after each k-row of the lined kernel's transposed ``a`` tile: the units storing
one line of ``a`` each write four k-rows, and the pad puts neighbouring rows of ``a`` in
other banks."""


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


@functools.cache
def lined_matmul_kernel() -> Kernel:
    """The ``f32`` kernel for C-contiguous operands, passed lined by four, whose ``BM``, ``BN``
    and ``BK`` divide ``M``, ``N`` and ``K``; one dimension of ``(BM // RM) * (BN // RN)`` units,
    each computing rows ``4y .. 4y + 3`` of every ``BM // (RM // 4)`` and lines ``x`` of every
    ``BN // RN`` of its cube's tile (``RM`` and ``RN`` multiples of 4), through ``STAGES``
    (1 or 2) shared tiles of each operand."""

    @cj.kernel
    def matmul_lines(
        a: cj.Tensor[cj.Line[cj.f32], 2],
        b: cj.Tensor[cj.Line[cj.f32], 2],
        out: cj.Tensor[cj.Line[cj.f32], 2],
        BM: cj.Comptime[int],
        BN: cj.Comptime[int],
        BK: cj.Comptime[int],
        RM: cj.Comptime[int],
        RN: cj.Comptime[int],
        STAGES: cj.Comptime[int],
    ):
        tile_a = cj.SharedMemory[cj.f32](STAGES * BK * (BM + PAD))
        tile_b = cj.SharedMemory[cj.Line[cj.f32, 4]](STAGES * BK * BN // LINE)
        acc = cj.LocalArray[cj.Line[cj.f32, 4]](RM * RN // LINE)
        ra = cj.LocalArray[cj.f32](RM)
        rb = cj.LocalArray[cj.Line[cj.f32, 4]](RN // LINE)
        next_a = cj.LocalArray[cj.Line[cj.f32, 4]](BM * BK // LINE // cj.CUBE_DIM)
        next_b = cj.LocalArray[cj.Line[cj.f32, 4]](BK * BN // LINE // cj.CUBE_DIM)
        inner = a.shape(1) * LINE
        m0 = cj.CUBE_POS_Y * BM
        n0 = cj.CUBE_POS_X * (BN // LINE)
        u = cj.UNIT_POS
        x = u % (BN // RN)
        y = u // (BN // RN)
        for i in cj.unroll(range(RM * RN // LINE)):
            acc[i] = cj.line(cj.f32(0), 4)
        for e in cj.unroll(range(BM * BK // LINE // cj.CUBE_DIM)):
            next_a[e] = a[
                m0 + (u + e * cj.CUBE_DIM) // (BK // LINE), (u + e * cj.CUBE_DIM) % (BK // LINE)
            ]
        for e in cj.unroll(range(BK * BN // LINE // cj.CUBE_DIM)):
            next_b[e] = b[
                (u + e * cj.CUBE_DIM) // (BN // LINE), n0 + (u + e * cj.CUBE_DIM) % (BN // LINE)
            ]
        for e in cj.unroll(range(BM * BK // LINE // cj.CUBE_DIM)):
            va = next_a[e]
            for lane in cj.unroll(range(LINE)):
                k = (u + e * cj.CUBE_DIM) % (BK // LINE) * LINE + lane
                tile_a[k * (BM + PAD) + (u + e * cj.CUBE_DIM) // (BK // LINE)] = va[lane]
        for e in cj.unroll(range(BK * BN // LINE // cj.CUBE_DIM)):
            tile_b[u + e * cj.CUBE_DIM] = next_b[e]
        cj.sync_cube()
        for k0 in range(0, inner, BK):
            step = k0 // BK
            at_a = step % STAGES * (BK * (BM + PAD))
            at_b = step % STAGES * (BK * BN // LINE)
            to_a = (step + 1) % STAGES * (BK * (BM + PAD))
            to_b = (step + 1) % STAGES * (BK * BN // LINE)
            k1 = k0 + BK
            if k1 < inner:
                for e in cj.unroll(range(BM * BK // LINE // cj.CUBE_DIM)):
                    next_a[e] = a[
                        m0 + (u + e * cj.CUBE_DIM) // (BK // LINE),
                        k1 // LINE + (u + e * cj.CUBE_DIM) % (BK // LINE),
                    ]
                for e in cj.unroll(range(BK * BN // LINE // cj.CUBE_DIM)):
                    next_b[e] = b[
                        k1 + (u + e * cj.CUBE_DIM) // (BN // LINE),
                        n0 + (u + e * cj.CUBE_DIM) % (BN // LINE),
                    ]
            for kk in cj.unroll(range(BK)):
                for i in cj.unroll(range(RM)):
                    group = i // LINE * (BM // (RM // LINE))
                    ra[i] = tile_a[at_a + kk * (BM + PAD) + group + y * LINE + i % LINE]
                for j in cj.unroll(range(RN // LINE)):
                    rb[j] = tile_b[at_b + kk * (BN // LINE) + x + j * (BN // RN)]
                for i in cj.unroll(range(RM)):
                    for j in cj.unroll(range(RN // LINE)):
                        acc[i * (RN // LINE) + j] += ra[i] * rb[j]
            if STAGES == 1:
                cj.sync_cube()
            if k1 < inner:
                for e in cj.unroll(range(BM * BK // LINE // cj.CUBE_DIM)):
                    va = next_a[e]
                    for lane in cj.unroll(range(LINE)):
                        k = (u + e * cj.CUBE_DIM) % (BK // LINE) * LINE + lane
                        at = to_a + k * (BM + PAD)
                        tile_a[at + (u + e * cj.CUBE_DIM) // (BK // LINE)] = va[lane]
                for e in cj.unroll(range(BK * BN // LINE // cj.CUBE_DIM)):
                    tile_b[to_b + u + e * cj.CUBE_DIM] = next_b[e]
            cj.sync_cube()
        for i in cj.unroll(range(RM)):
            for j in cj.unroll(range(RN // LINE)):
                row = m0 + i // LINE * (BM // (RM // LINE)) + y * LINE + i % LINE
                out[row, n0 + x + j * (BN // RN)] = acc[i * (RN // LINE) + j]

    return matmul_lines


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
    lined = fits_lines(left.client.backend, left, right, dst)
    tuner(left.client.backend, scalar, lined).launch(
        left.client,
        left.view(left.shape, left.strides),
        right.view(right.shape, right.strides),
        dst.view(dst.shape, dst.strides),
    )
    return result


def fits_lines(backend: str, a: Operand, b: Operand, out: Operand) -> bool:
    """Whether the lined kernel's configurations of ``backend`` all cover this product:
    ``f32``, C-contiguous, 16-byte aligned operands whose sizes divide every lined tile."""
    configs = [t for t in TILES.get(backend, ()) if t.lined]
    if not configs or a.scalar.name != "f32":
        return False
    m, k = a.shape
    n = b.shape[1]
    for x in (a, b, out):
        rows, cols = x.shape
        if x.strides[1] != 1 or (rows > 1 and x.strides[0] != cols) or _address(x) % 16:
            return False
    return all(t.fits(m, k, n) for t in configs)


def _address(x: Operand) -> int:
    return x.base if isinstance(x.base, int) else int(x.base.ctypes.data)


def matmul_candidate(tiles: Tiles, scalar: Scalar) -> Tunable:
    """The tuner's candidate for ``tiles``: ``fn(client, a, b, out)`` launches its kernel on
    views of the operands (the lined kernel's only on operands :func:`fits_lines` accepts)."""
    if tiles.lined:
        lined = lined_matmul_kernel()

        def run_lined(client: Any, a: Any, b: Any, out: Any) -> None:
            cubes = (b.shape[1] // tiles.bn, a.shape[0] // tiles.bm)
            lined.launch(
                client,
                cubes,
                tiles.tx * tiles.ty,
                cj.lined(a, LINE),
                cj.lined(b, LINE),
                cj.lined(out, LINE),
                BM=tiles.bm,
                BN=tiles.bn,
                BK=tiles.bk,
                RM=tiles.rm,
                RN=tiles.rn,
                STAGES=tiles.stages,
            )

        return Tunable(tiles.name, run_lined, kernels=(lined,))
    kernel = matmul_kernel(scalar)

    def run(client: Any, a: Any, b: Any, out: Any) -> None:
        cubes = (-(-b.shape[1] // tiles.bn), -(-a.shape[0] // tiles.bm))
        kernel.launch(
            client, cubes, (tiles.tx, tiles.ty), a, b, out, RM=tiles.rm, RN=tiles.rn, BK=tiles.bk
        )

    return Tunable(tiles.name, run, kernels=(kernel,))


@functools.cache
def tuner(backend: str, scalar: Scalar, lined: bool = False) -> Tuner:
    """The tuner of :func:`matmul` on ``backend`` for ``scalar``: one decision per size class
    of ``M``, ``K`` and ``N`` (powers of two) among :data:`TILES`; those of the lined kernel
    are candidates (first) only when ``lined``, for operands :func:`fits_lines` accepts."""
    configs = [t for t in TILES[backend] if lined or not t.lined]
    return StandardTuner(
        f"cubejit.std.matmul.{scalar.name}" + (".lined" if lined else ""),
        key=lambda a, b, out: (anchor(a.shape[0]), anchor(a.shape[1]), anchor(b.shape[1])),
        candidates=[matmul_candidate(t, scalar) for t in configs],
    )


__all__ = ["matmul"]
