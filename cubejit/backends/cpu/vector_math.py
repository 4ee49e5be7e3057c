"""Vector forms of libm functions, so loops that call ``tanhf`` or ``expf`` still vectorise.

glibc's libmvec has SIMD versions of many libm functions on x86_64, but ``<math.h>`` declares
them only under ``-ffast-math``, which cubejit never uses (it would change what NaN, infinity
and float reassociation mean). The C backend calls each such function by a name of its own
(:func:`vector_name`: ``cj_tanhf``), and :func:`vector_declarations` declares that name as the
libm symbol itself with OpenMP's ``declare simd``, where the compiler targets x86_64 with a
glibc whose libmvec has it; elsewhere the name is plain libm's. A name of its own also keeps the
C compiler from fusing ``sin`` and ``cos`` of one value into ``sincos``, which it cannot
vectorise. :func:`link_libraries` names libmvec for the linker. libmvec's results are within a
few ulps of libm's, as any two libms are, and NaN and infinities keep their meaning.
"""

from __future__ import annotations

import functools
import platform

_SINCE_GLIBC = {
    **dict.fromkeys(("exp", "log", "sin", "cos", "pow"), 22),
    **dict.fromkeys(("tan", "tanh", "erf"), 35),
}
"""The glibc 2.x release whose x86_64 libmvec first has each function (double and float)."""

_VECTOR_NAMES = frozenset((*_SINCE_GLIBC, *(f"{base}f" for base in _SINCE_GLIBC)))

_ARITY = {"pow": 2}

_DECLARE = "#pragma omp declare simd notinbranch"


def vector_name(libm_name: str) -> str:
    """The name the C text calls libm function ``libm_name`` (``"tanhf"``) by."""
    return f"cj_{libm_name}" if libm_name in _VECTOR_NAMES else libm_name


def vector_declarations(text: str) -> str:
    """The declarations of the :func:`vector_name` names ``text`` calls (empty when it calls
    none), to be placed after ``#include <math.h>``."""
    blocks = []
    for base, minor in _SINCE_GLIBC.items():
        for name, c_type in ((base, "double"), (f"{base}f", "float")):
            if f"cj_{name}(" not in text:
                continue
            args = ", ".join([c_type] * _ARITY.get(base, 1))
            blocks.append(
                "\n".join(
                    (
                        "#if defined(__x86_64__) && defined(__GLIBC__) && defined(_OPENMP) && "
                        f"(__GLIBC__ > 2 || __GLIBC_MINOR__ >= {minor})",
                        _DECLARE,
                        f"__attribute__((const, nothrow)) extern {c_type} "
                        f'cj_{name}({args}) __asm__("{name}");',
                        "#else",
                        f"#define cj_{name} {name}",
                        "#endif",
                    )
                )
            )
    return "\n".join(blocks)


def link_libraries(source: str) -> tuple[str, ...]:
    """The linker flags ``source`` needs for its vector forms: ``("-lmvec",)`` when it declares
    any and the host is x86_64 with glibc, else none."""
    return ("-lmvec",) if _DECLARE in source and _glibc_x86_64() else ()


@functools.cache
def _glibc_x86_64() -> bool:
    return platform.machine() in ("x86_64", "AMD64") and platform.libc_ver()[0] == "glibc"
