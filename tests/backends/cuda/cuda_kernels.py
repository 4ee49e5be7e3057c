"""Test kernels built directly as IR, with numpy references, for the CUDA backend's tests.

Each :class:`Case` is a kernel (an :class:`IRSpec`, which has what a ``KernelSpec`` gives the
compiler and the client), how to make its inputs, and what numpy says its outputs are. Kernels
with many results write them into one output array, ``out[i * K + k]``, so one kernel checks
many constructs with one compilation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cubejit.compile.id import KernelId
from cubejit.ir import nodes as ir
from cubejit.ir.types import (
    ArrayType,
    Scalar,
    bf16,
    bool_,
    f16,
    f32,
    f64,
    i32,
    i64,
    u32,
    u64,
)

B = ir.BinaryOp
M = ir.MathFn
P = ir.Position


@dataclass(frozen=True)
class IRSpec:
    """A kernel given as IR, specialised for ``cube_dim``: what the compiler and a client ask
    of a ``KernelSpec``."""

    kernel: ir.KernelIR
    cube_dim: tuple[int, int, int] = (64, 1, 1)
    file: str = __file__
    line: int = 1

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def params(self) -> tuple[ir.Param, ...]:
        return self.kernel.params

    def id(self) -> KernelId:
        return KernelId(self.kernel.name, repr(self.kernel), self.cube_dim)

    def define(self, plane_dim: int | None = None) -> ir.KernelIR:
        return self.kernel


def v(name: str, t: Scalar) -> ir.Var:
    return ir.Var(name, t)


def c(value: bool | int | float, t: Scalar) -> ir.Const:
    return ir.Const(value, t)


def op(o: ir.BinaryOp, lhs: ir.Expr, rhs: ir.Expr) -> ir.Binary:
    t = bool_ if o.is_comparison or o.is_logical else lhs.type
    return ir.Binary(o, lhs, rhs, t)


def load(array: str, index: ir.Expr, t: Scalar) -> ir.Load:
    return ir.Load(array, index, t)


def math_(fn: ir.MathFn, *args: ir.Expr) -> ir.Math:
    return ir.Math(fn, args, args[0].type)


def arr(name: str, t: Scalar) -> ir.Param:
    return ir.Param(name, ArrayType(t))


I = v("i", u32)  # noqa: E741


def per_element(
    name: str,
    t: Scalar,
    inputs: tuple[str, ...],
    results: list[ir.Expr],
    out_t: Scalar | None = None,
    extra_locals: tuple[ir.Local, ...] = (),
) -> ir.KernelIR:
    """``out[i * K + k] = results[k]`` for every ``i`` below the length of the first input;
    ``results`` read the inputs at ``i`` through :func:`at`."""
    out_t = out_t or t
    k = len(results)
    stores = tuple(
        ir.Store(
            "out",
            op(B.ADD, op(B.MUL, I, c(k, u32)), c(j, u32)),
            r if r.type == out_t else ir.Cast(r, out_t),
        )
        for j, r in enumerate(results)
    )
    guard = op(B.LT, I, ir.Length(inputs[0]))
    body = (ir.Assign("i", ir.PositionOf(P.ABSOLUTE_POS)), ir.If(guard, stores))
    params = (*(arr(n, t) for n in inputs), arr("out", out_t))
    return ir.KernelIR(name, params, (ir.Local("i", u32), *extra_locals), body)


def at(name: str, t: Scalar) -> ir.Load:
    return load(name, I, t)


@dataclass(frozen=True)
class Case:
    """A kernel, its inputs and numpy's answer."""

    spec: IRSpec
    inputs: Callable[[np.random.Generator], dict[str, np.ndarray]]
    """Input arrays by parameter name (scalars as 0-d arrays)."""
    expected: Callable[[dict[str, np.ndarray]], np.ndarray]
    """The output numpy computes from the inputs."""
    out_len: Callable[[dict[str, np.ndarray]], int]
    out_t: Scalar
    cube_count: Callable[[dict[str, np.ndarray]], int | tuple[int, ...]] = lambda _: 4
    tolerance: float = 0.0
    """Relative and absolute tolerance; 0 for exact."""
    fill: int = 0
    """What the output holds before the launch (what units that write nothing leave)."""


N = 200


def _ints(rng: np.random.Generator, dtype: Any, low: int, high: int) -> np.ndarray:
    return rng.integers(low, high, N).astype(dtype)


def _saxpy() -> Case:
    body = (
        ir.Assign("i", ir.PositionOf(P.ABSOLUTE_POS)),
        ir.If(
            op(B.LT, I, ir.Length("out")),
            (ir.Store("out", I, op(B.ADD, op(B.MUL, v("a", f32), at("x", f32)), at("y", f32))),),
        ),
    )
    kernel = ir.KernelIR(
        "saxpy",
        (ir.Param("a", f32), arr("x", f32), arr("y", f32), arr("out", f32)),
        (ir.Local("i", u32),),
        body,
    )

    def inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {
            "a": np.float32(rng.standard_normal()),
            "x": rng.standard_normal(N).astype(np.float32),
            "y": rng.standard_normal(N).astype(np.float32),
        }

    return Case(
        IRSpec(kernel),
        inputs,
        lambda d: d["a"] * d["x"] + d["y"],
        lambda d: N,
        f32,
        tolerance=1e-5,
    )


def _signed(t: Scalar) -> Case:
    x, y, e = at("x", t), at("y", t), at("e", t)
    results: list[ir.Expr] = [
        op(B.FLOORDIV, x, y),
        op(B.MOD, x, y),
        op(B.POW, x, e),
        op(B.BITOR, op(B.BITAND, x, y), op(B.BITXOR, x, c(3, t))),
        op(B.SHR, op(B.SHL, x, e), c(1, t)),
        op(B.ADD, ir.Unary(ir.UnaryOp.NEG, x, t), ir.Unary(ir.UnaryOp.INVERT, y, t)),
        ir.Select(op(B.LT, x, y), math_(M.MIN, x, y), math_(M.MAX, math_(M.ABS, x), y), t),
        ir.Cast(op(B.OR, op(B.GE, x, c(0, t)), op(B.EQ, y, c(-1, t))), t),
    ]
    dtype = t.dtype

    def inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {
            "x": _ints(rng, dtype, -60, 60),
            "y": _ints(rng, dtype, -12, 12),
            "e": _ints(rng, dtype, 0, 6),
        }

    def expected(d: dict[str, np.ndarray]) -> np.ndarray:
        x, y, e = d["x"], d["y"], d["e"]
        with np.errstate(all="ignore"):
            cols = [
                np.where(y == 0, 0, x // np.where(y == 0, 1, y)),
                np.where(y == 0, 0, x % np.where(y == 0, 1, y)),
                x**e,
                (x & y) | (x ^ 3),
                (x << e) >> 1,
                -x + ~y,
                np.where(x < y, np.minimum(x, y), np.maximum(np.abs(x), y)),
                ((x >= 0) | (y == -1)).astype(dtype),
            ]
        return np.stack(cols, axis=1).astype(dtype).reshape(-1)

    kernel = per_element(f"signed_{t.name}", t, ("x", "y", "e"), results)
    return Case(IRSpec(kernel), inputs, expected, lambda d: N * len(results), t)


def _unsigned(t: Scalar) -> Case:
    x, y = at("x", t), at("y", t)
    results: list[ir.Expr] = [
        op(B.FLOORDIV, x, y),
        op(B.MOD, x, y),
        op(B.SUB, y, x),
        op(B.MUL, x, c(2**t.bits - 3, t)),
        op(B.POW, x, c(3, u32)),
        math_(M.MAX, x, y),
    ]
    dtype = t.dtype

    def inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": _ints(rng, dtype, 0, 5000), "y": _ints(rng, dtype, 0, 40)}

    def expected(d: dict[str, np.ndarray]) -> np.ndarray:
        x, y = d["x"], d["y"]
        safe = np.where(y == 0, 1, y)
        with np.errstate(all="ignore"):
            cols = [
                np.where(y == 0, 0, x // safe),
                np.where(y == 0, 0, x % safe),
                y - x,
                x * dtype.type(2**t.bits - 3),
                x**3,
                np.maximum(x, y),
            ]
        return np.stack(cols, axis=1).astype(dtype).reshape(-1)

    kernel = per_element(f"unsigned_{t.name}", t, ("x", "y"), results)
    return Case(IRSpec(kernel), inputs, expected, lambda d: N * len(results), t)


_FLOAT_FNS = (
    (M.EXP, np.exp),
    (M.SIN, np.sin),
    (M.COS, np.cos),
    (M.TAN, np.tan),
    (M.TANH, np.tanh),
    (M.FLOOR, np.floor),
    (M.CEIL, np.ceil),
    (M.ABS, np.abs),
)


def _floats(t: Scalar) -> Case:
    x, y = at("x", t), at("y", t)
    results: list[ir.Expr] = [
        op(B.DIV, x, y),
        op(B.FLOORDIV, x, y),
        op(B.MOD, x, y),
        math_(M.POW, math_(M.ABS, x), y),
        math_(M.SQRT, math_(M.ABS, x)),
        math_(M.LOG, op(B.ADD, math_(M.ABS, x), c(1.0, t))),
        math_(M.ERF, x),
        math_(M.MIN, x, y),
        math_(M.MAX, x, y),
        math_(M.FMA, x, y, c(0.5, t)),
        ir.Select(op(B.LT, x, y), ir.Unary(ir.UnaryOp.NEG, x, t), y, t),
        op(B.MUL, x, c(float("inf"), t)),
        *(math_(fn, x) for fn, _ in _FLOAT_FNS),
    ]
    dtype = t.dtype

    def inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {
            "x": (rng.standard_normal(N) * 3).astype(dtype),
            "y": (rng.standard_normal(N) * 2).astype(dtype),
        }

    def expected(d: dict[str, np.ndarray]) -> np.ndarray:
        x, y = d["x"], d["y"]
        with np.errstate(all="ignore"):
            cols = [
                x / y,
                x // y,
                x % y,
                np.abs(x) ** y,
                np.sqrt(np.abs(x)),
                np.log(np.abs(x) + 1),
                erf_reference(x.astype(np.float64)).astype(dtype),
                np.fmin(x, y),
                np.fmax(x, y),
                x * y + dtype.type(0.5),
                np.where(x < y, -x, y),
                x * np.inf,
                *(f(x) for _, f in _FLOAT_FNS),
            ]
        return np.stack(cols, axis=1).astype(dtype).reshape(-1)

    kernel = per_element(f"floats_{t.name}", t, ("x", "y"), results)
    tol = 2e-6 if t == f32 else 1e-13
    return Case(IRSpec(kernel), inputs, expected, lambda d: N * len(results), t, tolerance=tol)


def _halves(t: Scalar) -> Case:
    x, y = at("x", t), at("y", t)
    results: list[ir.Expr] = [
        op(B.ADD, x, y),
        op(B.MUL, x, y),
        op(B.SUB, x, c(1.5, t)),
        math_(M.SQRT, math_(M.ABS, x)),
        op(B.FLOORDIV, x, y),
        ir.Cast(ir.Cast(x, i32), t),
        ir.Cast(op(B.LT, x, y), t),
    ]

    def inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {
            "x": to_half(t, rng.standard_normal(N).astype(np.float32) * 4),
            "y": to_half(t, rng.standard_normal(N).astype(np.float32) + 3),
        }

    def expected(d: dict[str, np.ndarray]) -> np.ndarray:
        x, y = from_half(t, d["x"]), from_half(t, d["y"])
        with np.errstate(all="ignore"):
            cols = [
                x + y,
                x * y,
                x - 1.5,
                np.sqrt(np.abs(x)),
                np.floor(x / y),
                np.trunc(x),
                (x < y).astype(np.float32),
            ]
        return to_half(t, np.stack(cols, axis=1).astype(np.float32).reshape(-1))

    kernel = per_element(f"halves_{t.name}", t, ("x", "y"), results)
    return Case(IRSpec(kernel), inputs, expected, lambda d: N * len(results), t, tolerance=1e-2)


def to_half(t: Scalar, values: np.ndarray) -> np.ndarray:
    """``values`` (float32) rounded to ``t``, in ``t``'s buffer dtype."""
    if t == f16:
        return values.astype(np.float16)
    bits = values.astype(np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def from_half(t: Scalar, values: np.ndarray) -> np.ndarray:
    """``t``'s buffer values as float32."""
    if t == f16:
        return values.astype(np.float32)
    return (values.astype(np.uint32) << 16).view(np.float32)


def _casts() -> Case:
    f, n, k = at("f", f64), at("n", i64), at("k", u32)
    results: list[ir.Expr] = [
        ir.Cast(ir.Cast(f, i32), f64),
        ir.Cast(ir.Cast(f, f32), f64),
        ir.Cast(ir.Cast(n, u32), f64),
        ir.Cast(ir.Cast(k, i32), f64),
        ir.Cast(ir.Cast(n, bool_), f64),
        ir.Cast(op(B.EQ, n, c(-(2**63), i64)), f64),
        ir.Cast(op(B.MUL, ir.Cast(k, u64), c(2**40, u64)), f64),
        op(B.ADD, f, c(float("-inf"), f64)),
        ir.Cast(op(B.NE, c(float("nan"), f32), c(float("nan"), f32)), f64),
    ]

    def inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {
            "f": rng.standard_normal(N) * 1e3,
            "n": rng.integers(-(2**40), 2**40, N).astype(np.int64),
            "k": rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32),
        }

    def expected(d: dict[str, np.ndarray]) -> np.ndarray:
        f, n, k = d["f"], d["n"], d["k"]
        with np.errstate(all="ignore"):
            cols = [
                f.astype(np.int32).astype(np.float64),
                f.astype(np.float32).astype(np.float64),
                n.astype(np.uint32).astype(np.float64),
                k.astype(np.int32).astype(np.float64),
                (n != 0).astype(np.float64),
                (n == np.int64(-(2**63))).astype(np.float64),
                (k.astype(np.uint64) * np.uint64(2**40)).astype(np.float64),
                f + -np.inf,
                np.ones(N),
            ]
        return np.stack(cols, axis=1).reshape(-1)

    params = (arr("f", f64), arr("n", i64), arr("k", u32), arr("out", f64))
    stores = per_element("casts", f64, ("f",), results).body
    kernel = ir.KernelIR("casts", params, (ir.Local("i", u32),), stores)
    return Case(IRSpec(kernel), inputs, expected, lambda d: N * len(results), f64)


def _control_flow() -> Case:
    """Loops with constant and run-time steps, ``while`` with ``continue``/``break``, an
    early ``return`` and an ``if``/``elif``/``else`` chain."""
    x = at("x", i32)
    acc, j, k = v("acc", i32), v("j", i32), v("k", i32)
    body = (
        ir.Assign("i", ir.PositionOf(P.ABSOLUTE_POS)),
        ir.If(op(B.GE, I, ir.Length("x")), (ir.Return(),)),
        ir.Assign("acc", c(0, i32)),
        ir.RangeFor(
            "j",
            op(B.MOD, x, c(7, i32)),
            c(20, i32),
            c(3, i32),
            (ir.Assign("acc", op(B.ADD, acc, j)),),
        ),
        ir.RangeFor(
            "j",
            c(10, i32),
            op(B.MOD, x, c(5, i32)),
            ir.Unary(ir.UnaryOp.NEG, op(B.ADD, c(1, i32), op(B.MOD, x, c(3, i32))), i32),
            (ir.Assign("acc", op(B.SUB, acc, j)),),
        ),
        ir.Assign("k", c(0, i32)),
        ir.While(
            c(True, bool_),
            (
                ir.Assign("k", op(B.ADD, k, c(1, i32))),
                ir.If(op(B.EQ, op(B.MOD, k, c(3, i32)), c(0, i32)), (ir.Continue(),)),
                ir.If(op(B.GT, k, c(10, i32)), (ir.Break(),)),
                ir.Assign("acc", op(B.ADD, acc, k)),
            ),
        ),
        ir.If(op(B.GT, x, c(80, i32)), (ir.Return(),)),
        ir.If(
            op(B.EQ, op(B.MOD, acc, c(2, i32)), c(0, i32)),
            (ir.Store("out", I, acc),),
            (
                ir.If(
                    op(B.EQ, op(B.MOD, acc, c(3, i32)), c(0, i32)),
                    (ir.Store("out", I, ir.Unary(ir.UnaryOp.NEG, acc, i32)),),
                    (ir.Store("out", I, op(B.MUL, acc, c(2, i32))),),
                ),
            ),
        ),
    )
    kernel = ir.KernelIR(
        "control_flow",
        (arr("x", i32), arr("out", i32)),
        tuple(ir.Local(n, t) for n, t in (("i", u32), ("acc", i32), ("j", i32), ("k", i32))),
        body,
    )

    def one(x: int) -> int | None:
        acc = sum(range(x % 7, 20, 3))
        acc -= sum(range(10, x % 5, -(1 + x % 3)))
        acc += sum(k for k in range(1, 11) if k % 3 != 0)
        if x > 80:
            return None
        if acc % 2 == 0:
            return acc
        return -acc if acc % 3 == 0 else acc * 2

    def expected(d: dict[str, np.ndarray]) -> np.ndarray:
        results = [one(int(x)) for x in d["x"]]
        return np.array([-7 if r is None else r for r in results], np.int32)

    return Case(
        IRSpec(kernel),
        lambda rng: {"x": _ints(rng, np.int32, -100, 100)},
        expected,
        lambda d: N,
        i32,
        fill=-7,
    )


POSITIONS = tuple(P)


def positions_kernel() -> ir.KernelIR:
    """Every unit writes every position, ``out[ABSOLUTE_POS * 20 + k]``."""
    k = len(POSITIONS)
    base = op(B.MUL, ir.PositionOf(P.ABSOLUTE_POS), c(k, u32))
    stores = tuple(
        ir.Store("out", op(B.ADD, base, c(j, u32)), ir.PositionOf(p))
        for j, p in enumerate(POSITIONS)
    )
    return ir.KernelIR("positions", (arr("out", u32),), (), stores)


def expected_positions(
    cube_count: tuple[int, int, int], cube_dim: tuple[int, int, int]
) -> np.ndarray:
    """What :func:`positions_kernel` writes, computed by the definitions of LANGUAGE.md."""
    (cx, cy, cz), (dx, dy, dz) = cube_count, cube_dim
    width, height = cx * dx, cy * dy
    total = width * height * cz * dz
    out = np.zeros((total, len(POSITIONS)), np.uint32)
    for bz in range(cz):
        for by in range(cy):
            for bx in range(cx):
                for tz in range(dz):
                    for ty in range(dy):
                        for tx in range(dx):
                            ax, ay, az = bx * dx + tx, by * dy + ty, bz * dz + tz
                            values = {
                                "ABSOLUTE_POS": ax + ay * width + az * width * height,
                                "ABSOLUTE_POS_X": ax,
                                "ABSOLUTE_POS_Y": ay,
                                "ABSOLUTE_POS_Z": az,
                                "UNIT_POS": tx + ty * dx + tz * dx * dy,
                                "UNIT_POS_X": tx,
                                "UNIT_POS_Y": ty,
                                "UNIT_POS_Z": tz,
                                "CUBE_POS": bx + by * cx + bz * cx * cy,
                                "CUBE_POS_X": bx,
                                "CUBE_POS_Y": by,
                                "CUBE_POS_Z": bz,
                                "CUBE_DIM": dx * dy * dz,
                                "CUBE_DIM_X": dx,
                                "CUBE_DIM_Y": dy,
                                "CUBE_DIM_Z": dz,
                                "CUBE_COUNT": cx * cy * cz,
                                "CUBE_COUNT_X": cx,
                                "CUBE_COUNT_Y": cy,
                                "CUBE_COUNT_Z": cz,
                                "PLANE_DIM": 32,
                                "UNIT_POS_PLANE": (tx + ty * dx + tz * dx * dy) % 32,
                            }
                            out[values["ABSOLUTE_POS"]] = [values[p.name] for p in POSITIONS]
    return out.reshape(-1)


def all_cases() -> list[Case]:
    """One case per construct family; each compiles to one kernel."""
    return [
        _saxpy(),
        _signed(i32),
        _signed(i64),
        _unsigned(u32),
        _unsigned(u64),
        _floats(f32),
        _floats(f64),
        _halves(f16),
        _halves(bf16),
        _casts(),
        _control_flow(),
    ]


def erf_reference(x: np.ndarray) -> np.ndarray:
    """``erf`` elementwise in float64, from Python's ``math.erf`` (numpy has none)."""
    return np.vectorize(math.erf, otypes=[np.float64])(x)
