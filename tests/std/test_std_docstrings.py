"""The example in every standard kernel's docstring runs and prints what it shows."""

from __future__ import annotations

import doctest

import pytest

from cubejit.std import histograms, reductions, rows, scan, tiles


@pytest.mark.parametrize("module", [reductions, rows, scan, histograms, tiles])
def test_every_docstring_example_prints_what_it_shows(module: object) -> None:
    failures, tried = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)  # type: ignore[arg-type]
    assert tried > 0 and failures == 0
