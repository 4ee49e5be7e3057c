"""``cubejit explain``: which ingredient of a kernel's key differs from its nearest stored entry."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import Cubejit

from cubejit.cli.explain import StoredEntry, differences, nearest

KERNEL = """
import cubejit as cj

@cj.kernel(warm=[dict(cube_dim={cube_dim})])
def shift(x: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i] + {amount}
"""

BASE = {
    "kernel": "app.shift",
    "info": [["source", "5e1f"], ["types", [["x", "Array[f32]"]]], ["comptime", [["n", 4]]]],
    "cube_dim": [256, 1, 1],
    "variant": 64,
    "build_id": "b1",
    "fingerprint": "x86_64-gcc12-O3",
}


def changed(**parts: object) -> dict[str, object]:
    info = {name: value for name, value in BASE["info"]}  # type: ignore[union-attr]
    ingredients = {**BASE, **{k: v for k, v in parts.items() if k not in info}}
    ingredients["info"] = [[k, parts.get(k, v)] for k, v in info.items()]
    return ingredients


@pytest.mark.parametrize(
    ("change", "ingredient", "meaning"),
    [
        ({"source": "77aa"}, "source", "its source changed"),
        ({"build_id": "b2"}, "build_id", "cubejit was upgraded"),
        ({"fingerprint": "x86_64-clang17-O3"}, "fingerprint", "the compiler changed"),
        ({"cube_dim": [128, 1, 1]}, "cube_dim", "another cube_dim"),
        ({"types": [["x", "Array[f64]"]]}, "types", "other argument types"),
        ({"comptime": [["n", 8]]}, "comptime", "other comptime values"),
        ({"variant": 16}, "variant", "another variant"),
    ],
)
def test_each_kind_of_miss_names_its_ingredient(
    change: dict[str, object], ingredient: str, meaning: str
) -> None:
    (found,) = differences(changed(**change), BASE)
    assert found.ingredient == ingredient
    assert meaning in found.meaning


def test_the_nearest_entry_is_the_one_differing_least_and_then_the_newest() -> None:
    missed = StoredEntry("cpu/0.1.0/f", 10.0, "a1", changed(cube_dim=[64, 1, 1]))
    far = StoredEntry("cpu/0.1.0/f", 9.0, "a2", changed(variant=16, source="9"))
    old = StoredEntry("cpu/0.1.0/f", 1.0, "a3", changed(source="0"))
    new = StoredEntry("cpu/0.1.0/f", 5.0, "a4", changed(comptime=[["n", 2]]))
    assert nearest(missed, [missed, far, old, new]) is new
    closest = StoredEntry("cpu/0.1.0/f", 0.5, "a5", BASE)
    assert nearest(missed, [far, old, new, closest]) is closest
    assert nearest(missed, [missed]) is None


def test_explain_names_the_cube_dim_then_the_source_that_changed(
    cubejit: Cubejit, tmp_path: Path
) -> None:
    module = tmp_path / "app_kernels.py"
    for cube_dim, amount in ((32, "1.0"), (64, "1.0"), (64, "2.0")):
        module.write_text(KERNEL.format(cube_dim=cube_dim, amount=amount))
        cubejit("warm", str(module))
        explained = cubejit("explain", "shift").stdout
        if cube_dim == 32:
            assert "nothing of it was stored before" in explained
        elif amount == "1.0":
            assert "it missed because another cube_dim" in explained
        else:
            assert "it missed because its source changed" in explained


def test_explaining_an_unknown_kernel_is_an_error(cubejit: Cubejit) -> None:
    done = cubejit("explain", "nowhere", check=False)
    assert done.returncode == 1
    assert "no stored entry of a kernel named 'nowhere'" in done.stderr


TWO_SIZES = """
import cubejit as cj

@cj.kernel(warm=[dict(cube_dim=32), dict(cube_dim=64)])
def shift(x: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i] + {amount}
"""


def test_a_kernel_compiled_beside_its_siblings_is_compared_with_what_was_stored_before(
    cubejit: Cubejit, tmp_path: Path
) -> None:
    module = tmp_path / "app_sizes.py"
    for amount in ("1.0", "2.0"):
        module.write_text(TWO_SIZES.format(amount=amount))
        cubejit("warm", str(module))
    explained = cubejit("explain", "shift").stdout
    assert "it missed because its source changed" in explained
    assert "another cube_dim" not in explained


def test_an_exact_qualified_name_is_explained_even_when_a_longer_name_ends_with_it(
    cubejit: Cubejit, tmp_path: Path
) -> None:
    package = tmp_path / "tools"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for module in (tmp_path / "shifts.py", package / "shifts.py"):
        module.write_text(KERNEL.format(cube_dim=32, amount="1.0"))
        cubejit("warm", str(module))
    ambiguous = cubejit("explain", "shift", check=False)
    assert "names several kernels: shifts.shift, tools.shifts.shift" in ambiguous.stderr
    explained = cubejit("explain", "shifts.shift").stdout
    assert explained.startswith("shifts.shift has one stored entry")
    assert "tools.shifts.shift" in cubejit("explain", "tools.shifts.shift").stdout
