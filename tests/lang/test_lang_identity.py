"""A kernel's identity: named parts, changed by exactly what changes its code, and the same
hash in every process whatever PYTHONHASHSEED is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import cubejit as cj

SOURCE = """
@cj.function
def inner(v):
    return v * 2.0


@cj.function
def outer(v):
    return inner(v) + 1.0


@cj.kernel
def k(x: cj.Array[cj.f32], a: cj.f32, N: cj.Comptime[int], FAST: cj.Comptime[bool]):
    x[0] = outer(a) * N
"""


def test_the_id_has_named_parts_in_a_fixed_order(module):
    mod = module(SOURCE)
    spec = mod.k.specialize((16, 2), FAST=True, N=4)
    kid = spec.id()
    assert kid.name == mod.k.name == f"{mod.__name__}.k"
    assert kid.cube_dim == (16, 2, 1)
    parts = dict(kid.info)
    assert [name for name, _ in kid.info] == ["source", "types", "comptime"]
    assert parts["types"] == (("x", "Array[f32]"), ("a", "f32"))
    assert parts["comptime"] == (("FAST", True), ("N", 4))
    assert spec.id() is kid


def test_ids_differ_by_comptime_values_cube_dim_and_types(module):
    mod = module(SOURCE)
    other = module(SOURCE.replace("a: cj.f32", "a: cj.f64"))
    ids = {
        mod.k.specialize(16, N=4, FAST=True).id(),
        mod.k.specialize(16, N=5, FAST=True).id(),
        mod.k.specialize(16, N=4, FAST=False).id(),
        mod.k.specialize(32, N=4, FAST=True).id(),
    }
    assert len(ids) == 4
    assert (
        mod.k.specialize((16, 1, 1), N=4, FAST=True).id()
        == mod.k.specialize(16, N=4, FAST=True).id()
    )
    assert dict(other.k.specialize(16, N=4, FAST=True).id().info)["types"][1] == ("a", "f64")


def test_a_change_to_a_function_reached_through_another_changes_the_source_part(module):
    first = module(SOURCE, name="ident_a")
    same = module(SOURCE, name="ident_b")
    changed = module(SOURCE.replace("v * 2.0", "v * 3.0"), name="ident_c")

    def source_part(mod):
        return dict(mod.k.specialize(1, N=1, FAST=False).id().info)["source"]

    assert source_part(first) == source_part(same)
    assert source_part(first) != source_part(changed)


def test_stable_hash_is_the_same_across_processes_and_hash_seeds(tmp_path):
    (tmp_path / "ident_mod.py").write_text("import cubejit as cj\n" + SOURCE)
    script = textwrap.dedent("""
        import json, sys
        sys.path.insert(0, sys.argv[1])
        import ident_mod
        spec = ident_mod.k.specialize(256, N=8, FAST=True)
        print(json.dumps([spec.id().stable_hash(), str(spec.define())]))
    """)
    results = []
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        results.append(json.loads(out))
    assert results[0] == results[1]
    assert len(results[0][0]) == 64


def test_a_kernel_reaches_functions_through_module_attributes(module):
    helpers = module(
        """
        @cj.function
        def twice(v):
            return v * 2.0
    """,
        name="ident_helpers",
    )
    mod = module(f"""
        import {helpers.__name__} as helpers

        @cj.kernel
        def k(x: cj.Array[cj.f32]):
            x[0] = helpers.twice(x[0])
    """)
    from cubejit.lang.identity import reached_functions

    assert [f.name for f in reached_functions(mod.k.source)] == ["ident_helpers.twice"]
    assert "x[0i32] = twice_1_v * 2.0f32" in str(mod.k.specialize(1).define())
    assert isinstance(cj.KernelId("n"), cj.KernelId)


def test_rebinding_a_global_the_kernel_names_changes_its_identity(module):
    kernel = """
        @cj.kernel
        def k(x: cj.Array[cj.f32], out: cj.Array[cj.f64]):
            v = DT(x[0])
            out[0] = cj.f64(v)
    """
    narrow = module("DT = cj.f32\n" + textwrap.dedent(kernel))
    wide = module("DT = cj.f64\n" + textwrap.dedent(kernel))

    def source_part(mod):
        return dict(mod.k.specialize(1).id().info)["source"]

    assert source_part(narrow) != source_part(wide)
    assert "let v: f64" in str(wide.k.specialize(1).define())
    assert "let v: f32" in str(narrow.k.specialize(1).define())


def test_a_captured_module_constant_is_a_value_and_part_of_the_identity(module):
    kernel = """
        import math

        @cj.kernel
        def k(out: cj.Array[cj.f32]):
            out[0] = SCALE * math.pi
    """
    small = module("SCALE = 2.0\n" + textwrap.dedent(kernel))
    large = module("SCALE = 3.0\n" + textwrap.dedent(kernel))

    def source_part(mod):
        return dict(mod.k.specialize(1).id().info)["source"]

    assert source_part(small) != source_part(large)
    assert repr(float(__import__("numpy").float32(2.0 * 3.141592653589793))) in str(
        small.k.specialize(1).define()
    )
