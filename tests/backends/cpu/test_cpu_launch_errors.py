"""A launch whose arguments do not fit the signature fails before anything runs."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_ir_builders import HandSpec, arr, b, guarded, kernel, load, pos, scalar

from cubejit.backends.cpu import CpuClient, compiler_runs
from cubejit.errors import LaunchError
from cubejit.ir import nodes as n
from cubejit.ir.types import f32, u32

AT = pos("ABSOLUTE_POS")
SPEC = HandSpec(
    kernel(
        "add_to",
        [scalar("k", u32), arr("x", f32), arr("out", f32)],
        [
            guarded(
                AT,
                "out",
                n.Store("out", AT, b("ADD", load("x", AT, f32), n.Cast(n.Var("k", u32), f32))),
            )
        ],
    ),
    (16, 1, 1),
)


@pytest.fixture(scope="module")
def ready(cpu: CpuClient) -> CpuClient:
    cpu.launch(SPEC, 1, (1, np.zeros(16, np.float32), np.zeros(16, np.float32)))
    return cpu


def bad_launch(cpu: CpuClient, args: tuple, match: str, cube_count: object = 1) -> None:
    out = np.full(16, 9.0, np.float32)
    runs = compiler_runs.count
    with pytest.raises(LaunchError, match=match):
        cpu.launch(SPEC, cube_count, tuple(out if a is OUT else a for a in args))
    assert compiler_runs.count == runs
    np.testing.assert_array_equal(out, np.full(16, 9.0, np.float32))


OUT = object()
X = np.ones(16, np.float32)


def test_the_wrong_number_of_arguments_is_refused(ready: CpuClient) -> None:
    bad_launch(ready, (1, OUT), r"kernel add_to takes 3 arguments \(k, x, out\), got 2")


def test_an_array_of_another_element_type_is_refused(ready: CpuClient) -> None:
    bad_launch(
        ready,
        (1, X.astype(np.float64), OUT),
        r"argument 'x' \(Array\[f32\]\) holds float64 elements",
    )


def test_a_buffer_of_another_client_is_refused(ready: CpuClient) -> None:
    other = CpuClient(loader=ready.loader, logger=ready.logger)
    bad_launch(ready, (1, other.to_device(X), OUT), "argument 'x'.*a buffer of another client")


def test_a_non_contiguous_numpy_array_is_refused(ready: CpuClient) -> None:
    bad_launch(ready, (1, np.ones(32, np.float32)[::2], OUT), "is not contiguous")


def test_a_scalar_that_does_not_fit_its_type_is_refused(ready: CpuClient) -> None:
    bad_launch(ready, (-1, X, OUT), r"argument 'k' \(u32\) cannot hold int -1")
    bad_launch(ready, (2.5, X, OUT), r"argument 'k' \(u32\) cannot hold float 2.5")


def test_a_scalar_where_an_array_belongs_is_refused(ready: CpuClient) -> None:
    bad_launch(
        ready, (1, 3.0, OUT), r"argument 'x' \(Array\[f32\]\) must be an array, got float 3.0"
    )


def test_a_malformed_or_oversized_cube_count_is_refused(ready: CpuClient) -> None:
    bad_launch(ready, (1, X, OUT), "cube_count must be a positive int", cube_count=0)
    bad_launch(ready, (1, X, OUT), "cube_count must be", cube_count=(1, 1, 1, 1))
    bad_launch(ready, (1, X, OUT), "65536 cubes along y", cube_count=(1, 65536))


def test_an_array_misaligned_for_its_elements_is_refused(ready: CpuClient) -> None:
    raw = np.zeros(16 * 4 + 1, np.uint8)[1:].view(np.float32)
    bad_launch(
        ready, (1, raw, OUT), r"argument 'x' \(Array\[f32\]\) is not aligned to its element size"
    )
