"""``print`` in kernels: each unit writes one whole line, values formatted as the language says;
the CPU's lines come from native code, so they are captured at the file descriptor. A printing
kernel differs from the same kernel without print only in its text."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import inspected_kernels as k
import numpy as np
import pytest

import cubejit as cj
from cubejit.ir import nodes as ir
from cubejit.ir.traits import block_traits
from cubejit.ir.traversal import walk_stmts
from cubejit.ir.values import declared

HERE = Path(__file__).parent


def _expected(x: np.ndarray, flags: np.ndarray, scale: int) -> list[str]:
    return [
        f"unit {i} x = {x[i]:g} flag {bool(flags[i])} scaled {scale * i} 100%"
        for i in range(len(x))
    ]


def test_each_unit_prints_its_own_line_on_the_cpu(capfd: pytest.CaptureFixture[str]) -> None:
    client = cj.client("cpu", check_bounds=False)
    rng = np.random.default_rng(11)
    x = rng.integers(-50, 50, 300).astype(np.float32) / 4
    flags = rng.integers(0, 2, 300).astype(np.bool_)
    capfd.readouterr()
    k.prints.launch(client, 3, 128, x, flags, np.int64(-7))
    lines = capfd.readouterr().out.splitlines()
    assert sorted(lines) == sorted(_expected(x, flags, -7))


def test_lines_of_units_on_many_threads_never_mix(tmp_path: Path) -> None:
    script = tmp_path / "many.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(HERE)!r})
            import numpy as np
            import cubejit as cj
            import inspected_kernels as k
            x = np.arange(19968, dtype=np.float32)
            flags = np.ones(19968, np.bool_)
            k.prints.launch(cj.client("cpu"), 19968 // 64, 64, x, flags, np.int64(3))
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=True
    )
    lines = done.stdout.splitlines()
    x = np.arange(19968, dtype=np.float32)
    assert sorted(lines) == sorted(_expected(x, np.ones(19968, np.bool_), 3))


def test_print_is_an_output_effect_that_passes_keep() -> None:
    spec = k.prints.specialize(128)
    kernel = spec.define()
    prints = [s for s in walk_stmts(kernel.body) if isinstance(s, ir.Print)]
    assert len(prints) == 1
    assert prints[0].text == ("unit ", " x = ", " flag ", " scaled ", " 100%")
    done = block_traits(kernel.body, declared(kernel))
    assert done.outputs and not done.is_local


def test_a_printing_kernel_on_cuda_is_never_coarsened() -> None:
    from cubejit.backends.cuda.coarsening import coarsen

    assert coarsen(k.prints_nothing.specialize(128).define(), (128, 1, 1)) is not None
    assert coarsen(k.prints.specialize(128).define(), (128, 1, 1)) is None


def test_a_print_before_the_bounds_guard_keeps_every_unit_of_the_row() -> None:
    from cubejit.backends.unit_loop import plan_unit_loop

    assert plan_unit_loop(k.guarded.specialize(64).define()).bound is not None
    assert plan_unit_loop(k.prints_before_guard.specialize(64).define()).bound is None


def test_units_past_the_guard_print_too(capfd: pytest.CaptureFixture[str]) -> None:
    client = cj.client("cpu", check_bounds=False)
    x = np.random.default_rng(13).standard_normal(100).astype(np.float32)
    capfd.readouterr()
    k.prints_before_guard.launch(client, 2, 64, x.copy())
    assert sorted(capfd.readouterr().out.splitlines()) == sorted(f"unit {i}" for i in range(128))


def test_a_printing_kernel_differs_from_the_silent_one_only_in_its_text() -> None:
    loud, quiet = k.prints.specialize(128), k.prints_nothing.specialize(128)
    assert loud.id().cube_dim == quiet.id().cube_dim
    assert loud.params == quiet.params
    assert loud.id() != quiet.id()


@pytest.mark.gpu
def test_each_unit_prints_its_own_line_on_cuda(capfd: pytest.CaptureFixture[str]) -> None:
    try:
        client = cj.client("cuda")
    except cj.BackendUnavailableError as e:
        pytest.skip(f"needs an NVIDIA GPU: {e}")
    rng = np.random.default_rng(12)
    x = rng.integers(-50, 50, 200).astype(np.float32) / 4
    flags = rng.integers(0, 2, 200).astype(np.bool_)
    dx, dflags = client.to_device(x), client.to_device(flags)
    capfd.readouterr()
    k.prints.launch(client, 2, 128, dx, dflags, np.int64(5))
    client.sync()
    lines = capfd.readouterr().out.splitlines()
    assert sorted(lines) == sorted(_expected(x, flags, 5))


def test_a_value_of_several_lanes_prints_as_a_bracketed_list() -> None:
    from cubejit.backends.inspection import print_format
    from cubejit.ir.types import f32, i32
    from cubejit.ir.values import Item

    assert print_format(Item(i32), ["a"]) == ("%lld", ["a"])
    text, args = print_format(Item(f32, 4), ["l0", "l1", "l2", "l3"])
    assert text == "[%g, %g, %g, %g]"
    assert args == ["l0", "l1", "l2", "l3"]
    assert print_format(Item(cj.bool_, 2), ["p", "q"])[1] == [
        '((p) ? "True" : "False")',
        '((q) ? "True" : "False")',
    ]
