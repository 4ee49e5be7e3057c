"""What ``print`` and a checked variant's bounds record are in C-family text.

A print statement becomes one ``printf``-style format and its arguments, each value converted
to the widest type of its family (``long long``, ``unsigned long long``, ``double``) so one
conversion fits every width; an item of several lanes (a line) prints as ``[a, b, c]``. The C
backend formats the whole line into a buffer and writes it with one call under ``stdout``'s lock
(``flockfile``), then flushes, so lines of units on different threads never mix; CUDA's
``printf`` writes a line per call into the device's buffer, shown at the next synchronisation.

A checked variant's record (:data:`~cubejit.runtime.checking.RECORD_SYMBOL`) is one global of
four fields, ``failed``, ``site``, ``index``, ``length`` (``i32``, ``i32``, ``i64``, ``i64``,
:data:`~cubejit.runtime.checking.RECORD_FORMAT`): the
first failing access claims ``failed`` with a compare-and-swap and fills the rest. Its name is
the same in every artifact, so a client reads it by name after the launch.
"""

from __future__ import annotations

from cubejit.ir.types import Kind, Scalar
from cubejit.ir.values import Item
from cubejit.runtime.checking import RECORD_SYMBOL

LINE_BYTES = 1024
"""The longest line one C ``print`` writes; a longer one is cut there."""


def print_format(item: Item, lanes: list[str]) -> tuple[str, list[str]]:
    """The format text and arguments printing one value of ``item``; ``lanes`` are the C
    expressions of its lanes, already converted to the type :func:`widened` gives."""
    one = _conversion(item.elem)
    values = [_argument(item.elem, lane) for lane in lanes]
    if item.width == 1:
        return one, values
    return "[" + ", ".join([one] * item.width) + "]", values


def literal_text(text: str) -> str:
    """``text`` as format text that prints as it is."""
    return text.replace("%", "%%")


def widened(t: Scalar, f64: Scalar, i64: Scalar, u64: Scalar) -> Scalar:
    """The scalar a value of ``t`` is converted to before it is printed (bools stay)."""
    if t.kind is Kind.FLOAT:
        return f64
    if t.kind is Kind.INT:
        return i64
    if t.kind is Kind.UINT:
        return u64
    return t


def _conversion(t: Scalar) -> str:
    return {Kind.BOOL: "%s", Kind.INT: "%lld", Kind.UINT: "%llu", Kind.FLOAT: "%g"}[t.kind]


def _argument(t: Scalar, text: str) -> str:
    return f'(({text}) ? "True" : "False")' if t.kind is Kind.BOOL else text


def c_string(text: str) -> str:
    """``text`` as a C string literal."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


C_PRINT = f"""#include <stdarg.h>
#include <stdio.h>
void flockfile(FILE *);
void funlockfile(FILE *);
static void cj_print(const char *format, ...) {{
    char line[{LINE_BYTES}];
    va_list values;
    va_start(values, format);
    vsnprintf(line, sizeof line, format, values);
    va_end(values);
    flockfile(stdout);
    fputs(line, stdout);
    fflush(stdout);
    funlockfile(stdout);
}}"""
"""The C backend's print: one formatted line written under ``stdout``'s lock."""

C_RECORD = f"""struct cj_bounds {{ int32_t failed; int32_t site; int64_t index; int64_t length; }};
struct cj_bounds {RECORD_SYMBOL};
static void cj_bounds_failure(int32_t site, int64_t index, int64_t length) {{
    int32_t free_ = 0;
    if (__atomic_compare_exchange_n(&{RECORD_SYMBOL}.failed, &free_, 1, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {{
        {RECORD_SYMBOL}.site = site;
        {RECORD_SYMBOL}.index = index;
        {RECORD_SYMBOL}.length = length;
    }}
}}"""
"""The C backend's record and the function that fills it once."""

CUDA_RECORD = f"""struct cj_bounds {{ int failed; int site; long long index; long long length; }};
extern "C" {{ __device__ cj_bounds {RECORD_SYMBOL}; }}
static __device__ void cj_bounds_failure(int site, long long index, long long length) {{
    if (atomicCAS(&{RECORD_SYMBOL}.failed, 0, 1) == 0) {{
        {RECORD_SYMBOL}.site = site;
        {RECORD_SYMBOL}.index = index;
        {RECORD_SYMBOL}.length = length;
        __threadfence();
    }}
}}"""
"""CUDA's record (a ``__device__`` global found by name in the module) and its filler."""
