"""One argument checker for every backend: the same mistake reads the same on the CPU and on
CUDA (whose launcher is run here without a GPU, its driver call replaced by one that records),
and every refusal is a LaunchError raised before anything runs."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import cubejit as cj
from cubejit.backends.cpu.client import CpuClient
from cubejit.backends.cuda.buffer import CudaBuffer, dlpack_view
from cubejit.backends.cuda.driver import ARCHITECTURAL_LIMITS
from cubejit.backends.cuda.launch import Launcher
from cubejit.errors import CubejitError, LaunchError
from cubejit.runtime.layout import kernel_slots


@cj.kernel
def scale_rows(k: cj.f32, x: cj.Array[cj.f32], t: cj.Tensor[cj.f32], out: cj.Tensor[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        r = out.coordinate(i, 0)
        c = out.coordinate(i, 1)
        out[r, c] = k * t[r, c] + x[c]


SPEC = scale_rows.specialize(64, t=2, out=2)


class FakeClient:
    """What a CUDA launcher asks of its client."""

    limits = ARCHITECTURAL_LIMITS
    stream_handle = 0x5150

    def adopt(self, array: Any, where: str) -> None:
        pass


class RecordingDriver:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any) -> tuple[int]:
        self.calls.append(args[:9])
        return (0,)


class OnDevice:
    """A numpy array as another library's device array shows it (``__cuda_array_interface__``
    with the numpy array's shape, strides, type and writeability; nothing is read from it)."""

    def __init__(self, array: np.ndarray) -> None:
        self.__cuda_array_interface__ = {
            "data": (array.__array_interface__["data"][0], not array.flags.writeable),
            "shape": array.shape,
            "typestr": array.dtype.str,
            "strides": None if array.flags.c_contiguous else array.strides,
            "version": 3,
            "stream": None,
        }


def cuda_launcher() -> tuple[Launcher, RecordingDriver]:
    driver = RecordingDriver()
    slots = kernel_slots(SPEC.define())
    launcher = Launcher(
        FakeClient(),
        0xF00,
        slots,
        SPEC.cube_dim,
        SPEC.name,
        driver,
        0x5150,
        variant=(None, 3),
        load=lambda variant: 0xF01,
    )
    return launcher, driver


def fine(rows: int = 4, cols: int = 6) -> list[Any]:
    rng = np.random.default_rng(5)
    return [
        np.float32(2.0),
        rng.random(cols, dtype=np.float32),
        rng.random((rows, cols), dtype=np.float32),
        np.zeros((rows, cols), np.float32),
    ]


def read_only(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.setflags(write=False)
    return a


def misaligned(a: np.ndarray) -> np.ndarray:
    raw = np.zeros(a.nbytes + 1, np.uint8)[1:]
    return raw.view(a.dtype).reshape(a.shape)


T = r"'t' \(Tensor\[f32, 2\]\)"
X = r"'x' \(Array\[f32\]\)"
MISTAKES: list[tuple[str, int, Any, str]] = [
    (
        "too few arguments",
        -1,
        None,
        r"^kernel .*scale_rows takes 4 arguments \(k, x, t, out\), got 3$",
    ),
    ("a scalar of the wrong kind", 0, "two", r"argument 'k' \(f32\) cannot hold str 'two'$"),
    ("an array of another type", 1, lambda a: a.astype(np.float64), X + " holds float64 elements$"),
    ("no array at all", 1, "x", X + " must be an array, got str 'x'$"),
    ("a strided array", 1, lambda a: np.repeat(a, 2)[::2], X + " is not contiguous"),
    (
        "a read-only output",
        3,
        read_only,
        r"'out' \(Tensor\[f32, 2\]\) is read-only, and the kernel",
    ),
    (
        "a negative stride",
        2,
        lambda a: a[:, ::-1],
        T + r" has a negative stride \(-1 elements along",
    ),
    ("a tensor of another rank", 2, lambda a: a[None], T + r" has 3 dimension\(s\); this special"),
    (
        "an array of 2**32 elements",
        1,
        lambda a: as_strided(a, (2**32,), (0,)),
        X + " has 4294967296 ",
    ),
    (
        "a tensor of 2**32 elements",
        2,
        lambda a: as_strided(a, (2**16,) * 2, (0, 0)),
        T + " has 42949",
    ),
    (
        "a tensor reaching past 2**32",
        2,
        lambda a: as_strided(a, (2, 3), (2**34, 4)),
        T + " spans more",
    ),
    ("a misaligned array", 1, misaligned, X + r" is not aligned to its element size \(4 bytes\)"),
]


def mistaken(index: int, change: Any, device: bool) -> tuple[Any, ...]:
    args = fine()
    if index < 0:
        args = args[:-1]
    elif callable(change):
        args[index] = change(args[index])
    else:
        args[index] = change
    if device:
        args = [OnDevice(a) if isinstance(a, np.ndarray) else a for a in args]
    return tuple(args)


@pytest.fixture(scope="module")
def cpu() -> CpuClient:
    client = CpuClient()
    client.launch(SPEC, 1, tuple(fine()))
    return client


@pytest.mark.parametrize(
    ("index", "change", "message"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES]
)
def test_a_mistake_reads_the_same_on_the_cpu_and_on_cuda(
    cpu: CpuClient, index: int, change: Any, message: str
) -> None:
    compiled = cpu.compiler.compilations
    with pytest.raises(LaunchError, match=message) as on_cpu:
        cpu.launch(SPEC, 1, mistaken(index, change, device=False))
    assert cpu.compiler.compilations == compiled
    launcher, driver = cuda_launcher()
    with pytest.raises(LaunchError) as on_cuda:
        launcher(1, mistaken(index, change, device=True))
    assert str(on_cuda.value) == str(on_cpu.value)
    assert driver.calls == []


def test_an_output_the_kernel_writes_must_be_writeable_and_nothing_runs(cpu: CpuClient) -> None:
    k, x, t, out = fine()
    frozen = np.frombuffer(bytes(out.nbytes), np.float32).reshape(out.shape)
    with pytest.raises(LaunchError, match=r"argument 'out' .* is read-only"):
        scale_rows.launch(cpu, 1, 64, k, x, t, frozen)
    assert not frozen.any()
    inputs_read_only = (k, read_only(x), read_only(t), out)
    scale_rows.launch(cpu, 1, 64, *inputs_read_only)
    np.testing.assert_allclose(out, k * t + x, rtol=1e-6)


def test_memmaps_and_other_ndarray_subclasses_are_taken_as_they_are(
    cpu: CpuClient, tmp_path: Any
) -> None:
    class Tagged(np.ndarray):
        pass

    k, x, t, out = fine()
    mapped = np.memmap(tmp_path / "out.bin", np.float32, "w+", shape=out.shape)
    scale_rows.launch(cpu, 1, 64, k, x.view(Tagged), t.view(Tagged), mapped)
    mapped.flush()
    np.testing.assert_allclose(
        np.fromfile(tmp_path / "out.bin", np.float32).reshape(out.shape), k * t + x, rtol=1e-6
    )


def test_numpy_integers_are_cube_dims_and_counts(cpu: CpuClient) -> None:
    k, x, t, out = fine()
    scale_rows.launch(cpu, (np.int64(1),), np.int32(64), k, x, t, out)
    np.testing.assert_allclose(out, k * t + x, rtol=1e-6)
    assert scale_rows.specialize(np.uint16(64), t=2, out=2) is SPEC


def test_buffers_of_a_client_are_made_and_read_in_their_shape_with_cubejit_errors(
    cpu: CpuClient,
) -> None:
    k, x, t, _ = fine()
    out = cpu.empty((4, 6), cj.f32)
    scale_rows.launch(cpu, 1, 64, k, cpu.to_device(x), cpu.to_device(t), out)
    back = cpu.read(out)
    assert back.shape == (4, 6)
    np.testing.assert_allclose(back, k * t + x, rtol=1e-6)
    for bad in (
        lambda: cpu.empty((4, -1), cj.f32),
        lambda: cpu.empty(3, "no such type"),
        lambda: cpu.empty((2**16, 2**16), cj.f32),
        lambda: cpu.read("x"),
    ):
        with pytest.raises(CubejitError):
            bad()


def test_a_dlpack_capsule_is_read_for_its_shape_strides_and_type_without_a_copy() -> None:
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = base.T[1:, ::2]
    seen = dlpack_view(view.__dlpack__())
    assert seen.address == view.__array_interface__["data"][0]
    assert (seen.dtype, seen.itemsize, seen.shape, seen.strides) == (
        "float32",
        4,
        view.shape,
        view.strides,
    )


def test_a_host_array_offered_through_dlpack_to_cuda_says_where_it_lives() -> None:
    launcher, driver = cuda_launcher()

    class HostOnly:
        def __init__(self, a: np.ndarray) -> None:
            self.a = a

        def __dlpack__(self, stream: Any = None) -> Any:
            return self.a.__dlpack__()

        def __dlpack_device__(self) -> tuple[int, int]:
            return self.a.__dlpack_device__()

    k, x, t, out = fine()
    with pytest.raises(LaunchError, match=r"'t' \(Tensor\[f32, 2\]\) lives in host memory"):
        launcher(1, (k, OnDevice(x), HostOnly(t), OnDevice(out)))
    assert driver.calls == []


def test_a_cuda_tensor_launch_passes_pointer_rank_shape_and_strides_and_picks_the_contiguity() -> (
    None
):
    driver_args: list[list[int]] = []

    def driver(*args: Any) -> tuple[int]:
        pointers = (ctypes.c_void_p * 15).from_address(args[9])
        driver_args.append([args[0], *(ctypes.c_uint64.from_address(p).value for p in pointers)])
        return (0,)

    slots = kernel_slots(SPEC.define())
    loads: list[Any] = []
    client = FakeClient()
    launcher = Launcher(
        client,
        0xF03,
        slots,
        SPEC.cube_dim,
        SPEC.name,
        driver,
        0,
        variant=(None, 3),
        load=lambda v: loads.append(v) or 0xF01,
    )
    x = CudaBuffer(client, 0x1000, 6, cj.f32, None)
    out = CudaBuffer(client, 0x3000, 24, cj.f32, None, (4, 6))
    base = np.zeros((6, 4), np.float32)
    launcher(1, (1.0, x, out, out))
    launcher(1, (1.0, x, OnDevice(base.T), out))
    assert loads == [(None, 2)]
    first, second = driver_args
    assert first[0] == 0xF03 and second[0] == 0xF01
    assert first[4:9] == [0x3000, 2, 4, 6, 6] and first[9] == 1
    assert second[4:10] == [base.__array_interface__["data"][0], 2, 4, 6, 1, 4]


def test_a_contiguous_array_of_2_to_the_32_elements_is_refused_not_wrapped(
    cpu: CpuClient, tmp_path: Any
) -> None:
    k, _, t, out = fine()
    sparse = np.memmap(tmp_path / "huge.bin", np.float32, "w+", shape=(2**32,))
    assert sparse.flags.c_contiguous
    with pytest.raises(LaunchError, match=r"'x' \(Array\[f32\]\) has 4294967296 elements"):
        scale_rows.launch(cpu, 1, 64, k, sparse, t, out)
    assert not out.any()
