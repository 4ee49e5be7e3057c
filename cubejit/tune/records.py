"""Tuning sessions in the records: what each process timed, for which key, and for how long.

Each key a process tunes adds one row to the ``record_tunings`` table of the active
environment's database, beside the compilation records of :mod:`cubejit.environment.records`
(stamped with the same session id, so the two read together): the tuner, the key, the device,
the winner, the timed runs and their seconds, the whole tuning's wall time, and per candidate its
outcome, runs and seconds timed. Like every record, it is written only into a database the store
made for an environment, not at all with ``CUBEJIT_RECORD_LEVEL=off``, and a write that fails
is logged once and never fails a launch.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cubejit import config
from cubejit.environment import records
from cubejit.tune.decision import Decision

_log = logging.getLogger("cubejit.records")
_BUSY_TIMEOUT_S = 10.0

_CREATE = (
    "CREATE TABLE IF NOT EXISTS record_tunings ("
    " session TEXT NOT NULL, started_at REAL NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,"
    " tuner TEXT NOT NULL, key TEXT NOT NULL, device TEXT NOT NULL, winner TEXT NOT NULL,"
    " timed_runs INTEGER NOT NULL, timing_s REAL NOT NULL, tuning_s REAL NOT NULL,"
    " candidates TEXT NOT NULL)"
)
_INSERT = (
    "INSERT INTO record_tunings (session, started_at, host, pid, tuner, key, device, winner,"
    " timed_runs, timing_s, tuning_s, candidates) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT = (
    "SELECT session, started_at, host, pid, tuner, key, device, winner, timed_runs, timing_s,"
    " tuning_s, candidates FROM record_tunings ORDER BY started_at"
)
_failed: set[Path] = set()


@dataclass(frozen=True, slots=True)
class TuningRecord:
    """One key tuned by one process."""

    session: str
    """The process's session id in the environment (as compilation records carry it)."""
    started_at: float
    host: str
    pid: int
    tuner: str
    key: Any
    """The tuning key, as JSON holds it."""
    device: str
    winner: str
    timed_runs: int
    timing_s: float
    """Seconds spent in timed runs."""
    tuning_s: float
    """Wall seconds of the whole tuning (warm-ups and compiles included)."""
    candidates: list[dict[str, Any]]
    """Per candidate: ``name``, ``outcome``, ``runs``, ``timed_s``."""


def record(decision: Decision) -> None:
    """Adds the tuning that made ``decision`` to the active environment's records."""
    if config.settings().record_level == "off":
        return
    path = records.active_database()
    if path is None or path in _failed:
        return
    session = decision.session
    candidates = [
        {
            "name": c.name,
            "outcome": c.outcome.value,
            "runs": len(c.times_ns),
            "timed_s": sum(c.times_ns) / 1e9,
        }
        for c in decision.candidates
    ]
    row = (
        records.install().session(path).id,
        float(session["started_at"]),
        str(session["host"]),
        int(session["pid"]),
        decision.tuner,
        json.dumps(decision.key),
        str(session["device"]),
        decision.winner,
        int(session["timed_runs"]),
        float(session["timing_s"]),
        float(session["tuning_s"]),
        json.dumps(candidates),
    )
    try:
        with closing(
            sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=rw",
                uri=True,
                timeout=_BUSY_TIMEOUT_S,
                isolation_level=None,
            )
        ) as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute(_CREATE)
            db.execute(_INSERT, row)
            db.execute("COMMIT")
    except (sqlite3.Error, OSError) as e:
        _failed.add(path)
        _log.warning(
            "cannot write tuning records to %s, so this process keeps none there: %s", path, e
        )


def read(path: Path | None = None) -> list[TuningRecord]:
    """The tuning records of the environment at ``path`` (default: the active one), oldest
    first."""
    if path is None:
        path = records.active_database()
        if path is None:
            return []
    if not Path(path).is_file():
        return []
    try:
        with closing(
            sqlite3.connect(
                f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=_BUSY_TIMEOUT_S
            )
        ) as db:
            rows = db.execute(_SELECT).fetchall()
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            return []
        raise
    return [
        TuningRecord(
            session=row[0],
            started_at=row[1],
            host=row[2],
            pid=row[3],
            tuner=row[4],
            key=json.loads(row[5]),
            device=row[6],
            winner=row[7],
            timed_runs=row[8],
            timing_s=row[9],
            tuning_s=row[10],
            candidates=json.loads(row[11]),
        )
        for row in rows
    ]
