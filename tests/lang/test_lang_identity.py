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


def twice_module(module, name):
    """A module of the name ``name`` holding the function ``twice``, for kernels to reach."""
    return module(
        """
        @cj.function
        def twice(v):
            return v * 2.0
    """,
        name=name,
    )


def test_a_kernel_reaches_functions_through_module_attributes(module):
    helpers = twice_module(module, "ident_helpers")
    mod = module(f"""
        import {helpers.__name__} as helpers

        @cj.kernel
        def k(x: cj.Array[cj.f32]):
            x[0] = helpers.twice(x[0])
    """)
    from cubejit.lang.identity import reached_functions

    assert [f.name for f in reached_functions(mod.k.reading)] == ["ident_helpers.twice"]
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


def source_part(kernel, **comptime):
    return dict(kernel.specialize(1, **comptime).id().info)["source"]


def resolved_names(obj, chains):
    """The spellings and meanings an identity takes from ``chains`` of ``obj``'s source."""
    from cubejit.lang import identity

    reading = identity.Reading(obj.fn, "", tuple(chains))
    return {(spelling, repr(identity._meaning(o))) for spelling, o in identity._free_names(reading)}


def test_a_kernel_s_identity_is_computed_without_parsing_its_source(tmp_path):
    (tmp_path / "ident_unparsed.py").write_text("import cubejit as cj\n" + SOURCE)
    script = textwrap.dedent("""
        import json, sys
        sys.path.insert(0, sys.argv[1])
        import ident_unparsed
        before = set(sys.modules)
        spec = ident_unparsed.k.specialize(256, N=8, FAST=True)
        spec.id()
        print(json.dumps(sorted(m for m in set(sys.modules) - before if "lang" in m)))
    """)
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True
    ).stdout
    imported = json.loads(out)
    assert "cubejit.lang.source" not in imported and "cubejit.lang.frontend" not in imported


def test_the_names_read_without_parsing_include_every_name_of_the_syntax_tree(module):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cooperation"))
    try:
        import cooperative_kernels
    finally:
        sys.path.pop(0)
    helpers = twice_module(module, "ident_tree_helpers")
    mod = module(f"""
        import math
        import {helpers.__name__} as helpers
        SCALE = 2.0

        @cj.kernel(warm=[dict(cube_dim=64)])
        def k(x: cj.Array[cj.f32], N: cj.Comptime[int]):
            '''Scales x. By SCALE; see math.pi.'''
            i = cj.ABSOLUTE_POS  # a comment naming cj.f64
            acc = cj.f32(0)
            for j in range(N):
                acc += helpers . twice(x[j]) * (SCALE +
                    math.
                    pi)
            x[i] = acc + (x[0]).real
    """)
    objects = [mod.k, helpers.twice] + [
        v for v in vars(cooperative_kernels).values() if isinstance(v, cj.Kernel)
    ]
    assert len(objects) > 5
    for obj in objects:
        unparsed = resolved_names(obj, obj.reading.chains)
        assert resolved_names(obj, obj.source.free_chains) <= unparsed, obj.name
    assert ("helpers.twice", repr(("function", helpers.twice.reading.digest()))) in unparsed_of(
        mod.k
    )


def unparsed_of(kernel):
    return resolved_names(kernel, kernel.reading.chains)


def test_a_global_named_only_in_a_function_s_annotation_is_part_of_the_identity(module):
    function = """
        @cj.function
        def widen(v: T):
            return v

        @cj.kernel
        def k(x: cj.Array[cj.f64]):
            x[0] = widen(x[1])
    """
    narrow = module("T = cj.f32\n" + textwrap.dedent(function))
    wide = module("T = cj.f64\n" + textwrap.dedent(function))
    assert source_part(narrow.k) != source_part(wide.k)


def test_a_closure_cell_the_kernel_reads_is_part_of_its_identity(module):
    mod = module("""
        def make(scale):
            @cj.kernel
            def k(x: cj.Array[cj.f32]):
                x[0] = x[0] * scale

            return k
    """)
    assert source_part(mod.make(2.0)) != source_part(mod.make(3.0))
    assert source_part(mod.make(2.0)) == source_part(mod.make(2.0))


def test_a_name_after_a_hash_inside_a_string_still_counts(module):
    kernel = """
        @cj.kernel
        def k(x: cj.Array[cj.f32]):
            x[0] = cj.f32(len("#")) * SCALE
    """
    small = module("SCALE = 2.0\n" + textwrap.dedent(kernel))
    large = module("SCALE = 3.0\n" + textwrap.dedent(kernel))
    assert source_part(small.k) != source_part(large.k)


def test_a_kernel_whose_string_continues_at_column_zero_still_hashes_all_its_text(module):
    kernel = (
        "@cj.kernel\n"
        "def k(x: cj.Array[cj.f32]):\n"
        '    """Doc\n'
        'at column zero."""\n'
        "    x[0] = VALUE\n"
    )
    first = module(kernel.replace("VALUE", "1.0"))
    second = module(kernel.replace("VALUE", "2.0"))
    assert first.k.reading.text.rstrip().endswith("x[0] = 1.0")
    assert source_part(first.k) != source_part(second.k)
