"""The unchecked artifacts' text is what it was before kernels could print or be checked: the
golden files hold the C and CUDA C++ of the same kernels from before the feature, and the
checked variants differ from them."""

from __future__ import annotations

from pathlib import Path

import inspected_kernels as k
import pytest

from cubejit.backends.show import kernel_text

GOLDEN = Path(__file__).parent / "golden"

CASES = {
    "saxpy": (k.saxpy, 256, {}),
    "tensor_read_past": (k.tensor_read_past, 64, {"t": 2}),
    "shared_write_past": (k.shared_write_past, 32, {}),
    "guarded_neighbours": (k.guarded_neighbours, 128, {}),
}


@pytest.mark.parametrize("backend, suffix", [("cpu", "c"), ("cuda", "cu")])
@pytest.mark.parametrize("case", list(CASES))
def test_the_unchecked_text_is_unchanged_and_the_checked_text_differs(
    case: str, backend: str, suffix: str
) -> None:
    kernel, cube_dim, comptime = CASES[case]
    spec = kernel.specialize(cube_dim, **comptime)
    golden = (GOLDEN / f"{case}.{suffix}").read_text()
    assert kernel_text(spec, "source", backend) == golden
    checked = kernel_text(spec, "source", backend, checked=True)
    assert checked != golden
    assert "cj_bounds_failure(" in checked and "cj_bounds_failure(" not in golden
