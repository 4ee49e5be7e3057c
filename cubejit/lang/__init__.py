"""The kernel language: ``@kernel``, ``@function``, the annotations and the builtins.

A kernel is Python syntax read by cubejit and expanded into its IR (``cubejit.ir``); see
LANGUAGE.md for the surface. Names here are re-exported by :mod:`cubejit`.

Where LANGUAGE.md leaves a choice, the language decides:

- Conditions (``if``, ``while``, ``x if c else y``) and the operands of ``and``/``or``/``not``
  must be bools: a comparison, a bool local or a comptime bool. A number there is a compile
  error that suggests ``x != 0``; Python's truthiness never applies.
- A condition made only of comptime values and literals is folded: only the branch taken is
  translated (errors in the other one never show). Locals are run-time values, never folded.
- ``x if c else y`` with two literal branches and a run-time ``c`` takes ``f32`` when either
  is a float, else ``i32``.
- A local first assigned a bare literal (``acc = 0``) is retyped to the first typed value it
  meets when the literal is exact there; the kernel is translated again with that type (at
  most once per such local). A local may also be declared with a type: ``acc: cj.f64 = 0``.
  A ``@cj.function`` may annotate parameters (arguments are checked and literals converted)
  and its result type.
- ``cj.unroll`` expands at most 4096 iterations. ``len(a)``, ``int(x)``, ``float(x)`` and
  ``pow`` are errors that name the language's spelling (``a.len()``, casts, ``**``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from cubejit.lang.annotations import Array, Comptime, Line, Tensor
from cubejit.lang.function import Function, function
from cubejit.lang.kernel import Kernel, KernelSpec, kernel

if TYPE_CHECKING:
    from cubejit.lang.cooperation import (
        Atomic,
        LocalArray,
        SharedMemory,
        plane_all,
        plane_any,
        plane_ballot,
        plane_broadcast,
        plane_elect,
        plane_exclusive_prod,
        plane_exclusive_sum,
        plane_inclusive_prod,
        plane_inclusive_sum,
        plane_max,
        plane_min,
        plane_prod,
        plane_shuffle,
        plane_shuffle_down,
        plane_shuffle_up,
        plane_shuffle_xor,
        plane_sum,
        sync_cube,
        sync_plane,
    )
    from cubejit.lang.division import cdiv
    from cubejit.lang.intrinsics import (
        abs,
        acos,
        acosh,
        asin,
        asinh,
        atan,
        atan2,
        atanh,
        bitcast,
        ceil,
        cos,
        cosh,
        erf,
        exp,
        exp2,
        floor,
        fma,
        hypot,
        isinf,
        isnan,
        line,
        log,
        log2,
        max,
        min,
        pow,
        round,
        sin,
        sinh,
        sqrt,
        tan,
        tanh,
        trunc,
        unroll,
    )
else:

    def __getattr__(name: str) -> object:
        """The builtins, imported when first named: they are objects of the IR (math functions,
        plane operations, buffer kinds), which a module that only defines kernels never needs
        before a kernel is specialised."""
        if name in __all__:
            for home in _BUILTINS:
                module = importlib.import_module(home)
                if hasattr(module, name):
                    value = globals()[name] = getattr(module, name)
                    return value
        raise AttributeError(f"module 'cubejit.lang' has no attribute {name!r}")


_BUILTINS = ("cubejit.lang.division", "cubejit.lang.cooperation", "cubejit.lang.intrinsics")
"""Where the builtins named in ``__all__`` (and imported above for type checkers) live, the
lightest first: ``cj.cdiv``, which a script's launch geometry names first, imports no IR."""

__all__ = [
    "Array",
    "Atomic",
    "Comptime",
    "Function",
    "Kernel",
    "KernelSpec",
    "Line",
    "LocalArray",
    "SharedMemory",
    "Tensor",
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitcast",
    "cdiv",
    "ceil",
    "cos",
    "cosh",
    "erf",
    "exp",
    "exp2",
    "floor",
    "fma",
    "function",
    "hypot",
    "isinf",
    "isnan",
    "kernel",
    "line",
    "log",
    "log2",
    "max",
    "min",
    "plane_all",
    "plane_any",
    "plane_ballot",
    "plane_broadcast",
    "plane_elect",
    "plane_exclusive_prod",
    "plane_exclusive_sum",
    "plane_inclusive_prod",
    "plane_inclusive_sum",
    "plane_max",
    "plane_min",
    "plane_prod",
    "plane_shuffle",
    "plane_shuffle_down",
    "plane_shuffle_up",
    "plane_shuffle_xor",
    "plane_sum",
    "pow",
    "round",
    "sin",
    "sinh",
    "sqrt",
    "sync_cube",
    "sync_plane",
    "tan",
    "tanh",
    "trunc",
    "unroll",
]
