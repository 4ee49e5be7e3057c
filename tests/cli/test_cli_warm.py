"""``cubejit warm``: a module's declared kernels compile as one batch, once."""

from __future__ import annotations

from pathlib import Path

from cli_runner import EXAMPLES, Cubejit, command, copy_root, entries

FINE = """
import cubejit as cj

@cj.kernel(warm=[dict(cube_dim=32)])
def fine(x: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i] + 1.0
"""
BROKEN = (
    FINE
    + """
@cj.kernel(warm=[dict(cube_dim=32)])
def broken(x: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    try:
        x[i] = 1.0
    except Exception:
        pass
"""
)


def test_warm_compiles_what_the_module_declares_in_one_batch(warmed: Path) -> None:
    (database,) = warmed.glob("*.db")
    ids = [key for _, key, _ in entries(database) if key.startswith(b"id:")]
    assert len(ids) == 4


def test_warming_again_loads_everything_and_writes_no_session(warmed: Path, tmp_path: Path) -> None:
    root = copy_root(warmed, tmp_path / "root")
    cubejit = command(root, tmp_path)
    done = cubejit("warm", str(EXAMPLES / "warm_module.py"))
    assert "4 kernels" in done.stdout
    assert "0 compiled, 4 from the store" in done.stdout
    sessions = cubejit("records").stdout
    assert sessions.count(" warm ") == 1


def test_warm_prints_each_kernel_with_its_specialisation(warmed: Path, tmp_path: Path) -> None:
    done = command(copy_root(warmed, tmp_path / "root"), tmp_path)(
        "warm", str(EXAMPLES / "warm_module.py"), "--parallelism", "1"
    )
    assert "warm_module.scale" in done.stdout
    assert "64x1x1" in done.stdout
    assert "n=3" in done.stdout


def test_a_module_name_is_imported_from_the_current_directory(
    cubejit: Cubejit, tmp_path: Path
) -> None:
    (tmp_path / "tiny_kernels.py").write_text(FINE)
    done = cubejit("warm", "tiny_kernels")
    assert "1 compiled" in done.stdout


def test_a_failing_kernel_fails_the_command_with_its_error_and_spares_the_others(
    cubejit: Cubejit, tmp_path: Path
) -> None:
    module = tmp_path / "mixed.py"
    module.write_text(BROKEN)
    done = cubejit("warm", str(module), check=False)
    assert done.returncode == 1
    assert "mixed.broken failed: UnsupportedError" in done.stderr
    assert "mixed.py" in done.stderr
    assert "1 compiled" in done.stdout


def test_a_module_that_declares_nothing_is_an_error(cubejit: Cubejit, tmp_path: Path) -> None:
    (tmp_path / "empty.py").write_text("X = 1\n")
    done = cubejit("warm", str(tmp_path / "empty.py"), check=False)
    assert done.returncode == 1
    assert "declares nothing to warm" in done.stderr
