"""Kernels for the language tests, written to real files so that cubejit can read their source
and every message can be checked for the file and line it names."""

from __future__ import annotations

import importlib.util
import itertools
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

HEADER = "import cubejit as cj\n\n"
_counter = itertools.count()


@pytest.fixture
def module(tmp_path: Path) -> Callable[..., ModuleType]:
    """``module(source, name=None)``: ``source`` (after ``import cubejit as cj``) imported as a
    module from a file in ``tmp_path``; ``name`` fixes its module name (it appears in the IR)."""
    loaded: list[str] = []

    def load(source: str, name: str | None = None) -> ModuleType:
        name = name or f"lang_snippet_{next(_counter)}"
        path = tmp_path / f"{name}.py"
        path.write_text(HEADER + textwrap.dedent(source))
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        loaded.append(name)
        spec.loader.exec_module(mod)
        return mod

    yield load  # type: ignore[misc]
    for name in loaded:
        sys.modules.pop(name, None)
