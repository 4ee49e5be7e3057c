"""Standard kernels on other libraries' arrays: checked and ordered once per call, then
launched as views (GPU only)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import cubejit as cj
import cubejit.std as cs
from cubejit.errors import BackendUnavailableError, LaunchError


@pytest.fixture(scope="module")
def cupy() -> Any:
    module = pytest.importorskip("cupy")
    try:
        cj.client("cuda")
    except BackendUnavailableError as e:
        pytest.skip(f"needs an NVIDIA GPU: {e}")
    return module


@pytest.mark.gpu
def test_an_array_is_read_after_the_work_its_producer_queued_on_another_stream(
    cupy: Any,
) -> None:
    rng = np.random.default_rng(3)
    host = rng.random((512, 4096), dtype=np.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        x = cupy.asarray(host)
        for _ in range(30):
            x = x * np.float32(1.01) + np.float32(0.25)
        out = cupy.empty_like(x)
        cs.softmax(x, out=out)
        total = cs.sum(x)
    expected = cupy.asnumpy(x).astype(np.float64)
    cj.client("cuda").sync()
    e = np.exp(expected - expected.max(axis=1, keepdims=True))
    np.testing.assert_allclose(
        cupy.asnumpy(out), e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-7
    )
    np.testing.assert_allclose(cj.client("cuda").read(total), expected.sum(), rtol=1e-4)


@pytest.mark.gpu
def test_a_read_only_out_or_a_transposed_view_is_taken_as_the_library_describes_it(
    cupy: Any,
) -> None:
    rng = np.random.default_rng(4)
    host = rng.standard_normal((33, 1025)).astype(np.float32)
    x = cupy.asarray(host)
    got = cs.sum(x.T, axis=1)
    np.testing.assert_allclose(
        cj.client("cuda").read(got), host.astype(np.float64).sum(axis=0), rtol=1e-4, atol=1e-4
    )

    class ReadOnly:
        def __init__(self, a: Any) -> None:
            self.__cuda_array_interface__ = {
                **a.__cuda_array_interface__,
                "data": (a.data.ptr, True),
            }

    with pytest.raises(LaunchError, match="out is read-only"):
        cs.softmax(x, out=ReadOnly(cupy.empty_like(x)))


@pytest.fixture(scope="module")
def torch() -> Any:
    module = pytest.importorskip("torch")
    try:
        cj.client("cuda")
    except BackendUnavailableError as e:
        pytest.skip(f"needs an NVIDIA GPU: {e}")
    return module


@pytest.mark.gpu
def test_torch_tensors_replayed_in_every_layout_compute_what_numpy_does(torch: Any) -> None:
    gen = torch.Generator(device="cuda").manual_seed(5)
    layouts = {
        "contiguous": lambda t: t,
        "transposed": lambda t: t.T,
        "sliced": lambda t: t[1:, 3:],
    }
    for name, shaped in layouts.items():
        for _ in range(3):
            x = shaped(torch.randn(67, 1031, device="cuda", generator=gen))
            out = torch.empty(x.shape, device="cuda")
            cs.softmax(x, out=out)
            total = cs.sum(x, axis=1)
            host = x.cpu().double().numpy()
            e = np.exp(host - host.max(axis=1, keepdims=True))
            np.testing.assert_allclose(
                out.cpu().numpy(),
                e / e.sum(axis=1, keepdims=True),
                rtol=1e-4,
                atol=1e-7,
                err_msg=name,
            )
            np.testing.assert_allclose(
                cj.client("cuda").read(total),
                host.sum(axis=1),
                rtol=1e-4,
                atol=1e-4,
                err_msg=name,
            )


@pytest.mark.gpu
def test_a_torch_tensor_needing_its_gradient_is_refused_at_every_call(torch: Any) -> None:
    x = torch.rand(1000, device="cuda", requires_grad=True)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="requires grad"):
            cs.sum(x)
    np.testing.assert_allclose(
        cj.client("cuda").read(cs.sum(x.detach())), x.detach().double().sum().item(), rtol=1e-5
    )
