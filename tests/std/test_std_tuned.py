"""The standard functions' tuners choose among forms that each compute what numpy does: every
candidate of every tuner of CUDA's forms, run on each backend (their kernels run on every
backend), and of the CPU's, against numpy on random data; and a call that tunes keeps its
decision, writes its winner's result and is replayed from the call after the next."""

from __future__ import annotations

import numpy as np
import pytest
from std_devices import Device

import cubejit as cj
import cubejit.std as cs
from cubejit.ir.types import f32, i32
from cubejit.std import (
    cpu_runs,
    cpu_tiles,
    histograms,
    integer_bins,
    lined_rows,
    lined_scan,
    reductions,
    rows,
    scan,
)
from cubejit.std.cube import MAX, SUM
from cubejit.std.views import operand


def _views(device: Device, *hosts: np.ndarray) -> list[object]:
    """Each of ``hosts`` on the device, as the view of it a standard function passes a tuner."""
    views = []
    for h in hosts:
        o = operand(device.put(h), device.client)
        views.append(o.view(o.shape, o.strides))
    return views


def test_every_scan_form_matches_numpy(device: Device) -> None:
    tuner = scan.tuner(lined_scan.FORMS, f32, f32)
    x = np.random.default_rng(1).standard_normal((1, 2, 9_001)).astype(np.float32)
    for exclusive in (False, True):
        want = np.cumsum(x.astype(np.float64), axis=2)
        if exclusive:
            want = np.concatenate([np.zeros((1, 2, 1)), want[:, :, :-1]], axis=2)
        for candidate in tuner.candidates:
            out = np.zeros_like(x)
            xv, ov = _views(device, x, out)
            candidate.fn(device.client, xv, ov, exclusive, False)
            got = device.get(ov)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3, err_msg=candidate.name)


def test_every_reduction_form_matches_numpy(device: Device) -> None:
    tuner = reductions.tuner(reductions.LINES["cuda"], f32, f32)
    x = np.random.default_rng(2).standard_normal(100_007).astype(np.float32)
    for candidate in tuner.candidates:
        for op, init, want in ((SUM, 0.0, x.astype(np.float64).sum()), (MAX, np.nan, x.max())):
            out = np.zeros(1, np.float32)
            xv, ov = _views(device, x, out)
            candidate.fn(device.client, xv, ov, op, init, 1.0)
            np.testing.assert_allclose(device.get(ov)[0], want, rtol=1e-5, err_msg=candidate.name)


@pytest.mark.parametrize("what", ["softmax", "layer_norm"])
def test_every_lined_row_form_matches_numpy(device: Device, what: str) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 5, 2048)).astype(np.float32)
    weight = rng.standard_normal(2048).astype(np.float32)
    bias = rng.standard_normal(2048).astype(np.float32)
    tuner = rows.lines_tuner(what, f32, 4, lined_rows.LINES_PER_UNIT[what])
    if what == "softmax":
        e = np.exp(x - x.max(axis=2, keepdims=True))
        want = e / e.sum(axis=2, keepdims=True)
        rest: tuple[object, ...] = ()
    else:
        mean, var = x.mean(axis=2, keepdims=True), x.var(axis=2, keepdims=True)
        want = (x - mean) / np.sqrt(var + 1e-5) * weight + bias
        rest = (*_views(device, weight, bias), 1e-5)
    for candidate in tuner.candidates:
        out = np.zeros_like(x)
        xv, ov = _views(device, x, out)
        candidate.fn(device.client, xv, ov, *rest)
        np.testing.assert_allclose(device.get(ov), want, rtol=2e-5, atol=2e-5)


def test_every_histogram_form_matches_numpy(device: Device) -> None:
    rng = np.random.default_rng(4)
    values = rng.integers(0, 256, 200_003).astype(np.int32)
    want = np.bincount(values, minlength=256)
    for candidate in integer_bins.tuner(integer_bins.FORMS, i32).candidates:
        counts = np.zeros(256, np.int64)
        xv, cv = _views(device, values, counts)
        candidate.fn(device.client, xv, cv, 256, 0.0)
        np.testing.assert_array_equal(device.get(cv), want, err_msg=candidate.name)
    x = rng.random((1, 1, 100_001)).astype(np.float32)
    edges = np.linspace(0.0, 1.0, 101, dtype=np.float32)
    want = np.histogram(x, 100, (0.0, 1.0))[0]
    for candidate in histograms.tuner(histograms.RUN["cuda"], f32).candidates:
        counts = np.zeros(100, np.int64)
        xv, cv, ev = _views(device, x, counts, edges)
        candidate.fn(device.client, xv, cv, ev, 0.0, 1.0, 100)
        np.testing.assert_array_equal(device.get(cv), want, err_msg=candidate.name)


def test_a_tuned_call_keeps_a_decision_and_writes_the_winners_result(
    device: Device, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(scan.LINED, device.backend, lined_scan.FORMS[:2])
    x = np.random.default_rng(5).standard_normal(50_000).astype(np.float32)
    base = device.put(np.zeros(2 * x.size, np.float32))
    cs.cumsum(device.put(x), out=operand(base, device.client).view(x.shape, (2,)))
    want = np.cumsum(x.astype(np.float64))
    np.testing.assert_allclose(device.get(base)[::2], want, rtol=1e-4, atol=1e-3)
    tuner = scan.tuner(lined_scan.FORMS[:2], f32, f32)
    view = operand(device.put(x.reshape(1, 1, -1)), device.client)
    xv = view.view(view.shape, view.strides)
    decision = tuner.decision(xv, xv, False, True, client=device.client)
    assert decision is not None
    assert decision.winner in {c.name for c in tuner.candidates}
    assert all(c.times_ns for c in decision.candidates), "every form was timed"


def test_a_call_that_tuned_is_replayed_from_the_next_but_one(
    device: Device, monkeypatch: pytest.MonkeyPatch
) -> None:
    if device.backend != "cuda":
        pytest.skip("standard calls replay on CUDA only")
    forms = reductions.LINES["cuda"][1::-1]
    monkeypatch.setitem(reductions.LINES, "cuda", forms)
    tuner = reductions.tuner(forms, f32, f32)
    host = np.random.default_rng(6).standard_normal(777_777).astype(np.float32)
    x = device.put(host)
    tunings = tuner.tunings
    got = [device.get(cs.sum(x))]
    assert tuner.tunings == tunings + 1
    seen: list[int] = []
    original = reductions.operand

    def counted(*args: object, **kwargs: object) -> object:
        seen.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(reductions, "operand", counted)
    got.append(device.get(cs.sum(x)))
    assert seen, "the call after the one that tuned runs as written, recorded"
    seen.clear()
    got.append(device.get(cs.sum(x)))
    assert not seen, "and the next is replayed"
    for value in got:
        np.testing.assert_allclose(value, host.astype(np.float64).sum(), rtol=1e-5)


def test_every_cpu_form_matches_numpy() -> None:
    client = cj.client("cpu")
    rng = np.random.default_rng(7)
    x = rng.standard_normal(100_003).astype(np.float32)
    for candidate in cpu_runs.reduce_tuner(cpu_runs.RUNS, f32, f32).candidates:
        out = np.zeros(1, np.float32)
        candidate.fn(client, x, out, SUM, 0.0, 1.0)
        np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5)
    rows = rng.standard_normal((1, 2, 20_001)).astype(np.float32)
    for candidate in cpu_runs.scan_tuner(cpu_runs.SCAN_BLOCKS, f32, f32).candidates:
        out = np.zeros_like(rows)
        candidate.fn(client, rows, out, False, True)
        want = np.cumsum(rows.astype(np.float64)).reshape(rows.shape)
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-2, err_msg=candidate.name)
    values = rng.random((1, 1, 300_001)).astype(np.float32)
    edges = np.linspace(0.0, 1.0, 101, dtype=np.float32)
    for candidate in cpu_runs.count_tuner(cpu_runs.HISTOGRAM_RUNS, f32, f32).candidates:
        counts = np.zeros(100, np.int64)
        candidate.fn(client, values, counts, edges, 0.0, 1.0, 100)
        np.testing.assert_array_equal(counts, np.histogram(values, 100, (0.0, 1.0))[0])
    a = rng.standard_normal((33, 70)).astype(np.float32)
    b = rng.standard_normal((70, 96)).astype(np.float32)
    for candidate in cpu_tiles.tuner(cpu_tiles.TILES, f32).candidates:
        out = np.zeros((33, 96), np.float32)
        candidate.fn(client, a, b, out)
        np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4, err_msg=candidate.name)


def test_a_standard_tuners_checksum_is_the_build_id_and_its_candidates_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cubejit.environment import build
    from cubejit.std import tiles, tuned
    from cubejit.tune import identity

    def unread(*args: object) -> None:
        raise AssertionError("a standard tuner's checksum read a candidate's identity")

    def fresh() -> list[cj.Tuner]:
        """New tuners (the functions keep the ones they made), each checksum not yet read."""
        return [
            reductions.tuner.__wrapped__(reductions.LINES["cuda"], f32, f32),
            reductions.tuner.__wrapped__(reductions.LINES["cuda"][:1], f32, f32),
            scan.tuner.__wrapped__(lined_scan.FORMS, f32, f32),
            tiles.tuner.__wrapped__("cuda", f32),
        ]

    monkeypatch.setattr(identity, "identify", unread)
    made = fresh()
    assert all(isinstance(t, tuned.StandardTuner) for t in made)
    before = [t.checksum() for t in made]
    assert [t.checksum() for t in fresh()] == before
    assert len(set(before)) == len(made)
    monkeypatch.setattr(build, "_build_id", "a-simulated-upgrade")
    after = [t.checksum() for t in fresh()]
    assert not set(after) & set(before)
