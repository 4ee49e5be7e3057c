"""The CUDA kernels a batch compiles share one cubin: relocatable parts linked by the driver,
stored once, loaded as one module. The parts' compile and the link's grouping run wherever
NVRTC is (the grouping with a stand-in for the driver's linker, which needs a GPU); the link,
the store and the loads on a GPU. What a batch does when parts do not link together is the
loader's (``tests/compile/test_loader_links.py``)."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cubejit as cj
from cubejit.backends.cuda.artifact import ELF_MAGIC, ENTRY_POINT, CudaArtifact
from cubejit.backends.cuda.coarsening import NO_ALIAS
from cubejit.backends.cuda.compiler import LinkingCudaCompiler
from cubejit.backends.cuda.driver import ARCHITECTURAL_LIMITS
from cubejit.backends.cuda.target import CudaTarget, fingerprint
from cubejit.compile.id import ArtifactId
from cubejit.compile.recording import CompilationRecording, ServerLogger
from cubejit.environment.artifacts import ArtifactStore
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.errors import CompilationError
from cubejit.runtime.checking import checked_variant

N = 1000
CUBE = 64


@cj.kernel
def shifted(x: cj.Array[cj.f32], out: cj.Array[cj.f32], k: cj.Comptime[int]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * cj.f32(k + 2) - cj.f32(k)


def unlinked(cubins: list[bytes]) -> bytes:
    raise AssertionError("no link expected")


def part(compiler: LinkingCudaCompiler, k: int, variant: Any = NO_ALIAS) -> CudaArtifact:
    spec = shifted.specialize(CUBE, k=k)
    aid = ArtifactId(spec.id(), variant)
    recording = CompilationRecording.for_artifact(aid, keep_text=False)
    return compiler.finalize_part(aid, compiler.lower(spec, aid, recording, ServerLogger()))


@pytest.mark.cuda_packages
def test_a_part_is_relocatable_code_whose_entry_is_named_after_its_text() -> None:
    compiler = LinkingCudaCompiler("sm_90", ARCHITECTURAL_LIMITS, unlinked)
    first, second = part(compiler, 1), part(compiler, 2)
    for artifact in (first, second):
        assert artifact.relocatable and artifact.cubin.startswith(b"\x7fELF")
        assert (
            artifact.entry.startswith(f"{ENTRY_POINT}_")
            and artifact.entry.encode() in artifact.cubin
        )
    assert first.entry != second.entry
    assert compiler.compilations == 2


@pytest.mark.cuda_packages
def test_a_checked_variant_is_compiled_whole_and_passes_the_link_as_it_is() -> None:
    compiler = LinkingCudaCompiler("sm_90", ARCHITECTURAL_LIMITS, unlinked)
    checked = part(compiler, 1, checked_variant(NO_ALIAS))
    assert not checked.relocatable and checked.entry == ENTRY_POINT
    id = ArtifactId(shifted.specialize(CUBE, k=1).id(), checked_variant(NO_ALIAS))
    assert compiler.link([(id, checked)]) == [checked]


@pytest.mark.cuda_packages
def test_parts_link_into_one_pack_a_single_part_alone_and_a_refused_link_raises() -> None:
    links: list[int] = []
    compiler = LinkingCudaCompiler("sm_90", ARCHITECTURAL_LIMITS, unlinked)
    parts = [part(compiler, k) for k in (1, 2, 3)]
    checked = part(compiler, 1, checked_variant(NO_ALIAS))
    refused = parts[1].cubin

    def link(cubins: list[bytes]) -> bytes:
        links.append(len(cubins))
        if refused in cubins:
            raise CompilationError("the linker refused it")
        return b"linked " + b"+".join(c[:8] for c in cubins)

    linking = LinkingCudaCompiler("sm_90", ARCHITECTURAL_LIMITS, link)
    ids = [ArtifactId(shifted.specialize(CUBE, k=k).id(), NO_ALIAS) for k in (1, 2, 3)]
    checked_id = ArtifactId(ids[0].kernel, checked_variant(NO_ALIAS))
    first, third, whole = linking.link(
        [(ids[0], parts[0]), (ids[2], parts[2]), (checked_id, checked)]
    )
    assert links == [2] and whole is checked
    assert first.cubin == third.cubin and first.cubin.startswith(b"linked ")
    assert first.pack == third.pack == hashlib.sha256(first.cubin).hexdigest()
    assert [a.entry for a in (first, third)] == [parts[0].entry, parts[2].entry]
    assert not first.relocatable and not third.relocatable

    [alone] = linking.link([(ids[0], parts[0])])
    assert alone.cubin == b"linked " + parts[0].cubin[:8] and alone.pack is None
    with pytest.raises(CompilationError, match="the linker refused it"):
        linking.link(list(zip(ids, parts, strict=True)))


def linked_parts(
    compiler: LinkingCudaCompiler, ks: tuple[int, ...]
) -> tuple[list[ArtifactId[Any]], list[CudaArtifact], list[str]]:
    """The ids, linked artifacts and sources of ``shifted`` for each of ``ks``, one pack."""
    ids, parts, sources = [], [], []
    for k in ks:
        spec = shifted.specialize(CUBE, k=k)
        aid = ArtifactId(spec.id(), NO_ALIAS)
        recording = CompilationRecording.for_artifact(aid, keep_text=False)
        lowered = compiler.lower(spec, aid, recording, ServerLogger())
        ids.append(aid)
        parts.append(compiler.finalize_part(aid, lowered))
        sources.append(lowered.source)
    linked = compiler.link(list(zip(ids, parts, strict=True)))
    for part, artifact in zip(parts, linked, strict=True):
        assert part.ptx and artifact.ptx == part.ptx, "a part keeps its PTX through the link"
    return ids, linked, sources


def a_gpu(
    capability: tuple[int, int], arch: str, link: Callable[[list[bytes]], bytes] = unlinked
) -> CudaTarget:
    """The target of a GPU of ``capability``, its compiler linking with ``link`` (the context
    stands in: nothing here loads)."""
    limits = dataclasses.replace(ARCHITECTURAL_LIMITS, compute_capability=capability)
    compiler = LinkingCudaCompiler(arch, limits, link)
    return CudaTarget(object(), compiler, ArtifactStore("cuda", fingerprint(capability)))


@pytest.mark.cuda_packages
def test_a_pack_keeps_each_kernels_ptx_apart_for_a_newer_gpu_and_a_warm_load_reads_none(
    store_root: Path,
) -> None:
    def link(cubins: list[bytes]) -> bytes:
        return ELF_MAGIC + b" linked " + b"+".join(c[-8:] for c in cubins)

    older = a_gpu((8, 0), "sm_80", link)
    ids, linked, sources = linked_parts(older.compiler(), (11, 12))
    for aid, artifact, source in zip(ids, linked, sources, strict=True):
        assert older.store(aid, artifact, source)

    warm = older.stored_many(ids)
    assert {a.pack for a in warm.values()} == {linked[0].pack}
    assert all(not a.ptx and not a.packed_ptx for a in warm.values()), "a warm load reads no PTX"
    offered = a_gpu((12, 0), "sm_120a").stored_many(ids)
    assert set(offered) == set(ids)
    for aid, artifact in zip(ids, linked, strict=True):
        found = offered[aid]
        assert found.cubin == b"" and found.pack is None and found.arch == "sm_80"
        assert found.entry == artifact.entry and found.ptx_text() == artifact.ptx
        assert b".target sm_80" in found.ptx_text()


@pytest.mark.gpu
def test_the_driver_compiles_a_pack_kernels_own_ptx_and_a_fresh_client_runs_its_cubin(
    gpu: Any, store_root: Path
) -> None:
    from cubejit.backends.cuda.client import CudaClient

    ids, linked, _ = linked_parts(gpu.compiler, (21, 22))
    handle = gpu.loader.target.load(ids[0], replace(linked[0], cubin=b"", pack=None))
    assert handle.function is not None
    stored = gpu.loader.target.stored(ids[0])
    assert stored is not None and stored.pack is None and stored.cubin.startswith(ELF_MAGIC)
    assert stored.entry == linked[0].entry

    ENVIRONMENTS.reset()
    fresh = CudaClient(0)
    host = np.random.default_rng(9).random(N, dtype=np.float32)
    out = fresh.empty(N, cj.f32)
    cj.kernel(shifted.fn).launch(fresh, cj.cdiv(N, CUBE), CUBE, fresh.to_device(host), out, k=21)
    expected = host * np.float32(23) - np.float32(21)
    np.testing.assert_allclose(fresh.read(out), expected, rtol=1e-6, atol=1e-6)
    assert fresh.compiler.compilations == 0, "the driver's cubin of the PTX was stored"


@pytest.mark.gpu
def test_a_batch_loads_as_one_module_and_a_fresh_client_loads_the_module_from_the_store(
    gpu: Any, store_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cubejit.backends.cuda.client import CudaClient
    from cubejit.backends.cuda.driver import driver_module

    driver = driver_module()
    real = driver.cuModuleLoadData
    loads: list[int] = []

    def counting(image: bytes) -> Any:
        loads.append(len(image))
        return real(image)

    monkeypatch.setattr(driver, "cuModuleLoadData", counting)

    def launch_all(client: Any) -> None:
        kernel = cj.kernel(shifted.fn)
        for k in range(4):
            kernel.prepare(client, CUBE, k=k)
        client.compile_queued()
        rng = np.random.default_rng(5)
        for k in range(4):
            host = rng.random(N, dtype=np.float32)
            out = client.empty(N, cj.f32)
            kernel.launch(client, cj.cdiv(N, CUBE), CUBE, client.to_device(host), out, k=k)
            expected = host * np.float32(k + 2) - np.float32(k)
            np.testing.assert_allclose(client.read(out), expected, rtol=1e-6, atol=1e-6)

    before = gpu.compiler.compilations
    launch_all(gpu)
    assert gpu.compiler.compilations - before == 4
    assert len(loads) == 1, "the batch's four kernels load as one module"
    ENVIRONMENTS.reset()
    fresh = CudaClient(0)
    launch_all(fresh)
    assert fresh.compiler.compilations == 0
    assert len(loads) == 2, "a fresh client loads the stored pack once"
