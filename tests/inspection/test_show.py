"""``cubejit show`` and ``KernelSpec.show``: the IR, the C and CUDA C++, the PTX (NVRTC, no GPU)
and the SASS (with cuobjdump or nvdisasm on the PATH) of a kernel found as ``warm`` finds
modules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import inspected_kernels as k
import pytest

from cubejit.backends.show import disassembler, kernel_text

HERE = Path(__file__).parent
REPOSITORY = HERE.parents[1]
KERNELS = str(HERE / "inspected_kernels.py")


def _show(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    done = subprocess.run(
        [sys.executable, "-m", "cubejit", "show", *args],
        cwd=HERE,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def test_show_prints_the_ir_of_a_kernel_named_by_file_and_name() -> None:
    out = _show(f"{KERNELS}:saxpy", "--ir", "--cube-dim", "128").stdout
    assert out.startswith("kernel inspected_kernels.saxpy(a: f32, x: Array[f32]")
    assert "out[i] = a * x[i] + y[i]" in out


def test_show_prints_the_c_of_a_kernel_named_by_its_qualified_name() -> None:
    out = _show("inspected_kernels.saxpy", "--cube-dim", "128").stdout
    assert "void cubejit_launch(const unsigned char *cj_args)" in out
    assert "#define CJ_DIM_X 128u" in out
    assert out.strip() == kernel_text(k.saxpy.specialize(128), "source", "cpu").strip()


def test_show_prints_the_checked_variant_and_the_cuda_source() -> None:
    out = _show(f"{KERNELS}:write_past", "--backend", "cuda", "--checked").stdout
    assert 'extern "C" __global__ void cubejit_kernel(' in out
    assert "cj_bounds_failure(" in out


@pytest.mark.cuda_packages
def test_show_prints_ptx_through_nvrtc_without_a_gpu() -> None:
    out = _show(f"{KERNELS}:prints", "--ptx", "--cube-dim", "64").stdout
    assert ".entry cubejit_kernel(" in out
    assert "vprintf" in out


@pytest.mark.cuda_packages
def test_show_sass_without_a_disassembler_says_what_to_install() -> None:
    if disassembler() is not None:
        pytest.skip("cuobjdump or nvdisasm is on the PATH; the SASS test runs instead")
    done = _show(f"{KERNELS}:saxpy", "--sass", check=False)
    assert done.returncode == 1
    assert "cuobjdump or nvdisasm" in done.stderr


@pytest.mark.cuda_packages
def test_show_prints_sass_with_a_disassembler() -> None:
    if disassembler() is None:
        pytest.skip("needs cuobjdump or nvdisasm on the PATH (the CUDA toolkit's binaries)")
    out = _show(f"{KERNELS}:saxpy", "--sass").stdout
    assert "cubejit_kernel" in out


def test_a_module_of_many_kernels_needs_a_name() -> None:
    done = _show(KERNELS, check=False)
    assert done.returncode == 1
    assert "name one as" in done.stderr and "saxpy" in done.stderr


def test_a_spec_shows_its_source_from_python(capsys: pytest.CaptureFixture[str]) -> None:
    k.saxpy.specialize(64).show("source")
    assert "#define CJ_DIM_X 64u" in capsys.readouterr().out
    k.saxpy.specialize(64).show("ir", checked=True)
    assert "bounds_failure(site=0" in capsys.readouterr().out


@pytest.mark.cuda_packages
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_checked_and_printing_kernel_builds_with_nvrtc(arch: str) -> None:
    specs = [
        k.write_past.specialize(64),
        k.read_before.specialize(64),
        k.tensor_write_past.specialize(64, t=2),
        k.shared_read_past.specialize(32),
        k.guarded_neighbours.specialize(128),
    ]
    for spec in specs:
        assert ".entry cubejit_kernel(" in kernel_text(spec, "ptx", "cuda", True, arch)
    assert "vprintf" in kernel_text(k.prints.specialize(64), "ptx", "cuda", False, arch)
