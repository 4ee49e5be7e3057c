"""The CPU backend computes what the language means, compared with numpy on random data."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_ir_builders import HandSpec, arr, b, guarded, kernel, load, pos

from cubejit.backends.cpu.client import CpuClient
from cubejit.ir import nodes as n
from cubejit.ir.types import bool_, f32, f64, i32, i64, u32

rng = np.random.default_rng(7)
AT = pos("ABSOLUTE_POS")


def binary_kernel(t_in, ops: dict[str, str], t_out=None) -> HandSpec:
    """``out_<op>[i] = a[i] <op> b[i]`` for each op, one kernel."""
    params = [arr("a", t_in), arr("b", t_in)] + [arr(f"out_{op}", t_out or t_in) for op in ops]
    stores = [
        n.Store(f"out_{op}", AT, b(op, load("a", AT, t_in), load("b", AT, t_in))) for op in ops
    ]
    return HandSpec(kernel(f"binary_{t_in}", params, [guarded(AT, "a", *stores)]), (64, 1, 1))


def run(cpu: CpuClient, spec: HandSpec, size: int, *args) -> None:
    spec_count = -(-size // spec.cube_dim[0])
    cpu.launch(spec, spec_count, args)


@pytest.mark.parametrize("size", [1, 255, 257])
def test_signed_floor_division_and_modulo_follow_numpy(cpu: CpuClient, size: int) -> None:
    spec = binary_kernel(i32, {"FLOORDIV": "", "MOD": ""})
    a = rng.integers(-1000, 1000, size, dtype=np.int32)
    d = rng.integers(-9, 10, size, dtype=np.int32)
    d[d == 0] = -1
    q, r = np.empty_like(a), np.empty_like(a)
    run(cpu, spec, size, a, d, q, r)
    np.testing.assert_array_equal(q, a // d)
    np.testing.assert_array_equal(r, a % d)


def test_integer_division_by_zero_and_overflowing_division_give_numpys_answers(
    cpu: CpuClient,
) -> None:
    spec = binary_kernel(i64, {"FLOORDIV": "", "MOD": ""})
    a = np.array([7, -7, np.iinfo(np.int64).min, 5], dtype=np.int64)
    d = np.array([0, 0, -1, -1], dtype=np.int64)
    q, r = np.empty_like(a), np.empty_like(a)
    run(cpu, spec, 4, a, d, q, r)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(q, a // d)
        np.testing.assert_array_equal(r, a % d)


def test_float_floor_division_and_modulo_follow_numpy(cpu: CpuClient) -> None:
    spec = binary_kernel(f64, {"FLOORDIV": "", "MOD": ""})
    a = rng.uniform(-50, 50, 257)
    d = rng.uniform(-5, 5, 257)
    q, r = np.empty_like(a), np.empty_like(a)
    run(cpu, spec, 257, a, d, q, r)
    np.testing.assert_array_equal(q, a // d)
    np.testing.assert_array_equal(r, a % d)


def test_unsigned_arithmetic_wraps(cpu: CpuClient) -> None:
    spec = binary_kernel(u32, {"SUB": "", "MUL": "", "ADD": "", "FLOORDIV": "", "MOD": ""})
    a = rng.integers(0, 2**32, 257, dtype=np.uint32)
    d = rng.integers(1, 2**32, 257, dtype=np.uint32)
    outs = [np.empty_like(a) for _ in range(5)]
    run(cpu, spec, 257, a, d, *outs)
    for got, want in zip(outs, [a - d, a * d, a + d, a // d, a % d], strict=True):
        np.testing.assert_array_equal(got, want)


def test_integer_power_and_math_functions_follow_numpy(cpu: CpuClient) -> None:
    x = load("x", AT, f32)
    e = load("e", AT, i64)
    spec = HandSpec(
        kernel(
            "math",
            [arr("x", f32), arr("e", i64), arr("p", i64), arr("t", f32), arr("m", i64)],
            [
                guarded(
                    AT,
                    "x",
                    n.Store("p", AT, n.Binary(n.BinaryOp.POW, e, n.Const(3, i32), i64)),
                    n.Store(
                        "t",
                        AT,
                        n.Math(
                            n.MathFn.FMA,
                            (
                                n.Math(n.MathFn.TANH, (x,), f32),
                                n.Math(n.MathFn.SQRT, (x,), f32),
                                n.Const(0.5, f32),
                            ),
                            f32,
                        ),
                    ),
                    n.Store(
                        "m",
                        AT,
                        n.Math(
                            n.MathFn.MAX, (n.Math(n.MathFn.ABS, (e,), i64), n.Const(40, i64)), i64
                        ),
                    ),
                )
            ],
        ),
        (64, 1, 1),
    )
    xs = rng.uniform(0, 3, 255).astype(np.float32)
    es = rng.integers(-100, 100, 255, dtype=np.int64)
    p, t, m = np.empty_like(es), np.empty_like(xs), np.empty_like(es)
    run(cpu, spec, 255, xs, es, p, t, m)
    np.testing.assert_array_equal(p, es**3)
    np.testing.assert_allclose(t, np.tanh(xs) * np.sqrt(xs) + 0.5, rtol=1e-6)
    np.testing.assert_array_equal(m, np.maximum(np.abs(es), 40))


def test_control_flow_keeps_python_semantics(cpu: CpuClient) -> None:
    """``range`` with a negative step, ``while`` with ``break``/``continue``, an early
    ``return``, a lazy select guarding an out-of-bounds read, short-circuit ``and``."""
    k, acc, j = n.Var("k", i32), n.Var("acc", i32), n.Var("j", i32)
    v = load("v", AT, i32)
    body = [
        guarded(
            AT,
            "v",
            n.If(b("EQ", v, n.Const(0, i32)), (n.Return(),)),
            n.Assign("acc", n.Const(0, i32)),
            n.RangeFor(
                "k", v, n.Const(-1, i32), n.Const(-2, i32), (n.Assign("acc", b("ADD", acc, k)),)
            ),
            n.Assign("j", n.Const(0, i32)),
            n.While(
                n.Const(True, bool_),
                (
                    n.Assign("j", b("ADD", j, n.Const(1, i32))),
                    n.If(b("GT", j, v), (n.Break(),)),
                    n.If(b("EQ", b("MOD", j, n.Const(3, i32)), n.Const(0, i32)), (n.Continue(),)),
                    n.Assign("acc", b("ADD", acc, n.Const(1000, i32))),
                ),
            ),
            n.Store(
                "out",
                AT,
                n.Select(
                    b(
                        "AND",
                        b("LT", b("ADD", AT, n.Const(1, u32)), n.Length("v")),
                        b("GT", load("v", b("ADD", AT, n.Const(1, u32)), i32), n.Const(5, i32)),
                    ),
                    b("ADD", acc, load("v", b("ADD", AT, n.Const(1, u32)), i32)),
                    acc,
                    i32,
                ),
            ),
        ),
    ]
    spec = HandSpec(
        kernel(
            "control",
            [arr("v", i32), arr("out", i32)],
            body,
            [n.Local("acc", i32), n.Local("k", i32), n.Local("j", i32)],
        ),
        (32, 1, 1),
    )
    vs = rng.integers(0, 12, 257, dtype=np.int32)
    out = np.full(257, -1, dtype=np.int32)
    run(cpu, spec, 257, vs, out)
    want = np.full(257, -1, dtype=np.int32)
    for i, value in enumerate(vs.tolist()):
        if value == 0:
            continue
        total = sum(range(value, -1, -2)) + 1000 * sum(1 for q in range(1, value + 1) if q % 3)
        nxt = vs[i + 1] if i + 1 < len(vs) else None
        want[i] = total + nxt if nxt is not None and nxt > 5 else total
    np.testing.assert_array_equal(out, want)


POSITIONS = [p.name for p in n.Position]


@pytest.mark.parametrize(
    ("cube_dim", "cube_count"),
    [
        ((8, 1, 1), (5, 1, 1)),
        ((4, 3, 1), (2, 3, 1)),
        ((2, 3, 2), (3, 2, 2)),
    ],
)
def test_every_position_matches_its_definition(cpu: CpuClient, cube_dim, cube_count) -> None:
    units = [c * d for c, d in zip(cube_count, cube_dim, strict=True)]
    total = int(np.prod(units))
    spec = HandSpec(
        kernel(
            "positions",
            [arr(name.lower(), u32) for name in POSITIONS],
            [n.Store(name.lower(), AT, pos(name)) for name in POSITIONS],
        ),
        cube_dim,
    )
    outs = [np.zeros(total, dtype=np.uint32) for _ in POSITIONS]
    cpu.launch(spec, cube_count, tuple(outs))
    got = dict(zip(POSITIONS, outs, strict=True))
    z, y, x = np.meshgrid(*(np.arange(u) for u in reversed(units)), indexing="ij")
    x, y, z = (a.reshape(-1) for a in (x, y, z))
    cube = [x // cube_dim[0], y // cube_dim[1], z // cube_dim[2]]
    unit = [x % cube_dim[0], y % cube_dim[1], z % cube_dim[2]]
    want = {
        "ABSOLUTE_POS": x + y * units[0] + z * units[0] * units[1],
        "UNIT_POS": unit[0] + unit[1] * cube_dim[0] + unit[2] * cube_dim[0] * cube_dim[1],
        "CUBE_POS": cube[0] + cube[1] * cube_count[0] + cube[2] * cube_count[0] * cube_count[1],
        "CUBE_DIM": np.full(total, np.prod(cube_dim)),
        "CUBE_COUNT": np.full(total, np.prod(cube_count)),
        "PLANE_DIM": np.full(total, 1),
        "UNIT_POS_PLANE": np.zeros(total),
    }
    for axis, letter in enumerate("XYZ"):
        want[f"ABSOLUTE_POS_{letter}"] = (x, y, z)[axis]
        want[f"UNIT_POS_{letter}"] = unit[axis]
        want[f"CUBE_POS_{letter}"] = cube[axis]
        want[f"CUBE_DIM_{letter}"] = np.full(total, cube_dim[axis])
        want[f"CUBE_COUNT_{letter}"] = np.full(total, cube_count[axis])
    order = want["ABSOLUTE_POS"]
    for name in POSITIONS:
        np.testing.assert_array_equal(got[name][order], want[name], err_msg=name)
