"""Reading a kernel's or function's parameter annotations from its source.

Annotations are read from the syntax tree and resolved the way the function's own names are
(closure, globals, builtins), so they mean the same with or without
``from __future__ import annotations`` and whether or not Python could evaluate them.
"""

from __future__ import annotations

import ast
import builtins

from cubejit.ir.types import ArrayType, Scalar, TensorType
from cubejit.lang.annotations import ComptimeType, ParamAnnotation
from cubejit.lang.source import Problem, PySource, is_missing

_EXPECTED = "a scalar type (cj.f32...), cj.Array[T], cj.Tensor[T] or cj.Comptime[int|bool|float]"


def _evaluate(source: PySource, node: ast.expr) -> object:
    if isinstance(node, ast.Name):
        obj = source.lookup(node.id)
        if is_missing(obj):
            raise Problem(f"`{node.id}` is not defined", node=node)
        return obj
    if isinstance(node, ast.Attribute):
        base = _evaluate(source, node.value)
        if not hasattr(base, node.attr):
            raise Problem(f"`{ast.unparse(node)}` does not exist", node=node)
        return getattr(base, node.attr)
    if isinstance(node, ast.Subscript):
        base = _evaluate(source, node.value)
        try:
            return base[_evaluate(source, node.slice)]  # type: ignore[index]
        except TypeError as exc:
            raise Problem(f"`{ast.unparse(node)}`: {exc}", node=node) from None
    if isinstance(node, ast.Tuple):
        return tuple(_evaluate(source, e) for e in node.elts)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            inner = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            raise Problem(f"the annotation {node.value!r} does not parse", node=node) from None
        return _evaluate(source, ast.copy_location(inner, node))
    raise Problem(f"the annotation `{ast.unparse(node)}` is not {_EXPECTED}", node=node)


def annotation_of(source: PySource, node: ast.expr) -> ParamAnnotation:
    """The type an annotation names; a :class:`Problem` at ``node`` if it names none."""
    obj = _evaluate(source, node)
    if isinstance(obj, Scalar | ArrayType | TensorType | ComptimeType):
        return obj
    hint = ""
    if obj in (builtins.int, builtins.float, builtins.bool):
        hint = (
            f"; a run-time `{obj.__name__}` needs a width (cj.i32, cj.f32, cj.bool_...), "  # type: ignore[union-attr]
            f"a compile-time one is cj.Comptime[{obj.__name__}]"
        )  # type: ignore[union-attr]
    raise Problem(f"the annotation `{ast.unparse(node)}` is not {_EXPECTED}{hint}", node=node)


def kernel_parameters(source: PySource) -> list[tuple[str, ParamAnnotation]]:
    """A kernel's parameters and their annotations, in signature order."""
    args = source.tree.args
    if args.vararg or args.kwarg:
        raise Problem(
            "a kernel takes named parameters only (no *args or **kwargs)",
            unsupported=True,
            node=args.vararg or args.kwarg,
        )
    if args.defaults or any(d is not None for d in args.kw_defaults):
        raise Problem(
            "kernel parameters cannot have defaults; pass every value to launch",
            unsupported=True,
            node=(args.defaults or args.kw_defaults)[0],
        )
    returns = source.tree.returns
    if returns is not None and not (isinstance(returns, ast.Constant) and returns.value is None):
        raise Problem(
            "a kernel returns nothing; remove the return annotation (or write "
            "`-> None`) and write results into an array",
            node=returns,
        )
    params = []
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if arg.annotation is None:
            raise Problem(
                f"kernel parameter `{arg.arg}` needs an annotation: {_EXPECTED}", node=arg
            )
        params.append((arg.arg, annotation_of(source, arg.annotation)))
    return params


def resolve(source: PySource, node: ast.expr) -> object:
    """The Python object a type expression of ``source`` names (``cj.SharedMemory[cj.f32]``),
    resolved as annotations are; a :class:`Problem` at ``node`` if it names nothing."""
    return _evaluate(source, node)
