"""What ``import cubejit`` costs: no backend, no store, no ``rich``, no CUDA bindings until
used; counted through ``sys.modules`` in a fresh interpreter, never timed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HEAVY = (
    "sqlite3",
    "rich",
    "cuda",
    "cuda.bindings",
    "redis",
    "cubejit.environment",
    "cubejit.compile.loader",
)


def fresh(code: str, **environ: str) -> dict[str, object]:
    """Runs ``code`` in a new interpreter; what it printed last, as JSON."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **environ}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_cubejit_loads_no_backend_store_rich_or_cuda_bindings() -> None:
    found = fresh("import json, sys; import cubejit\nprint(json.dumps(sorted(sys.modules)))")
    assert isinstance(found, list)
    assert [m for m in found if m.startswith("cubejit.backends")] == []
    assert [m for m in HEAVY if m in found] == []


def test_the_environment_is_an_attribute_of_cubejit_imported_when_first_used(
    tmp_path: Path,
) -> None:
    found = fresh(
        "import json, sys; import cubejit as cj\n"
        "before = 'cubejit.environment' in sys.modules\n"
        "name = cj.environment.active()\n"
        "print(json.dumps({'before': before, 'name': name, 'all': 'environment' in cj.__all__}))",
        CUBEJIT_CACHE_DIR=str(tmp_path),
        CUBEJIT_ENV="lazy",
    )
    assert found == {"before": False, "name": "lazy", "all": True}


def test_a_warm_cpu_client_runs_no_compiler_probe_and_imports_no_rich(tmp_path: Path) -> None:
    code = (
        "import json, sys, subprocess\n"
        "runs = []\n"
        "real = subprocess.Popen.__init__\n"
        "def watched(self, args, *a, **k):\n"
        "    runs.append(list(args) if not isinstance(args, str) else [args])\n"
        "    real(self, args, *a, **k)\n"
        "subprocess.Popen.__init__ = watched\n"
        "import cubejit as cj\n"
        "cj.client('cpu')\n"
        "print(json.dumps({'runs': runs, 'rich': 'rich' in sys.modules}))"
    )
    env = {"CUBEJIT_CACHE_DIR": str(tmp_path), "CUBEJIT_ENV": "probe"}
    fresh(code, **env)
    found = fresh(code, **env)
    assert found["rich"] is False
    assert found["runs"] == [], "a warm process runs no cc --version"
