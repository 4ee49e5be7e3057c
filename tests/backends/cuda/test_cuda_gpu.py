"""On a GPU: every test kernel against numpy, 2-D and 3-D launches, the loader's parallel batch,
the store across clients, and device arrays of CuPy and PyTorch. Skips without a GPU."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from cuda_kernels import (
    IRSpec,
    all_cases,
    arr,
    at,
    c,
    expected_positions,
    from_half,
    op,
    positions_kernel,
)

from cubejit import environment
from cubejit.backends.cuda.client import CudaClient
from cubejit.compile.recording import recent_records
from cubejit.errors import LaunchError, ValidationError
from cubejit.ir import nodes as ir
from cubejit.ir.types import ArrayType, bf16, f16, f32, u32

pytestmark = pytest.mark.gpu

CASES = all_cases()


def run_case(client: Any, case: Any, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Launches ``case`` on random inputs; what it wrote and what numpy says."""
    inputs = case.inputs(np.random.default_rng(seed))
    args = []
    for param in case.spec.params:
        if param.name == "out":
            fill = np.full(case.out_len(inputs), case.fill, case.out_t.dtype)
            out = client.to_device(fill, case.out_t)
            args.append(out)
        elif isinstance(param.type, ArrayType):
            args.append(client.to_device(inputs[param.name], param.type.elem))
        else:
            args.append(inputs[param.name])
    client.launch(case.spec, case.cube_count(inputs), tuple(args))
    return client.read(out), case.expected(inputs)


@pytest.mark.parametrize("case", CASES, ids=[case.spec.name for case in CASES])
def test_every_test_kernel_computes_what_numpy_does(gpu: CudaClient, case: Any) -> None:
    got, want = run_case(gpu, case, seed=len(case.spec.name))
    if case.out_t in (f16, bf16):
        got, want = from_half(case.out_t, got), from_half(case.out_t, want)
    if case.tolerance:
        np.testing.assert_allclose(got, want, rtol=case.tolerance, atol=case.tolerance)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("cube_count", "cube_dim"), [((3, 2, 2), (4, 2, 2)), ((2, 3, 1), (8, 4, 1))]
)
def test_two_and_three_dimensional_launches_place_every_unit(
    gpu: CudaClient, cube_count: tuple[int, int, int], cube_dim: tuple[int, int, int]
) -> None:
    spec = IRSpec(positions_kernel(), cube_dim=cube_dim)
    want = expected_positions(cube_count, cube_dim)
    out = gpu.to_device(np.full(want.size, 7, np.uint32))
    gpu.launch(spec, cube_count, (out,))
    np.testing.assert_array_equal(gpu.read(out), want)


def offset_kernel(k: int) -> IRSpec:
    """``out[i] = x[i] + k``, a distinct kernel for each ``k``."""
    i = ir.Var("i", u32)
    body = (
        ir.Assign("i", ir.PositionOf(ir.Position.ABSOLUTE_POS)),
        ir.If(
            op(ir.BinaryOp.LT, i, ir.Length("out")),
            (ir.Store("out", i, op(ir.BinaryOp.ADD, at("x", f32), c(float(k), f32))),),
        ),
    )
    kernel = ir.KernelIR(
        f"offset_{k}", (arr("x", f32), arr("out", f32)), (ir.Local("i", u32),), body
    )
    return IRSpec(kernel, cube_dim=(256, 1, 1))


def test_prepared_kernels_compile_in_one_parallel_batch_and_once(gpu: CudaClient) -> None:
    specs = [offset_kernel(k) for k in range(8)]
    before = gpu.compiler.compilations
    for spec in specs:
        gpu.prepare(spec)
    gpu.compile_queued()
    batch = recent_records()[-1]
    assert gpu.compiler.compilations - before == 8
    assert batch.compiled == 8
    assert batch.threads == min(gpu.loader.parallelism, 8)
    x = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    x_dev, out = gpu.to_device(x), gpu.empty(1000, f32)
    for k, spec in enumerate(specs):
        gpu.launch(spec, 16, (x_dev, out))
        np.testing.assert_array_equal(gpu.read(out), x + np.float32(k))
    assert gpu.compiler.compilations - before == 8


def test_a_second_client_takes_its_kernels_from_the_store(gpu: CudaClient) -> None:
    spec = offset_kernel(100)
    x = np.random.default_rng(2).standard_normal(300).astype(np.float32)
    gpu.launch(spec, 2, (gpu.to_device(x), gpu.empty(300, f32)))
    other = CudaClient(0)
    out = other.empty(300, f32)
    other.launch(spec, 2, (other.to_device(x), out))
    np.testing.assert_array_equal(other.read(out), x + np.float32(100))
    assert other.compiler.compilations == 0
    assert recent_records()[-1].from_store == 1


def test_an_environment_switch_loads_a_launched_kernel_again_from_the_new_store(
    gpu: CudaClient,
) -> None:
    spec = offset_kernel(300)
    x = np.random.default_rng(4).standard_normal(300).astype(np.float32)
    out = gpu.empty(300, f32)
    gpu.launch(spec, 2, (gpu.to_device(x), out))
    before = gpu.compiler.compilations
    environment.activate("cuda-tests-switched")
    try:
        gpu.launch(spec, 2, (gpu.to_device(x), out))
        np.testing.assert_array_equal(gpu.read(out), x + np.float32(300))
        assert gpu.compiler.compilations == before + 1
        assert recent_records()[-1].compiled == 1
    finally:
        environment.activate("cuda-tests")


def test_a_graph_runs_its_launches_in_order_until_an_environment_switch(
    gpu: CudaClient,
) -> None:
    x = np.random.default_rng(5).standard_normal(300).astype(np.float32)
    x_dev, middle, out = gpu.to_device(x), gpu.empty(300, f32), gpu.empty(300, f32)
    first, second = offset_kernel(400), offset_kernel(500)
    graph = gpu.graph([(first, 2, (x_dev, middle)), (second, 2, (middle, out))])
    assert graph is not None
    assert graph.launch()
    np.testing.assert_allclose(gpu.read(out), x + np.float32(900))
    with pytest.raises(LaunchError, match="buffer of another client"):
        gpu.graph([(first, 2, (CudaClient(0).empty(300, f32), middle))])
    environment.activate("cuda-tests-switched")
    try:
        assert not graph.launch(), "its kernels were loaded from the store before the switch"
    finally:
        environment.activate("cuda-tests")


def test_a_buffer_of_another_client_is_refused_before_anything_runs(gpu: CudaClient) -> None:
    spec = offset_kernel(100)
    other = CudaClient(0)
    x = other.to_device(np.ones(4, np.float32))
    with pytest.raises(LaunchError, match="buffer of another client"):
        gpu.launch(spec, 1, (x, gpu.empty(4, f32)))
    with pytest.raises(LaunchError, match="holds int32 elements"):
        gpu.launch(spec, 1, (gpu.to_device(np.ones(4, np.int32)), gpu.empty(4, f32)))


def test_the_limits_come_from_the_driver_and_validate_cube_dim(gpu: CudaClient) -> None:
    assert gpu.limits.max_units_per_cube >= 1024
    assert gpu.limits.max_shared_memory >= 48 * 1024
    too_big = IRSpec(offset_kernel(1).kernel, cube_dim=(gpu.limits.max_units_per_cube * 2, 1, 1))
    with pytest.raises(ValidationError, match="at most 1024"):
        gpu.launch(too_big, 1, (gpu.empty(4, f32), gpu.empty(4, f32)))


def test_a_launch_from_another_thread_runs_on_the_clients_stream(gpu: CudaClient) -> None:
    spec = offset_kernel(100)
    x = np.arange(256, dtype=np.float32)
    x_dev, out = gpu.to_device(x), gpu.empty(256, f32)
    gpu.launch(spec, 2, (x_dev, out))
    errors: list[BaseException] = []

    def launch_there() -> None:
        try:
            gpu.launch(spec, 2, (out, out))
            gpu.sync()
        except BaseException as e:
            errors.append(e)

    worker = threading.Thread(target=launch_there)
    worker.start()
    worker.join()
    assert errors == []
    np.testing.assert_array_equal(gpu.read(out), x + 200)


def test_cupy_arrays_are_taken_without_a_copy_and_take_cubejit_buffers(gpu: CudaClient) -> None:
    cupy = pytest.importorskip("cupy")
    spec = offset_kernel(100)
    x = cupy.asarray(np.random.default_rng(3).standard_normal(500).astype(np.float32))
    out = cupy.zeros(500, cupy.float32)
    gpu.launch(spec, 4, (x, out))
    gpu.sync()
    np.testing.assert_array_equal(cupy.asnumpy(out), cupy.asnumpy(x) + np.float32(100))
    mine = gpu.to_device(np.arange(10, dtype=np.float32))
    gpu.sync()
    np.testing.assert_array_equal(cupy.asnumpy(cupy.asarray(mine)), np.arange(10))


def test_pytorch_cuda_tensors_are_taken_without_a_copy(gpu: CudaClient) -> None:
    torch = pytest.importorskip("torch")
    spec = offset_kernel(100)
    x = torch.randn(700, device="cuda")
    out = torch.empty(700, device="cuda")
    gpu.launch(spec, 6, (x, out))
    gpu.sync()
    assert torch.equal(out, x + 100)
    with pytest.raises(LaunchError, match="not contiguous"):
        gpu.launch(spec, 6, (torch.randn(20, 40, device="cuda").t(), out))


def test_pytorch_tensors_read_from_their_methods_are_what_their_interface_says(
    gpu: CudaClient,
) -> None:
    torch = pytest.importorskip("torch")
    from cubejit.backends.cuda.buffer import _from_interface, device_array

    base = torch.randn(40, 70, device="cuda")
    shaped = [base, base.t(), base[3:, 5:], base[:, ::2], base[:1], base.half().t()]
    for t in [*shaped, torch.empty(0, 3, device="cuda"), torch.arange(9, device="cuda")]:
        assert device_array(t, None) == _from_interface(t.__cuda_array_interface__), t.shape


def test_a_device_buffer_names_its_size_shape_and_dtype_as_a_cpu_buffer_does(
    gpu: CudaClient,
) -> None:
    from cubejit.backends.cpu import CpuClient

    host = CpuClient().empty((3, 5), f32)
    device = gpu.empty((3, 5), f32)
    assert (device.size, device.shape, device.dtype) == (host.size, host.shape, host.dtype)
