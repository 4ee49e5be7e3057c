"""The constructs a porter expects (LANGUAGE.md in README.md's language section), each run on
the CPU against numpy on random data with the awkward values mixed in."""

from __future__ import annotations

import numpy as np
import pytest
from porter_kernels import CASES, Case, run_case

from cubejit.backends.cpu.client import CpuClient


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("n", [1, 257])
def test_each_porter_construct_computes_what_numpy_does_on_the_cpu(
    cpu: CpuClient, case: Case, n: int
) -> None:
    run_case(cpu, case, n, np.random.default_rng(n))
