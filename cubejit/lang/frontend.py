"""The frontend's entry point: a kernel's source and comptime values to its IR.

This is the one place that sets up a translation: parameters become IR parameters (arrays,
scalars) or constants (comptime values), the body is translated statement by statement, and the
result is a :class:`~cubejit.ir.nodes.KernelIR` that the caller validates.
"""

from __future__ import annotations

from collections.abc import Mapping

from cubejit.ir.nodes import KernelIR, Local, Param
from cubejit.ir.types import ArrayType, Scalar, TensorType
from cubejit.lang.annotations import ParamAnnotation
from cubejit.lang.builder import Retranslate
from cubejit.lang.folding import check_int
from cubejit.lang.frame import ConstBinding, Frame, LocalBinding
from cubejit.lang.source import Problem, PySource
from cubejit.lang.statements import StatementRules
from cubejit.lang.values import ArrayRef, Literal


class Translator(StatementRules):
    """Python syntax to IR, for one kernel specialisation."""


def translate(
    source: PySource,
    signature: list[tuple[str, ParamAnnotation]],
    comptime: Mapping[str, bool | int | float],
    cube_dim: tuple[int, int, int] | None = None,
    plane_dim: int | None = None,
) -> KernelIR:
    """The IR of the kernel ``source`` with ``comptime`` values folded in.

    Raises :class:`~cubejit.errors.CompilationError` (or ``UnsupportedError``) naming the kernel,
    the file and line, and what to write instead. ``cube_dim`` and ``plane_dim`` (the
    target's units per plane) give ``cj.CUBE_DIM*`` and ``cj.PLANE_DIM`` their values where a
    comptime int is needed (buffer sizes, ``cj.unroll`` bounds).
    """
    params = tuple(
        Param(name, t) for name, t in signature if isinstance(t, Scalar | ArrayType | TensorType)
    )
    retyped: dict[str, Scalar] = {}
    while True:
        try:
            return _attempt(source, signature, comptime, params, retyped, cube_dim, plane_dim)
        except Retranslate as again:
            retyped = again.types


def _attempt(
    source: PySource,
    signature: list[tuple[str, ParamAnnotation]],
    comptime: Mapping[str, bool | int | float],
    params: tuple[Param, ...],
    retyped: dict[str, Scalar],
    cube_dim: tuple[int, int, int] | None,
    plane_dim: int | None,
) -> KernelIR:
    """One translation, with the locals in ``retyped`` declared in those types."""
    translator = Translator(source.name, params, retyped)
    translator.cube_dim = cube_dim
    translator.plane_dim = plane_dim
    frame = Frame(source, "", source.assigned)
    for name, t in signature:
        if isinstance(t, ArrayType | TensorType):
            frame.env[name] = ArrayRef(name, t)
        elif isinstance(t, Scalar):
            frame.env[name] = LocalBinding(name, t)
            frame.defined.add(name)  # type: ignore[union-attr]
    translator.frames.append(frame)
    try:
        for name, t in signature:
            if not isinstance(t, Scalar | ArrayType | TensorType):
                frame.env[name] = ConstBinding(_comptime(source, name, comptime[name]), "comptime")
        translator.block_of(source.tree.body)
    except Problem as problem:
        raise translator.error(source.tree, problem) from None
    locals_ = tuple(Local(name, t) for name, t in translator.locals.items())
    return KernelIR(
        source.name, params, locals_, tuple(translator.block), tuple(translator.allocations)
    )


def _comptime(source: PySource, name: str, value: bool | int | float) -> Literal:
    """The constant a comptime parameter holds; an integer beyond every integer type of the
    language is refused at the parameter."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            check_int(value, f"{name}={value}")
        except Problem as problem:
            problem.node = next(a for a in source.tree.args.args if a.arg == name)
            raise
    return Literal(value)
