"""IR to CUDA C++: the CUDA spellings of the shared C-family walker, and the kernel's wrapper.

The walker (:mod:`cubejit.backends.cstyle`) emits the body; this module says how CUDA spells
what differs from C — positions read from ``blockIdx``/``threadIdx``/``blockDim``/``gridDim``,
``__device__`` helpers, ``__half``/``__nv_bfloat16`` for f16/bf16, NaN and infinity without
``math.h`` — and wraps the body in one ``extern "C" __global__`` function named
:data:`~cubejit.backends.cuda.artifact.ENTRY_POINT`. Arrays arrive as a pointer followed by
their ``u32`` length, tensors as a pointer followed by their rank, shape and strides (``u32``
each), the slots of :mod:`cubejit.runtime.layout`; a tensor the variant says is contiguous
innermost is indexed along that dimension without its stride. The text depends on the IR
alone: nothing of the kernel's name or id is in it, so kernels that lower to the same IR share
one cubin.

A kernel's coarsened no-alias form (:mod:`cubejit.backends.cuda.coarsening`) has
``__restrict__`` arrays (``const`` where the kernel never writes them), so NVRTC may move loads
freely, and takes the user's cube count along x as a last parameter.
"""

from __future__ import annotations

import math
import struct

from cubejit.backends.cstyle import (
    Call,
    Dialect,
    emit_body,
    length_name,
    param_name,
    shape_name,
    stride_name,
)
from cubejit.backends.cstyle_lines import PairSpelling, struct_name
from cubejit.backends.cuda import cooperation
from cubejit.backends.cuda.artifact import ENTRY_POINT
from cubejit.backends.cuda.coarsening import FACTOR, Coarsened, written_arrays
from cubejit.backends.inspection import CUDA_RECORD
from cubejit.ir import nodes as ir
from cubejit.ir.traversal import walk_exprs
from cubejit.ir.types import SCALARS, ArrayType, Scalar, TensorType, bf16, f16, f32, f64, u32

_AXES = ("x", "y", "z")
_HALVES = frozenset({"f16", "bf16"})
_FROM_DOUBLE = {"f16": "__double2half", "bf16": "__double2bfloat16"}


class CudaDialect(Dialect):
    """CUDA C++ as NVRTC compiles it, with ``cuda_fp16.h``/``cuda_bf16.h`` for half types."""

    type_names = {
        "bool": "bool",
        "i8": "signed char",
        "i16": "short",
        "i32": "int",
        "i64": "long long",
        "u8": "unsigned char",
        "u16": "unsigned short",
        "u32": "unsigned int",
        "u64": "unsigned long long",
        "f16": "__half",
        "bf16": "__nv_bfloat16",
        "f32": "float",
        "f64": "double",
    }
    helper_qualifier = "static __device__ __forceinline__"

    def line_struct(self, elem: Scalar, width: int) -> str:
        """CUDA's spelling of an aligned line, which NVRTC loads and stores as one vector
        (``ld.global.v4.f32``): ``__align__`` on the struct itself."""
        size = width * elem.itemsize
        name = struct_name(elem, width)
        return f"struct __align__({size}) {name} {{ {self.type_name(elem)} v[{width}]; }};"

    def pair(self, elem: Scalar) -> PairSpelling | None:
        """``__half2`` and ``__nv_bfloat162``: two lanes in one instruction."""
        return _PAIRS.get(elem.name)

    offset_type = u32
    plane_size = 32

    def lane(self) -> str:
        return "cj_plane_lane()"

    def sync(self, group: ir.SyncCube | ir.SyncPlane) -> str | None:
        if isinstance(group, ir.SyncCube):
            return "__syncthreads();"
        return "__syncwarp(cj_plane_mask());"

    def atomic(
        self,
        op: ir.AtomicOp,
        t: Scalar,
        address: str,
        args: list[str],
        call: Call,
        shared: bool = False,
    ) -> str:
        return cooperation.atomic(op, t, address, args, call)

    def plane(self, fn: ir.PlaneFn, t: Scalar, args: list[str], call: Call) -> str:
        return cooperation.plane(fn, t, self.type_name(t), args, call)

    def print_line(self, format_: str, args: list[str], helpers: set[tuple[str, Scalar]]) -> str:
        return f"printf({', '.join((format_, *args))})"

    def own_helper(self, helper: str, t: Scalar) -> str | None:
        if helper == "bounds_failure":
            return CUDA_RECORD
        atomic = cooperation.atomic_helper(helper, t, self.helper_qualifier)
        if atomic is not None:
            return atomic
        literals = (self.int_literal(0, t), self.int_literal(1, t))
        if t.is_float:
            literals = (self.float_literal(0.0, t), self.float_literal(1.0, t))
        return cooperation.plane_helper(helper, t, self.helper_qualifier, self.type_name, literals)

    def unit_axis(self, axis: int) -> str:
        return f"threadIdx.{_AXES[axis]}"

    def cube_axis(self, axis: int) -> str:
        return f"blockIdx.{_AXES[axis]}"

    def dim_axis(self, axis: int) -> str:
        return f"blockDim.{_AXES[axis]}"

    def count_axis(self, axis: int) -> str:
        return f"gridDim.{_AXES[axis]}"

    def float_literal(self, value: float, t: Scalar) -> str:
        """NaN and infinities by their bits: NVRTC has no ``math.h`` macros."""
        if math.isfinite(value):
            return super().float_literal(value, t)
        if t == f64:
            bits = struct.unpack("<q", struct.pack("<d", value))[0]
            return f"__longlong_as_double({bits}ll)"
        bits = struct.unpack("<i", struct.pack("<f", value))[0]
        code = f"__int_as_float({bits})"
        return code if t == f32 else f"(({self.type_name(t)})({code}))"

    def cast(self, code: str, source: Scalar, target: Scalar) -> str:
        """Conversions to and from half types go through ``float`` (or, from ``f64``, the
        headers' direct conversions), the only ones both half types have unambiguously."""
        if source.name in _HALVES and source != target:
            code = f"((float)({code}))"
            source = f32
        if target.name in _HALVES and source != target:
            if source == f64:
                return f"{_FROM_DOUBLE[target.name]}({code})"
            if source != f32:
                code = f"((float)({code}))"
            return f"(({self.type_name(target)})({code}))"
        return super().cast(code, source, target)

    def bitcast(self, code: str, source: Scalar, target: Scalar) -> str | None:
        """Through the unsigned integer of the width, with CUDA's reinterpreting intrinsics."""
        if source.is_int and target.is_int:
            return super().bitcast(code, source, target)
        unsigned = self.type_name(SCALARS[f"u{source.bits}"])
        if source.is_float:
            bits = _TO_BITS[source.name].format(code)
        else:
            bits = f"(({unsigned})({code}))"
        if target.is_float:
            return _FROM_BITS[target.name].format(bits)
        return f"(({self.type_name(target)})({bits}))"


_PAIR_OPS = {
    ir.BinaryOp.ADD: "__hadd2_rn",
    ir.BinaryOp.SUB: "__hsub2_rn",
    ir.BinaryOp.MUL: "__hmul2_rn",
}
"""The `_rn` forms: never contracted into a fused multiply-add, so each lane rounds after each
operation, as the scalar code and numpy do."""
_PAIRS = {
    "f16": PairSpelling(
        "__half2", "__halves2half2", "__half2half2", "__low2half", "__high2half", _PAIR_OPS
    ),
    "bf16": PairSpelling(
        "__nv_bfloat162",
        "__halves2bfloat162",
        "__bfloat162bfloat162",
        "__low2bfloat16",
        "__high2bfloat16",
        _PAIR_OPS,
    ),
}

_TO_BITS = {
    "f16": "__half_as_ushort({})",
    "bf16": "__bfloat16_as_ushort({})",
    "f32": "__float_as_uint({})",
    "f64": "((unsigned long long)__double_as_longlong({}))",
}
_FROM_BITS = {
    "f16": "__ushort_as_half({})",
    "bf16": "__ushort_as_bfloat16({})",
    "f32": "__uint_as_float({})",
    "f64": "__longlong_as_double((long long)({}))",
}

DIALECT = CudaDialect()


class _CoarsenedDialect(CudaDialect):
    """Positions of one unit of a coarsened thread: its cube along x and the cube count along x
    are the user's, read from the names ``cube`` and ``count``."""

    def __init__(self, cube: str, count: str) -> None:
        self.cube = cube
        self.count = count

    def cube_axis(self, axis: int) -> str:
        return self.cube if axis == 0 else super().cube_axis(axis)

    def count_axis(self, axis: int) -> str:
        return self.count if axis == 0 else super().count_axis(axis)


def needs_half_headers(kernel: ir.KernelIR) -> bool:
    """Whether ``kernel`` uses f16 or bf16 anywhere, and so needs the CUDA half headers."""
    types: list[Scalar] = [
        p.type.elem if isinstance(p.type, ArrayType | TensorType) else p.type for p in kernel.params
    ]
    types += [local.type for local in kernel.locals]
    types += [e.type for e in walk_exprs(kernel.body)]
    return any(t in (f16, bf16) for t in types)


def _signature(kernel: ir.KernelIR, restrict: bool) -> list[str]:
    written = written_arrays(kernel)
    parts = []
    for p in kernel.params:
        if isinstance(p.type, ArrayType):
            elem = DIALECT.type_name(p.type.elem)
            if restrict:
                const = "" if p.name in written else "const "
                parts.append(f"{const}{elem}* __restrict__ {param_name(p.name)}")
            else:
                parts.append(f"{elem}* {param_name(p.name)}")
            parts.append(f"unsigned int {length_name(p.name)}")
        elif isinstance(p.type, TensorType):
            assert p.type.rank is not None
            rank = p.type.rank
            elem = DIALECT.type_name(p.type.elem)
            if restrict:
                const = "" if p.name in written else "const "
                parts.append(f"{const}{elem}* __restrict__ {param_name(p.name)}")
            else:
                parts.append(f"{elem}* {param_name(p.name)}")
            parts.append(f"unsigned int r_{p.name}")
            parts += [f"unsigned int {shape_name(p.name, d)}" for d in range(rank)]
            parts += [f"unsigned int {stride_name(p.name, d)}" for d in range(rank)]
        else:
            parts.append(f"{DIALECT.type_name(p.type)} {param_name(p.name)}")
    return parts


def _tensor_lengths(kernel: ir.KernelIR) -> list[str]:
    """The declarations of each tensor's length, the product of its shape."""
    lines = []
    for p in kernel.tensors():
        assert isinstance(p.type, TensorType) and p.type.rank is not None
        product = " * ".join(shape_name(p.name, d) for d in range(p.type.rank))
        lines.append(f"const unsigned int {length_name(p.name)} = {product};")
    return lines


def _coarsened_head(coarsened: Coarsened) -> list[str]:
    """The declarations of the names a coarsened thread's body reads besides the kernel's."""
    count = param_name(coarsened.count)
    first = param_name(coarsened.cubes[0])
    lines = [f"const unsigned int {first} = (blockIdx.x * {FACTOR}u);"]
    lines += [
        f"const unsigned int {param_name(cube)} = ({first} + {k}u);"
        for k, cube in enumerate(coarsened.cubes[1:], start=1)
    ]
    for name, position, k in coarsened.positions:
        unit = _CoarsenedDialect(param_name(coarsened.cubes[k]), count)
        lines.append(f"const unsigned int {param_name(name)} = {unit.position(position)};")
    return lines


def cuda_source(
    kernel: ir.KernelIR,
    coarsened: Coarsened | None = None,
    *,
    no_alias: bool = True,
    contiguous: frozenset[str] = frozenset(),
) -> str:
    """The whole CUDA C++ translation unit of ``kernel``. With ``coarsened`` (what
    :func:`~cubejit.backends.cuda.coarsening.coarsen` made of it), the coarsened no-alias form,
    or with ``no_alias`` false the plain one; either begins with a comment naming the
    coarsening, so that a kernel's text says everything its artifact's metadata does and two
    kernels share an artifact only where that holds. The tensors named in ``contiguous`` have
    stride 1 along their last dimension. Raises
    :class:`~cubejit.errors.UnsupportedError` for what CUDA cannot express."""
    sections = []
    if coarsened is not None:
        sections.append(f"// cubejit: the no-alias form runs {FACTOR} cubes per CUDA block")
    if coarsened is None or not no_alias:
        emitted = emit_body(kernel, DIALECT, contiguous=contiguous)
        signature = _signature(kernel, restrict=False)
        head: list[str] = _tensor_lengths(kernel)
    else:
        emitted = emit_body(coarsened.kernel, DIALECT, contiguous=contiguous)
        count = f"unsigned int {param_name(coarsened.count)}"
        signature = [*_signature(kernel, restrict=True), count]
        head = [*_tensor_lengths(kernel), *_coarsened_head(coarsened)]
    if needs_half_headers(kernel):
        sections.append("#include <cuda_fp16.h>\n#include <cuda_bf16.h>")
    if cooperation.uses_planes(kernel):
        sections.append(cooperation.PLANE_PRELUDE)
    if emitted.helpers:
        sections.append(emitted.helpers)
    head = [*cooperation.shared_declarations(kernel, DIALECT.type_name), *head]
    body = "".join(f"    {line}\n" for line in (*head, *emitted.lines))
    return (
        "".join(f"{section}\n\n" for section in sections)
        + f'extern "C" __global__ void {ENTRY_POINT}({", ".join(signature)}) {{\n'
        + body
        + "}\n"
    )
