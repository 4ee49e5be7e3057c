"""Every standard kernel, in every configuration the CUDA launch uses, lowered to CUDA C++ and
compiled by NVRTC for sm_90 on a machine without a GPU (f32, f16, bf16 and f64)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import cubejit as cj
from cubejit.backends.cuda.artifact import ELF_MAGIC
from cubejit.backends.cuda.compiler import CudaCompiler
from cubejit.backends.cuda.driver import ARCHITECTURAL_LIMITS
from cubejit.compile.id import ArtifactId
from cubejit.compile.recording import CompilationRecording
from cubejit.ir.types import TensorType
from cubejit.std import (
    histograms,
    integer_bins,
    lined_rows,
    lined_scan,
    lookback_scan,
    reductions,
    rows,
    scan,
    tiles,
)

pytestmark = pytest.mark.cuda_packages

H200 = dataclasses.replace(
    ARCHITECTURAL_LIMITS, name="an H200", compute_capability=(9, 0), max_shared_memory=227 * 1024
)


def _specs() -> list[Any]:
    specs = []
    for t in (cj.f32, cj.f16, cj.bf16, cj.f64):
        a = cj.f64 if t == cj.f64 else cj.f32
        specs.append(reductions.rows_kernel(t, t).specialize(256, OP=1))
        specs.append(reductions.runs_kernel(t).specialize(256, OP=0, R=16, UNROLL=True))
        widest = 16 // t.itemsize
        for op in (0, 1):
            specs.append(
                reductions.lines_kernel(t).specialize(1024, OP=op, K=8, line_sizes=dict(x=widest))
            )
        lined = dict(x=widest, out=widest, weight=widest, bias=widest)
        specs.append(
            lined_rows.softmax_lines_kernel(t, widest).specialize(
                256, K=4, line_sizes=dict(x=widest, out=widest)
            )
        )
        specs.append(
            lined_rows.layer_norm_lines_kernel(t, widest).specialize(512, K=2, line_sizes=lined)
        )
        specs.append(rows.softmax_kernel(t).specialize(1024, K=8, ONE_PASS=True))
        specs.append(rows.softmax_kernel(t).specialize(1024, K=1, ONE_PASS=False))
        specs.append(rows.layer_norm_kernel(t).specialize(256, K=4, ONE_PASS=True))
        specs.append(rows.layer_norm_kernel(t).specialize(1024, K=1, ONE_PASS=False))
        specs.append(scan.totals_kernel(t).specialize(256, K=16))
        specs.append(scan.scan_kernel(t, t).specialize(256, K=16, EXCLUSIVE=True, OFFSETS=True))
        specs.append(scan.scan_kernel(a, a).specialize(256, K=16, EXCLUSIVE=False, OFFSETS=False))
        c = lined_scan.CONFIG
        lanes = 16 // t.itemsize
        for n in sorted({1, lanes}):
            specs.append(
                lined_scan.lined_totals_kernel(t).specialize(
                    c.units, K=c.lines * c.rounds, line_sizes=dict(x=n)
                )
            )
            if t != cj.f64:
                p = lined_scan.FORMS[0]
                specs.append(
                    lookback_scan.lookback_scan_kernel(t, t).specialize(
                        p.units, R=p.lines, EXCLUSIVE=n > 1, FLAT=n > 1, line_sizes=dict(x=n)
                    )
                )
            specs.append(
                lined_scan.lined_scan_kernel(t, t).specialize(
                    c.units,
                    R=c.lines,
                    K=c.rounds,
                    EXCLUSIVE=n > 1,
                    OFFSETS=True,
                    line_sizes=dict(x=n),
                )
            )
        specs.append(histograms.histogram_kernel(t).specialize(256, R=16, BINS=256, PRIVATE=True))
    specs.append(histograms.histogram_kernel(cj.u32).specialize(256, R=16, BINS=1, PRIVATE=False))
    specs.append(histograms.zero_kernel().specialize(256))
    specs.append(lookback_scan.clear_kernel().specialize(256))
    f = integer_bins.CONFIG
    for t, n in ((cj.i32, 4), (cj.u32, 1), (cj.u8, 8), (cj.i16, 8)):
        specs.append(
            integer_bins.integer_bins_kernel(t).specialize(
                f.units, BINS=256, COPIES=f.copies, R=f.lines, line_sizes=dict(x=n)
            )
        )
    for t in (cj.f32, cj.f16, cj.f64):
        for c in tiles.TILES["cuda"]:
            if not c.lined:
                spec = tiles.matmul_kernel(t).specialize((c.tx, c.ty), RM=c.rm, RN=c.rn, BK=c.bk)
                specs.append(spec)
    for c in tiles.TILES["cuda"]:
        if c.lined:
            specs.append(_lined_spec(c))
    return specs


def _lined_spec(c: tiles.Tiles) -> Any:
    lines = dict(a=tiles.LINE, b=tiles.LINE, out=tiles.LINE)
    comptime = dict(BM=c.bm, BN=c.bn, BK=c.bk, RM=c.rm, RN=c.rn, STAGES=c.stages)
    return tiles.lined_matmul_kernel().specialize(c.tx * c.ty, line_sizes=lines, **comptime)


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: f"{s.name}-{s.params[0].type}")
def test_every_standard_kernel_compiles_with_nvrtc(spec: Any) -> None:
    compiler = CudaCompiler("sm_90", H200)
    tensors = sum(isinstance(p.type, TensorType) for p in spec.params)
    id = ArtifactId(spec.id(), (None, (1 << tensors) - 1) if tensors else None)
    lowered = compiler.lower(spec, id, CompilationRecording.for_artifact(id, keep_text=False), None)
    assert compiler.finalize(id, lowered).cubin.startswith(ELF_MAGIC)
