"""Tuning on a GPU: candidates timed with CUDA events on the client's stream, copies made on the
device. Skips without a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from tune_kernels import plus_one_tuner, spin_tuner

import cubejit as cj
from cubejit.errors import BackendUnavailableError
from cubejit.tune.timing import CudaEventClock

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu():
    try:
        return cj.client("cuda")
    except BackendUnavailableError as e:
        pytest.skip(f"needs an NVIDIA GPU: {e}")


def test_tuning_on_a_gpu_picks_the_truly_faster_candidate(gpu):
    tuner = spin_tuner("faster on a gpu")
    x = gpu.to_device(np.random.default_rng(0).random(3000, dtype=np.float32))
    tuner.launch(gpu, x)
    decision = tuner.decision(x, client=gpu)
    assert decision.winner == "fast"
    assert decision.session["device"].startswith("cuda-sm_")
    assert decision.candidate("fast").median_s < decision.candidate("slower").best_s


def test_an_in_place_kernel_on_a_gpu_leaves_the_callers_buffer_exactly_one_more(gpu):
    host = np.random.default_rng(1).random(5000, dtype=np.float32)
    x = gpu.to_device(host)
    tuner = plus_one_tuner("in place on a gpu")
    tuner.launch(gpu, x)
    assert tuner.tunings == 1 and tuner.timed_runs > 0
    np.testing.assert_array_equal(gpu.read(x), host + np.float32(1))


def test_cuda_events_time_the_work_on_the_clients_stream(gpu):
    clock = CudaEventClock(gpu)
    x = gpu.to_device(np.ones(1 << 20, np.float32))
    tuner = spin_tuner("event clock")
    slower, fast = (c.fn for c in tuner.candidates)
    fast(gpu, x)
    slower(gpu, x)
    gpu.sync()
    assert clock.time_ns(lambda: slower(gpu, x)) > clock.time_ns(lambda: fast(gpu, x)) > 0
