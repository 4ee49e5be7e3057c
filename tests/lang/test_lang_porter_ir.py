"""The IR of the porter constructs, as golden text: a bitcast, a function's return from inside
loops (a flag, then a guard), ``break``/``continue`` in an unrolled loop, a local typed by what
its literal met, exact signed/unsigned comparisons."""

from __future__ import annotations

import textwrap

import pytest

import cubejit as cj

SOURCE = """
@cj.function
def find(x, n, limit):
    for j in range(n):
        if x[j] > limit:
            return j
    return -1


@cj.kernel
def porter(x: cj.Array[cj.f32], n: cj.i32, out: cj.Array[cj.i32], bits: cj.Array[cj.u32]):
    i = cj.ABSOLUTE_POS
    if i < n:
        acc = 0
        for k in cj.unroll(range(3)):
            if x[k] < 0.0:
                break
            if x[k] > 1.0:
                continue
            acc += x[k]
        out[i] = find(x, n, acc)
        bits[i] = cj.bitcast(x[i], cj.u32)
"""

GOLDEN = """\
kernel {name}.porter(x: Array[f32], n: i32, out: Array[i32], bits: Array[u32]):
    let i: u32
    let acc: f32
    let broke: bool
    let skip: bool
    let find_1_j: i32
    let find_1_result: i32
    let find_1_returned: bool
    i = ABSOLUTE_POS
    if i64(i) < i64(n):
        acc = 0.0f32
        broke = False
        skip = False
        if x[0i32] < 0.0f32:
            broke = True
        if not broke:
            if x[0i32] > 1.0f32:
                skip = True
            if not skip:
                acc = acc + x[0i32]
        if not broke:
            skip = False
            if x[1i32] < 0.0f32:
                broke = True
            if not broke:
                if x[1i32] > 1.0f32:
                    skip = True
                if not skip:
                    acc = acc + x[1i32]
            if not broke:
                skip = False
                if x[2i32] < 0.0f32:
                    broke = True
                if not broke:
                    if x[2i32] > 1.0f32:
                        skip = True
                    if not skip:
                        acc = acc + x[2i32]
        find_1_returned = False
        for find_1_j in range(0i32, n, 1i32):
            if x[find_1_j] > acc:
                find_1_result = find_1_j
                find_1_returned = True
                break
        if not find_1_returned:
            find_1_result = -1i32
        out[i] = find_1_result
        bits[i] = bitcast[u32](x[i])
"""


def test_porter_constructs_print_as_their_golden_text(module):
    mod = module(SOURCE, name="porter_golden")
    text = str(mod.porter.specialize(64).define())
    assert text == GOLDEN.format(name="porter_golden")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("k = x[0]\nout[0] = cj.bitcast(k, cj.u64)", "cannot be read as u64"),
        ("out[0] = cj.bitcast(x[0] > 0, cj.i8)", "does not take bools"),
        ("out[0] = cj.bitcast(x[0], 4)", "second argument of cj.bitcast is a type"),
        ("for q in range(3):\n    last = q\nout[0] = last", "`last` is read at line"),
        ("if x[0] > 0:\n    return\nelse:\n    w = 1\nout[0] = w", None),
    ],
)
def test_porter_construct_errors_name_the_line(module, body, fragment):
    mod = module(
        "@cj.kernel\ndef k(x: cj.Array[cj.i32], out: cj.Array[cj.i32]):\n"
        + textwrap.indent(body, "    ")
        + "\n"
    )
    if fragment is None:
        mod.k.specialize(1).define()
        return
    with pytest.raises(cj.CompilationError, match=fragment) as info:
        mod.k.specialize(1).define()
    assert f"{mod.__file__}:" in str(info.value).splitlines()[0]


def test_a_comptime_value_beyond_every_integer_is_an_error_at_the_parameter(module):
    mod = module("@cj.kernel\ndef k(out: cj.Array[cj.i64], N: cj.Comptime[int]):\n    out[0] = N\n")
    with pytest.raises(cj.CompilationError, match="too large for the language's integers") as info:
        mod.k.specialize(1, N=2**70).define()
    assert str(info.value).splitlines()[0].startswith(f"{mod.__file__}:4:")
