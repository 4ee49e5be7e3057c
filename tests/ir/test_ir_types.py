"""Element types as other libraries name them: numpy dtypes and array interfaces' typestrs."""

from __future__ import annotations

import numpy as np
import pytest

from cubejit.ir.types import bool_, f16, f32, f64, from_dtype, from_typestr, i8, i32, u16, u64


@pytest.mark.parametrize(
    ("typestr", "scalar"),
    [
        ("<f4", f32),
        ("<f8", f64),
        ("<f2", f16),
        ("<i4", i32),
        ("|i1", i8),
        ("<u8", u64),
        ("<u2", u16),
        ("|b1", bool_),
    ],
)
def test_a_typestr_names_its_dtype_and_scalar_as_the_dtype_does(
    typestr: str, scalar: object
) -> None:
    dtype, found = from_typestr(typestr)
    assert dtype == np.dtype(typestr)
    assert found is scalar is from_dtype(dtype)
    assert from_typestr(typestr)[1] is found


def test_a_typestr_cubejit_has_no_scalar_for_names_none_and_a_malformed_one_raises() -> None:
    dtype, found = from_typestr("<c8")
    assert dtype == np.complex64 and found is None
    with pytest.raises(TypeError):
        from_typestr("not a type")
