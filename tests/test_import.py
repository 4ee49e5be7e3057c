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


NOT_UNTIL_SPECIALISED = (
    "sqlite3",
    "cubejit.ir.nodes",
    "cubejit.ir.validate",
    "cubejit.lang.frontend",
    "cubejit.lang.source",
    "cubejit.compile.id",
    "cubejit.runtime",
    "cubejit.tune.tuner",
    "cubejit.config",
)
"""What importing cubejit and defining kernels never needs: the parser, the IR, ids, clients,
the tuner and the settings come with the first specialisation, client or tuning."""

REIMPORTED = ("ast", "ctypes", "tokenize", "linecache", "pickle", "datetime")
"""numpy imports these itself: they are taken out of ``sys.modules`` after ``import numpy``, so
that finding one there again means cubejit imported it (directly or through another module)."""

IMPORTED_BY_NAME = ("ast", "inspect", "ctypes", "tokenize", "linecache", "pickle", "datetime")
"""Modules no cubejit module names in an import statement that runs at import or definition
(``inspect`` stays in ``sys.modules``: ``dataclasses``, which the IR's types are, imports it)."""

KERNELS = """
import cubejit as cj


@cj.function
def axpy(a: cj.f32, x: cj.f32, y: cj.f32) -> cj.f32:
    return a * x + y


@cj.kernel
def saxpy(a: cj.f32, x: cj.Array[cj.f32], out: cj.Array[cj.f32], k: cj.Comptime[int]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = axpy(a, x[i], out[i]) + cj.f32(k)


@cj.kernel
def scale(t: cj.Tensor[cj.f32], u: cj.Tensor[cj.Line[cj.f32], 2], n: cj.Comptime[float]):
    pass


CUBES = cj.cdiv(1000, 256)
"""

WATCH = """
import builtins, json, sys
import numpy
for name in [m for m in sys.modules if m.partition(".")[0] in {reimported!r}]:
    del sys.modules[name]
named = []
real_import = builtins.__import__
def watched(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {{}}).get("__name__") or ""
    if importer.startswith("cubejit") and name.partition(".")[0] in {by_name!r}:
        named.append(importer + " imports " + name)
    return real_import(name, globals, locals, fromlist, level)
builtins.__import__ = watched
import cubejit as cj
import kernels
builtins.__import__ = real_import
print(json.dumps({{"named": named, "loaded": sorted(sys.modules)}}))
"""


def test_importing_cubejit_and_defining_kernels_reads_no_source_and_imports_no_ir(
    tmp_path: Path,
) -> None:
    (tmp_path / "kernels.py").write_text(KERNELS)
    code = WATCH.format(reimported=REIMPORTED, by_name=IMPORTED_BY_NAME)
    found = fresh(code, PYTHONPATH=f"{ROOT}{os.pathsep}{tmp_path}")
    assert isinstance(found, dict)
    assert found["named"] == []
    loaded = set(found["loaded"])
    assert "kernels" in loaded
    assert [m for m in (*NOT_UNTIL_SPECIALISED, *REIMPORTED) if m in loaded] == []


def test_the_first_specialisation_reads_the_source_a_definition_left(tmp_path: Path) -> None:
    (tmp_path / "kernels.py").write_text(KERNELS)
    found = fresh(
        "import json, sys\nimport kernels\n"
        "spec = kernels.saxpy.specialize(256, k=1)\n"
        "print(json.dumps({'id': str(spec.id()), 'line': spec.line,"
        " 'parsed': 'cubejit.lang.source' in sys.modules}))",
        PYTHONPATH=f"{ROOT}{os.pathsep}{tmp_path}",
    )
    assert found["parsed"] is True
    assert found["line"] == 11
    assert str(found["id"]).startswith("kernels.saxpy[256x1x1]#")


TUNER = """
import cubejit as cj

tuner = cj.Tuner(
    "startup.only",
    key=lambda n: cj.anchor(n),
    candidates=[cj.Tunable("only", lambda client, n: None)],
)
"""


def test_a_tuner_made_at_import_imports_nothing_tuning_needs(tmp_path: Path) -> None:
    (tmp_path / "tuned.py").write_text(TUNER)
    found = fresh(
        "import json, sys\nimport tuned\nprint(json.dumps(sorted(sys.modules)))",
        PYTHONPATH=f"{ROOT}{os.pathsep}{tmp_path}",
    )
    assert isinstance(found, list)
    assert "cubejit.tune.tuner" in found
    tuning = (
        "cubejit.config",
        "cubejit.tune.identity",
        "cubejit.tune.store",
        "logging",
        "socket",
        "hashlib",
        *HEAVY,
    )
    assert [m for m in tuning if m in found] == []


def test_every_name_of_cubejit_is_there_and_from_cubejit_import_works() -> None:
    found = fresh(
        "import json, cubejit as cj\n"
        "missing = [n for n in cj.__all__ if getattr(cj, n, None) is None]\n"
        "from cubejit import ABSOLUTE_POS, Tuner, client, sqrt, plane_sum, KernelId, lined\n"
        "namespace = {}\nexec('from cubejit import *', namespace)\n"
        "print(json.dumps({'missing': missing, 'star': sorted(set(cj.__all__) - set(namespace)),"
        " 'same': cj.sqrt is sqrt and cj.ABSOLUTE_POS is ABSOLUTE_POS,"
        " 'pos': str(ABSOLUTE_POS)}))"
    )
    assert found == {"missing": [], "star": [], "same": True, "pos": "Position.ABSOLUTE_POS"}


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
