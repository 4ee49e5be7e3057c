"""The from-scratch kernels of examples/ run and match numpy, as they say they do."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("name", ["softmax.py", "matmul.py"])
def test_an_example_kernel_matches_numpy(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", [name, "--backend", "cpu"])
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    assert "matches numpy: True" in capsys.readouterr().out
