"""Tuning in one process, with real CPU kernels and the test module's own SQLite environment."""

from __future__ import annotations

import numpy as np
import pytest
from tune_kernels import (
    fast,
    fast_wide,
    plus_one,
    plus_one_ill_typed,
    plus_one_tuner,
    size_key,
    slow,
    spin_tuner,
)

import cubejit as cj
from cubejit.tune import Decision, Outcome


@pytest.fixture(scope="module")
def client():
    return cj.client("cpu")


def random(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(n, dtype=np.float32)


def test_anchor_is_the_smallest_power_of_its_base_at_or_above_n():
    assert [cj.anchor(n) for n in (0, 1, 2, 3, 1000, 1024, 1025)] == [1, 1, 2, 4, 1024, 1024, 2048]
    assert cj.anchor(10, base=3) == 27
    assert cj.anchor(np.int64(1000)) == 1024
    with pytest.raises(ValueError, match="base"):
        cj.anchor(10, base=1)


def test_tuning_picks_the_truly_faster_candidate_rather_than_the_first(client):
    tuner = spin_tuner("faster")
    tuner.launch(client, random(3000))
    decision = tuner.decision(random(3000))
    assert decision is not None and decision.winner == "fast"
    slow_times, fast_times = decision.candidate("slower"), decision.candidate("fast")
    assert slow_times.outcome is Outcome.TIMED
    assert fast_times.outcome is Outcome.WON
    assert fast_times.median_s < slow_times.best_s
    assert tuner.timed_runs == len(slow_times.times_ns) + len(fast_times.times_ns) > 0
    assert decision.session["timed_runs"] == tuner.timed_runs


def test_an_in_place_kernel_leaves_the_callers_array_exactly_one_more_after_tuning(client):
    tuner = plus_one_tuner("in place")
    x = random(5000, seed=1)
    expected = x + np.float32(1)
    tuner.launch(client, x)
    assert tuner.tunings == 1 and tuner.timed_runs > 0
    np.testing.assert_array_equal(x, expected)
    tuner.launch(client, x)
    np.testing.assert_array_equal(x, expected + np.float32(1))


def test_an_in_place_kernel_on_a_client_buffer_sees_one_run_too(client):
    tuner = plus_one_tuner("in place, buffer")
    host = random(700, seed=2)
    buffer = client.to_device(host)
    tuner.launch(client, buffer)
    np.testing.assert_array_equal(client.read(buffer), host + np.float32(1))


def test_nearby_sizes_share_a_decision_through_anchor(client):
    tuner = plus_one_tuner("nearby")
    tuner.launch(client, random(1000))
    runs = tuner.timed_runs
    tuner.launch(client, random(1020))
    tuner.launch(client, random(1024))
    assert (tuner.tunings, tuner.timed_runs) == (1, runs)
    assert tuner.decision(random(1000)) is tuner.decision(random(1024))
    tuner.launch(client, random(1025))
    assert tuner.tunings == 2


def test_a_failing_candidate_is_skipped_and_its_error_kept(client):
    def ill_typed(client, x):
        plus_one_ill_typed.launch(client, cj.cdiv(x.size, 64), 64, x.view(np.int32))

    def raises(client, x):
        raise RuntimeError("this candidate always raises")

    tuner = cj.Tuner(
        "with failures",
        key=size_key,
        candidates=[
            cj.Tunable("ill typed", ill_typed),
            cj.Tunable("raises", raises),
            cj.Tunable("fast", fast),
        ],
    )
    x = random(800, seed=3)
    expected = x + np.float32(1)
    tuner.launch(client, x)
    np.testing.assert_array_equal(x, expected)
    decision = tuner.decision(x)
    assert decision.winner == "fast"
    failed = {c.name: c for c in decision.candidates if c.outcome is Outcome.FAILED}
    assert set(failed) == {"ill typed", "raises"}
    assert failed["ill typed"].error.startswith("CompilationError")
    assert failed["raises"].error == "RuntimeError: this candidate always raises"
    assert failed["raises"].times_ns == ()


def test_every_candidate_failing_is_a_tune_error_naming_each_error(client):
    def raises(client, x):
        raise RuntimeError("no good")

    tuner = cj.Tuner("hopeless", key=size_key, candidates=[cj.Tunable("only", raises)])
    x = random(10)
    with pytest.raises(cj.TuneError, match=r"hopeless.*only: RuntimeError: no good"):
        tuner.launch(client, x)
    assert tuner.decision(x) is None


def test_a_new_tuner_object_with_the_same_candidates_reads_the_decision_and_tunes_nothing(client):
    first = plus_one_tuner("again")
    first.launch(client, random(300))
    second = plus_one_tuner("again")
    second.launch(client, random(300))
    assert first.checksum() == second.checksum()
    assert (second.tunings, second.timed_runs) == (0, 0)
    assert second.decision(random(300)) == first.decision(random(300))


def test_changing_a_candidate_re_tunes(client):
    before = plus_one_tuner("changing")
    before.launch(client, random(400))
    changed = cj.Tuner(
        "changing",
        key=size_key,
        candidates=[cj.Tunable("slow", slow), cj.Tunable("fast", fast_wide)],
    )
    assert changed.checksum() != before.checksum()
    changed.launch(client, random(400))
    assert changed.tunings == 1 and changed.timed_runs > 0
    identities = {i.name: i for i in changed.identities()}
    assert identities["slow"] == {i.name: i for i in before.identities()}["slow"]
    assert identities["fast"].code != {i.name: i for i in before.identities()}["fast"].code


def test_a_candidate_identity_counts_the_kernels_its_function_reaches_and_declares():
    (identity,) = cj.Tuner("ids", key=size_key, candidates=[cj.Tunable("f", fast)]).identities()
    assert [name for name, _ in identity.kernels] == ["tune_kernels.plus_one"]
    (declared,) = cj.Tuner(
        "ids",
        key=size_key,
        candidates=[cj.Tunable("f", fast, kernels=[plus_one_ill_typed])],
    ).identities()
    assert [name for name, _ in declared.kernels] == [
        "tune_kernels.plus_one",
        "tune_kernels.plus_one_ill_typed",
    ]


def test_a_decision_is_kept_in_the_value_encoding_and_read_back_whole(client):
    tuner = plus_one_tuner("encoded")
    tuner.launch(client, random(200))
    decision = tuner.decision(random(200))
    again = Decision.decode(decision.encode())
    assert again == decision
    assert again.key == [256]
    assert set(again.times()) == {"slow", "fast"}
    assert again.session["device"].startswith("cpu-")


def test_a_tuning_key_that_is_not_plain_data_is_refused_with_the_tuners_name(client):
    tuner = cj.Tuner("odd key", key=lambda x: (object(),), candidates=[cj.Tunable("f", fast)])
    with pytest.raises(TypeError, match="tuner odd key: a tuning key"):
        tuner.launch(client, random(10))


def test_a_damaged_decision_is_dropped_with_a_warning_and_the_key_tuned_again(client, caplog):
    from cubejit.environment.store import Store
    from cubejit.tune.store import Decisions, decision_key, device_fingerprint

    first = plus_one_tuner("damaged")
    first.launch(client, random(100))
    store = Store(Decisions(device_fingerprint(client)).namespace)
    key = decision_key(first.name, first.checksum(), (128,))
    value = store.get(key)
    store.purge_key(key)
    store.insert(key, value[:-1] + bytes([value[-1] ^ 1]))

    again = plus_one_tuner("damaged")
    again.launch(client, random(100))
    assert again.tunings == 1
    assert [r for r in caplog.records if "damaged tuning decision" in r.getMessage()]


def _launch_through_a_helper(client, x):
    return fast(client, x)


def test_a_candidate_calling_a_helper_counts_the_helpers_kernels_and_code():
    (via_helper,) = cj.Tuner(
        "helper", key=size_key, candidates=[cj.Tunable("f", _launch_through_a_helper)]
    ).identities()
    (direct,) = cj.Tuner("helper", key=size_key, candidates=[cj.Tunable("f", fast)]).identities()
    assert via_helper.kernels == direct.kernels
    assert via_helper.code != direct.code


class _HiddenLauncher:
    """Launches ``plus_one`` through an attribute, where the identity's walk cannot see it."""

    def __init__(self) -> None:
        self.kernel = plus_one

    def __call__(self, client, x):
        return self.kernel.launch(client, cj.cdiv(x.size, 64), 64, x, spin=0)


def test_a_kernel_launched_but_not_counted_is_recorded_and_named_in_a_warning(client, caplog):
    tuner = cj.Tuner("hidden", key=size_key, candidates=[cj.Tunable("hidden", _HiddenLauncher())])
    tuner.launch(client, random(100))
    (hidden,) = tuner.decision(random(100)).candidates
    assert [k.split("[")[0] for k in hidden.launched] == ["tune_kernels.plus_one"]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("launched kernel tune_kernels.plus_one" in w and "declare it" in w for w in warnings)

    caplog.clear()
    declared = cj.Tuner(
        "declared",
        key=size_key,
        candidates=[cj.Tunable("hidden", _HiddenLauncher(), kernels=[plus_one])],
    )
    declared.launch(client, random(100))
    assert not [r for r in caplog.records if "declare it" in r.getMessage()]


def test_arguments_with_no_room_for_copies_run_the_first_candidate_untuned(
    client, monkeypatch, caplog
):
    from cubejit.tune import tuner as tuner_module

    attempts = []

    def no_room(client, args):
        attempts.append(1)
        raise MemoryError("out of memory for a copy")

    monkeypatch.setattr(tuner_module, "copy_arguments", no_room)
    tuner = plus_one_tuner("no room")
    x = random(5000, seed=3)
    expected = x + np.float32(2)
    with caplog.at_level("WARNING", logger="cubejit.tune"):
        tuner.launch(client, x)
        tuner.launch(client, x)
    np.testing.assert_array_equal(x, expected)
    assert tuner.tunings == 0 and tuner.decision(x) is None
    assert attempts == [1], "a key found without room is not copied again in this process"
    assert sum("no room to copy" in r.getMessage() for r in caplog.records) == 1
