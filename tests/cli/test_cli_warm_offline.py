"""``cubejit warm --backend cuda --arch ...``: CUDA bundles built on a machine with no GPU, with
NVRTC alone, under the namespaces the GPUs of those architectures read."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from cli_runner import EXAMPLES, Cubejit, command

from cubejit.environment.value import decode


@pytest.fixture(autouse=True)
def nvrtc_here() -> None:
    from cubejit.backends.cuda.nvrtc import version
    from cubejit.errors import BackendUnavailableError

    try:
        version()
    except BackendUnavailableError as e:
        pytest.skip(f"needs the CUDA packages: {e}")


def namespaces(database: Path) -> dict[str, list[tuple[bytes, bytes]]]:
    found: dict[str, list[tuple[bytes, bytes]]] = {}
    with closing(sqlite3.connect(database)) as db:
        for namespace, key, value in db.execute("SELECT namespace, key, value FROM entries"):
            found.setdefault(namespace, []).append((bytes(key), bytes(value)))
    return found


def test_warm_for_several_architectures_builds_every_kernel_for_each_without_a_gpu(
    cubejit: Cubejit, tmp_path: Path
) -> None:
    from cubejit.backends.cuda import nvrtc

    done = cubejit(
        "warm", str(EXAMPLES / "warm_module.py"), "--backend", "cuda", "--arch", "sm_80,sm_90a"
    )
    assert done.stdout.count("3 compiled, 0 from the store, 1 rekeyed, 0 failed") == 2, done.stdout
    from cubejit.backends.cuda.target import unpacked

    major, minor = nvrtc.version()
    (database,) = (tmp_path / "root").glob("*.db")
    stored = namespaces(database)
    for capability, arch in (("80", "sm_80"), ("90", "sm_90a")):
        entries = stored[f"cuda/0.1.0/sm_{capability}-nvrtc{major}.{minor}"]
        records = [v for k, v in entries if k.startswith(b"id:")]
        sources = [decode(v) for k, v in entries if k.startswith(b"source:")]
        artifacts = [unpacked(s.payload, s.header["metadata"]) for s in sources]
        assert len(records) == 4
        assert artifacts and all(a.cubin.startswith(b"\x7fELF") for a in artifacts)
        assert all(a.arch == arch for a in artifacts)
        assert all(b".entry cubejit_kernel" in a.ptx_text() for a in artifacts), "PTX kept beside"
    bundle = tmp_path / "bundle.db"
    cubejit("env", "export", str(bundle))
    assert len(namespaces(bundle)) == 2


def test_a_gpu_less_warm_stores_under_the_key_a_gpu_of_that_architecture_asks_for(
    tmp_path: Path,
) -> None:
    import sys

    from cubejit.backends.cuda.coarsening import NO_ALIAS
    from cubejit.backends.cuda.target import fingerprint
    from cubejit.compile.id import ArtifactId
    from cubejit.environment.artifacts import ArtifactStore

    root = tmp_path / "root"
    command(root, tmp_path)(
        "warm", str(EXAMPLES / "warm_module.py"), "--backend", "cuda", "--arch", "sm_90a"
    )
    sys.path.insert(0, str(EXAMPLES))
    try:
        import warm_module
    finally:
        sys.path.remove(str(EXAMPLES))
    spec = warm_module.power.specialize(256, n=2)
    key = ArtifactStore("cuda", fingerprint((9, 0))).key(ArtifactId(spec.id(), NO_ALIAS))
    (database,) = root.glob("*.db")
    keys = {k for k, _ in namespaces(database)[f"cuda/0.1.0/{fingerprint((9, 0))}"]}
    assert key in keys


def test_arch_without_the_cuda_backend_is_refused(cubejit: Cubejit) -> None:
    done = cubejit("warm", str(EXAMPLES / "warm_module.py"), "--arch", "sm_80", check=False)
    assert done.returncode == 2
    assert "--backend cuda" in done.stderr
    bad = cubejit(
        "warm",
        str(EXAMPLES / "warm_module.py"),
        "--backend",
        "cuda",
        "--arch",
        "hopper",
        check=False,
    )
    assert bad.returncode == 2
    assert "sm_80,sm_90a,sm_100a" in bad.stderr
