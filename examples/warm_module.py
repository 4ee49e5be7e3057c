"""Kernels declared for warming: ``cubejit warm examples/warm_module.py`` compiles them all as
one batch into the active environment, so the program's first launches only load.

Two ways to declare a specialisation: ``warm=[...]`` on the kernel (``cube_dim`` plus comptime
values), and a module-level ``WARM`` list of ``kernel.specialize(...)`` results.
"""

from __future__ import annotations

import cubejit as cj


@cj.kernel(warm=[dict(cube_dim=256), dict(cube_dim=64)])
def scale(factor: cj.f32, x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = factor * x[i]


@cj.kernel
def power(x: cj.Array[cj.f32], out: cj.Array[cj.f32], n: cj.Comptime[int]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        acc = cj.f32(1.0)
        for _ in cj.unroll(range(n)):
            acc = acc * x[i]
        out[i] = acc


WARM = [power.specialize(256, n=2), power.specialize(256, n=3)]
