"""Tensors on CUDA: lowered and compiled by NVRTC without a GPU (pointer, rank, shape, strides
per tensor; the contiguous form without the last stride), one launch function generated per
parameter layout (registered with ``linecache``), and, on a GPU, ranks 1 to 4 against numpy on
transposed, sliced-with-step and broadcast CuPy arrays and PyTorch tensors."""

from __future__ import annotations

import builtins
import linecache
import traceback
from typing import Any

import numpy as np
import pytest

import cubejit as cj
from cubejit.backends.cuda import launch
from cubejit.backends.cuda.buffer import CudaBuffer
from cubejit.backends.cuda.compiler import CudaCompiler
from cubejit.backends.cuda.dialect import cuda_source
from cubejit.backends.cuda.driver import ARCHITECTURAL_LIMITS
from cubejit.backends.cuda.launch import GENERIC_LAUNCHES, Launcher, launch_code, layout_key
from cubejit.backends.cuda.target import packed, unpacked
from cubejit.compile.id import ArtifactId
from cubejit.errors import LaunchError
from cubejit.runtime.layout import kernel_slots


@cj.kernel
def axpy2(a: cj.f32, x: cj.Tensor[cj.f32], y: cj.Tensor[cj.f32], out: cj.Tensor[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        r = out.coordinate(i, 0)
        c = out.coordinate(i, 1)
        out[r, c] = a * x[r, c] + y[r, c]


@cj.kernel
def axpy_n(a: cj.f32, x: cj.Tensor[cj.f32], out: cj.Tensor[cj.f32], N: cj.Comptime[int]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        if N == 1:
            out[i] = a * x[i]
        if N == 3:
            p = out.coordinate(i, 0)
            q = out.coordinate(i, 1)
            r = out.coordinate(i, 2)
            out[p, q, r] = a * x[p, q, r]
        if N == 4:
            p = out.coordinate(i, 0)
            q = out.coordinate(i, 1)
            r = out.coordinate(i, 2)
            s = out.coordinate(i, 3)
            out[p, q, r, s] = a * x[p, q, r, s]


SPEC = axpy2.specialize(128, x=2, y=2, out=2)


def test_a_tensor_arrives_as_pointer_rank_shape_and_strides() -> None:
    text = cuda_source(SPEC.define())
    assert (
        "float* p_x, unsigned int r_x, unsigned int s_x_0, unsigned int s_x_1, "
        "unsigned int d_x_0, unsigned int d_x_1"
    ) in text
    assert "const unsigned int n_out = s_out_0 * s_out_1;" in text
    assert "* d_x_1)" in text
    dense = cuda_source(SPEC.define(), contiguous=frozenset({"x", "y", "out"}))
    assert "* d_x_1)" not in dense and "* d_x_0)" in dense


class _Recording:
    def defined(self, text: str) -> None:
        pass

    def source(self, text: str) -> None:
        pass


@pytest.mark.cuda_packages
@pytest.mark.parametrize("mask", [0, 5, 7])
def test_nvrtc_compiles_each_contiguity_of_a_tensor_kernel(mask: int) -> None:
    compiler = CudaCompiler("sm_80")
    aid = ArtifactId(SPEC.id(), (None, mask))
    lowered = compiler.lower(SPEC, aid, _Recording(), None)
    artifact = compiler.finalize(aid, lowered)
    assert [s.describe() for s in artifact.params] == ["f32", *["Tensor[f32, 2]"] * 3]
    assert [s.written for s in artifact.params] == [False, False, False, True]
    assert unpacked(*packed(artifact)).with_ptx_unpacked() == artifact
    assert artifact.metadata()["params"][:2] == [
        ["a", "f32", False, False],
        ["x", "f32", "tensor", False, 2],
    ]
    assert compiler.compilations == 1


def test_a_tensor_kernel_refuses_a_variant_without_its_contiguity() -> None:
    from cubejit.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match="contiguity mask"):
        CudaCompiler("sm_80").lower(SPEC, ArtifactId(SPEC.id(), None), _Recording(), None)


class FakeClient:
    limits = ARCHITECTURAL_LIMITS
    stream_handle = 0

    def adopt(self, array: Any, where: str) -> None:
        pass


def test_kernels_of_one_parameter_layout_share_one_generated_launch_function(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slots = kernel_slots(SPEC.define())
    other = axpy2.specialize((32, 4), x=2, y=2, out=2)
    monkeypatch.setattr(launch, "_codes", {})
    compiled: list[str] = []
    real_compile = builtins.compile

    def counting(source: Any, filename: str, *args: Any, **kwargs: Any) -> Any:
        compiled.append(filename)
        return real_compile(source, filename, *args, **kwargs)

    monkeypatch.setattr(builtins, "compile", counting)
    client = FakeClient()
    t = CudaBuffer(client, 0x1000, 6, cj.f32, None, (2, 3))
    for spec in (SPEC, other, SPEC):
        launcher = Launcher(
            client,
            1,
            slots,
            spec.cube_dim,
            spec.name,
            lambda *a: (0,),
            0,
            variant=(None, 7),
            load=lambda v: 2,
        )
        for _ in range(GENERIC_LAUNCHES + 1):
            launcher(1, (1.0, t, t, t))
    assert len(compiled) == 1
    code = launch_code(layout_key(slots, 1))
    assert linecache.getline(code.co_filename, 1).startswith("def launch(cube_count, args):")


def test_a_traceback_through_the_launch_function_shows_its_lines() -> None:
    slots = kernel_slots(SPEC.define())
    launch_code(layout_key(slots, 1))

    def refuse(*args: Any) -> tuple[int]:
        raise RuntimeError("the driver refused")

    client = FakeClient()
    launcher = Launcher(
        client, 1, slots, SPEC.cube_dim, SPEC.name, refuse, 0, variant=(None, 7), load=lambda v: 2
    )
    t = CudaBuffer(client, 0x1000, 6, cj.f32, None, (2, 3))
    with pytest.raises(RuntimeError) as info:
        launcher(1, (1.0, t, t, t))
    text = "".join(traceback.format_exception(info.value))
    assert "<cubejit launch" in text and "launch_kernel(" in text


# On the device.


def _views(xp: Any, shape: tuple[int, ...]) -> dict[str, Any]:
    rng = np.random.default_rng(len(shape))
    base = xp.asarray(rng.random(tuple(3 * e for e in shape[::-1]), dtype=np.float32))
    flat = xp.asarray(rng.random((1,) * (len(shape) - 1) + shape[-1:], dtype=np.float32))
    stepped = xp.asarray(rng.random(tuple(2 * e for e in shape), dtype=np.float32))
    return {
        "transposed": base[tuple(slice(0, e) for e in shape[::-1])].permute(
            *reversed(range(len(shape)))
        )
        if hasattr(base, "permute")
        else base[tuple(slice(0, e) for e in shape[::-1])].transpose(),
        "stepped": stepped[tuple(slice(None, None, 2) for _ in shape)],
        "broadcast": flat.expand(*shape)
        if hasattr(flat, "expand")
        else xp.broadcast_to(flat, shape),
    }


def _host(value: Any) -> np.ndarray:
    if hasattr(value, "get"):
        return value.get()
    return value.cpu().numpy()


@pytest.mark.gpu
@pytest.mark.parametrize("library", ["cupy", "torch"])
@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_device_tensors_of_every_rank_and_view_compute_what_numpy_does(
    gpu: Any, library: str, rank: int
) -> None:
    module = pytest.importorskip(library)
    if library == "torch":
        if not module.cuda.is_available():
            pytest.skip("PyTorch sees no CUDA device")

        def xp_asarray(a: np.ndarray) -> Any:
            return module.from_numpy(np.ascontiguousarray(a)).cuda()

        xp = type("xp", (), {"asarray": staticmethod(xp_asarray)})
    else:
        xp = module
    shape = {1: (37,), 2: (33, 65), 3: (5, 6, 7), 4: (3, 4, 5, 6)}[rank]
    for name, x in _views(xp, shape).items():
        out = gpu.empty(shape, cj.f32)
        if rank == 2:
            axpy2.launch(gpu, cj.cdiv(int(np.prod(shape)), 128), 128, 2.0, x, x, out)
            expected = 3.0 * _host(x)
        else:
            axpy_n.launch(gpu, cj.cdiv(int(np.prod(shape)), 128), 128, 2.0, x, out, N=rank)
            expected = 2.0 * _host(x)
        np.testing.assert_allclose(gpu.read(out), expected, rtol=1e-6, err_msg=name)


@pytest.mark.gpu
def test_a_new_shape_on_the_device_compiles_nothing(gpu: Any) -> None:
    for count, shape in enumerate(((8, 9), (31, 4), (2, 100))):
        x = gpu.to_device(np.random.default_rng(count).random(shape, dtype=np.float32))
        out = gpu.empty(shape, cj.f32)
        axpy2.launch(gpu, cj.cdiv(x.n, 128), 128, 2.0, x, x, out)
        np.testing.assert_allclose(gpu.read(out), 3.0 * gpu.read(x), rtol=1e-6)
        if count == 0:
            compiled = gpu.compiler.compilations
    assert gpu.compiler.compilations == compiled


@pytest.mark.gpu
def test_a_negative_stride_on_the_device_is_refused_naming_the_argument(gpu: Any) -> None:
    cupy = pytest.importorskip("cupy")
    x = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)[:, ::-1]
    with pytest.raises(LaunchError, match=r"argument 'x' \(Tensor\[f32, 2\]\) has a negative"):
        axpy2.launch(gpu, 1, 128, 1.0, x, x, gpu.empty((3, 4), cj.f32))


@cj.kernel
def rows(a: cj.f32, x: cj.Tensor[cj.f32], y: cj.Tensor[cj.f32], out: cj.Tensor[cj.f32]):
    c = cj.ABSOLUTE_POS_X
    r = cj.ABSOLUTE_POS_Y
    if c < out.shape(1):
        out[r, c] = a * x[r, c] + y[r, c]


ROWS = rows.specialize((256, 1), x=2, y=2, out=2)


@pytest.mark.cuda_packages
def test_a_row_guarded_tensor_kernel_has_a_coarsened_no_alias_form_nvrtc_compiles() -> None:
    compiler = CudaCompiler("sm_80")
    aid = ArtifactId(ROWS.id(), (True, 7))
    lowered = compiler.lower(ROWS, aid, _Recording(), None)
    assert lowered.coarsening == 4
    assert "const float* __restrict__ p_x" in lowered.source
    assert "float* __restrict__ p_out" in lowered.source
    assert "* d_x_1)" not in lowered.source
    artifact = compiler.finalize(aid, lowered)
    assert artifact.coarsening == 4


@pytest.mark.parametrize("generated", [False, True], ids=["generic", "generated"])
def test_a_coarsened_tensor_launch_checks_spans_for_overlap_and_picks_its_form(
    generated: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    slots = kernel_slots(ROWS.define())
    monkeypatch.setattr(launch, "_codes", {})
    if generated:
        launch_code(layout_key(slots, 4))
    calls: list[tuple[Any, ...]] = []
    loads: list[Any] = []

    def driver(*args: Any) -> tuple[int]:
        calls.append(args[:2])
        return (0,)

    client = FakeClient()
    launcher = Launcher(
        client,
        0xA7,
        slots,
        ROWS.cube_dim,
        ROWS.name,
        driver,
        0,
        coarsening=4,
        variant=(True, 7),
        load=lambda v: loads.append(v) or {(None, 7): 0xB7, (True, 6): 0xA6}[v],
    )
    x = CudaBuffer(client, 0x10000, 64, cj.f32, None, (8, 8))
    y = CudaBuffer(client, 0x20000, 64, cj.f32, None, (8, 8))
    out = CudaBuffer(client, 0x30000, 64, cj.f32, None, (8, 8))
    launcher((8, 8), (1.0, x, y, out))
    launcher((8, 8), (1.0, x, y, x))
    view = type("View", (), {})()
    view.__cuda_array_interface__ = {
        "data": (0x40000, False),
        "shape": (8, 8),
        "typestr": "<f4",
        "strides": (4, 32),
        "version": 3,
        "stream": None,
    }
    launcher((8, 8), (1.0, view, y, out))
    assert calls == [(0xA7, 2), (0xB7, 8), (0xA6, 2)]
    assert loads == [(None, 7), (True, 6)]


@pytest.mark.gpu
def test_the_coarsened_2d_form_on_the_device_matches_numpy_apart_and_aliased(gpu: Any) -> None:
    cupy = pytest.importorskip("cupy")
    m, n = 37, 1000
    rng = np.random.default_rng(3)
    host_x, host_y = rng.random((n, m), dtype=np.float32), rng.random((m, n), dtype=np.float32)
    x, y = cupy.asarray(host_x).T, cupy.asarray(host_y)
    out = gpu.empty((m, n), cj.f32)
    rows.launch(gpu, (cj.cdiv(n, 256), m), (256, 1), 2.0, x, y, out)
    np.testing.assert_allclose(gpu.read(out), 2 * host_x.T + host_y, rtol=1e-6)
    rows.launch(gpu, (cj.cdiv(n, 256), m), (256, 1), 2.0, y, y, y)
    np.testing.assert_allclose(y.get(), 3 * host_y, rtol=1e-6)
