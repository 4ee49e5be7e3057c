"""Vector forms of libm functions, so loops that call ``tanhf`` or ``expf`` still vectorise.

glibc's libmvec has SIMD versions of many libm functions on x86_64, but ``<math.h>`` declares
them only under ``-ffast-math``, which cubejit never uses (it would change what NaN, infinity
and float reassociation mean). :func:`vector_declarations` declares them itself, with OpenMP's
``declare simd``, for the functions a translation unit calls; the declarations apply only when
the compiler targets x86_64 with a glibc that has them, and :func:`link_libraries` names
libmvec for the linker where that can be so. libmvec's results are within a few ulps of libm's,
like any other libm's, and NaN and infinities keep their meaning.
"""

from __future__ import annotations

import functools
import platform
import re

_SINCE_GLIBC = {
    **dict.fromkeys(("exp", "log", "sin", "cos", "pow"), 22),
    **dict.fromkeys(("tan", "tanh", "erf"), 35),
}
"""The glibc 2.x release whose x86_64 libmvec first has each function (double and float)."""

_ARITY = {"pow": 2}

_GUARD = "#if defined(__x86_64__) && defined(__GLIBC__) && defined(_OPENMP)"


def vector_declarations(text: str) -> str:
    """Declarations of the vector forms of the libm functions ``text`` calls (empty when it
    calls none of those libmvec has), to be placed after ``#include <math.h>``."""
    lines = []
    for base, minor in _SINCE_GLIBC.items():
        for name, c_type in ((base, "double"), (f"{base}f", "float")):
            if re.search(rf"\b{name}\(", text) is None:
                continue
            args = ", ".join([c_type] * _ARITY.get(base, 1))
            lines += [
                f"#if __GLIBC__ > 2 || __GLIBC_MINOR__ >= {minor}",
                "#pragma omp declare simd notinbranch",
                f"extern {c_type} {name}({args});",
                "#endif",
            ]
    return "\n".join((_GUARD, *lines, "#endif")) if lines else ""


def link_libraries(source: str) -> tuple[str, ...]:
    """The linker flags ``source`` needs for its vector forms: ``("-lmvec",)`` when it declares
    any and the host is x86_64 with glibc, else none."""
    return ("-lmvec",) if _GUARD in source and _glibc_x86_64() else ()


@functools.cache
def _glibc_x86_64() -> bool:
    return platform.machine() in ("x86_64", "AMD64") and platform.libc_ver()[0] == "glibc"
