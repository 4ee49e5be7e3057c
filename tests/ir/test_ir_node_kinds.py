"""Every node kind reaches every pass, the printer, the validator and both emitters.

The kinds are enumerated from the IR's own unions, so a kind added to ``cubejit.ir.nodes``
fails here until it has a sample, and then fails wherever a dispatch forgot it (each one ends
in ``assert_never``, which raises)."""

from __future__ import annotations

import dataclasses

import pytest
from ir_samples import COLLECTIVES, SAMPLES, sample_kernel

from cubejit.backends.cpu.codegen import translation_unit
from cubejit.backends.cuda.coarsening import coarsen
from cubejit.backends.cuda.dialect import cuda_source
from cubejit.backends.unit_loop import plan_unit_loop
from cubejit.ir import nodes as n
from cubejit.ir.printer import print_expr, print_kernel
from cubejit.ir.traits import block_traits
from cubejit.ir.traversal import (
    EXPR_KINDS,
    STMT_KINDS,
    Role,
    blocks,
    fields_of,
    map_block,
    map_expr,
    operands,
    rebuild,
    walk_exprs,
    walk_stmts,
)
from cubejit.ir.types import f32, u32
from cubejit.ir.uniformity import analyse
from cubejit.ir.validate import validate
from cubejit.ir.values import declared

KINDS = (*EXPR_KINDS, *STMT_KINDS)


def test_every_node_kind_has_a_sample_that_holds_it() -> None:
    assert set(SAMPLES) == set(KINDS)
    for kind, block in SAMPLES.items():
        nodes = [*walk_stmts(block), *walk_exprs(block)]
        assert any(type(node) is kind for node in nodes), kind.__name__


@pytest.mark.parametrize("guarded", [False, True], ids=["top", "guarded"])
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_each_node_kind_goes_through_every_pass_printer_validator_and_emitter(
    kind: type, guarded: bool
) -> None:
    kernel = sample_kernel(SAMPLES[kind], guarded)
    validate(kernel)
    text = print_kernel(kernel)
    assert text.startswith("kernel samples.kernel(")
    values = declared(kernel)
    assert block_traits(kernel.body, values).writes
    uniformity = analyse(kernel)
    assert all(id(s) in uniformity.control for s in walk_stmts(kernel.body))
    plan = plan_unit_loop(kernel)
    assert (plan.bound is not None) == (guarded and kind not in COLLECTIVES)
    c_text = translation_unit(kernel, (64, 1, 1), 64)
    assert "void cubejit_launch(" in c_text
    coarsened = coarsen(kernel, (64, 1, 1))
    if coarsened is not None:
        validate(coarsened.kernel)
        print_kernel(coarsened.kernel)
    for no_alias in (False, True):
        assert "__global__" in cuda_source(kernel, coarsened, no_alias=no_alias)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_each_node_kind_is_rebuilt_from_its_fields(kind: type) -> None:
    kernel = sample_kernel(SAMPLES[kind], guarded=True)
    assert map_block(kernel.body, lambda e: e) == kernel.body
    for node in (*walk_stmts(kernel.body), *walk_exprs(kernel.body)):
        if type(node) is not kind:
            continue
        assert rebuild(node) is node
        assert rebuild(node, lambda e: e, lambda b: b) == node
        roles = {f.name: f.role for f in fields_of(kind)}
        assert set(roles) == {f.name for f in dataclasses.fields(kind)}
        expected = [getattr(node, name) for name, role in roles.items() if role is Role.EXPR]
        for name, role in roles.items():
            if role is Role.EXPRS:
                expected.extend(getattr(node, name))
        assert list(operands(node)) == expected
        if kind in STMT_KINDS:
            assert blocks(node) == tuple(
                getattr(node, name) for name, role in roles.items() if role is Role.BLOCK
            )


def test_rebuilding_replaces_operands_and_blocks_and_keeps_data() -> None:
    store = SAMPLES[n.Store][0]
    assert isinstance(store, n.Store)
    zero = n.Const(0, u32)
    moved = rebuild(store, lambda e: zero if e.type == u32 else e)
    assert (moved.array, moved.index, moved.value) == ("out", zero, store.value)
    loop = SAMPLES[n.RangeFor][0]
    emptied = rebuild(loop, block=lambda b: ())
    assert blocks(emptied) == ((),) and operands(emptied) == operands(loop)
    assert emptied.var == "k"


def test_an_expression_maps_bottom_up() -> None:
    e = n.Binary(
        n.BinaryOp.ADD, n.Var("a", f32), n.Math(n.MathFn.SQRT, (n.Var("a", f32),), f32), f32
    )
    seen: list[str] = []

    def visit(sub: n.Expr) -> n.Expr:
        seen.append(type(sub).__name__)
        return n.Var("b", f32) if isinstance(sub, n.Var) else sub

    mapped = map_expr(e, visit)
    assert seen == ["Var", "Var", "Math", "Binary"]
    assert print_expr(mapped) == "b + sqrt(b)"


@dataclasses.dataclass(frozen=True, slots=True)
class _MaybeOperand:
    value: n.Expr | None


def test_a_node_holding_children_in_another_shape_is_refused_rather_than_walked_past() -> None:
    with pytest.raises(TypeError, match=r"_MaybeOperand.value holds nodes as .*annotated Expr"):
        fields_of(_MaybeOperand)
