"""The rules of cooperation: who must reach a barrier or a plane operation, and what a target
must offer a kernel that shares memory, synchronises and uses atomics.

LANGUAGE.md's barrier rule: a ``sync_cube()`` must be reached by every unit of its cube, a
``sync_plane()`` or plane operation by every lane of its plane. :func:`check_barrier_rule`
asks the uniformity analysis (:mod:`cubejit.ir.uniformity`, data-dependent conditions taken as
the author's promise) how uniform the control flow reaching each one is, and refuses one under
a condition, in a loop or after a ``return`` that depends on the unit, naming the place and the
reason. :func:`check_cooperation` holds a kernel's shared memory and atomics against a target's
:class:`~cubejit.ir.capabilities.Capabilities`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from cubejit.errors import ValidationError
from cubejit.ir import nodes as ir
from cubejit.ir.capabilities import Capabilities
from cubejit.ir.printer import print_expr
from cubejit.ir.traversal import walk_stmts
from cubejit.ir.types import ArrayType, TensorType
from cubejit.ir.uniformity import Uniform, Uniformity, analyse

_COLLECTIVES = (ir.SyncCube, ir.SyncPlane, ir.PlaneOp)


def check_barrier_rule(kernel: ir.KernelIR) -> None:
    """Raises :class:`~cubejit.errors.ValidationError` for the first barrier or plane operation
    of ``kernel`` that some units of its group might not reach."""
    if not any(isinstance(s, _COLLECTIVES) for s in walk_stmts(kernel.body)):
        return
    _Rule(kernel, analyse(kernel, promise_loads=True)).block(kernel.body, ())


class _Rule:
    def __init__(self, kernel: ir.KernelIR, uniformity: Uniformity) -> None:
        self.kernel = kernel
        self.u = uniformity
        self.returns: list[Uniform] = []
        """The control level of each ``return`` met so far."""

    def block(self, stmts: tuple[ir.Stmt, ...], around: tuple[tuple[Uniform, str], ...]) -> None:
        """Walks ``stmts``; ``around`` holds, outermost first, how uniform each enclosing
        condition or loop is and how a message describes it."""
        for s in stmts:
            if isinstance(s, _COLLECTIVES):
                self.check(s, around)
            if isinstance(s, ir.If):
                why = f"under the condition `{print_expr(s.cond)}`, which depends on the unit"
                inner = (*around, (self.u.of(s.cond), why))
                self.block(s.then, inner)
                self.block(s.orelse, inner)
            elif isinstance(s, ir.RangeFor | ir.While):
                level = self.u.control_at(s.body[0]) if s.body else Uniform.LAUNCH
                why = "in a loop whose iterations depend on the unit"
                self.block(s.body, (*around, (level, why)))
            elif isinstance(s, ir.Return):
                self.returns.append(self.u.control_at(s))

    def check(self, s: ir.SyncCube | ir.SyncPlane | ir.PlaneOp, around: tuple) -> None:
        group = "cube" if isinstance(s, ir.SyncCube) else "plane"
        allowed = Uniform.CUBE if group == "cube" else Uniform.PLANE
        if self.u.control_at(s) <= allowed:
            return
        reasons = [why for level, why in around if level > allowed]
        if reasons:
            reason = reasons[-1]
        elif any(level > allowed for level in self.returns):
            reason = "after a `return` that depends on the unit"
        else:
            reason = "where only some units of its " + group + " arrive"
        what = _spelling(s)
        where = f" at {s.where}" if s.where else ""
        raise ValidationError(
            f"kernel {self.kernel.name}: {what}{where} is {reason}; every unit of the {group} "
            f"must reach it (conditions on UNIT_POS*, ABSOLUTE_POS* or UNIT_POS_PLANE split "
            f"the {group}): move it out of the condition or loop, and keep the condition "
            f"around the work instead",
            kernel=self.kernel.name,
        )


def _spelling(s: ir.SyncCube | ir.SyncPlane | ir.PlaneOp) -> str:
    if isinstance(s, ir.SyncCube):
        return "cj.sync_cube()"
    if isinstance(s, ir.SyncPlane):
        return "cj.sync_plane()"
    return f"cj.{s.fn.value}(...)"


def check_cooperation(
    kernel: ir.KernelIR, capabilities: Capabilities, fail: Callable[[str], NoReturn]
) -> None:
    """Calls ``fail`` with a message when ``kernel`` asks for more shared memory than a cube of
    the target has, or for atomics on a type the target has none for."""
    total = kernel.shared_bytes()
    if total > capabilities.shared_memory_per_cube:
        sizes = ", ".join(
            f"{b.name}: {b.size} x {b.elem} = {b.bytes} bytes"
            for b in kernel.allocations
            if b.kind is ir.BufferKind.SHARED
        )
        fail(
            f"it asks for {total} bytes of shared memory per cube ({sizes}); this device "
            f"gives a cube at most {capabilities.shared_memory_per_cube} bytes"
        )
    atomic_types = {
        p.type.elem.name
        for p in kernel.params
        if isinstance(p.type, ArrayType | TensorType) and p.type.atomic
    }
    atomic_types |= {b.elem.name for b in kernel.allocations if b.atomic}
    for name in sorted(atomic_types - capabilities.atomics):
        fail(f"it uses cj.Atomic[{name}], and this target has no atomics on {name}")
