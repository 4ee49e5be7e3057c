"""Bundles are a shared store: with a signing key they are signed, and checked on arrival."""

from __future__ import annotations

import logging
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from cubejit import config, environment
from cubejit.environment import Store
from cubejit.environment.value import encode

NS = "cpu/0.1.0/fp"


def value(text: str) -> bytes:
    return encode(text.encode(), {"text": text})


def signing_with(key: str | None) -> None:
    config.override(signing_key=key)


@pytest.fixture
def shipped(root: Path, tmp_path: Path) -> Path:
    """A bundle of three entries exported with the key ``k1``, and an empty environment
    ``elsewhere`` active."""
    signing_with("k1")
    for i in range(3):
        Store(NS).insert(b"k%d" % i, value(f"v{i}"))
    environment.export_bundle(tmp_path / "ship.cjb")
    environment.activate("elsewhere")
    return tmp_path / "ship.cjb"


def tamper(bundle: Path, key: bytes) -> None:
    with sqlite3.connect(bundle) as db:
        db.execute("UPDATE entries SET value = ? WHERE key = ?", (value("evil"), key))


def test_a_bundle_signed_with_the_key_imports_whole(shipped: Path) -> None:
    report = environment.import_bundle(shipped)
    assert (report.imported, report.skipped, report.failed) == (3, 0, 0)
    assert Store(NS).get(b"k1") == value("v1")


def test_a_tampered_entry_is_refused_with_a_warning_and_the_others_import(
    shipped: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tamper(shipped, b"k1")
    with caplog.at_level(logging.WARNING, logger="cubejit.environment"):
        report = environment.import_bundle(shipped)
    assert (report.imported, report.failed) == (2, 1)
    assert Store(NS).get(b"k1") is None
    assert any("wrong signature" in r.getMessage() for r in caplog.records)


def test_a_bundle_signed_with_another_key_imports_nothing(shipped: Path) -> None:
    signing_with("k2")
    report = environment.import_bundle(shipped)
    assert (report.imported, report.failed) == (0, 3)


def test_an_unsigned_bundle_is_refused_where_signing_is_on(
    root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    signing_with(None)
    Store(NS).insert(b"k", value("v"))
    environment.export_bundle(tmp_path / "plain.cjb")
    environment.activate("elsewhere")
    signing_with("k1")
    with caplog.at_level(logging.WARNING, logger="cubejit.environment"):
        report = environment.import_bundle(tmp_path / "plain.cjb")
    assert (report.imported, report.failed) == (0, 1)
    assert any("carries no signature" in r.getMessage() for r in caplog.records)


def test_a_bundle_served_in_place_serves_only_what_checks(shipped: Path) -> None:
    tamper(shipped, b"k2")
    environment.load(shipped)
    assert Store(NS).get(b"k0") == value("v0")
    assert Store(NS).get(b"k2") is None


def test_a_bundle_claiming_to_be_an_environment_is_still_verified(shipped: Path) -> None:
    tamper(shipped, b"k2")
    with closing(sqlite3.connect(shipped)) as db, db:
        db.execute("UPDATE meta SET value = 'environment' WHERE name = 'kind'")
    environment.load(shipped)
    assert Store(NS).get(b"k0") == value("v0")
    assert Store(NS).get(b"k2") is None
    environment.activate("elsewhere")
    report = environment.import_bundle(shipped)
    assert (report.imported, report.failed) == (2, 1)


def test_a_signed_bundle_served_in_place_is_never_written_and_new_entries_stay_local(
    shipped: Path,
) -> None:
    before = shipped.read_bytes()
    environment.load(shipped)
    assert Store(NS).insert(b"new", value("fresh")).name == "STORED"
    assert Store(NS).get(b"new") == value("fresh")
    assert shipped.read_bytes() == before
    environment.activate("elsewhere")
    assert Store(NS).get(b"new") == value("fresh")
    environment.load(shipped)
    assert Store(NS).get(b"new") == value("fresh")
    assert Store(NS).get(b"k1") == value("v1")
