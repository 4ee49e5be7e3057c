"""``cubejit env``: list, show, use, clear, verify, prune, export and import."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from cli_runner import Cubejit, command, copy_root, entries

from cubejit.environment.value import decode, encode


def test_list_and_show_describe_the_environments(warmed: Path, tmp_path: Path) -> None:
    cubejit = command(warmed, tmp_path)
    listed = cubejit("env", "list").stdout
    assert "default" in listed and str(warmed / "default.db") in listed
    shown = cubejit("env", "show").stdout
    assert "environment default" in shown
    assert "entries:     9 in 1 namespaces" in shown
    assert "cpu/0.1.0/" in shown
    assert "records:     1 sessions" in shown


def test_a_fresh_root_lists_nothing_and_creates_nothing(cubejit: Cubejit, tmp_path: Path) -> None:
    assert "no environments under" in cubejit("env", "list").stdout
    assert "not created yet" in cubejit("env", "show").stdout
    assert not (tmp_path / "root").exists()


def test_use_keeps_the_choice_for_later_processes(cubejit: Cubejit, tmp_path: Path) -> None:
    done = cubejit("env", "use", "../serving")
    assert (tmp_path / "root" / "active-environment").read_text() == "_._serving\n"
    assert "now active" in done.stdout
    assert "environment _._serving" in cubejit("env", "show").stdout


def test_clear_empties_the_environment(warmed: Path, tmp_path: Path) -> None:
    root = copy_root(warmed, tmp_path / "root")
    done = command(root, tmp_path)("env", "clear")
    assert "cleared 9 entries" in done.stdout
    assert entries(root / "default.db") == []


def test_verify_reports_a_damaged_entry_and_fix_purges_it(warmed: Path, tmp_path: Path) -> None:
    root = copy_root(warmed, tmp_path / "root")
    cubejit = command(root, tmp_path)
    assert "checked 9 entries of 'default': all intact" in cubejit("env", "verify").stdout
    with closing(sqlite3.connect(root / "default.db")) as db, db:
        db.execute(
            "UPDATE entries SET value = randomblob(400) WHERE key IN "
            "(SELECT key FROM entries WHERE key >= x'69643a' ORDER BY key LIMIT 1)"
        )
    found = cubejit("env", "verify", check=False)
    assert found.returncode == 1
    assert "1 bad found" in found.stdout
    assert "1 bad purged" in cubejit("env", "verify", "--fix").stdout
    assert len(entries(root / "default.db")) == 8
    assert "all intact" in cubejit("env", "verify").stdout


def test_verify_finds_an_entry_that_passes_its_checksum_but_holds_no_readable_artifact(
    warmed: Path, tmp_path: Path
) -> None:
    root = copy_root(warmed, tmp_path / "root")
    cubejit = command(root, tmp_path)
    with closing(sqlite3.connect(root / "default.db")) as db, db:
        key, value = db.execute(
            "SELECT key, value FROM entries WHERE key >= x'7061636b6564' ORDER BY key LIMIT 1"
        ).fetchone()
        intact = decode(bytes(value))
        db.execute(
            "UPDATE entries SET value = ? WHERE key = ?",
            (encode(b"no shared object", intact.header), key),
        )
    found = cubejit("env", "verify", check=False)
    assert found.returncode == 1
    assert "1 bad found" in found.stdout
    assert "cannot be read" in found.stdout or "not an ELF" in found.stdout
    assert "1 bad purged" in cubejit("env", "verify", "--fix").stdout


def test_prune_drops_the_least_recently_used_entries_until_the_environment_fits(
    warmed: Path, tmp_path: Path
) -> None:
    root = copy_root(warmed, tmp_path / "root")
    before = entries(root / "default.db")
    recent = {key for _, key, _ in before[: len(before) // 2]}
    with closing(sqlite3.connect(root / "default.db")) as db, db:
        for _, key, _ in before:
            db.execute(
                "UPDATE entries SET used_at = ? WHERE key = ?", (2e9 if key in recent else 1.0, key)
            )
    limit = sum(size for *_, size in before) // 2
    done = command(root, tmp_path)("env", "prune", "--max-size", str(limit))
    after = entries(root / "default.db")
    assert 0 < len(after) < len(before)
    assert sum(size for *_, size in after) <= limit
    kept = {key for _, key, _ in after}
    assert kept <= recent or recent <= kept, "an entry used less recently went first"
    assert f"dropped {len(before) - len(after)} of {len(before)} entries" in done.stdout


def test_export_then_import_ships_entries_to_another_environment(
    warmed: Path, tmp_path: Path
) -> None:
    root = copy_root(warmed, tmp_path / "root")
    cubejit = command(root, tmp_path)
    bundle = tmp_path / "kernels.cjb"
    assert (
        "exported 9 entries" in cubejit("env", "export", str(bundle), "--namespace", "cpu/").stdout
    )
    first = cubejit("env", "import", str(bundle), CUBEJIT_ENV="elsewhere").stdout
    assert "imported 9 entries" in first
    again = cubejit("env", "import", str(bundle), CUBEJIT_ENV="elsewhere").stdout
    assert "imported 0 entries" in again and "9 already there" in again
    assert len(entries(root / "elsewhere.db")) == 9


def test_exporting_over_a_file_that_is_not_a_bundle_is_refused(
    cubejit: Cubejit, tmp_path: Path
) -> None:
    precious = tmp_path / "notes.txt"
    precious.write_text("keep me")
    done = cubejit("env", "export", str(precious), check=False)
    assert done.returncode == 1
    assert "cubejit: error:" in done.stderr
    assert precious.read_text() == "keep me"


def test_exporting_namespaces_that_match_nothing_is_an_error_and_writes_nothing(
    warmed: Path, tmp_path: Path
) -> None:
    cubejit = command(warmed, tmp_path)
    bundle = tmp_path / "none.cjb"
    done = cubejit("env", "export", str(bundle), "--namespace", "cuda/", check=False)
    assert done.returncode == 1
    assert "no namespace of 'default' starts with cuda/" in done.stderr
    assert "cpu/0.1.0/" in done.stderr
    assert "Traceback" not in done.stderr
    assert not bundle.exists()
    assert list(tmp_path.glob(".none.cjb*")) == []


def test_files_set_aside_count_in_prune_and_clear_aside_removes_them(
    warmed: Path, tmp_path: Path
) -> None:
    root = copy_root(warmed, tmp_path / "root")
    cubejit = command(root, tmp_path)
    for command_line in (("env", "clear", "--aside"), ("env", "prune", "--max-size", "1G")):
        (root / "default.db").write_bytes(b"this is not a database; " * 500)
        cubejit("env", "show")
        assert len(list(root.glob("default.db.damaged-*"))) == 1
        done = cubejit(*command_line)
        assert "deleted 1 files set aside as damaged" in done.stdout
        assert list(root.glob("default.db.damaged-*")) == []


def test_use_never_writes_through_a_symbolic_link_and_a_linked_choice_is_ignored(
    cubejit: Cubejit, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    target = tmp_path / "elsewhere.txt"
    target.write_text("theirs\n")
    (root / "active-environment").symlink_to(target)
    done = cubejit("env", "use", "mine", check=False)
    assert done.returncode == 1
    assert f"cannot write {root / 'active-environment'}" in done.stderr
    assert target.read_text() == "theirs\n"
    shown = cubejit("env", "show")
    assert "environment default" in shown.stdout
    assert "is not trusted (it is a symbolic link" in shown.stderr


def test_an_environment_of_a_newer_schema_is_listed_as_such_and_never_cleared(
    warmed: Path, tmp_path: Path
) -> None:
    root = copy_root(warmed, tmp_path / "root")
    with closing(sqlite3.connect(root / "default.db")) as db, db:
        (version,) = db.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
        newer = str(int(version) + 1)
        db.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'", (newer,))
    before = entries(root / "default.db")
    cubejit = command(root, tmp_path)
    assert f"newer cubejit (schema {newer})" in cubejit("env", "list").stdout
    cleared = cubejit("env", "clear", check=False)
    assert cleared.returncode == 1
    assert f"written by a newer cubejit (schema version {newer};" in cleared.stderr
    assert "Traceback" not in cleared.stderr
    assert entries(root / "default.db") == before
    assert list(root.glob("default.db.damaged-*")) == []
