"""The first hour: what `make test` installs, what CI adds, what a newcomer reads first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]

CUDA_TESTS = ("tests/backends/cuda", "tests/std/test_std_on_nvrtc.py", "tests/inspection")

CUDA_WHEELS = ("cuda-bindings", "nvidia-cuda-nvrtc", "nvidia-cuda-runtime")

# Makes every import of the CUDA packages fail, as on a machine that never installed them.
WITHOUT_CUDA = """
import sys

class NoCuda:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("cuda", "nvidia"):
            raise ImportError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, NoCuda())
"""


def extras() -> dict[str, list[str]]:
    with open(REPOSITORY / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"]


def test_make_test_installs_no_cuda_wheel_and_ci_adds_them_before_running_it() -> None:
    test = " ".join(extras()["test"])
    assert not [wheel for wheel in CUDA_WHEELS if wheel in test]
    assert all(any(d.startswith(wheel) for d in extras()["cuda"]) for wheel in CUDA_WHEELS)
    ci = (REPOSITORY / ".ci" / "run").read_text()
    installs = ci.index(".venv/bin/python -m pip install -q -e '.[cuda]'")
    assert installs < ci.rindex("make test")


def test_without_the_cuda_packages_the_cuda_tests_skip_saying_what_to_install(
    tmp_path: Path,
) -> None:
    (tmp_path / "sitecustomize.py").write_text(WITHOUT_CUDA)
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPOSITORY)]))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-x", *CUDA_TESTS],
        cwd=REPOSITORY,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "needs the CUDA packages" in done.stdout
    assert "pip install 'cubejit[cuda]'" in done.stdout
    assert re.search(r"\d+ passed", done.stdout)


def test_the_readme_says_how_to_use_the_virtualenv_before_running_anything() -> None:
    readme = (REPOSITORY / "README.md").read_text()
    activate = readme.index("source .venv/bin/activate")
    assert ".venv/bin/python examples/saxpy.py" in readme
    assert activate < readme.index("python examples/saxpy.py")
    assert activate < readme.index("cubejit doctor")
