"""Every error of LANGUAGE.md: its class, and a message naming the kernel, the file and line,
what is not supported and what to write instead."""

from __future__ import annotations

import textwrap

import pytest

import cubejit as cj

# (body of `k(out: cj.Array[cj.f32], x: cj.Array[cj.i32], N: cj.Comptime[int])`, the line of
# the body the error points at (1-based), the error class, a fragment of the message)
CASES = {
    "try": (
        "try:\n    out[0] = 1.0\nexcept Exception:\n    pass",
        1,
        cj.UnsupportedError,
        "a `try` statement is not supported",
    ),
    "list": ("v = [1, 2]", 1, cj.UnsupportedError, "a list is not supported"),
    "dict": ("d = {}", 1, cj.UnsupportedError, "a dict is not supported"),
    "lambda": ("f = lambda v: v", 1, cj.UnsupportedError, "a `lambda` is not supported"),
    "comprehension": (
        "v = [q for q in range(3)]",
        1,
        cj.UnsupportedError,
        "a list comprehension is not supported",
    ),
    "with": ("with open('f') as f:\n    pass", 1, cj.UnsupportedError, "a `with` statement"),
    "string": ("s = 'text'", 1, cj.UnsupportedError, "a str constant is not supported"),
    "unknown function": (
        "out[0] = mystery(1.0)",
        1,
        cj.CompilationError,
        "`mystery` is not defined",
    ),
    "captured array": (
        "out[0] = WEIGHTS",
        1,
        cj.UnsupportedError,
        "`WEIGHTS` is a Python ndarray captured from outside the kernel",
    ),
    "captured list": ("out[0] = TABLE", 1, cj.UnsupportedError, "Python list captured"),
    "foreign math": ("out[0] = math.sqrt(out[0])", 1, cj.UnsupportedError, "use cj.sqrt"),
    "mixed types": (
        "k = x[0]\nout[0] = out[0] * k",
        2,
        cj.CompilationError,
        "`out[0] * k` mixes f32 and i32",
    ),
    "a literal's local not exact in the other type": (
        "k = 16777217\nout[0] = out[0] * k",
        2,
        cj.CompilationError,
        "`out[0] * k` mixes f32 and i32",
    ),
    "integer true division": (
        "k = 3\nm = k / 2",
        2,
        cj.CompilationError,
        "write `//` for floor division",
    ),
    "float literal with int": (
        "k = 3\nm = k * 0.5",
        2,
        cj.CompilationError,
        "the float constant 0.5 cannot be an integer (i32)",
    ),
    "int condition": (
        "k = 3\nif k:\n    return",
        2,
        cj.CompilationError,
        "`if` needs a bool, and `k` is i32; write a comparison, e.g. `k != 0`",
    ),
    "int and": ("k = 3\nif k and True:\n    return", 2, cj.CompilationError, "`and` needs a bool"),
    "not on int": ("k = 3\nif not k:\n    return", 2, cj.CompilationError, "`not` takes a bool"),
    "bit op on float": (
        "out[0] = out[0] & 1",
        1,
        cj.CompilationError,
        "`&` takes integers, not f32",
    ),
    "unroll of a run-time range": (
        "for k in cj.unroll(range(out.len())):\n    out[k] = 1.0",
        1,
        cj.CompilationError,
        "cj.unroll needs a range of constants",
    ),
    "return a value": ("return 1", 1, cj.CompilationError, "a kernel returns nothing"),
    "used before assignment": (
        "out[0] = z\nz = 1.0",
        1,
        cj.CompilationError,
        "`z` is used before it is assigned",
    ),
    "slice": ("out[0:2] = 1.0", 1, cj.UnsupportedError, "one element at a time"),
    "negative index": ("out[-1] = 1.0", 1, cj.UnsupportedError, "negative indices"),
    "float index": ("out[1.5] = 1.0", 1, cj.CompilationError, "must be an integer"),
    "assign comptime": ("N = 3", 1, cj.CompilationError, "`N` is a comptime parameter"),
    "assign unroll index": (
        "for k in cj.unroll(range(2)):\n    k = 3",
        2,
        cj.CompilationError,
        "index of a cj.unroll loop",
    ),
    "rename array": ("b = out", 1, cj.UnsupportedError, "arrays cannot be assigned"),
    "store of another type": (
        "out[0] = cj.ABSOLUTE_POS",
        1,
        cj.CompilationError,
        "is f32 but the value is u32; cast it explicitly: cj.f32(...)",
    ),
    "local changes type": (
        "v = 1\nv = 2.5",
        2,
        cj.CompilationError,
        "the float constant 2.5 cannot be an integer",
    ),
    "float range": (
        "for q in range(2.5):\n    pass",
        1,
        cj.CompilationError,
        "`range` takes integers",
    ),
    "for over a non-range": (
        "for q in out:\n    pass",
        1,
        cj.UnsupportedError,
        "a `for` loop runs over `range(...)`",
    ),
    "for else": (
        "for q in range(2):\n    pass\nelse:\n    pass",
        1,
        cj.UnsupportedError,
        "`for ... else`",
    ),
    "while else": (
        "while False:\n    pass\nelse:\n    pass",
        1,
        cj.UnsupportedError,
        "`while ... else`",
    ),
    "is comparison": (
        "if out[0] is None:\n    return",
        1,
        cj.UnsupportedError,
        "`is` comparisons are not supported",
    ),
    "len builtin": ("n = len(out)", 1, cj.UnsupportedError, "write `a.len()`"),
    "int builtin": ("n = int(out[0])", 1, cj.UnsupportedError, "write cj.i32(x)"),
    "print an array": ("print(out)", 1, cj.CompilationError, "`out` cannot be printed"),
    "print a keyword": ('print(1, sep="")', 1, cj.UnsupportedError, "positional strings"),
    "calling a kernel": (
        "other(out)",
        1,
        cj.UnsupportedError,
        "put the shared code in a @cj.function",
    ),
    "range outside for": ("r = range(3)", 1, cj.UnsupportedError, "only as the iterable"),
    "math on ints": ("v = cj.sqrt(x[0])", 1, cj.CompilationError, "`sqrt` takes floats"),
    "math arity": ("v = cj.fma(out[0], out[1])", 1, cj.CompilationError, "takes 3 argument"),
    "constant too large for any integer": (
        "for q in cj.unroll(range(N << 70)):\n    pass",
        1,
        cj.CompilationError,
        "too large for the language's integers",
    ),
    "read before assigned on some path": (
        "if out[0] > 0.0:\n    z = 1.0\nout[1] = z",
        3,
        cj.CompilationError,
        "`z` is read at line",
    ),
    "constant too wide": ("v = 3000000000", 1, cj.CompilationError, "does not fit in i32"),
    "array method": ("n = out.shape", 1, cj.UnsupportedError, "one method, `.len()`"),
    "tuple unpacking": ("a, b = 1, 2", 1, cj.UnsupportedError, "a tuple is not supported"),
    "f-string": ("s = f'{N}'", 1, cj.UnsupportedError, "an f-string"),
    "recursion": (
        "out[0] = recursive(out[0])",
        None,
        cj.UnsupportedError,
        "recursion is not supported",
    ),
    "function without a result on a path": (
        "out[0] = partial(out[0])",
        1,
        cj.CompilationError,
        "does not return a value on every path",
    ),
    "result of a function without one": (
        "out[0] = nothing(out[0])",
        1,
        cj.CompilationError,
        "returns no value",
    ),
    "function arity": (
        "out[0] = partial(out[0], 2.0)",
        1,
        cj.CompilationError,
        "takes 1 argument(s), got 2",
    ),
}

PRELUDE = """
import math

SCALE = 2.0
TABLE = [1, 2]
WEIGHTS = __import__("numpy").ones(3)


@cj.kernel
def other(out: cj.Array[cj.f32]):
    pass


@cj.function
def recursive(v):
    return recursive(v)


@cj.function
def inner_error(v):
    for q in range(3):
        return v * [2]
    return v


@cj.function
def partial(v):
    if v > 0.0:
        return v


@cj.function
def nothing(v):
    pass


@cj.kernel
def k(out: cj.Array[cj.f32], x: cj.Array[cj.i32], N: cj.Comptime[int]):
"""


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_each_error_names_the_kernel_file_line_and_what_to_do(module, case):
    body, line, error, fragment = CASES[case]
    mod = module(PRELUDE + textwrap.indent(body, "    ") + "\n")
    with pytest.raises(error) as info:
        mod.k.specialize(64, N=4).define()
    message = str(info.value)
    header = message.splitlines()[0]
    assert fragment in message
    assert f"in kernel {mod.k.name}:" in header
    assert header.startswith(mod.__file__ + ":")
    assert info.value.kernel == mod.k.name
    if line is not None:
        body_start = 2 + PRELUDE.count("\n") + 1  # the header line, then the prelude
        assert header.startswith(f"{mod.__file__}:{body_start + line - 1}:")
    assert message.splitlines()[-1].strip() == "^" or "called at" in message


def test_an_error_in_an_inlined_function_points_into_it_and_names_the_call(module):
    mod = module(PRELUDE + "    out[0] = inner_error(out[0])\n")
    with pytest.raises(cj.UnsupportedError) as info:
        mod.k.specialize(1, N=1).define()
    lines = str(info.value).splitlines()
    line = 2 + PRELUDE[: PRELUDE.index("        return v * [2]")].count("\n") + 1
    assert lines[0].startswith(f"{mod.__file__}:{line}:20:")
    assert lines[1].strip() == "return v * [2]"
    assert lines[-1].startswith(f"  in @cj.function {mod.__name__}.inner_error, called at ")


def test_the_caret_sits_under_the_column_it_names(module):
    mod = module(PRELUDE + "    out[0] = out[0] * 1 + mystery\n")
    with pytest.raises(cj.CompilationError) as info:
        mod.k.specialize(1, N=1).define()
    header, source, caret = str(info.value).splitlines()
    column = int(header.split(":")[2])
    assert source[caret.index("^") :].startswith("mystery")
    assert caret.index("^") == column - 1 + 4


@pytest.mark.parametrize(
    ("signature", "fragment"),
    [
        ("x", "kernel parameter `x` needs an annotation"),
        ("x: int", "a compile-time one is cj.Comptime[int]"),
        ("x: cj.f32 = 1.0", "kernel parameters cannot have defaults"),
        ("*xs: cj.f32", "no *args or **kwargs"),
    ],
)
def test_a_bad_signature_fails_when_the_kernel_is_defined(module, signature, fragment):
    with pytest.raises(cj.CompilationError) as info:
        module(f"@cj.kernel\ndef bad({signature}):\n    pass\n")
    assert fragment in str(info.value)
    assert ":4:" in str(info.value).splitlines()[0]


def test_a_kernel_without_source_is_an_unsupported_error():
    namespace: dict[str, object] = {"cj": cj}
    exec("def k(out: cj.Array[cj.f32]):\n    pass\n", namespace)
    with pytest.raises(cj.UnsupportedError, match="source"):
        cj.kernel(namespace["k"])
