"""``cubejit env``: list, inspect, switch, check, shrink and ship environments.

Every subcommand acts on the active environment (``CUBEJIT_ENV``, the configuration file, else
``default``) under the root (``CUBEJIT_CACHE_DIR``, else the user cache directory), except
``list``, which shows them all, and ``use``, which chooses the active one for later processes.

A store this process cannot write (a read-only mount, a shared root-owned directory, a file of a
newer cubejit) is still read: ``list``, ``show`` and ``verify`` report what it really holds, and
what would change it (``clear``, ``verify --fix``, ``prune``, ``import``) is refused with the
reason, changing nothing. Files set aside as damaged are listed by ``list``, count in
``prune`` (which removes them first) and are removed by ``clear --aside``.
"""

from __future__ import annotations

import argparse
from contextlib import closing
from pathlib import Path
from typing import Any

from cubejit import config, environment
from cubejit.backends.stored import artifact_problem
from cubejit.cli.console import console, parse_size, size_text, table
from cubejit.environment import Store, records
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.environment.sqlite_file import (
    NewerSchemaError,
    aside_files,
    on_disk,
    remove_with_companions,
)
from cubejit.environment.storage_sqlite import SqliteStorage
from cubejit.environment.value import DamagedValueError, decode
from cubejit.errors import CubejitError, StoreError
from cubejit.trust import make_private_directory, write_private_text

"""The file under the cache directory that ``cubejit env use`` writes: one line, the name."""


def register(commands: Any) -> None:
    command = commands.add_parser(
        "env",
        help="manage environments (compilation stores)",
        description="Manage environments: the SQLite files that keep compiled kernels.",
    )
    command.set_defaults(run=lambda _: _help(command))
    sub = command.add_subparsers(title="subcommands", metavar="SUBCOMMAND")

    def add(name: str, summary: str, run: Any) -> argparse.ArgumentParser:
        parser = sub.add_parser(name, help=summary, description=summary)
        parser.set_defaults(run=run)
        return parser

    add("list", "list the environments under the root, with their sizes", run_list)
    add("show", "show the active environment: path, size, namespaces, records", run_show)
    use = add("use", "make NAME the active environment of later processes", run_use)
    use.add_argument("name", metavar="NAME")
    clear = add(
        "clear", "delete every entry of the active environment (its records stay)", run_clear
    )
    clear.add_argument(
        "--aside",
        action="store_true",
        help="delete instead the files set aside as damaged (DB.damaged-*), entries untouched",
    )
    verify = add(
        "verify", "check every entry of the active environment; report bad ones", run_verify
    )
    verify.add_argument("--fix", action="store_true", help="purge the bad entries")
    prune = add(
        "prune", "drop the least recently used entries until the environment fits", run_prune
    )
    prune.add_argument(
        "--max-size",
        required=True,
        type=_size,
        metavar="SIZE",
        help="what the entries may take at most, e.g. 500M or 2G",
    )
    export = add(
        "export", "write the active environment, or some namespaces, to a bundle", run_export
    )
    export.add_argument("file", metavar="FILE", type=Path)
    export.add_argument(
        "--namespace",
        action="append",
        metavar="PREFIX",
        default=None,
        help="export only namespaces starting with PREFIX (repeatable), "
        "e.g. cpu/ or cuda/0.1.0/sm_90a",
    )
    load = add("import", "import a bundle's entries into the active environment", run_import)
    load.add_argument("file", metavar="FILE", type=Path)


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _on_disk(path: Path) -> int:
    return on_disk(path)


def _writable(doing: str) -> None:
    """Refuses, changing nothing, to do what would write an environment this process cannot
    write."""
    reason = ENVIRONMENTS.unwritable()
    if reason is not None:
        raise CubejitError(
            f"cannot {doing} {environment.active()!r}: {environment.path()} cannot be written "
            f"here ({reason}); nothing was changed"
        )


def _totals(path: Path) -> tuple[str, str]:
    """Entries and their bytes in the database at ``path``, as the list shows them; what
    stopped it being read when it cannot be."""
    try:
        with closing(SqliteStorage.open(path, readonly=True, repair=False)) as storage:
            summaries = storage.summaries()
    except NewerSchemaError as e:
        return "?", f"newer cubejit (schema {e.version})"
    except StoreError:
        return "?", "unreadable"
    return str(sum(s.entries for s in summaries)), size_text(sum(s.bytes for s in summaries))


def run_list(args: argparse.Namespace) -> int:
    active = environment.active()
    rows = []
    for name in environment.list():
        path = environment.root() / f"{name}.db"
        entries, stored = _totals(path)
        rows.append(
            (
                "*" if name == active else "",
                name,
                entries,
                stored,
                size_text(_on_disk(path)),
                str(path),
            )
        )
    out = console()
    if not rows:
        out.print(
            f"no environments under {environment.root()} yet; the first compile makes {active!r}"
        )
        return 0
    out.print(
        table(
            f"environments under {environment.root()}",
            ("active", "name", "entries", "stored", "on disk", "path"),
            rows,
        )
    )
    aside = [
        (name, size_text(on_disk(file)), str(file))
        for name in ENVIRONMENTS.names()
        for file in aside_files(environment.root() / f"{name}.db")
    ]
    if aside:
        out.print(
            table(
                "set aside as damaged (cubejit env clear --aside deletes those of the active one)",
                ("environment", "on disk", "path"),
                aside,
            )
        )
    return 0


def run_show(args: argparse.Namespace) -> int:
    out = console()
    path = environment.path()
    out.print(f"environment [bold]{environment.active()}[/bold]")
    out.print(f"path:        {path}")
    if not config.settings().compilation_cache:
        out.print("storage:     memory only (CUBEJIT_COMPILATION_CACHE is off)")
        return 0
    if not path.exists():
        out.print("storage:     not created yet (the first compile creates it)")
        return 0
    summaries = environment.namespaces()
    out.print(f"on disk:     {size_text(_on_disk(path))}")
    unwritable = ENVIRONMENTS.unwritable()
    if unwritable is not None:
        out.print(f"writes:      refused here ({unwritable}); new kernels stay in memory")
    out.print(f"entries:     {sum(s.entries for s in summaries)} in {len(summaries)} namespaces")
    sessions = records.read("sessions", path)
    if sessions:
        last = sessions[-1]
        out.print(
            f"records:     {len(sessions)} sessions, the last {last.id} "
            f"({last.label or 'no label'}, cubejit {last.version})"
        )
    else:
        out.print("records:     none (a session is written once it compiles something)")
    if summaries:
        out.print(
            table(
                None,
                ("namespace", "entries", "stored"),
                ((s.namespace, s.entries, size_text(s.bytes)) for s in summaries),
            )
        )
    return 0


def run_use(args: argparse.Namespace) -> int:
    from cubejit.environment.manager import sanitise

    out = console()
    name = sanitise(config.environment_name(args.name, "cubejit env use NAME"))
    cache_dir = config.settings().cache_dir
    state = cache_dir / config.CHOSEN_ENVIRONMENT_FILE
    try:
        make_private_directory(cache_dir)
        write_private_text(state, name + "\n")
    except OSError as e:
        raise CubejitError(f"cannot write {state}: {e}") from e
    config.reset()
    seen = config.settings().env
    if sanitise(seen) == name:
        out.print(f"environment {name!r} is now active (kept in {state})")
        return 0
    where = config.settings().source or "the environment"
    out.print(
        f"environment {name!r} chosen in {state}, but CUBEJIT_ENV or the configuration "
        f"({where}) names {seen!r}, which wins; for this shell run:\n"
        f"  export CUBEJIT_ENV={name}"
    )
    return 0


def run_clear(args: argparse.Namespace) -> int:
    if args.aside:
        return _clear_aside()
    _writable("clear")
    summaries = environment.namespaces()
    for summary in summaries:
        Store(summary.namespace).purge()
    _compact()
    entries = sum(s.entries for s in summaries)
    console().print(
        f"cleared {entries} entries ({size_text(sum(s.bytes for s in summaries))}) "
        f"of {len(summaries)} namespaces from {environment.active()!r}"
    )
    return 0


def run_verify(args: argparse.Namespace) -> int:
    checked, bad = 0, []
    for summary in environment.namespaces():
        values = dict(Store(summary.namespace).scan())
        for key, value in values.items():
            checked += 1
            try:
                problem = artifact_problem(summary.namespace, key, decode(value), values)
            except DamagedValueError as e:
                problem = str(e)
            if problem is not None:
                bad.append((summary.namespace, key, problem))
    out = console()
    if bad:
        out.print(
            table(
                f"{len(bad)} bad entries",
                ("namespace", "key", "problem"),
                ((ns, key.decode("ascii", "replace"), why) for ns, key, why in bad),
            )
        )
    if args.fix and bad:
        _writable("purge bad entries of")
        for namespace, key, _ in bad:
            Store(namespace).purge_key(key)
    verdict = "purged" if args.fix else "found (run with --fix to purge them)"
    out.print(
        f"checked {checked} entries of {environment.active()!r}: "
        + ("all intact" if not bad else f"{len(bad)} bad {verdict}")
    )
    return 0 if not bad or args.fix else 1


def run_prune(args: argparse.Namespace) -> int:
    path = environment.path()
    out = console()
    if not path.exists():
        out.print(f"{environment.active()!r} is empty; nothing to prune")
        return 0
    _writable("prune")
    _, storage = ENVIRONMENTS.current()
    if not isinstance(storage, SqliteStorage):
        raise CubejitError(f"{environment.active()!r} is not served from {path}; nothing to prune")
    aside = aside_files(path)
    aside_freed = sum(on_disk(file) for file in aside)
    for file in aside:
        remove_with_companions(file)
    if aside:
        out.print(f"deleted {len(aside)} files set aside as damaged ({size_text(aside_freed)})")
    entries = storage.entries()
    total = sum(e.size for e in entries)
    dropped, freed = 0, 0
    for entry in entries:
        if total - freed <= args.max_size:
            break
        Store(entry.namespace).purge_key(entry.key)
        dropped += 1
        freed += entry.size
    if dropped:
        storage.compact()
    out.print(
        f"dropped {dropped} of {len(entries)} entries ({size_text(freed)}); "
        f"{environment.active()!r} holds {size_text(total - freed)} "
        f"(at most {size_text(args.max_size)}), {size_text(_on_disk(path))} on disk"
    )
    return 0


def run_export(args: argparse.Namespace) -> int:
    count = environment.export_bundle(args.file, namespaces=args.namespace)
    chosen = "" if args.namespace is None else f" of namespaces {', '.join(args.namespace)}*"
    console().print(
        f"exported {count} entries{chosen} from {environment.active()!r} to "
        f"{args.file} ({size_text(args.file.stat().st_size)})"
    )
    return 0


def run_import(args: argparse.Namespace) -> int:
    _writable("import into")
    report = environment.import_bundle(args.file)
    console().print(
        f"imported {report.imported} entries from {args.file} into "
        f"{environment.active()!r}: {report.skipped} already there, "
        f"{report.failed} failed"
    )
    return 0 if report.failed == 0 else 1


def _clear_aside() -> int:
    path = environment.path()
    aside = aside_files(path)
    freed = sum(on_disk(file) for file in aside)
    for file in aside:
        try:
            remove_with_companions(file)
        except OSError as e:
            raise CubejitError(f"cannot delete {file}: {e}") from e
    console().print(
        f"deleted {len(aside)} files set aside as damaged ({size_text(freed)}) "
        f"beside {path}; its entries are untouched"
    )
    return 0


def _compact() -> None:
    """Gives the space of deleted entries of the active environment back to the disk."""
    _, storage = ENVIRONMENTS.current()
    if isinstance(storage, SqliteStorage):
        storage.compact()
