"""What ``@cj.kernel`` knows of a kernel before reading its source: the signature Python already
evaluated, read to the same types the source gives, and nothing read when it cannot be sure."""

from __future__ import annotations

import importlib.util
import itertools
import sys
import weakref
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import cubejit as cj
from cubejit.errors import CompilationError
from cubejit.ir.types import from_dtype
from cubejit.lang.declaration import declared_signature, source_can_wait
from cubejit.lang.signature import kernel_parameters
from cubejit.lang.source import PySource

SIGNATURES = [
    "a: cj.f32, n: cj.u32",
    "x: cj.Array[cj.f32], out: cj.Array[cj.f64]",
    "t: cj.Tensor[cj.f16], u: cj.Tensor[cj.f32, 2]",
    "x: cj.Array[cj.Line[cj.f32]], y: cj.Tensor[cj.Line[cj.f16, 4], 3]",
    "c: cj.Array[cj.Atomic[cj.u32]], d: cj.Tensor[cj.Atomic[cj.f32]]",
    "n: cj.Comptime[int], flag: cj.Comptime[bool], s: cj.Comptime[float]",
    "x: Array[f32], n: Comptime[int]",
    "x: T, y: cj.Array[T]",
    "x: cj.Array[cj.f32], /, n: cj.i32, *, k: cj.Comptime[int]",
]

PRELUDE = "import cubejit as cj\nfrom cubejit import Array, Comptime, f32\n\nT = cj.i64\n"
_counter = itertools.count()


def _load(directory: Path, source: str, future: bool = True) -> ModuleType:
    """``source`` imported from a file, after ``from __future__ import annotations`` when
    ``future`` (annotations kept as strings) and :data:`PRELUDE`."""
    name = f"declaration_snippet_{next(_counter)}"
    path = directory / f"{name}.py"
    future_import = "from __future__ import annotations\n" if future else ""
    path.write_text(future_import + PRELUDE + source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("future", [True, False])
@pytest.mark.parametrize("signature", SIGNATURES)
def test_the_signature_read_at_definition_is_the_one_the_source_gives(tmp_path, signature, future):
    mod = _load(tmp_path, f"\ndef k({signature}) -> None:\n    pass\n", future)
    declared = declared_signature(mod.k)
    assert declared is not None
    assert declared == kernel_parameters(PySource.of(mod.k, "kernel"))
    assert cj.kernel(mod.k).signature == declared


@pytest.mark.parametrize(
    "signature",
    [
        "x",
        "x: int",
        "x: cj.f32 = 1.0",
        "*xs: cj.f32",
        "**kw: cj.f32",
        "x: undefined_name",
        "x: cj.no_such_type",
        "x: cj.Array[int]",
        "x: cj.Tensor[cj.f32, None]",
        "x: cj.Line[cj.f32, 4.0]",
        "x: make()",
        "x: cj.Array[cj.f32] | None",
        "x: 'cj.Array[cj.f32]'",
    ],
)
def test_a_signature_it_cannot_vouch_for_is_left_to_the_source(tmp_path, signature):
    mod = _load(tmp_path, f"\ndef make():\n    return cj.f32\n\ndef k({signature}):\n    pass\n")
    assert declared_signature(mod.k) is None


def test_a_return_annotation_other_than_none_is_left_to_the_source(module):
    mod = module("def k(x: cj.Array[cj.f32]) -> cj.f32:\n    pass\n")
    assert declared_signature(mod.k) is None


def test_only_a_plain_def_in_a_file_waits_to_be_read(module):
    mod = module("async def a():\n    pass\n\ndef f():\n    pass\n\ng = lambda: 0\n")
    namespace: dict[str, object] = {}
    exec("def e():\n    pass\n", namespace)
    assert source_can_wait(mod.f)
    assert not source_can_wait(mod.a)
    assert not source_can_wait(mod.g)
    assert not source_can_wait(namespace["e"])
    assert not source_can_wait(len)


def test_a_kernel_and_a_function_parse_their_source_only_when_translated(module):
    mod = module(
        "@cj.function\ndef twice(v):\n    return v + v\n\n"
        "@cj.kernel\ndef k(x: cj.Array[cj.f32]):\n    x[cj.ABSOLUTE_POS] = twice(x[0])\n"
    )
    assert "source" not in vars(mod.k) and "source" not in vars(mod.twice)
    spec = mod.k.specialize(64)
    spec.id()
    assert "source" not in vars(mod.k) and "source" not in vars(mod.twice)
    assert spec.line == 8 and spec.file.endswith(".py")
    assert "source" in vars(mod.k)
    spec.define()
    assert "source" in vars(mod.twice)


FACTORIES = """
def doubling(T):
    @cj.function
    def add(a: T, b: T) -> T:
        return a + b

    @cj.kernel
    def doubled(x: cj.Array[T], out: cj.Array[T]):
        i = cj.ABSOLUTE_POS
        if i < out.len():
            out[i] = add(x[i], x[i])

    return doubled


def undefined():
    @cj.kernel
    def k(x: cj.Array[U]):
        pass

    return k
"""


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_a_kernel_made_per_type_reads_its_postponed_annotations_in_its_makers_locals(
    tmp_path, dtype
):
    mod = _load(tmp_path, FACTORIES)
    kernel = mod.doubling(from_dtype(np.dtype(dtype)))
    assert "T" not in kernel.fn.__code__.co_freevars, "the body itself never names T"
    x = (np.random.default_rng(3).random(100) * 50).astype(dtype)
    out = np.zeros_like(x)
    kernel.launch(cj.client("cpu"), 4, 32, x, out)
    np.testing.assert_array_equal(out, x + x)


def test_a_name_that_neither_the_maker_nor_the_module_holds_is_still_undefined(tmp_path):
    mod = _load(tmp_path, FACTORIES)
    with pytest.raises(CompilationError, match="`U` is not defined"):
        mod.undefined()


def test_what_a_maker_held_is_kept_for_the_names_its_annotations_use_alone(tmp_path):
    mod = _load(
        tmp_path,
        "def make(T, other):\n"
        "    @cj.kernel\n"
        "    def k(x: cj.Array[T]):\n"
        "        pass\n"
        "    return k\n",
    )

    class Big:
        pass

    big = Big()
    kernel = mod.make(cj.f32, big)
    gone = weakref.ref(big)
    del big
    assert gone() is None
    assert kernel.signature == [("x", cj.Array[cj.f32])]
