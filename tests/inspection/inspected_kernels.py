"""Kernels for the inspection tests: each out-of-bounds access is made by one unit (or by units
that all make the same one), so the recorded index and length are known; the tests find each
access's line by its text."""

from __future__ import annotations

import cubejit as cj


@cj.kernel
def write_past(x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        out[i + 1] = x[i] * 2.0


@cj.kernel
def read_past(x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i + 1] + 1.0


@cj.kernel
def read_before(x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.i32(cj.ABSOLUTE_POS)
    if i < cj.i32(out.len()):
        out[i] = x[i - 1]


@cj.kernel
def tensor_read_past(t: cj.Tensor[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        r = i // t.shape(1)
        c = i % t.shape(1)
        out[i] = t[r, c + 1]


@cj.kernel
def tensor_write_past(t: cj.Tensor[cj.f32], x: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        r = i // t.shape(1)
        c = i % t.shape(1)
        t[r + 1, c] = x[i]


@cj.kernel
def shared_write_past(x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    s = cj.SharedMemory[cj.f32](cj.CUBE_DIM)
    u = cj.UNIT_POS
    s[u + 1] = x[cj.ABSOLUTE_POS]
    cj.sync_cube()
    out[cj.ABSOLUTE_POS] = s[u]


@cj.kernel
def shared_read_past(x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    s = cj.SharedMemory[cj.f32](cj.CUBE_DIM)
    u = cj.UNIT_POS
    s[u] = x[cj.ABSOLUTE_POS]
    cj.sync_cube()
    out[cj.ABSOLUTE_POS] = s[u + 1]


@cj.kernel
def local_write_past(x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        window = cj.LocalArray[cj.f32](4)
        for j in range(4):
            window[j] = x[i]
        window[i % 8] = 0.0
        out[i] = window[0] + window[3]


@cj.kernel
def saxpy(a: cj.f32, x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


@cj.kernel
def guarded_neighbours(x: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    n = x.len()
    if i < n:
        left = x[i - 1] if i > 0 else 0.0
        right = 0.0
        if i + 1 < n and x[i + 1] > 0.0:
            right = x[i + 1]
        k = i
        while k < n and x[k] > -1.0:
            k += 4
        out[i] = left + right + cj.f32(k)


@cj.kernel
def prints(x: cj.Array[cj.f32], flags: cj.Array[cj.bool_], scale: cj.i64):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        print("unit", i, "x =", x[i], "flag", flags[i], "scaled", scale * cj.i64(i), "100%")


@cj.kernel
def prints_nothing(x: cj.Array[cj.f32], flags: cj.Array[cj.bool_], scale: cj.i64):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i]


@cj.kernel
def prints_before_guard(x: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    print("unit", i)
    if i < x.len():
        x[i] = x[i] + 1.0


@cj.kernel
def guarded(x: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i] + 1.0


def line_of(text: str) -> int:
    """The line of this file holding ``text``."""
    with open(__file__, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if text in line:
                return number
    raise ValueError(text)
