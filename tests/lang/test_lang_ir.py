"""The IR the frontend builds, asserted on its printed text: golden kernels, comptime
specialisation, unrolling, inlining, and Python's order of evaluation kept."""

from __future__ import annotations

import textwrap

import pytest

import cubejit as cj
from cubejit.ir.validate import validate

GOLDEN = """
@cj.kernel
def saxpy(a: cj.f32, x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


@cj.kernel
def dot_rows(x: cj.Array[cj.f32], out: cj.Array[cj.f32], N: cj.Comptime[int],
             SQUARE: cj.Comptime[bool]):
    row = cj.ABSOLUTE_POS
    acc = 0.0
    for k in cj.unroll(range(N)):
        if SQUARE:
            acc += x[row * N + k] * x[row * N + k]
        else:
            acc += x[row * N + k]
    out[row] = acc


@cj.function
def square(v):
    return v * v


@cj.function
def norm2(a, b):
    return cj.sqrt(square(a) + square(b))


@cj.function
def relu(v: cj.f32) -> cj.f32:
    if v < 0.0:
        return 0.0
    return v


@cj.kernel
def inlined(x: cj.Array[cj.f32], y: cj.Array[cj.f32], out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    out[i] = relu(norm2(x[i], y[i]) - 1.0)


@cj.kernel
def constructs(x: cj.Array[cj.i32], out: cj.Array[cj.i32], f: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS_X + cj.CUBE_DIM_X * cj.ABSOLUTE_POS_Y
    if i >= out.len():
        return
    v = x[i]
    n = 0
    while True:
        n += 1
        if n > 10:
            break
        elif n % 2 == 0:
            continue
        v = v // 2 - v % 3
    for j in range(3, 0, -1):
        v ^= (v << j) & ~v
    t = 1.5 if 0 < v <= 100 and not v == 7 or v == -1 else -2.0
    f[i] = cj.f32(v) ** 2 + t * cj.fma(t, t, 1.0) + cj.abs(f[i]) / 2.0
    out[i] = cj.max(v, 0, n) + cj.cdiv(v, 4) + cj.i32(cj.UNIT_POS)
"""

ORDER = """
@cj.function
def bump(a, i):
    a[i] = a[i] + 1.0
    return a[i]


@cj.function
def positive(a, i):
    v = a[i]
    return v > 0.0


@cj.kernel
def order(out: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    out[0] = out[i] + bump(out, i)
    if i < out.len() and positive(out, i):
        out[i] = 0.0
    w = out[1] if i == 0 else bump(out, 1)
    k = 0
    while positive(out, k):
        k += 1
"""


@pytest.fixture
def golden(module):
    return module(GOLDEN, name="golden")


def expect(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def test_saxpy_prints_as_its_golden_text(golden):
    ir = golden.saxpy.specialize(256).define()
    assert str(ir) == expect("""
        kernel golden.saxpy(a: f32, x: Array[f32], y: Array[f32], out: Array[f32]):
            let i: u32
            i = ABSOLUTE_POS
            if i < out.len():
                out[i] = a * x[i] + y[i]
        """)


def test_comptime_values_fold_keep_one_branch_and_unroll(golden):
    squared = golden.dot_rows.specialize(64, N=3, SQUARE=True)
    summed = golden.dot_rows.specialize(64, N=2, SQUARE=False)
    assert squared.id() != summed.id()
    assert [p.name for p in squared.params] == ["x", "out"]
    assert str(squared.define()) == expect("""
        kernel golden.dot_rows(x: Array[f32], out: Array[f32]):
            let row: u32
            let acc: f32
            row = ABSOLUTE_POS
            acc = 0.0f32
            acc = acc + x[row * 3u32 + 0u32] * x[row * 3u32 + 0u32]
            acc = acc + x[row * 3u32 + 1u32] * x[row * 3u32 + 1u32]
            acc = acc + x[row * 3u32 + 2u32] * x[row * 3u32 + 2u32]
            out[row] = acc
        """)
    assert str(summed.define()) == expect("""
        kernel golden.dot_rows(x: Array[f32], out: Array[f32]):
            let row: u32
            let acc: f32
            row = ABSOLUTE_POS
            acc = 0.0f32
            acc = acc + x[row * 2u32 + 0u32]
            acc = acc + x[row * 2u32 + 1u32]
            out[row] = acc
        """)


def test_nested_functions_are_inlined_with_their_results(golden):
    assert str(golden.inlined.specialize(1).define()) == expect("""
        kernel golden.inlined(x: Array[f32], y: Array[f32], out: Array[f32]):
            let i: u32
            let norm2_1_a: f32
            let norm2_1_b: f32
            let relu_1_v: f32
            let relu_1_result: f32
            i = ABSOLUTE_POS
            norm2_1_a = x[i]
            norm2_1_b = y[i]
            relu_1_v = sqrt(norm2_1_a * norm2_1_a + norm2_1_b * norm2_1_b) - 1.0f32
            if relu_1_v < 0.0f32:
                relu_1_result = 0.0f32
            else:
                relu_1_result = relu_1_v
            out[i] = relu_1_result
        """)


def test_every_statement_and_expression_form_prints_as_its_golden_text(golden):
    assert str(golden.constructs.specialize((8, 8)).define()) == expect("""
        kernel golden.constructs(x: Array[i32], out: Array[i32], f: Array[f32]):
            let i: u32
            let v: i32
            let n: i32
            let j: i32
            let t: f32
            i = ABSOLUTE_POS_X + CUBE_DIM_X * ABSOLUTE_POS_Y
            if i >= out.len():
                return
            v = x[i]
            n = 0i32
            while True:
                n = n + 1i32
                if n > 10i32:
                    break
                elif n % 2i32 == 0i32:
                    continue
                v = v // 2i32 - v % 3i32
            for j in range(3i32, 0i32, -1i32):
                v = v ^ v << j & ~v
            t = 1.5f32 if 0i32 < v and v <= 100i32 and not v == 7i32 or v == -1i32 else -2.0f32
            f[i] = f32(v) ** 2.0f32 + t * fma(t, t, 1.0f32) + abs(f[i]) / 2.0f32
            out[i] = max(max(v, 0i32), n) + (v // 4i32 + (1i32 if v % 4i32 != 0i32 else 0i32)) + i32(UNIT_POS)
        """)  # noqa: E501


def test_inlined_statements_keep_pythons_order_of_evaluation(module):
    mod = module(ORDER, name="order")
    assert str(mod.order.specialize(1).define()) == expect("""
        kernel order.order(out: Array[f32]):
            let i: u32
            let tmp: f32
            let positive_1_v: f32
            let cond: bool
            let choice: f32
            let w: f32
            let k: i32
            let positive_2_v: f32
            i = ABSOLUTE_POS
            tmp = out[i]
            out[i] = out[i] + 1.0f32
            out[0i32] = tmp + out[i]
            cond = i < out.len()
            if cond:
                positive_1_v = out[i]
                cond = positive_1_v > 0.0f32
            if cond:
                out[i] = 0.0f32
            if i == 0u32:
                choice = out[1i32]
            else:
                out[1i32] = out[1i32] + 1.0f32
                choice = out[1i32]
            w = choice
            k = 0i32
            while True:
                positive_2_v = out[k]
                if not positive_2_v > 0.0f32:
                    break
                k = k + 1i32
        """)


def test_names_of_inlined_copies_never_clash(module):
    mod = module("""
        @cj.function
        def twice(v):
            v = v * 2.0
            return v

        @cj.kernel
        def k(out: cj.Array[cj.f32]):
            v = twice(out[0])
            twice_1_v = twice(v)
            out[0] = twice_1_v
    """)
    ir = mod.k.specialize(1).define()
    names = [local.name for local in ir.locals]
    assert names == ["twice_1_v", "v", "twice_2_v", "twice_1_v_2"]
    validate(ir)


def test_literals_take_the_type_of_the_other_operand_and_default_alone(module):
    mod = module("""
        @cj.kernel
        def k(out: cj.Array[cj.f64], n: cj.u64):
            a = 1
            b = 2.5
            c = n + 3
            d = out[0] * 2
            e = True
            out[0] = d
    """)
    types = {local.name: str(local.type) for local in mod.k.specialize(1).define().locals}
    assert types == {"a": "i32", "b": "f32", "c": "u64", "d": "f64", "e": "bool"}


def test_a_comptime_only_condition_drops_the_other_branch_even_with_errors_in_it(module):
    mod = module("""
        @cj.kernel
        def k(out: cj.Array[cj.f32], MODE: cj.Comptime[int], SCALE: cj.Comptime[float]):
            if MODE == 0 and SCALE > 1.0:
                out[0] = SCALE
            elif MODE * 2 == 2:
                out[0] = -SCALE
            else:
                out[0] = undefined_name
    """)
    first = str(mod.k.specialize(1, MODE=0, SCALE=2.0).define())
    second = str(mod.k.specialize(1, MODE=1, SCALE=2.0).define())
    assert "out[0i32] = 2.0f32" in first and "-" not in first.split("\n", 2)[2]
    assert "out[0i32] = -2.0f32" in second
    with pytest.raises(cj.CompilationError, match="undefined_name"):
        mod.k.specialize(1, MODE=5, SCALE=2.0).define()


def test_unroll_index_is_a_constant_that_folds_conditions(module):
    mod = module("""
        @cj.kernel
        def k(out: cj.Array[cj.f32], N: cj.Comptime[int]):
            for i in cj.unroll(range(1, N, 2)):
                if i == 3:
                    out[i] = 1.0
                else:
                    out[i] = 0.0
    """)
    assert str(mod.k.specialize(1, N=6).define()).splitlines()[1:] == [
        "    out[1i32] = 0.0f32",
        "    out[3i32] = 1.0f32",
        "    out[5i32] = 0.0f32",
    ]


def test_a_loop_variable_keeps_the_type_of_its_bounds(module):
    mod = module("""
        @cj.kernel
        def k(out: cj.Array[cj.f32], n: cj.i64):
            for a in range(out.len()):
                out[a] = 0.0
            for b in range(2, n):
                out[b] = 1.0
            c = cj.u64(0)
            for c in range(10):
                out[c] = 2.0
    """)
    ir = mod.k.specialize(1).define()
    assert {local.name: str(local.type) for local in ir.locals} == {
        "a": "u32",
        "b": "i64",
        "c": "u64",
    }
    assert "for c in range(0u64, 10u64, 1u64):" in str(ir)


def test_a_function_called_from_python_runs_as_python(module):
    mod = module("""
        @cj.function
        def hyp(a, b):
            return cj.sqrt(a * a + b * b)
    """)
    assert mod.hyp(3.0, 4.0) == 5.0
    assert cj.cdiv(10, 4) == 3 and cj.cdiv(8, 4) == 2
