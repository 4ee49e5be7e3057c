"""Bundles: export, import, load in place; never overwriting local entries."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest
from store_helpers import spawn

from cubejit import environment
from cubejit.compile.id import ArtifactId, KernelId
from cubejit.environment import ArtifactStore, InsertOutcome, Store
from cubejit.environment.value import encode
from cubejit.errors import StoreError

NS = "cpu/0.1.0/fp"


def value(text: str) -> bytes:
    return encode(text.encode(), {"text": text})


def test_an_exported_bundle_imports_elsewhere(root: Path, tmp_path: Path) -> None:
    for i in range(5):
        Store(NS).insert(b"k%d" % i, value(f"v{i}"))
    Store("cuda/0.1.0/sm_90").insert(b"c", value("cubin"))
    assert environment.export_bundle(tmp_path / "ship.cjb") == 6
    environment.activate("elsewhere")
    report = environment.import_bundle(tmp_path / "ship.cjb")
    assert (report.imported, report.skipped, report.failed) == (6, 0, 0)
    assert Store(NS).get(b"k3") == value("v3")
    assert [s.namespace for s in environment.namespaces()] == ["cpu/0.1.0/fp", "cuda/0.1.0/sm_90"]


def test_export_keeps_only_the_namespaces_asked_for(root: Path, tmp_path: Path) -> None:
    Store(NS).insert(b"k", value("cpu"))
    Store("cuda/0.1.0/sm_90").insert(b"c", value("cubin"))
    assert environment.export_bundle(tmp_path / "cuda.cjb", namespaces=["cuda/"], name="gpu") == 1
    with sqlite3.connect(tmp_path / "cuda.cjb") as db:
        assert db.execute("SELECT value FROM meta WHERE name='kind'").fetchone() == ("bundle",)
        assert db.execute("SELECT value FROM meta WHERE name='name'").fetchone() == ("gpu",)
        assert db.execute("SELECT DISTINCT namespace FROM entries").fetchall() == [
            ("cuda/0.1.0/sm_90",)
        ]
    assert not list(tmp_path.glob(".*.tmp"))


def test_importing_twice_imports_nothing_the_second_time(root: Path, tmp_path: Path) -> None:
    Store(NS).insert(b"k", value("v"))
    environment.export_bundle(tmp_path / "b.cjb")
    environment.activate("elsewhere")
    environment.import_bundle(tmp_path / "b.cjb")
    report = environment.import_bundle(tmp_path / "b.cjb")
    assert (report.imported, report.skipped, report.failed) == (0, 1, 0)


def test_importing_never_overwrites_a_local_value(root: Path, tmp_path: Path) -> None:
    Store(NS).insert(b"k", value("theirs"))
    environment.export_bundle(tmp_path / "b.cjb")
    environment.activate("elsewhere")
    Store(NS).insert(b"k", value("ours"))
    report = environment.import_bundle(tmp_path / "b.cjb")
    assert (report.imported, report.skipped) == (0, 1)
    assert Store(NS).get(b"k") == value("ours")


def test_a_local_value_replaces_an_imported_one(root: Path, tmp_path: Path) -> None:
    Store(NS).insert(b"k", value("theirs"))
    environment.export_bundle(tmp_path / "b.cjb")
    environment.activate("elsewhere")
    environment.import_bundle(tmp_path / "b.cjb")
    assert Store(NS).insert(b"k", value("ours")) is InsertOutcome.STORED
    assert Store(NS).get(b"k") == value("ours")
    assert environment.import_bundle(tmp_path / "b.cjb").skipped == 1
    assert Store(NS).get(b"k") == value("ours")


def test_a_damaged_value_in_a_bundle_is_not_imported(root: Path, tmp_path: Path) -> None:
    Store(NS).insert(b"good", value("good"))
    Store(NS).insert(b"bad", value("bad"))
    environment.export_bundle(tmp_path / "b.cjb")
    with sqlite3.connect(tmp_path / "b.cjb") as db:
        db.execute("UPDATE entries SET value = ? WHERE key = ?", (b"tampered", b"bad"))
    environment.activate("elsewhere")
    report = environment.import_bundle(tmp_path / "b.cjb")
    assert (report.imported, report.skipped, report.failed) == (1, 0, 1)
    assert Store(NS).get(b"bad") is None


def test_export_refuses_a_destination_that_is_not_a_bundle(root: Path, tmp_path: Path) -> None:
    Store(NS).insert(b"k", value("v"))
    precious = tmp_path / "thesis.pdf"
    precious.write_bytes(b"%PDF-1.7 years of work")
    with pytest.raises(StoreError, match="not a cubejit bundle"):
        environment.export_bundle(precious)
    assert precious.read_bytes() == b"%PDF-1.7 years of work"
    with pytest.raises(StoreError, match="environment, not a bundle"):
        environment.export_bundle(environment.path())
    assert Store(NS).get(b"k") == value("v")


def test_export_replaces_an_older_bundle(root: Path, tmp_path: Path) -> None:
    Store(NS).insert(b"one", value("1"))
    environment.export_bundle(tmp_path / "b.cjb")
    Store(NS).insert(b"two", value("2"))
    assert environment.export_bundle(tmp_path / "b.cjb") == 2


def test_a_loaded_bundle_is_served_in_place(root: Path, tmp_path: Path) -> None:
    artifacts = ArtifactStore("cpu", "fp")
    kernel = ArtifactId(KernelId("saxpy"), None)
    artifacts.store(kernel, b"artifact", {"entry": "e"}, "text")
    environment.export_bundle(tmp_path / "b.cjb")
    environment.activate("empty")
    assert artifacts.stored(kernel) is None
    before = environment.generation()
    environment.load(tmp_path / "b.cjb")
    assert environment.generation() > before
    assert environment.path() == (tmp_path / "b.cjb").resolve()
    assert artifacts.stored(kernel) == (b"artifact", {"entry": "e"})


def test_importing_a_file_that_is_not_a_bundle_is_refused(root: Path, tmp_path: Path) -> None:
    stranger = tmp_path / "x.cjb"
    stranger.write_bytes(b"not sqlite at all" * 64)
    with pytest.raises(StoreError, match="not a cubejit store"):
        environment.import_bundle(stranger)
    assert stranger.read_bytes() == b"not sqlite at all" * 64


def test_a_bundle_from_another_fingerprint_serves_nothing_here(root: Path, tmp_path: Path) -> None:
    kernel = ArtifactId(KernelId("saxpy", {"t": "f32"}, 64), 16)
    ArtifactStore("cpu", "x86_64-gcc12-znver4").store(kernel, b"for zen 4", {}, "the text")
    environment.export_bundle(tmp_path / "zen4.cjb")
    environment.activate("skylake-host")
    assert environment.import_bundle(tmp_path / "zen4.cjb").imported == 2
    here = ArtifactStore("cpu", "x86_64-gcc12-skylake")
    assert here.stored(kernel) is None
    assert here.stored_for_source("the text") is None
    assert [s.namespace for s in environment.namespaces()] == [
        f"cpu/{here.namespace.split('/')[1]}/x86_64-gcc12-znver4"
    ]
    assert ArtifactStore("cpu", "x86_64-gcc12-znver4").stored(kernel) == (b"for zen 4", {})


def test_a_loaded_bundle_is_never_written_and_kernels_compiled_meanwhile_stay_local(
    root: Path, tmp_path: Path
) -> None:
    artifacts = ArtifactStore("cpu", "fp")
    shipped = ArtifactId(KernelId("shipped"), None)
    artifacts.store(shipped, b"from the bundle", {"entry": "e"}, "text")
    bundle = tmp_path / "b.cjb"
    environment.export_bundle(bundle)
    before = (bundle.read_bytes(), bundle.stat().st_mtime_ns)
    environment.activate("local")
    environment.load(bundle)
    fresh = ArtifactId(KernelId("fresh"), None)
    assert artifacts.store(fresh, b"compiled here", {"entry": "f"}, "new text")
    assert artifacts.stored(shipped) == (b"from the bundle", {"entry": "e"})
    assert artifacts.stored(fresh) == (b"compiled here", {"entry": "f"})
    assert (bundle.read_bytes(), bundle.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.cjb", "root"]
    environment.activate("local")
    assert artifacts.stored(fresh) == (b"compiled here", {"entry": "f"})
    assert artifacts.stored(shipped) is None


def test_loading_or_importing_a_bundle_without_a_signing_key_warns_that_its_code_is_unverified(
    root: Path, tmp_path: Path, store_warnings: list[logging.LogRecord]
) -> None:
    for i in range(3):
        Store(NS).insert(b"k%d" % i, value(f"v{i}"))
    environment.export_bundle(tmp_path / "b.cjb")
    environment.activate("elsewhere")

    def unverified() -> int:
        return sum("trusted unverified" in r.getMessage() for r in store_warnings)

    environment.import_bundle(tmp_path / "b.cjb")
    assert unverified() == 1
    environment.activate("another")
    environment.load(tmp_path / "b.cjb")
    assert Store(NS).get(b"k1") == value("v1")
    assert unverified() == 2
    assert str((tmp_path / "b.cjb").resolve()) in store_warnings[-1].getMessage()


STREAMING = """
import json, os, resource, sys
from cubejit import environment
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.environment.value import encode

ENTRIES, SIZE = {entries}, {size}
_, storage = ENVIRONMENTS.current()
for i in range(ENTRIES):
    storage.insert("cpu/0.1.0/fp", b"k%d" % i, encode(os.urandom(SIZE), {{"i": i}}))
ENVIRONMENTS.reset()

def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

before = peak()
exported = environment.export_bundle(sys.argv[1])
after_export = peak()
environment.activate("elsewhere")
report = environment.import_bundle(sys.argv[1])
print(json.dumps([exported, report.imported, before, after_export, peak()]))
"""


def test_export_and_import_stream_entries_in_memory_bounded_by_the_largest_entry(
    root: Path, tmp_path: Path
) -> None:
    entries, size = 32, 6 << 20
    bundle = tmp_path / "big.cjb"
    code = STREAMING.format(entries=entries, size=size)
    process = spawn(code.replace("sys.argv[1]", repr(str(bundle))), root)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    exported, imported, before, after_export, after_import = json.loads(out)
    assert exported == imported == entries
    bound = (64 << 20) + size
    assert after_export - before <= bound, (after_export - before) >> 20
    assert after_import - before <= bound, (after_import - before) >> 20
