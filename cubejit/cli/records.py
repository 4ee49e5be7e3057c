"""``cubejit records``: what each process compiled into the active environment, and its cost.

Without options: the sessions, then the batches and compilations of the latest one. With
``--session`` (an id or its first characters) that session instead; with ``--kernel`` the
trips of one kernel across sessions; ``--plot`` draws the timeline of the session's last batch
that compiled anything.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cubejit import environment
from cubejit.cli.console import console, seconds_text, table
from cubejit.cli.timeline import draw
from cubejit.environment import records
from cubejit.environment.records import SessionRecord, StoredBatch, StoredCompilation
from cubejit.errors import CubejitError
from cubejit.tune import records as tune_records

_WORKER = "cubejit-compile-"


def register(commands: Any) -> None:
    command = commands.add_parser(
        "records",
        help="show what each process compiled, and what it cost",
        description="Tables of the sessions recorded in the active environment and of their "
        "compilations. A session is recorded once it compiled something; the level of detail "
        "follows CUBEJIT_RECORD_LEVEL (off, basic, full).",
    )
    command.add_argument("--session", metavar="ID", help="one session (an id or its start)")
    command.add_argument(
        "--kernel", metavar="NAME", help="one kernel's trips (its qualified name or last part)"
    )
    command.add_argument(
        "--plot",
        metavar="FILE.png",
        type=Path,
        help="draw the timeline of the session's last compiling batch",
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    out = console()
    sessions = records.read("sessions")
    tunings = tune_records.read()
    if not sessions and tunings:
        out.print(_tunings_table(tunings))
        return 0
    if not sessions:
        out.print(
            f"no records in {environment.active()!r} yet: a process is recorded once it "
            "compiles something (CUBEJIT_RECORD_LEVEL is basic unless set)"
        )
        return 0
    batches = records.read("batches")
    compilations = records.read("compilations")
    chosen = _session(sessions, args.session) if args.session else None
    if chosen is not None:
        batches = [b for b in batches if b.session == chosen.id]
        compilations = [c for c in compilations if c.session == chosen.id]
    if args.kernel:
        compilations = [c for c in compilations if _is_kernel(c.name, args.kernel)]
        if not compilations:
            raise CubejitError(f"no recorded trip of a kernel named {args.kernel!r}")
    if chosen is None and not args.kernel:
        out.print(_sessions_table(sessions, batches, compilations))
        chosen = sessions[-1]
        batches = [b for b in batches if b.session == chosen.id]
        compilations = [c for c in compilations if c.session == chosen.id]
    if not args.kernel:
        out.print(_batches_table(chosen, batches))
    out.print(_compilations_table(compilations, with_session=chosen is None))
    if tunings and not (args.session or args.kernel):
        out.print(_tunings_table(tunings))
    if args.plot is not None:
        _plot(args.plot, chosen or _session(sessions, compilations[-1].session), out)
    return 0


def _tunings_table(tunings: Sequence[tune_records.TuningRecord]) -> Any:
    """One row per key a process tuned: what was timed, and for how long."""
    rows = [
        (
            t.session[:8],
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t.started_at)),
            t.tuner,
            json.dumps(t.key),
            t.winner,
            ", ".join(f"{c['name']} {c['outcome']} x{c['runs']}" for c in t.candidates),
            str(t.timed_runs),
            seconds_text(t.timing_s),
            seconds_text(t.tuning_s),
        )
        for t in tunings
    ]
    return table(
        f"{len(rows)} tunings",
        ("session", "started", "tuner", "key", "winner", "candidates", "runs", "timed", "wall"),
        rows,
    )


def _is_kernel(name: str, wanted: str) -> bool:
    return name == wanted or name.endswith(f".{wanted}")


def _session(sessions: Sequence[SessionRecord], wanted: str) -> SessionRecord:
    found = [s for s in sessions if s.id.startswith(wanted)]
    if len(found) != 1:
        known = ", ".join(s.id[:8] for s in sessions[-5:])
        what = "no session" if not found else f"{len(found)} sessions"
        raise CubejitError(f"{what} starting with {wanted!r}; recent sessions: {known}")
    return found[0]


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _sessions_table(
    sessions: Sequence[SessionRecord],
    batches: Sequence[StoredBatch],
    compilations: Sequence[StoredCompilation],
) -> Any:
    rows = []
    for s in sessions:
        own = [c for c in compilations if c.session == s.id]
        outcomes = [c.outcome for c in own]
        rows.append(
            (
                s.id[:8],
                _when(s.started_at),
                s.label or "",
                s.version,
                s.pid,
                f"{s.os}/{s.arch}",
                sum(b.session == s.id for b in batches),
                outcomes.count("compiled"),
                outcomes.count("loaded"),
                outcomes.count("rekeyed"),
                seconds_text(sum(c.work_s for c in own)),
            )
        )
    return table(
        f"sessions in {environment.active()!r}",
        (
            "session",
            "started",
            "label",
            "cubejit",
            "pid",
            "system",
            "batches",
            "compiled",
            "loaded",
            "rekeyed",
            "work",
        ),
        rows,
    )


def _batches_table(session: SessionRecord, batches: Sequence[StoredBatch]) -> Any:
    rows = [
        (
            b.stamp,
            _when(b.started_at),
            b.kernels_asked,
            b.compiled,
            b.from_store,
            b.rekeyed,
            b.failed,
            b.threads,
            seconds_text(b.wall_s),
        )
        for b in batches
    ]
    return table(
        f"batches of session {session.id[:8]} ({session.label or 'no label'})",
        (
            "stamp",
            "started",
            "asked",
            "compiled",
            "from store",
            "rekeyed",
            "failed",
            "threads",
            "wall",
        ),
        rows,
    )


def _compilations_table(compilations: Sequence[StoredCompilation], with_session: bool) -> Any:
    rows = []
    for c in compilations:
        phases = [
            seconds_text(c.phases[p]["end"] - c.phases[p]["start"]) if p in c.phases else "-"
            for p in ("lower", "finalize", "load")
        ]
        workers = sorted(
            {p["thread"].removeprefix(_WORKER) for name, p in c.phases.items() if name != "load"}
        )
        row = (
            c.stamp,
            c.kernel.split("#")[0],
            c.outcome,
            seconds_text(c.work_s),
            *phases,
            ", ".join(workers) or "-",
        )
        rows.append((c.session[:8], *row) if with_session else row)
    columns = ("stamp", "kernel", "outcome", "work", "lower", "finalize", "load", "workers")
    return table("compilations", (("session", *columns) if with_session else columns), rows)


def _plot(dest: Path, session: SessionRecord, out: Any) -> None:
    batches = [b for b in records.read("batches") if b.session == session.id]
    if not batches:
        raise CubejitError(f"session {session.id[:8]} has no batch to plot")
    compiling = [b for b in batches if b.compiled or b.rekeyed]
    batch = (compiling or batches)[-1]
    kernels = [
        c
        for c in records.read("compilations")
        if c.session == session.id and c.batch == batch.stamp
    ]
    draw(batch, kernels, dest)
    out.print(f"timeline of batch {batch.stamp} of session {session.id[:8]} written to {dest}")
