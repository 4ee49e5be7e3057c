"""The helper functions C-family kernels call where C's operators differ from the language's.

C's ``/`` and ``%`` truncate; the language's ``//`` and ``%`` floor, as Python and numpy do.
Integer ``**`` has no C operator; C's shifts by the width or more, and its conversions of
out-of-range floats to integers, are undefined. Each helper is written once here, per scalar, in the
spellings of a :class:`~cubejit.backends.cstyle.Dialect`, so the C and CUDA backends compute
the same values. Where numpy gives an answer and C has undefined behaviour, the helper gives
numpy's: an integer ``x // 0`` and ``x % 0`` are 0, ``MIN // -1`` wraps, a shift by the width
or more gives 0 (-1 for a negative shifted right). A float converted to an integer saturates,
NaN giving 0, as PTX's ``cvt.rzi.sat`` does; a bitcast copies the bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cubejit.ir.types import SCALARS, Kind, Scalar, i64, u32, u64

if TYPE_CHECKING:
    from cubejit.backends.cstyle import Dialect

_SIGNED_FLOORDIV = """\
{q} {T} cj_floordiv_{t}({T} a, {T} b) {{
    if (b == 0) return 0;
    if (b == -1) return ({T})(({U})0 - ({U})a);
    {T} q = a / b;
    return ((a % b) != 0 && ((a < 0) != (b < 0))) ? ({T})(q - 1) : q;
}}"""

_SIGNED_MOD = """\
{q} {T} cj_mod_{t}({T} a, {T} b) {{
    if (b == 0 || b == -1) return 0;
    {T} r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? ({T})(r + b) : r;
}}"""

_UNSIGNED_FLOORDIV = """\
{q} {T} cj_floordiv_{t}({T} a, {T} b) {{
    return b == 0 ? 0 : a / b;
}}"""

_UNSIGNED_MOD = """\
{q} {T} cj_mod_{t}({T} a, {T} b) {{
    return b == 0 ? 0 : a % b;
}}"""

_FLOAT_FLOORDIV = """\
{q} {T} cj_floordiv_{t}({T} x, {T} y) {{
    {C} a = ({C})x, b = ({C})y;
    {C} mod = {fmod}(a, b);
    if (b == 0) return ({T})(a / b);
    {C} div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
    if (div == 0) return ({T}){copysign}(({C})0, a / b);
    {C} floored = {floor}(div);
    if (div - floored > ({C})0.5) floored += 1;
    return ({T})floored;
}}"""

_FLOAT_MOD = """\
{q} {T} cj_mod_{t}({T} x, {T} y) {{
    {C} a = ({C})x, b = ({C})y;
    {C} mod = {fmod}(a, b);
    if (b == 0) return ({T})mod;
    if (mod == 0) return ({T}){copysign}(({C})0, b);
    if ((b < 0) != (mod < 0)) mod += b;
    return ({T})mod;
}}"""

_SIGNED_POW = """\
{q} {T} cj_pow_{t}({T} base, {E} e) {{
    if (e < 0) return base == 1 ? 1 : (base == -1 ? ((e & 1) ? -1 : 1) : 0);
    {U} r = 1, b = ({U})base;
    while (e != 0) {{
        if (e & 1) r *= b;
        b *= b;
        e >>= 1;
    }}
    return ({T})r;
}}"""

_UNSIGNED_POW = """\
{q} {T} cj_pow_{t}({T} base, {E} e) {{
    if (e < 0) return base == 1 ? 1 : 0;
    {T} r = 1;
    while (e != 0) {{
        if (e & 1) r *= base;
        base *= base;
        e >>= 1;
    }}
    return r;
}}"""

_ABS = """\
{q} {T} cj_abs_{t}({T} a) {{
    return a < 0 ? ({T})(({U})0 - ({U})a) : a;
}}"""

_MIN = """\
{q} {T} cj_min_{t}({T} a, {T} b) {{
    return b < a ? b : a;
}}"""

_MAX = """\
{q} {T} cj_max_{t}({T} a, {T} b) {{
    return b > a ? b : a;
}}"""


_SHL = """\
{q} {T} cj_shl_{t}({T} a, {L} b) {{
    return b < {W} ? ({T})(({V})a << b) : 0;
}}"""

_SIGNED_SHR = """\
{q} {T} cj_shr_{t}({T} a, {L} b) {{
    return b < {W} ? ({T})(a >> b) : (a < 0 ? -1 : 0);
}}"""

_UNSIGNED_SHR = """\
{q} {T} cj_shr_{t}({T} a, {L} b) {{
    return b < {W} ? ({T})(a >> b) : 0;
}}"""

_FLOAT_TO_INT = """\
{q} {D} cj_to_{d}_{t}({T} x) {{
    {C} v = ({C})x;
    if (v != v) return 0;
    if (v >= {HIGH}) return {MAX};
    if (v <= {LOW}) return {MIN};
    return ({D})v;
}}"""

_BITCAST = """\
{q} {D} cj_bitcast_{d}_{t}({T} a) {{
    {D} r;
    memcpy(&r, &a, sizeof r);
    return r;
}}"""


def _template(helper: str, t: Scalar) -> str:
    if helper.startswith("to_"):
        return _FLOAT_TO_INT
    if helper.startswith("bitcast_"):
        return _BITCAST
    if helper == "shl":
        return _SHL
    if helper == "shr":
        return _SIGNED_SHR if t.kind is Kind.INT else _UNSIGNED_SHR
    if t.is_float:
        return {"floordiv": _FLOAT_FLOORDIV, "mod": _FLOAT_MOD}[helper]
    signed = t.kind is Kind.INT
    table = {
        "floordiv": _SIGNED_FLOORDIV if signed else _UNSIGNED_FLOORDIV,
        "mod": _SIGNED_MOD if signed else _UNSIGNED_MOD,
        "pow": _SIGNED_POW if signed else _UNSIGNED_POW,
        "abs": _ABS,
        "min": _MIN,
        "max": _MAX,
    }
    return table[helper]


def helper_definitions(helpers: list[tuple[str, Scalar]], dialect: Dialect) -> str:
    """The definitions of ``helpers`` (``(name, scalar)`` pairs, emitted in the order given),
    called by the walker as ``cj_<name>_<scalar>``."""
    texts = []
    for helper, t in helpers:
        own = dialect.own_helper(helper, t)
        if own is not None:
            texts.append(own)
            continue
        compute = dialect.math_type(t) if t.is_float else t
        unsigned = SCALARS["u" + t.name[1:]] if t.is_int else t
        target = SCALARS[helper.split("_", 1)[1]] if "_" in helper else t
        texts.append(
            _template(helper, t).format(
                q=dialect.helper_qualifier,
                T=dialect.type_name(t),
                U=dialect.type_name(unsigned) if t.is_int else "",
                V=dialect.type_name(u64 if t.bits == 64 else u32),
                C=dialect.type_name(compute),
                E=dialect.type_name(i64),
                L=dialect.type_name(u64),
                W=f"{t.bits}u",
                D=dialect.type_name(target),
                d=target.name,
                t=t.name,
                fmod=dialect.libm("fmod", compute) if t.is_float else "",
                floor=dialect.libm("floor", compute) if t.is_float else "",
                copysign=dialect.libm("copysign", compute) if t.is_float else "",
                **_saturation(dialect, target, compute),
            )
        )
    return "\n\n".join(texts)


def _saturation(dialect: Dialect, target: Scalar, compute: Scalar) -> dict[str, str]:
    """The bounds of a float-to-integer conversion to ``target``, computed in ``compute``:
    at or past ``HIGH`` it gives ``MAX``, at or below ``LOW`` it gives ``MIN``."""
    if not target.is_int or not compute.is_float:
        return {}
    if target.kind is Kind.UINT:
        high, low, biggest, smallest = 2.0**target.bits, -1.0, (1 << target.bits) - 1, 0
    else:
        half = 1 << (target.bits - 1)
        high, low, biggest, smallest = float(half), -float(half), half - 1, -half
    return {
        "HIGH": dialect.float_literal(high, compute),
        "LOW": dialect.float_literal(low, compute),
        "MAX": dialect.int_literal(biggest, target),
        "MIN": dialect.int_literal(smallest, target),
    }
