"""The CUDA kernels a batch compiles share one cubin: relocatable parts linked by the driver,
stored once, loaded as one module. The parts' compile and the link's grouping run wherever
NVRTC is (the grouping with a stand-in for the driver's linker, which needs a GPU); the link,
the store and the loads on a GPU. What a batch does when parts do not link together is the
loader's (``tests/compile/test_loader_links.py``)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cubejit as cj
from cubejit.backends.cuda.artifact import ENTRY_POINT, CudaArtifact
from cubejit.backends.cuda.coarsening import NO_ALIAS
from cubejit.backends.cuda.compiler import LinkingCudaCompiler
from cubejit.backends.cuda.driver import ARCHITECTURAL_LIMITS
from cubejit.compile.id import ArtifactId
from cubejit.compile.recording import CompilationRecording, ServerLogger
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
