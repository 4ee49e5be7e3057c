"""The CPU backend's compile pipeline: lowering, the C compiler, loading, sharing artifacts."""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from pathlib import Path

import numpy as np
import pytest
from cpu_ir_builders import HandSpec, arr, b, guarded, kernel, load, pos, scalar

from cubejit import config
from cubejit.backends.cpu import (
    CpuArtifact,
    CpuClient,
    CpuCompiler,
    CpuLowered,
    CpuTarget,
    compiler_runs,
    cpu_fingerprint,
)
from cubejit.compile.id import ArtifactId
from cubejit.errors import CompilationError, ValidationError
from cubejit.ir import nodes as n
from cubejit.ir.types import f32, i32
from cubejit.runtime.layout import ParamSlot, SlotKind

AT = pos("ABSOLUTE_POS")


def scale_ir(name: str, factor: float) -> n.KernelIR:
    x = load("x", AT, f32)
    return kernel(
        name,
        [arr("x", f32), arr("out", f32)],
        [guarded(AT, "out", n.Store("out", AT, b("MUL", x, n.Const(factor, f32))))],
    )


class Recording:
    def __init__(self) -> None:
        self.ir: str | None = None
        self.text: str | None = None

    def defined(self, ir: str) -> None:
        self.ir = ir

    def source(self, text: str) -> None:
        self.text = text


def test_a_kernel_compiles_loads_and_runs_on_numpy_arrays_in_place(cpu: CpuClient) -> None:
    x = np.random.default_rng(1).random(1000, dtype=np.float32)
    out = np.zeros_like(x)
    cpu.launch(HandSpec(scale_ir("scale", 3.0), (128, 1, 1)), 8, (x, out))
    np.testing.assert_array_equal(out, x * np.float32(3.0))


def test_kernels_with_different_ids_and_the_same_c_compile_once(cpu: CpuClient) -> None:
    x = np.random.default_rng(2).random(300, dtype=np.float32)
    on_device = cpu.to_device(x)
    before = compiler_runs.count
    for tag in ("a", "b", "c"):
        out = cpu.empty(300, f32)
        cpu.launch(HandSpec(scale_ir(f"twin_{tag}", 5.0), (64, 1, 1), tag), 5, (on_device, out))
        np.testing.assert_array_equal(cpu.read(out), x * np.float32(5.0))
    assert compiler_runs.count - before == 1


def test_the_alignment_variant_follows_the_arrays_addresses(cpu: CpuClient) -> None:
    spec = HandSpec(scale_ir("aligned", 2.0), (64, 1, 1))
    storage = cpu.to_device(np.zeros(260, np.float32))
    shifted = storage.array[1:257]
    out = np.zeros(256, np.float32)
    shifted[:] = np.arange(256, dtype=np.float32)
    before = compiler_runs.count
    cpu.launch(spec, 4, (shifted, cpu.to_device(out)))
    assert cpu.loader.get(ArtifactId(spec.id(), 4)) is not None
    assert cpu.loader.get(ArtifactId(spec.id(), 64)) is None
    assert compiler_runs.count - before == 1
    recording = Recording()
    lowered = CpuCompiler().lower(spec, ArtifactId(spec.id(), 4), recording, None)
    assert "#define CJ_ALIGN 4" in lowered.source
    assert recording.text == lowered.source and recording.ir is not None


def test_prepare_queues_and_compile_queued_compiles_without_a_launch(cpu: CpuClient) -> None:
    spec = HandSpec(scale_ir("warmed", 7.0), (32, 1, 1))
    before = compiler_runs.count
    cpu.prepare(spec)
    assert compiler_runs.count == before
    cpu.compile_queued()
    assert compiler_runs.count == before + 1
    x, out = cpu.to_device(np.ones(32, np.float32)), cpu.empty(32, f32)
    cpu.launch(spec, 1, (x, out))
    assert compiler_runs.count == before + 1
    np.testing.assert_array_equal(cpu.read(out), np.full(32, 7.0, np.float32))


def test_a_cube_beyond_the_cpu_limits_fails_validation_before_any_compiler_runs() -> None:
    spec = HandSpec(scale_ir("huge", 1.0), (2048, 1, 1))
    before = compiler_runs.count
    with pytest.raises(ValidationError, match=r"kernel huge \(hand_built.py:1\).*2048"):
        CpuCompiler().lower(spec, ArtifactId(spec.id(), 64), Recording(), None)
    assert spec.defined == 0 and compiler_runs.count == before


def test_a_c_compiler_failure_carries_its_log_and_the_source() -> None:
    lowered = CpuLowered("int broken( {", "broken_kernel", "f.py:3", ())
    with pytest.raises(CompilationError, match=r"kernel broken_kernel \(f.py:3\)") as caught:
        CpuCompiler().finalize(None, lowered)  # type: ignore[arg-type]
    assert "error" in (caught.value.log or "")
    assert caught.value.source == "int broken( {"
    assert caught.value.kernel == "broken_kernel"


def test_a_compiler_past_the_timeout_is_killed_and_says_so(
    tmp_path: Path,
    settings_restored: None,
) -> None:
    slow = tmp_path / "slow-cc"
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(slow.stat().st_mode | stat.S_IEXEC)
    config.override(cc=str(slow), compile_timeout=0.3)
    lowered = CpuLowered("void f(void) {}", "sleepy", "f.py:1", ())
    with pytest.raises(CompilationError, match=r"ran past the compile timeout of 0\.3 s"):
        CpuCompiler().finalize(None, lowered)  # type: ignore[arg-type]


def test_two_threads_compile_different_kernels_at_once() -> None:
    compiler, target = CpuCompiler(), CpuTarget()
    specs = [HandSpec(scale_ir(f"threaded_{k}", float(k)), (16, 1, 1)) for k in (2, 3)]
    artifacts: dict[int, CpuArtifact] = {}
    start = threading.Barrier(2)

    def build(k: int) -> None:
        aid = ArtifactId(specs[k].id(), 64)
        lowered = compiler.lower(specs[k], aid, Recording(), None)
        start.wait()
        artifacts[k] = compiler.finalize(aid, lowered)

    threads = [threading.Thread(target=build, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    client = CpuClient(target=target)
    for k, factor in ((0, 2.0), (1, 3.0)):
        aid = ArtifactId(specs[k].id(), 64)
        target.store(aid, artifacts[k], None)
        x, out = client.to_device(np.arange(16, dtype=np.float32)), client.empty(16, f32)
        client.launch(specs[k], 1, (x, out))
        np.testing.assert_array_equal(client.read(out), np.arange(16, dtype=np.float32) * factor)


def test_loading_leaves_no_file_behind_and_artifacts_round_trip_as_bytes_and_json() -> None:
    spec = HandSpec(scale_ir("roundtrip", 4.0), (16, 1, 1))
    aid = ArtifactId(spec.id(), 64)
    compiler = CpuCompiler()
    artifact = compiler.finalize(aid, compiler.lower(spec, aid, Recording(), None))
    again = CpuArtifact.from_parts(artifact.library, artifact.metadata())
    assert again == artifact
    folder = Path(tempfile.gettempdir())
    before = set(folder.glob(f"cubejit-{os.getpid()}-*"))
    loaded = CpuTarget().load(aid, again)
    assert set(folder.glob(f"cubejit-{os.getpid()}-*")) == before
    assert loaded.layout == (
        ParamSlot("x", f32, SlotKind.ARRAY),
        ParamSlot("out", f32, SlotKind.ARRAY, written=True),
    )
    assert loaded.written == (1,)


def test_the_target_serves_an_artifact_by_id_and_by_source() -> None:
    target = CpuTarget()
    aid = ArtifactId(HandSpec(scale_ir("kept", 1.0), (1, 1, 1)).id(), 64)
    artifact = CpuArtifact(b"\x7fELF...", "cubejit_launch", (ParamSlot("x", f32, SlotKind.ARRAY),))
    assert target.stored(aid) is None
    assert target.store(aid, artifact, "int x;")
    assert target.stored(aid) == artifact
    assert target.stored_for_source("int x;") == artifact
    assert target.stored_for_source("int y;") is None


def test_the_fingerprint_names_the_host_cpu_only_for_native_code(settings_restored: None) -> None:
    config.override(march_native=True)
    native = cpu_fingerprint()
    config.override(march_native=False)
    portable = cpu_fingerprint()
    assert native != portable
    assert portable.startswith(os.uname().machine)


def test_scalars_are_converted_to_their_annotated_types(cpu: CpuClient) -> None:
    spec = HandSpec(
        kernel(
            "fill",
            [scalar("v", i32), scalar("w", f32), arr("out", f32)],
            [
                guarded(
                    AT,
                    "out",
                    n.Store("out", AT, b("ADD", n.Cast(n.Var("v", i32), f32), n.Var("w", f32))),
                )
            ],
        ),
        (8, 1, 1),
    )
    out = np.zeros(8, np.float32)
    cpu.launch(spec, 1, (np.int64(-3), 0.25, out))
    np.testing.assert_array_equal(out, np.full(8, -2.75, np.float32))
