"""Fixtures for the store's tests: an empty root per test, the store's warnings, the outcomes
of the kernels the loader's batches handle."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from cubejit import config
from cubejit.compile import BatchRecord, add_record_sink, remove_record_sink
from cubejit.environment.manager import ENVIRONMENTS


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty root holding the active environment ``test``; settings and environments as
    they were come back after the test."""
    monkeypatch.setattr(config, "_current", config.settings())
    where = tmp_path / "root"
    config.override(cache_dir=where, env="test", compilation_cache=True)
    ENVIRONMENTS.reset()
    yield where
    ENVIRONMENTS.reset()


@pytest.fixture
def store_warnings(caplog: pytest.LogCaptureFixture) -> Iterator[list[logging.LogRecord]]:
    """The WARNING records of the ``cubejit.environment`` logger during the test."""
    caplog.set_level(logging.WARNING, logger="cubejit.environment")
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                records.append(record)

    handler = Keep()
    logger = logging.getLogger("cubejit.environment")
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


@pytest.fixture
def outcomes() -> Iterator[list[str]]:
    """The outcome of every kernel of every batch recorded during the test, in order."""
    seen: list[str] = []

    def sink(batch: BatchRecord) -> None:
        seen.extend(str(k.outcome) for k in batch.kernels)

    add_record_sink(sink)
    yield seen
    remove_record_sink(sink)
