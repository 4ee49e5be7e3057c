"""Shared memory, barriers, atomics and plane operations in CUDA C++.

- Shared memory: ``__shared__`` arrays while a kernel's total stays within the 48 KiB every
  device gives a block statically; past that one dynamic ``extern __shared__`` buffer, carved
  into the kernel's buffers at 16-byte aligned offsets. Its size is the artifact's
  ``dynamic_shared``: the load sets ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` to it
  and every launch passes it.
- Barriers: ``__syncthreads()``; ``__syncwarp(mask)`` over the lanes of the unit's plane.
- Atomics: the hardware's ``atomic*`` where it has the operation for the type (``long long``
  through ``unsigned long long``, two's complement being the same bits); float maximum and
  minimum by a compare-and-swap loop on the bits; loads and stores as ``volatile`` accesses,
  which are single-copy atomic for aligned 32- and 64-bit elements.
- Plane operations: over the lanes of the unit's warp that exist (a cube whose size is not a
  multiple of 32 has a last, partial plane), ``__shfl_*_sync`` trees, ``__ballot_sync``,
  ``__all_sync``/``__any_sync``, and ``__reduce_*_sync`` for 32-bit integers where
  ``__CUDA_ARCH__`` is 800 or more.
"""

from __future__ import annotations

from collections.abc import Callable

from cubejit.backends.cstyle import Call, buffer_name
from cubejit.ir import nodes as ir
from cubejit.ir.traversal import walk_exprs
from cubejit.ir.types import SCALARS, Scalar

STATIC_SHARED_LIMIT = 48 * 1024
"""Bytes of ``__shared__`` arrays a block may hold without the dynamic attribute."""

_ALIGN = 16

PLANE_PRELUDE = """\
static __device__ __forceinline__ unsigned int cj_plane_lane() {
    return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u;
}

static __device__ __forceinline__ unsigned int cj_plane_mask() {
    const unsigned int units = blockDim.x * blockDim.y * blockDim.z;
    const unsigned int flat = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned int rest = units - (flat & ~31u);
    return rest >= 32u ? 0xffffffffu : ((1u << rest) - 1u);
}"""
"""The lane of the running unit and the mask of the lanes of its plane that exist."""


def uses_planes(kernel: ir.KernelIR) -> bool:
    """Whether ``kernel`` needs :data:`PLANE_PRELUDE`: it has a plane operation or barrier, or
    reads ``UNIT_POS_PLANE`` (which the dialect spells ``cj_plane_lane()``)."""
    if kernel.has(ir.PlaneOp) or kernel.has(ir.SyncPlane):
        return True
    return any(
        isinstance(e, ir.PositionOf) and e.which is ir.Position.UNIT_POS_PLANE
        for e in walk_exprs(kernel.body)
    )


def dynamic_shared_bytes(kernel: ir.KernelIR) -> int:
    """Bytes of dynamic shared memory ``kernel`` takes at launch: 0 when its buffers fit the
    static limit."""
    shared = [b for b in kernel.allocations if b.kind is ir.BufferKind.SHARED]
    total = sum(b.bytes for b in shared)
    if total <= STATIC_SHARED_LIMIT:
        return 0
    end = 0
    for b in shared:
        end = _aligned(end) + b.bytes
    return end


def _aligned(offset: int) -> int:
    return (offset + _ALIGN - 1) // _ALIGN * _ALIGN


def shared_declarations(kernel: ir.KernelIR, type_name: Callable[[Scalar], str]) -> list[str]:
    """The lines declaring ``kernel``'s shared buffers at the top of its ``__global__``."""
    shared = [b for b in kernel.allocations if b.kind is ir.BufferKind.SHARED]
    if not dynamic_shared_bytes(kernel):
        return [
            f"__shared__ __align__({_ALIGN}) {type_name(b.elem)} {buffer_name(b)}[{b.size}];"
            for b in shared
        ]
    lines = [f"extern __shared__ __align__({_ALIGN}) unsigned char cj_shared[];"]
    offset = 0
    for b in shared:
        offset = _aligned(offset)
        t = type_name(b.elem)
        lines.append(f"{t} *const {buffer_name(b)} = ({t} *)(cj_shared + {offset});")
        offset += b.bytes
    return lines


_ULL = "unsigned long long"
_HARDWARE = {
    ir.AtomicOp.ADD: ("atomicAdd", frozenset(("i32", "u32", "u64", "f32", "f64"))),
    ir.AtomicOp.SUB: ("atomicSub", frozenset(("i32", "u32"))),
    ir.AtomicOp.MAX: ("atomicMax", frozenset(("i32", "u32", "u64", "i64"))),
    ir.AtomicOp.MIN: ("atomicMin", frozenset(("i32", "u32", "u64", "i64"))),
    ir.AtomicOp.EXCHANGE: ("atomicExch", frozenset(("i32", "u32", "u64", "f32"))),
    ir.AtomicOp.COMPARE_EXCHANGE: ("atomicCAS", frozenset(("i32", "u32", "u64"))),
    ir.AtomicOp.AND: ("atomicAnd", frozenset(("i32", "u32", "u64"))),
    ir.AtomicOp.OR: ("atomicOr", frozenset(("i32", "u32", "u64"))),
    ir.AtomicOp.XOR: ("atomicXor", frozenset(("i32", "u32", "u64"))),
}
"""Each operation's intrinsic and the types the hardware has it for."""

_TO_BITS = {"f32": "__float_as_uint", "f64": "(unsigned long long)__double_as_longlong"}
_FROM_BITS = {"f32": "__uint_as_float", "f64": "__longlong_as_double((long long)"}


def atomic(op: ir.AtomicOp, t: Scalar, address: str, args: list[str], call: Call) -> str:
    """The CUDA expression for ``op`` on the ``t`` at ``address`` (see the module's doc)."""
    name = t.name
    if op is ir.AtomicOp.LOAD:
        return f"(*(volatile {_TYPES[name]} *)({address}))"
    if op is ir.AtomicOp.STORE:
        return f"(*(volatile {_TYPES[name]} *)({address}) = ({args[0]}))"
    if op is ir.AtomicOp.SUB and name not in _HARDWARE[op][1]:
        negated = f"(-({args[0]}))" if t.is_float else f"(({_TYPES[name]})0 - ({args[0]}))"
        return atomic(ir.AtomicOp.ADD, t, address, [negated], call)
    intrinsic, native = _HARDWARE[op]
    if name in native:
        return f"{intrinsic}({address}, {', '.join(args)})"
    if name == "i64":
        wide = ", ".join(f"({_ULL})({a})" for a in args)
        return f"((long long){intrinsic}(({_ULL} *)({address}), {wide}))"
    if op in (ir.AtomicOp.EXCHANGE, ir.AtomicOp.COMPARE_EXCHANGE):
        bits = "unsigned int" if name == "f32" else _ULL
        wide = ", ".join(f"{_TO_BITS[name]}({a})" for a in args)
        close = ")" if name == "f64" else ""
        return f"{_FROM_BITS[name]}({intrinsic}(({bits} *)({address}), {wide})){close}"
    return call(f"atomic_{op.name.lower()}", t, [address, *args])


_TYPES = {
    "i32": "int",
    "u32": "unsigned int",
    "i64": "long long",
    "u64": "unsigned long long",
    "f32": "float",
    "f64": "double",
}

_FLOAT_EXTREMUM = """\
{q} {T} cj_atomic_{op}_{t}({T} *p, {T} v) {{
    {B} *bits = ({B} *)p;
    {B} seen = *(volatile {B} *)bits;
    for (;;) {{
        const {T} old = {from_bits}(seen){close};
        const {T} next = (v {cmp} old) ? v : old;
        if (next == old) return old;
        const {B} before = atomicCAS(bits, seen, {to_bits}(next));
        if (before == seen) return old;
        seen = before;
    }}
}}"""


def atomic_helper(helper: str, t: Scalar, qualifier: str) -> str | None:
    """The definition of atomic helper ``cj_<helper>_<t>``, or None if it is not one."""
    if helper not in ("atomic_max", "atomic_min"):
        return None
    f32 = t.name == "f32"
    return _FLOAT_EXTREMUM.format(
        q=qualifier,
        T=_TYPES[t.name],
        B="unsigned int" if f32 else _ULL,
        op=helper.removeprefix("atomic_"),
        t=t.name,
        cmp=">" if helper == "atomic_max" else "<",
        from_bits=_FROM_BITS[t.name],
        close="" if f32 else ")",
        to_bits=_TO_BITS[t.name],
    )


_REDUCE = """\
{q} {T} cj_{fn}_{t}({T} v) {{
    const unsigned int mask = cj_plane_mask();
{fast}    const unsigned int lane = cj_plane_lane();
    const unsigned int n = __popc(mask);
    for (unsigned int d = 16u; d > 0u; d >>= 1) {{
        const {T} other = ({T})__shfl_down_sync(mask, v, d);
        if (lane + d < n) v = {combine};
    }}
    return ({T})__shfl_sync(mask, v, 0);
}}"""

_FAST_REDUCE = """\
#if __CUDA_ARCH__ >= 800
    return {intrinsic}(mask, v);
#endif
"""

_SCAN = """\
{q} {T} cj_{fn}_{t}({T} v) {{
    const unsigned int mask = cj_plane_mask();
    const unsigned int lane = cj_plane_lane();
    {T} x = v;
    for (unsigned int d = 1u; d < 32u; d <<= 1) {{
        const {T} other = ({T})__shfl_up_sync(mask, x, d);
        if (lane >= d) {{
            const {T} mine = x;
            x = {combine_scan};
        }}
    }}
{finish}
}}"""

_INCLUSIVE = "    return x;"
_EXCLUSIVE = """\
    const {T} before = ({T})__shfl_up_sync(mask, x, 1);
    return lane == 0u ? {identity} : before;"""

_COMBINE = {
    "sum": "({T})({a} + {b})",
    "prod": "({T})({a} * {b})",
    "max": "({b} > {a} ? {b} : {a})",
    "min": "({b} < {a} ? {b} : {a})",
}
_WRAPPING = {
    "sum": "({T})(({U}){a} + ({U}){b})",
    "prod": "({T})(({U}){a} * ({U}){b})",
}
"""How two values combine (``a`` the unit's own, ``b`` another lane's); integers wrap."""
_REDUCE_INTRINSICS = {
    "sum": "__reduce_add_sync",
    "max": "__reduce_max_sync",
    "min": "__reduce_min_sync",
}

_PLANE_REDUCTIONS = {
    ir.PlaneFn.SUM: "sum",
    ir.PlaneFn.PROD: "prod",
    ir.PlaneFn.MAX: "max",
    ir.PlaneFn.MIN: "min",
}
_PLANE_SCANS = {
    ir.PlaneFn.INCLUSIVE_SUM: ("sum", True),
    ir.PlaneFn.EXCLUSIVE_SUM: ("sum", False),
    ir.PlaneFn.INCLUSIVE_PROD: ("prod", True),
    ir.PlaneFn.EXCLUSIVE_PROD: ("prod", False),
}
_SHUFFLES = {
    ir.PlaneFn.BROADCAST: "__shfl_sync",
    ir.PlaneFn.SHUFFLE: "__shfl_sync",
    ir.PlaneFn.SHUFFLE_XOR: "__shfl_xor_sync",
    ir.PlaneFn.SHUFFLE_UP: "__shfl_up_sync",
    ir.PlaneFn.SHUFFLE_DOWN: "__shfl_down_sync",
}


def plane(fn: ir.PlaneFn, t: Scalar, type_name: str, args: list[str], call: Call) -> str:
    """The CUDA expression for plane operation ``fn`` with result type ``t``."""
    if fn is ir.PlaneFn.ELECT:
        return "((unsigned int)(__ffs(__activemask()) - 1) == cj_plane_lane())"
    if fn is ir.PlaneFn.BALLOT:
        return f"__ballot_sync(cj_plane_mask(), {args[0]})"
    if fn is ir.PlaneFn.ALL:
        return f"(__all_sync(cj_plane_mask(), {args[0]}) != 0)"
    if fn is ir.PlaneFn.ANY:
        return f"(__any_sync(cj_plane_mask(), {args[0]}) != 0)"
    if fn in _SHUFFLES:
        return f"(({type_name})({_SHUFFLES[fn]}(cj_plane_mask(), {args[0]}, {args[1]})))"
    return call(fn.value, t, args)


def plane_helper(
    helper: str,
    t: Scalar,
    qualifier: str,
    type_name: Callable[[Scalar], str],
    zero_one: tuple[str, str],
) -> str | None:
    """The definition of plane helper ``cj_<helper>_<t>``, or None if it is not one."""
    fn = next((f for f in ir.PlaneFn if f.value == helper), None)
    if fn is None:
        return None
    T = type_name(t)
    unsigned = type_name(_unsigned(t)) if t.is_int else T
    if fn in _PLANE_REDUCTIONS:
        op = _PLANE_REDUCTIONS[fn]
        combine = (_WRAPPING if t.is_int and op in _WRAPPING else _COMBINE)[op]
        fast = ""
        if t.name in ("i32", "u32") and op in _REDUCE_INTRINSICS:
            fast = _FAST_REDUCE.format(intrinsic=_REDUCE_INTRINSICS[op])
        return _REDUCE.format(
            q=qualifier,
            T=T,
            t=t.name,
            fn=helper,
            fast=fast,
            combine=combine.format(T=T, U=unsigned, a="v", b="other"),
        )
    op, inclusive = _PLANE_SCANS[fn]
    combine = (_WRAPPING if t.is_int and op in _WRAPPING else _COMBINE)[op]
    zero, one = zero_one
    identity = zero if op == "sum" else one
    return _SCAN.format(
        q=qualifier,
        T=T,
        t=t.name,
        fn=helper,
        combine_scan=combine.format(T=T, U=unsigned, a="mine", b="other"),
        finish=_INCLUSIVE if inclusive else _EXCLUSIVE.format(T=T, identity=identity),
    )


def _unsigned(t: Scalar) -> Scalar:
    return SCALARS[f"u{t.bits}"]
