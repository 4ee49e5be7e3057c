"""``cubejit tune list | show NAME | clear [NAME]``: the tuning decisions of the active
environment; and, for ``cubejit explain NAME``, why a tuner was tuned again.

Decisions are entries of the ``autotune/<cubejit version>/<device>`` namespaces (see
:mod:`cubejit.tune.store`); each keeps every candidate's identity and times, and where and when
it was tuned. A re-tune is a decision under a new key because the candidate set changed: the
nearest other decision of the same tuner (the same key and device first, the most recent among
equals) is compared with it candidate by candidate.
"""

from __future__ import annotations

import argparse
import time
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from cubejit import environment
from cubejit.cli.console import console, table
from cubejit.environment import fleet
from cubejit.environment.storage_sqlite import SqliteStorage
from cubejit.environment.store import Store
from cubejit.environment.value import DamagedValueError
from cubejit.errors import CubejitError
from cubejit.tune.decision import Decision
from cubejit.tune.store import KEY_PREFIX, NAMESPACE_PREFIX


@dataclass(frozen=True, slots=True)
class StoredDecision:
    """One decision of the active environment, where it is kept."""

    namespace: str
    key: bytes
    stored_at: float
    decision: Decision

    @property
    def device(self) -> str:
        """The namespace without its ``autotune/`` prefix: cubejit's version and the device."""
        return self.namespace[len(NAMESPACE_PREFIX) :]


def register(commands: Any) -> None:
    command = commands.add_parser(
        "tune",
        help="show and forget tuning decisions",
        description="Show and forget the decisions of cj.Tuner kept in the active environment: "
        "for each tuner and tuning key, the winner and every candidate's times.",
    )
    command.set_defaults(run=lambda _: _help(command))
    sub = command.add_subparsers(title="subcommands", metavar="SUBCOMMAND")
    listing = sub.add_parser(
        "list", help="list every decision", description="Every decision: tuner, key, winner."
    )
    listing.set_defaults(run=run_list)
    show = sub.add_parser(
        "show",
        help="show a tuner's decisions with every candidate's times",
        description="Each decision of tuner NAME: its key and device, where and when it was "
        "tuned, and every candidate's outcome, runs, median and best time, the kernels it "
        "launched, or its error.",
    )
    show.add_argument("name", metavar="NAME", help="the tuner's name")
    show.set_defaults(run=run_show)
    clear = sub.add_parser(
        "clear",
        help="forget decisions (all, or a tuner's)",
        description="Deletes the decisions of tuner NAME, or every decision, from the active "
        "environment and from the fleet's shared store; they are tuned again when next needed.",
    )
    clear.add_argument("name", metavar="NAME", nargs="?", help="the tuner's name")
    clear.set_defaults(run=run_clear)


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def stored_decisions() -> list[StoredDecision]:
    """Every intact decision of the active environment, oldest first."""
    path = environment.path()
    if not path.is_file():
        return []
    with closing(SqliteStorage.open(path, readonly=True, repair=False)) as storage:
        rows = storage.prefixed(KEY_PREFIX)
    found = []
    for namespace, key, value, stored_at in rows:
        if not namespace.startswith(NAMESPACE_PREFIX):
            continue
        try:
            found.append(StoredDecision(namespace, key, stored_at, Decision.decode(value)))
        except DamagedValueError:
            continue
    return sorted(found, key=lambda d: (d.stored_at, d.namespace, d.key))


def _of(name: str, decisions: list[StoredDecision]) -> list[StoredDecision]:
    chosen = [d for d in decisions if d.decision.tuner == name]
    if not chosen:
        known = sorted({d.decision.tuner for d in decisions})
        hint = f"; tuners with decisions: {', '.join(known[:12])}" if known else ""
        raise CubejitError(
            f"no tuning decision of a tuner named {name!r} in {environment.active()!r}{hint}"
        )
    return chosen


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 1e-3:
        return f"{value * 1e6:.1f} µs"
    if value < 1:
        return f"{value * 1e3:.2f} ms"
    return f"{value:.3f} s"


def run_list(args: argparse.Namespace) -> int:
    out = console()
    decisions = stored_decisions()
    if not decisions:
        out.print(f"no tuning decisions in {environment.active()!r}")
        return 0
    rows = [
        (
            d.decision.tuner,
            str(d.decision.key),
            d.decision.winner,
            str(len(d.decision.candidates)),
            d.device,
            _when(d.stored_at),
        )
        for d in decisions
    ]
    out.print(
        table(
            f"{len(rows)} tuning decisions in {environment.active()!r}",
            ("tuner", "key", "winner", "candidates", "device", "stored"),
            rows,
        )
    )
    return 0


def run_show(args: argparse.Namespace) -> int:
    out = console()
    for stored in _of(args.name, stored_decisions()):
        d = stored.decision
        session = d.session
        out.print(
            f"{d.tuner} for key {d.key} on {stored.device}: {d.winner!r} won; tuned by "
            f"{session.get('host')} (pid {session.get('pid')}) at "
            f"{_when(float(session.get('started_at', stored.stored_at)))}, "
            f"{session.get('timed_runs')} timed runs in "
            f"{_seconds(session.get('timing_s'))} (budget {session.get('budget_s')} s)"
        )
        out.print(
            table(
                None,
                ("candidate", "outcome", "runs", "median", "best", "launched", "error"),
                (
                    (
                        c.name,
                        c.outcome.value,
                        str(len(c.times_ns)),
                        _seconds(c.median_s),
                        _seconds(c.best_s),
                        ", ".join(k.split("#")[0] for k in c.launched),
                        c.error or "",
                    )
                    for c in d.candidates
                ),
            )
        )
    return 0


def run_clear(args: argparse.Namespace) -> int:
    decisions = stored_decisions()
    if args.name is not None:
        decisions = _of(args.name, decisions)
    stores: dict[str, Any] = {}
    for stored in decisions:
        store = stores.get(stored.namespace)
        if store is None:
            store = stores[stored.namespace] = fleet.layered(Store(stored.namespace))
        store.purge_key(stored.key)
    which = f"of {args.name!r} " if args.name is not None else ""
    console().print(
        f"forgot {len(decisions)} tuning decisions {which}in {environment.active()!r}; "
        "their keys are tuned again when next launched"
    )
    return 0


def changes(new: Decision, old: Decision) -> list[tuple[str, str]]:
    """``(candidate, what changed)`` between the candidate sets of ``old`` and ``new``."""
    before = {c.name: c.identity for c in old.candidates}
    after = {c.name: c.identity for c in new.candidates}
    found: list[tuple[str, str]] = []
    for name, identity in after.items():
        if name not in before:
            found.append((name, "added"))
            continue
        was = before[name]
        kernels_before = {k: v for k, v in was.get("kernels", [])}
        kernels_after = {k: v for k, v in identity.get("kernels", [])}
        for kernel in sorted(kernels_after.keys() - kernels_before.keys()):
            found.append((name, f"launches {kernel} now"))
        for kernel in sorted(kernels_before.keys() - kernels_after.keys()):
            found.append((name, f"no longer launches {kernel}"))
        for kernel in sorted(kernels_after.keys() & kernels_before.keys()):
            if kernels_after[kernel] != kernels_before[kernel]:
                found.append(
                    (name, f"kernel {kernel} changed (its source, or a @cj.function it calls)")
                )
        if identity.get("code") != was.get("code"):
            found.append(
                (name, "its launch function changed (its code, or a value or function it uses)")
            )
    found += [(name, "removed") for name in before if name not in after]
    common = [n for n in after if n in before]
    if not found and common != [n for n in before if n in after]:
        found.append(("(all)", "the candidates' order changed (the first is the default)"))
    return found


def explain(name: str, out: Console) -> bool:
    """Says why tuner ``name`` was tuned again, for ``cubejit explain``; False when the active
    environment holds no decision of such a tuner."""
    decisions = [d for d in stored_decisions() if d.decision.tuner == name]
    if not decisions:
        return False
    latest = decisions[-1]
    others = [d for d in decisions[:-1] if d.decision.checksum != latest.decision.checksum]
    if not others:
        out.print(
            f"tuner {name}: {len(decisions)} decision(s), all tuned with the same candidates; "
            "nothing was tuned again for a change of candidates"
        )
        return True
    nearest = max(
        others,
        key=lambda d: (
            d.decision.key == latest.decision.key,
            d.namespace == latest.namespace,
            d.stored_at,
        ),
    )
    out.print(
        f"tuner {name}: key {latest.decision.key} on {latest.device} was tuned at "
        f"{_when(latest.stored_at)}, against the decision for key {nearest.decision.key} on "
        f"{nearest.device} stored at {_when(nearest.stored_at)}:"
    )
    found = changes(latest.decision, nearest.decision)
    if found:
        out.print(table(None, ("candidate", "what changed"), found))
    reasons = [f"candidate {c!r}: {what}" for c, what in found]
    if latest.namespace != nearest.namespace:
        reasons.append("another device or cubejit version")
    builds = [d.decision.session.get("build") for d in (nearest, latest)]
    if not reasons and None not in builds and builds[0] != builds[1]:
        reasons.append(
            "cubejit itself changed (a standard function's tuner keys its decisions by "
            "cubejit's build, which names its candidates' code)"
        )
    out.print("it was tuned again because " + "; ".join(reasons or ["its candidates changed"]))
    return True
