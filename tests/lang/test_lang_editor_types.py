"""Kernel files type-check: mypy accepts the showcase and the examples, infers what the
language means inside a kernel, and still reports a misspelt builtin or a bad index."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import cubejit as cj
from cubejit.lang import intrinsics
from cubejit.lang.intrinsics import MathMarker

ROOT = Path(__file__).resolve().parents[2]

PROBE = textwrap.dedent("""\
    import cubejit as cj


    @cj.function
    def halve(v: cj.f32) -> cj.f32:
        return v * 0.5


    @cj.kernel
    def probe(x: cj.Array[cj.f32], k: cj.Array[cj.u32], n: cj.Comptime[int], m: cj.i64):
        i = cj.ABSOLUTE_POS
        reveal_type(i)
        reveal_type(x[i])
        reveal_type(cj.sqrt(x[i]) * 2.0 + halve(x[i]))
        reveal_type(k[i] // 3 + cj.u32(m))
        reveal_type(cj.max(k[i], 1))
        reveal_type(n)
        reveal_type(cj.bitcast(x[i], cj.u32))
        acc: cj.f64 = 0
        best = x[i]
        best = 0.0
        acc += cj.f64(best)
        if i < x.length():
            x["a"] = 1.0


    @cj.kernel
    def planes(t: cj.Tensor[cj.f32], out: cj.Tensor[cj.f32]):
        i = cj.ABSOLUTE_POS
        if i < t.len():
            row = t.coordinate(i, 0)
            col = t.coordinate(i, t.rank() - 1)
            reveal_type(t[row, col] * cj.f32(t.shape(0) + t.stride(1)))
            out[row, col] = t[row, col]


    reveal_type(probe)
    """)


def _mypy(*files: Path | str, cache: Path) -> str:
    command = [sys.executable, "-m", "mypy", "--follow-imports=silent", "--cache-dir", str(cache)]
    done = subprocess.run(
        [*command, *map(str, files)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return done.stdout


def test_the_showcase_the_examples_and_a_probe_type_check_as_the_language_means(
    tmp_path: Path,
) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    out = _mypy("cubejit/showcase.py", "examples", probe, cache=tmp_path / "cache")
    problems = [line for line in out.splitlines() if ": error:" in line or ": note:" in line]
    assert all(line.startswith(str(probe)) for line in problems), out
    revealed = [line.split("Revealed type is ")[1] for line in problems if "Revealed" in line]
    assert revealed == [
        '"int"',
        '"float"',
        '"float"',
        '"int"',
        '"int"',
        '"int"',
        '"int"',
        '"float"',
        '"cubejit.lang.kernel.Kernel"',
    ]
    errors = [line for line in problems if ": error:" in line]
    assert len(errors) == 2, out
    assert '"Array[float]" has no attribute "length"' in errors[0]
    assert 'Invalid index type "str" for "Array[float]"' in errors[1]


STUB_MODULE = "cubejit.lang.editor_types"


def _bound_names(block: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for stmt in block:
        if isinstance(stmt, ast.ImportFrom):
            names |= {alias.asname or alias.name for alias in stmt.names}
        elif isinstance(stmt, ast.Assign):
            names |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    return names


def test_every_language_name_is_declared_for_checkers_and_defined_at_run_time() -> None:
    tree = ast.parse((ROOT / "cubejit" / "__init__.py").read_text())
    (branch,) = [s for s in tree.body if isinstance(s, ast.If)]
    from_stub = [
        s for s in branch.body if isinstance(s, ast.ImportFrom) and s.module == STUB_MODULE
    ]
    declared = _bound_names(from_stub)
    assert {name for name in declared if hasattr(cj, name)} == declared
    assert declared <= set(cj.__all__)
    markers = {name for name, value in vars(intrinsics).items() if isinstance(value, MathMarker)}
    assert markers <= declared
    stub = ast.parse((ROOT / "cubejit" / "lang" / "editor_types.pyi").read_text())
    in_stub = {s.name for s in stub.body if isinstance(s, ast.FunctionDef | ast.ClassDef)}
    in_stub |= {s.target.id for s in stub.body if isinstance(s, ast.AnnAssign)}
    in_stub |= _bound_names(stub.body)
    assert declared <= in_stub
