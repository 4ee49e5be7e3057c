"""``cubejit demo``: the suite compiles as one batch, checks out, and then loads from the store."""

from __future__ import annotations

from cli_runner import Cubejit


def test_the_demo_compiles_then_loads_everything_from_the_store(cubejit: Cubejit) -> None:
    first = cubejit("demo").stdout
    cold, warm = first.split("Second run, in a fresh process")
    assert "8 compiled, 0 from the store" in cold
    assert "0 compiled, 8 from the store" in warm
    assert "x faster than the first run" in warm
    assert "WRONG" not in first and "failed:" not in first
    for kernel in ("saxpy", "tanh chain", "2-D transpose", "casts"):
        assert kernel in cold
    again = cubejit("demo").stdout
    assert "Second run" not in again
    assert "x faster than the last demo run that compiled them" in again


def test_a_demo_on_a_missing_backend_says_what_is_missing(cubejit: Cubejit) -> None:
    done = cubejit("demo", "--backend", "cuda", check=False)
    if done.returncode == 0:
        assert "0 failed" in done.stdout
    else:
        assert "cubejit: error:" in done.stderr
