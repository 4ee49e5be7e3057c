"""Checked launches: the first access out of bounds is a LaunchError naming the kernel, the
file and line, the buffer, the index and the length; a clean kernel runs checked as it runs
unchecked. On the CPU always, on CUDA where there is a GPU."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import inspected_kernels as k
import numpy as np
import pytest

import cubejit as cj
from cubejit.compile.id import ArtifactId
from cubejit.runtime.checking import checked_variant, split_variant

N = 64


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _expect(
    error: pytest.ExceptionInfo[cj.LaunchError],
    kernel: Any,
    line_text: str,
    buffer: str,
    index: int,
    length: int,
) -> None:
    message = str(error.value)
    assert message.startswith(f"{k.__file__}:{k.line_of(line_text)}: "), message
    assert f"in kernel {kernel.name}" in message
    assert message.endswith("\n    " + line_text), message
    assert re.search(
        rf"index {index} is out of bounds for {re.escape(buffer)} of length {length}", message
    ), message


def test_a_write_past_an_array_names_the_kernel_line_index_and_length(checked: Any) -> None:
    rng = np.random.default_rng(1)
    x, out = checked.to_device(_f32(rng, N)), checked.to_device(np.zeros(N, np.float32))
    with pytest.raises(cj.LaunchError) as error:
        k.write_past.launch(checked, 1, N, x, out)
        checked.sync()
    _expect(error, k.write_past, "out[i + 1] = x[i] * 2.0", "out", N, N)


def test_a_read_past_an_array_is_caught_before_the_store_it_feeds(checked: Any) -> None:
    rng = np.random.default_rng(2)
    host = _f32(rng, N)
    x, out = checked.to_device(host), checked.to_device(np.zeros(N, np.float32))
    with pytest.raises(cj.LaunchError) as error:
        k.read_past.launch(checked, 2, N // 2, x, out)
    _expect(error, k.read_past, "out[i] = x[i + 1] + 1.0", "x", N, N)
    got = checked.read(out)
    np.testing.assert_allclose(got[:-1], host[1:] + 1.0, rtol=1e-6)
    assert got[-1] == 0.0


def test_a_negative_index_is_out_of_bounds(checked: Any) -> None:
    rng = np.random.default_rng(3)
    x, out = checked.to_device(_f32(rng, N)), checked.to_device(np.zeros(N, np.float32))
    with pytest.raises(cj.LaunchError) as error:
        k.read_before.launch(checked, 1, N, x, out)
    _expect(error, k.read_before, "out[i] = x[i - 1]", "x", -1, N)


def test_a_tensor_coordinate_past_its_extent_names_the_dimension(checked: Any) -> None:
    rng = np.random.default_rng(4)
    t = checked.to_device(_f32(rng, 8, 5))
    out = checked.to_device(np.zeros(40, np.float32))
    with pytest.raises(cj.LaunchError) as error:
        k.tensor_read_past.launch(checked, 1, 40, t, out)
    _expect(error, k.tensor_read_past, "out[i] = t[r, c + 1]", "t (dimension 1)", 5, 5)


def test_a_tensor_write_past_its_first_extent_is_caught(checked: Any) -> None:
    rng = np.random.default_rng(5)
    t = checked.to_device(_f32(rng, 8, 5))
    x = checked.to_device(_f32(rng, 40))
    with pytest.raises(cj.LaunchError) as error:
        k.tensor_write_past.launch(checked, 1, 40, t, x)
    _expect(error, k.tensor_write_past, "t[r + 1, c] = x[i]", "t (dimension 0)", 8, 8)


def test_a_write_past_shared_memory_is_caught(checked: Any) -> None:
    rng = np.random.default_rng(6)
    x, out = checked.to_device(_f32(rng, 32)), checked.to_device(np.zeros(32, np.float32))
    with pytest.raises(cj.LaunchError) as error:
        k.shared_write_past.launch(checked, 1, 32, x, out)
    _expect(error, k.shared_write_past, "s[u + 1] = x[cj.ABSOLUTE_POS]", "shared memory", 32, 32)


def test_a_read_past_shared_memory_is_caught(checked: Any) -> None:
    rng = np.random.default_rng(7)
    x, out = checked.to_device(_f32(rng, 32)), checked.to_device(np.zeros(32, np.float32))
    with pytest.raises(cj.LaunchError) as error:
        k.shared_read_past.launch(checked, 1, 32, x, out)
    _expect(error, k.shared_read_past, "out[cj.ABSOLUTE_POS] = s[u + 1]", "shared memory", 32, 32)


def test_a_write_past_a_local_array_is_caught(checked: Any) -> None:
    rng = np.random.default_rng(9)
    x, out = checked.to_device(_f32(rng, 5)), checked.to_device(np.zeros(5, np.float32))
    with pytest.raises(cj.LaunchError) as error:
        k.local_write_past.launch(checked, 1, 5, x, out)
    _expect(error, k.local_write_past, "window[i % 8] = 0.0", "a local array", 4, 4)


@pytest.mark.parametrize("count", [1, 3])
def test_clean_kernels_run_checked_as_they_run_unchecked(
    checked: Any, plain: Any, count: int
) -> None:
    rng = np.random.default_rng(8 + count)
    n = 100 * count
    host_x, host_y = _f32(rng, n), _f32(rng, n)
    results = []
    for client in (checked, plain):
        x, y = client.to_device(host_x), client.to_device(host_y)
        out, near = (
            client.to_device(np.zeros(n, np.float32)),
            client.to_device(np.zeros(n, np.float32)),
        )
        k.saxpy.launch(client, count, 128, np.float32(1.5), x, y, out)
        k.guarded_neighbours.launch(client, count, 128, x, near)
        results.append((client.read(out), client.read(near)))
    np.testing.assert_allclose(results[0][0], 1.5 * host_x + host_y, rtol=1e-5)
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_the_checked_artifact_is_a_variant_of_the_same_kernel_id() -> None:
    spec = k.saxpy.specialize(128)
    unchecked = ArtifactId(spec.id(), 64)
    checked_id = ArtifactId(spec.id(), checked_variant(64))
    assert checked_id.kernel == unchecked.kernel
    assert checked_id != unchecked
    assert checked_id.stable_hash() != unchecked.stable_hash()
    assert split_variant(checked_id.variant) == (True, 64)
    assert split_variant(unchecked.variant) == (False, 64)


def test_the_check_bounds_setting_makes_every_client_checked(tmp_path: Path) -> None:
    script = tmp_path / "checked.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(Path(k.__file__).parent)!r})
            import numpy as np
            import cubejit as cj
            import inspected_kernels as k
            client = cj.client("cpu")
            print("checked", client.check_bounds)
            if client.check_bounds:
                x = np.ones(16, np.float32)
                try:
                    k.write_past.launch(client, 1, 16, x, np.zeros(16, np.float32))
                except cj.LaunchError as e:
                    print(e)
            """
        )
    )
    for value, caught in (("1", True), ("0", False)):
        environ = {**os.environ, "CUBEJIT_CHECK_BOUNDS": value}
        done = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
            env=environ,
        )
        assert f"checked {caught}" in done.stdout
        assert ("index 16 is out of bounds for out of length 16" in done.stdout) is caught


def test_a_checked_client_prepares_the_checked_variant() -> None:
    client = cj.client("cpu", check_bounds=True)
    spec = k.saxpy.specialize(96)
    before = client.compiler.compilations
    client.prepare(spec)
    client.compile_queued()
    assert client.compiler.compilations == before + 1
    rng = np.random.default_rng(21)
    x, y = _f32(rng, 96), _f32(rng, 96)
    out = client.empty(96, cj.f32)
    k.saxpy.launch(client, 1, 96, np.float32(0.5), client.to_device(x), client.to_device(y), out)
    assert client.compiler.compilations == before + 1
    np.testing.assert_allclose(client.read(out), 0.5 * x + y, rtol=1e-6)


def test_checked_kernels_compiled_in_one_batch_keep_their_own_bounds_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cubejit import config
    from cubejit.backends.cpu import link_runs
    from cubejit.environment.manager import ENVIRONMENTS

    monkeypatch.setattr(config, "_current", config.settings())
    config.override(cache_dir=tmp_path / "root", compilation_cache=True)
    ENVIRONMENTS.reset()
    try:
        client = cj.client("cpu", check_bounds=True)
        kernels = [cj.kernel(kernel.fn) for kernel in (k.write_past, k.read_past, k.saxpy)]
        links = link_runs.count
        for kernel in kernels:
            kernel.prepare(client, N)
        client.compile_queued()
        assert link_runs.count == links + 1, "the three were linked into one library"
        rng = np.random.default_rng(22)
        host = _f32(rng, N)
        x, out = client.to_device(host), client.to_device(np.zeros(N, np.float32))
        write_past, read_past, saxpy = kernels
        with pytest.raises(cj.LaunchError) as error:
            write_past.launch(client, 1, N, x, out)
        _expect(error, write_past, "out[i + 1] = x[i] * 2.0", "out", N, N)
        saxpy.launch(client, 1, N, np.float32(2.0), x, x, out)
        np.testing.assert_allclose(client.read(out), 3 * host, rtol=1e-6)
        with pytest.raises(cj.LaunchError) as error:
            read_past.launch(client, 1, N, x, out)
        _expect(error, read_past, "out[i] = x[i + 1] + 1.0", "x", N, N)
    finally:
        ENVIRONMENTS.reset()
