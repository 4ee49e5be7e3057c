"""Atomics and plane operations in C, for the CPU dialect.

Atomics are GCC's ``__atomic`` builtins with relaxed order (LANGUAGE.md). Integers use the
builtins directly where one exists (add, sub, and, or, xor, exchange, load, store); maxima,
minima, compare-exchange and every float operation go through a helper that runs a
compare-and-swap loop on the element's bits, so they are exact for every value, NaN included
(its bits compare, not its value). A plane is one unit on the CPU, so each plane operation is
the value a plane of one lane computes: a reduction, scan or exchange gives the unit's own
value, an exclusive scan the operation's identity, ``plane_elect()`` true and
``plane_ballot(b)`` bit 0 set when ``b`` holds.
"""

from __future__ import annotations

from collections.abc import Callable

from cubejit.backends.cstyle import Call
from cubejit.ir import nodes as ir
from cubejit.ir.types import SCALARS, Scalar

_RELAXED = "__ATOMIC_RELAXED"
_DIRECT = {
    ir.AtomicOp.ADD: "__atomic_fetch_add",
    ir.AtomicOp.SUB: "__atomic_fetch_sub",
    ir.AtomicOp.AND: "__atomic_fetch_and",
    ir.AtomicOp.OR: "__atomic_fetch_or",
    ir.AtomicOp.XOR: "__atomic_fetch_xor",
    ir.AtomicOp.EXCHANGE: "__atomic_exchange_n",
}
"""Integer operations GCC has a builtin for, beside load and store."""

_COMBINE = {
    ir.AtomicOp.ADD: "old + v",
    ir.AtomicOp.SUB: "old - v",
    ir.AtomicOp.MAX: "(v > old ? v : old)",
    ir.AtomicOp.MIN: "(v < old ? v : old)",
    ir.AtomicOp.EXCHANGE: "v",
}
"""What the compare-and-swap loop writes, from the element ``old`` and the operand ``v``."""

_CAS_LOOP = """\
{q} {T} cj_atomic_{op}_{t}({T} *p, {T} v) {{
    {U} seen = __atomic_load_n(({U} *)p, __ATOMIC_RELAXED);
    for (;;) {{
        {T} old;
        memcpy(&old, &seen, sizeof old);
        {T} next = ({T})({combine});
        {U} want;
        memcpy(&want, &next, sizeof want);
        if (__atomic_compare_exchange_n(
                ({U} *)p, &seen, want, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return old;
    }}
}}"""

_CAS = """\
{q} {T} cj_atomic_cas_{t}({T} *p, {T} expected, {T} desired) {{
    {U} seen, want;
    memcpy(&seen, &expected, sizeof seen);
    memcpy(&want, &desired, sizeof want);
    __atomic_compare_exchange_n(({U} *)p, &seen, want, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    {T} old;
    memcpy(&old, &seen, sizeof old);
    return old;
}}"""

_FLOAT_LOAD = """\
{q} {T} cj_atomic_load_{t}({T} *p) {{
    {U} bits = __atomic_load_n(({U} *)p, __ATOMIC_RELAXED);
    {T} value;
    memcpy(&value, &bits, sizeof value);
    return value;
}}"""

_FLOAT_STORE = """\
{q} void cj_atomic_store_{t}({T} *p, {T} v) {{
    {U} bits;
    memcpy(&bits, &v, sizeof bits);
    __atomic_store_n(({U} *)p, bits, __ATOMIC_RELAXED);
}}"""


def atomic(op: ir.AtomicOp, t: Scalar, address: str, args: list[str], helper: Call) -> str:
    """The C expression for ``op`` on the ``t`` at ``address`` (see the module's doc)."""
    if op is ir.AtomicOp.LOAD:
        if t.is_float:
            return helper("atomic_load", t, [address])
        return f"__atomic_load_n({address}, {_RELAXED})"
    if op is ir.AtomicOp.STORE:
        if t.is_float:
            return helper("atomic_store", t, [address, args[0]])
        return f"__atomic_store_n({address}, {args[0]}, {_RELAXED})"
    if op is ir.AtomicOp.COMPARE_EXCHANGE:
        return helper("atomic_cas", t, [address, *args])
    if t.is_int and op in _DIRECT:
        return f"{_DIRECT[op]}({address}, {args[0]}, {_RELAXED})"
    return helper(f"atomic_{op.name.lower()}", t, [address, args[0]])


def atomic_helper(
    helper: str, t: Scalar, qualifier: str, type_name: Callable[[Scalar], str]
) -> str | None:
    """The definition of atomic helper ``cj_<helper>_<t>``, or None if it is not one."""
    if helper.startswith("plain_"):
        return _plain_helper(helper.removeprefix("plain_"), t, qualifier, type_name)
    if not helper.startswith("atomic_"):
        return None
    unsigned = SCALARS[f"u{t.bits}"]
    fields = {"q": qualifier, "T": type_name(t), "U": type_name(unsigned), "t": t.name}
    what = helper.removeprefix("atomic_")
    if what == "load":
        return _FLOAT_LOAD.format(**fields)
    if what == "store":
        return _FLOAT_STORE.format(**fields)
    if what == "cas":
        return _CAS.format(**fields)
    op = ir.AtomicOp[what.upper()]
    return _CAS_LOOP.format(op=what, combine=_COMBINE[op], **fields)


_PLAIN = """\
{q} {T} cj_plain_{op}_{t}({T} *p, {T} v) {{
    {T} old = *p;
    *p = ({T})({combine});
    return old;
}}"""

_PLAIN_CAS = """\
{q} {T} cj_plain_cas_{t}({T} *p, {T} expected, {T} desired) {{
    {T} old = *p;
    if (memcmp(&old, &expected, sizeof old) == 0) *p = desired;
    return old;
}}"""

_PLAIN_COMBINE: dict[ir.AtomicOp, str] = {
    ir.AtomicOp.ADD: "({U})old + ({U})v",
    ir.AtomicOp.SUB: "({U})old - ({U})v",
    ir.AtomicOp.AND: "old & v",
    ir.AtomicOp.OR: "old | v",
    ir.AtomicOp.XOR: "old ^ v",
    **{
        op: combine
        for op, combine in _COMBINE.items()
        if op not in (ir.AtomicOp.ADD, ir.AtomicOp.SUB)
    },
}
"""Integers add and subtract in their unsigned type, so they wrap as the atomics do."""


def _plain_helper(what: str, t: Scalar, qualifier: str, type_name: Callable[[Scalar], str]) -> str:
    unsigned = type_name(SCALARS[f"u{t.bits}"]) if t.is_int else type_name(t)
    fields = {"q": qualifier, "T": type_name(t), "t": t.name}
    if what == "cas":
        return _PLAIN_CAS.format(**fields)
    combine = _PLAIN_COMBINE[ir.AtomicOp[what.upper()]].format(U=unsigned)
    return _PLAIN.format(op=what, combine=combine, **fields)


def plain(op: ir.AtomicOp, t: Scalar, address: str, args: list[str], helper: Call) -> str:
    """``op`` on an element only the running thread touches: the same result as
    :func:`atomic`, without the bus lock."""
    if op is ir.AtomicOp.LOAD:
        return f"(*({address}))"
    if op is ir.AtomicOp.STORE:
        return f"(*({address}) = ({args[0]}))"
    if op is ir.AtomicOp.COMPARE_EXCHANGE:
        return helper("plain_cas", t, [address, *args])
    return helper(f"plain_{op.name.lower()}", t, [address, args[0]])


def plane(fn: ir.PlaneFn, t: Scalar, args: list[str], zero: str, one: str) -> str:
    """The C expression for plane operation ``fn`` on a plane of one unit; ``zero`` and
    ``one`` are the literals 0 and 1 of ``t``."""
    if fn is ir.PlaneFn.ELECT:
        return "true"
    if fn is ir.PlaneFn.BALLOT:
        return f"({args[0]} ? 1u : 0u)"
    if fn is ir.PlaneFn.EXCLUSIVE_SUM:
        return zero
    if fn is ir.PlaneFn.EXCLUSIVE_PROD:
        return one
    return args[0]
