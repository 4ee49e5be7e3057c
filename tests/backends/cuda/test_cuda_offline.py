"""CUDA artifacts built with no GPU (an :class:`OfflineBuild`) land under the namespace of the
GPU they are built for; a GPU newer than every stored cubin is offered the portable PTX of an
older one, never an architecture-specific one. NVRTC only: no driver, no device."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from cuda_kernels import all_cases

from cubejit.backends.cuda.coarsening import NO_ALIAS
from cubejit.backends.cuda.compiler import CudaCompiler
from cubejit.backends.cuda.driver import ARCHITECTURAL_LIMITS
from cubejit.backends.cuda.offline import OfflineBuild
from cubejit.backends.cuda.target import CudaTarget, fingerprint
from cubejit.compile.id import ArtifactId
from cubejit.environment.artifacts import ArtifactStore

pytestmark = pytest.mark.cuda_packages

SPECS = [case.spec for case in all_cases()[:3]]


def a_gpu(capability: tuple[int, int], arch: str) -> CudaTarget:
    """The target of a GPU of ``capability``, as its client makes it (the context stands in:
    nothing here loads)."""
    limits = dataclasses.replace(ARCHITECTURAL_LIMITS, compute_capability=capability)
    store = ArtifactStore("cuda", fingerprint(capability))
    return CudaTarget(object(), CudaCompiler(arch, limits), store)


def build(arch: str) -> OfflineBuild:
    offline = OfflineBuild(arch, parallelism=2)
    for spec in SPECS:
        offline.prepare(spec)
    offline.compile_queued()
    assert offline.compiler.compilations >= 1
    return offline


def ids() -> list[ArtifactId[Any]]:
    return [ArtifactId(spec.id(), NO_ALIAS) for spec in SPECS]


def test_an_offline_build_stores_cubins_a_gpu_of_its_architecture_finds(store_root: Path):
    build("sm_90a")
    found = a_gpu((9, 0), "sm_90a").stored_many(ids())
    assert set(found) == set(ids())
    assert all(a.cubin.startswith(b"\x7fELF") and a.arch == "sm_90a" for a in found.values())


def test_a_newer_gpu_is_offered_the_portable_ptx_of_an_older_architecture(store_root: Path):
    build("sm_80")
    found = a_gpu((12, 0), "sm_120a").stored_many(ids())
    assert set(found) == set(ids())
    for artifact in found.values():
        assert artifact.cubin == b"" and artifact.arch == "sm_80"
        assert b".target sm_80" in artifact.ptx_text()


def test_ptx_made_for_one_architectures_own_instructions_is_never_offered(tmp_path, monkeypatch):
    from cubejit import config
    from cubejit.environment.manager import ENVIRONMENTS

    monkeypatch.setattr(config, "_current", config.settings())
    config.override(cache_dir=tmp_path, env="specific", compilation_cache=True)
    ENVIRONMENTS.reset()
    try:
        build("sm_90a")
        assert a_gpu((10, 0), "sm_100a").stored_many(ids()) == {}
    finally:
        ENVIRONMENTS.reset()
