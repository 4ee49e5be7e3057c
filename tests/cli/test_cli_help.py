"""Every command and subcommand explains itself with ``--help``."""

from __future__ import annotations

import pytest

from cubejit.cli import main

COMMANDS = [
    [],
    ["demo"],
    ["warm"],
    ["env"],
    ["explain"],
    ["records"],
    ["doctor"],
    ["env", "list"],
    ["env", "show"],
    ["env", "use"],
    ["env", "clear"],
    ["env", "verify"],
    ["env", "prune"],
    ["env", "export"],
    ["env", "import"],
]


@pytest.mark.parametrize("words", COMMANDS, ids=lambda w: " ".join(w) or "cubejit")
def test_every_level_has_help(words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([*words, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: cubejit {' '.join(words)}".rstrip())


def test_a_group_without_a_subcommand_prints_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env"]) == 2
    assert "prune" in capsys.readouterr().out


def test_a_bad_size_is_refused_before_anything_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["env", "prune", "--max-size", "lots"])
    assert done.value.code == 2
    assert "'lots' is not a size" in capsys.readouterr().err
