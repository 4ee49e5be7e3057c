"""``cubejit explain KERNEL``: why a kernel missed the store, in the words of its key.

Every stored artifact keeps its key's ingredients beside it (kernel name, source hash, argument
types, comptime values, cube_dim, variant, build id, fingerprint). The kernel that missed is the
kernel's latest recorded compile (else its most recently stored entry); the nearest other entry
of the same kernel is the one whose ingredients differ in the fewest places (the most recent
among equals), and each ingredient that differs is named with what it means.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cubejit import environment
from cubejit.cli import tune
from cubejit.cli.console import console, table
from cubejit.environment import records
from cubejit.environment.artifacts import ID_PREFIX
from cubejit.environment.storage_sqlite import SqliteStorage
from cubejit.environment.value import DamagedValueError, decode
from cubejit.errors import CubejitError

MEANINGS = {
    "source_hash": "its source changed (or that of a @cj.function it calls)",
    "source": "its source changed (or that of a @cj.function it calls)",
    "build_id": "cubejit was upgraded, or its own code changed (build id)",
    "fingerprint": "the compiler changed: another compiler, version, flags or host CPU",
    "arch": "another GPU architecture",
    "cube_dim": "another cube_dim",
    "types": "other argument types",
    "params": "other argument types",
    "comptime": "other comptime values",
    "variant": "another variant (on the CPU: the buffers' alignment)",
    "kernel": "another kernel name",
}
"""What a difference in each ingredient means; others are named as they are."""


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """One stored artifact and the ingredients of its key."""

    namespace: str
    stored_at: float
    artifact: str
    """The artifact id's stable hash."""
    ingredients: dict[str, Any]
    source_sha256: str | None = None
    """The hash of the backend source the artifact was compiled from."""


@dataclass(frozen=True, slots=True)
class Difference:
    ingredient: str
    missed: Any
    stored: Any

    @property
    def meaning(self) -> str:
        return MEANINGS.get(self.ingredient, f"another {self.ingredient}")


def register(commands: Any) -> None:
    command = commands.add_parser(
        "explain",
        help="say why a kernel missed the store",
        description="For a kernel that was compiled (it missed the store), names which "
        "ingredient of its key differs from the nearest stored entry of the same kernel: its "
        "source changed, cubejit was upgraded (build id), the compiler changed "
        "(fingerprint), another cube_dim, other types or comptime values, another variant.",
    )
    command.add_argument(
        "kernel",
        metavar="KERNEL",
        help="the kernel's qualified name, or its last part (e.g. saxpy); or a tuner's name, "
        "to say why it was tuned again (which candidate changed)",
    )
    command.set_defaults(run=run)


def flatten(ingredients: dict[str, Any]) -> dict[str, Any]:
    """``ingredients`` with any ingredient that is itself named parts (a dict, or a list of
    ``[name, value]`` pairs, as ids hold them) spread into its parts."""
    flat: dict[str, Any] = {}
    for name, value in ingredients.items():
        parts = _named_parts(value)
        if parts is None:
            flat[name] = value
        else:
            flat.update(parts)
    return flat


def _named_parts(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    if (
        isinstance(value, list)
        and value
        and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in value)
        and len({p[0] for p in value}) == len(value)
    ):
        return {p[0]: p[1] for p in value}
    return None


def differences(missed: dict[str, Any], stored: dict[str, Any]) -> list[Difference]:
    """The ingredients in which ``missed`` and ``stored`` differ, in ``missed``'s order (the
    ones only one of them has last)."""
    a, b = flatten(missed), flatten(stored)
    names = [*a, *(n for n in b if n not in a)]
    return [Difference(n, a.get(n), b.get(n)) for n in names if a.get(n) != b.get(n)]


def nearest(missed: StoredEntry, candidates: Iterable[StoredEntry]) -> StoredEntry | None:
    """The candidate whose ingredients differ from ``missed``'s in the fewest places; the most
    recently stored among equals. ``missed`` itself is not a candidate."""
    others = [
        c
        for c in candidates
        if (c.namespace, c.artifact, c.ingredients)
        != (missed.namespace, missed.artifact, missed.ingredients)
    ]
    if not others:
        return None
    return min(
        others, key=lambda c: (len(differences(missed.ingredients, c.ingredients)), -c.stored_at)
    )


def stored_entries(path: Path) -> list[StoredEntry]:
    """Every artifact stored in the environment at ``path``, with its ingredients."""
    if not path.is_file():
        return []
    with closing(SqliteStorage.open(path, readonly=True, repair=False)) as storage:
        rows = storage.prefixed(ID_PREFIX)
    entries = []
    for namespace, _, value, stored_at in rows:
        try:
            header = decode(value).header
        except DamagedValueError:
            continue
        ingredients = header.get("ingredients")
        if isinstance(ingredients, dict):
            source = header.get("source_sha256")
            artifact = str(header.get("artifact", ""))
            entries.append(StoredEntry(namespace, float(stored_at), artifact, ingredients, source))
    return entries


def _is_kernel(name: Any, wanted: str) -> bool:
    return isinstance(name, str) and (name == wanted or name.endswith(f".{wanted}"))


def entries_of(wanted: str, entries: Iterable[StoredEntry]) -> list[StoredEntry]:
    """The entries of the kernel ``wanted`` names: its exact qualified name when a kernel has
    it (even where that is also the tail of a longer name), else every kernel whose name ends
    with it."""
    named = [e for e in entries if _is_kernel(e.ingredients.get("kernel"), wanted)]
    exact = [e for e in named if e.ingredients.get("kernel") == wanted]
    return exact or named


def _missed(kernel: str, entries: Sequence[StoredEntry]) -> tuple[StoredEntry, float]:
    """The entry of the kernel's latest recorded compile, else its latest stored entry, and
    when the batch that compiled it started: what the store held then is what it missed.
    ``kernel`` is the qualified name."""
    trips = [
        c
        for c in records.read("compilations")
        if c.name == kernel and c.outcome in ("compiled", "rekeyed")
    ]
    for trip in reversed(trips):
        found = [e for e in entries if e.artifact == trip.artifact]
        if found:
            entry = max(found, key=lambda e: e.stored_at)
            starts = [
                b.started_at
                for b in records.read("batches")
                if b.session == trip.session and b.stamp == trip.batch
            ]
            return entry, starts[0] if starts else entry.stored_at
    entry = max(entries, key=lambda e: e.stored_at)
    return entry, entry.stored_at


def _text(value: Any) -> str:
    if isinstance(value, str):
        digest = len(value) > 16 and all(c in "0123456789abcdef" for c in value)
        return f"{value[:12]}…" if digest else value
    return json.dumps(value)


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def run(args: argparse.Namespace) -> int:
    out = console()
    everything = stored_entries(environment.path())
    entries = entries_of(args.kernel, everything)
    if tune.explain(args.kernel, out) and not entries:
        return 0
    if not entries:
        known = sorted({str(e.ingredients.get("kernel")) for e in everything})
        hint = f"; stored kernels: {', '.join(known[:12])}" if known else ""
        raise CubejitError(
            f"no stored entry of a kernel named {args.kernel!r} in {environment.active()!r}{hint}"
        )
    names = sorted({e.ingredients["kernel"] for e in entries})
    if len(names) > 1:
        raise CubejitError(
            f"{args.kernel!r} names several kernels: {', '.join(names)}; give the qualified name"
        )
    name = names[0]
    missed, asked_at = _missed(name, entries)
    other = nearest(missed, [e for e in entries if e.stored_at < asked_at]) or nearest(
        missed, entries
    )
    if other is None:
        out.print(
            f"{name} has one stored entry (stored {_when(missed.stored_at)} in "
            f"{missed.namespace}): it missed because nothing of it was stored before. "
            "Nothing else to compare with."
        )
        return 0
    found = differences(missed.ingredients, other.ingredients)
    out.print(
        f"{name}: the entry stored {_when(missed.stored_at)} in {missed.namespace}, "
        f"against the nearest other entry, stored {_when(other.stored_at)} in "
        f"{other.namespace}:"
    )
    if not found:
        out.print("no ingredient differs: both keys were built from the same parts")
        return 0
    out.print(
        table(
            None,
            ("ingredient", "this kernel", "nearest stored", "meaning"),
            ((d.ingredient, _text(d.missed), _text(d.stored), d.meaning) for d in found),
        )
    )
    out.print("it missed because " + "; ".join(d.meaning for d in found))
    if missed.source_sha256 and other.source_sha256:
        same = missed.source_sha256 == other.source_sha256
        out.print(
            "its generated source is the same as that entry's, so its artifact was reused "
            "(re-keyed), not compiled"
            if same
            else "its generated source differs from that entry's, so it had to be compiled"
        )
    return 0
