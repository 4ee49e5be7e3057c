"""``cubejit tune list | show | clear`` and ``cubejit explain`` of a tuner tuned again, on
decisions a real tuning process left in an environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import Cubejit, command

TUNE_HOST = Path(__file__).parents[1] / "tune" / "tune_host.py"


def tune(root: Path, *options: str, sizes: tuple[int, ...] = (100, 1000)) -> str:
    """Runs a process that tunes ``plus one`` for ``sizes`` into the environments at ``root``."""
    return run_tuning(root, TUNE_HOST, *map(str, sizes), *options)


def run_tuning(root: Path, script: Path, *args: str) -> str:
    """Runs ``script`` with ``args``, tuning into the environments at ``root`` on a small
    budget; its output."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CUBEJIT_")}
    environ.update(CUBEJIT_CACHE_DIR=str(root), CUBEJIT_TUNE_BUDGET="0.1")
    done = subprocess.run(
        [sys.executable, str(script), *args],
        input="go\n",
        env=environ,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Cubejit:
    """The command on a root where ``plus one`` was tuned for two keys, for tests that only
    read it."""
    root = tmp_path_factory.mktemp("tuned") / "root"
    tune(root)
    return command(root, root.parent)


def test_tune_list_and_show_give_each_decision_with_every_candidates_times(tuned: Cubejit):
    listing = tuned("tune", "list").stdout
    assert "2 tuning decisions" in listing
    assert "[128]" in listing and "[1024]" in listing
    shown = tuned("tune", "show", "plus one").stdout
    assert shown.count("plus one for key") == 2
    assert shown.count(" won;") == 2
    assert "slow" in shown and "fast" in shown and "timed runs" in shown


def test_records_hold_each_tuning_with_its_runs_and_seconds(tuned: Cubejit):
    shown = tuned("records").stdout
    assert "2 tunings" in shown
    assert shown.count("plus one") == 2
    assert "slow " in shown and " won x" in shown


def test_tune_clear_forgets_a_tuners_decisions_and_they_are_tuned_again(
    cubejit: Cubejit, tmp_path: Path
):
    root = tmp_path / "root"
    tune(root)
    assert "forgot 2 tuning decisions of 'plus one'" in cubejit("tune", "clear", "plus one").stdout
    assert "no tuning decisions" in cubejit("tune", "list").stdout
    assert '"tuned": [128, 1024]' in tune(root)
    assert "forgot 2 tuning decisions in" in cubejit("tune", "clear").stdout
    assert "no tuning decisions" in cubejit("tune", "list").stdout


def test_tune_show_of_an_unknown_tuner_is_an_error_naming_the_known_ones(tuned: Cubejit):
    done = tuned("tune", "show", "nobody", check=False)
    assert done.returncode == 1
    assert "no tuning decision of a tuner named 'nobody'" in done.stderr
    assert "tuners with decisions: plus one" in done.stderr


def test_explain_names_the_candidate_whose_change_made_a_tuner_tune_again(
    cubejit: Cubejit, tmp_path: Path
):
    root = tmp_path / "root"
    tune(root, sizes=(1000,))
    assert "nothing was tuned again" in cubejit("explain", "plus one").stdout
    tune(root, "--changed", sizes=(1000,))
    explained = cubejit("explain", "plus one").stdout
    assert "candidate 'fast': its launch function changed" in explained
    assert "'slow'" not in explained


STANDARD_SUM = """
import sys
import numpy as np
import cubejit as cj
import cubejit.std as cs
from cubejit.environment import build

build.override_build_id(sys.argv[1])
x = np.random.default_rng(7).standard_normal(50_000).astype(np.float32)
total = cs.sum(x, client=cj.client("cpu"))
assert np.isclose(total, x.astype(np.float64).sum(), rtol=1e-4, atol=1e-2), total
"""


def test_explain_says_a_standard_tuner_tuned_again_because_cubejit_changed(
    cubejit: Cubejit, tmp_path: Path
):
    script = tmp_path / "standard_sum.py"
    script.write_text(STANDARD_SUM)
    for build in ("a-build", "a-build", "the-next-build"):
        run_tuning(tmp_path / "root", script, build)
    listing = cubejit("tune", "list").stdout
    assert "2 tuning decisions" in listing
    explained = cubejit("explain", "cubejit.std.reduce.f32.f32.cpu").stdout
    assert "it was tuned again because cubejit itself changed" in explained
