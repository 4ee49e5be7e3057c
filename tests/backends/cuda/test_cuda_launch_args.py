"""The launch path without a GPU: the parameter buffer the driver reads, every argument check
that raises before anything runs, and the choice between a kernel's plain and coarsened forms
(the driver call is replaced by one that records)."""

from __future__ import annotations

import builtins
import ctypes
import struct
import threading
import weakref
from typing import Any

import numpy as np
import pytest

from cubejit.backends.cuda import launch as launch_module
from cubejit.backends.cuda.buffer import CudaBuffer, CudaView
from cubejit.backends.cuda.coarsening import NO_ALIAS
from cubejit.backends.cuda.driver import ARCHITECTURAL_LIMITS
from cubejit.backends.cuda.launch import Launcher, arrays_apart, bf16_bits
from cubejit.errors import LaunchError
from cubejit.ir import nodes as ir
from cubejit.ir.types import ArrayType, bf16, bool_, f16, f32, f64, i32, i64, u32
from cubejit.runtime.layout import ParamSlot, SlotKind

SCALAR, ARRAY = SlotKind.SCALAR, SlotKind.ARRAY


class FakeClient:
    """What a launcher asks of its client."""

    limits = ARCHITECTURAL_LIMITS
    stream_handle = 0x5150

    def __init__(self) -> None:
        self.adopted: list[Any] = []

    def adopt(self, array: Any, where: str) -> None:
        self.adopted.append(array)


class RecordingDriver:
    """Stands for ``cuLaunchKernel``: keeps each call and the bytes each parameter points at."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.calls: list[tuple[Any, ...]] = []
        self.params: list[list[bytes]] = []

    def __call__(self, *args: Any) -> tuple[int]:
        self.calls.append(args[:9])
        pointers = (ctypes.c_void_p * self.count).from_address(args[9])
        self.params.append([ctypes.string_at(p, 8) for p in pointers])
        return (0,)


def make(params: tuple[ParamSlot, ...], cube_dim=(128, 1, 1)) -> tuple[Launcher, Any, Any]:
    client = FakeClient()
    count = sum(p.words for p in params)
    driver = RecordingDriver(count)
    return Launcher(client, 0xF00, params, cube_dim, "k", driver, 0x5150), client, driver


SAXPY = (
    ParamSlot("a", f32, SCALAR),
    ParamSlot("x", f32, ARRAY),
    ParamSlot("out", f32, ARRAY),
)


def test_a_launch_passes_scalars_by_value_and_arrays_as_pointer_and_length() -> None:
    launcher, client, driver = make(SAXPY)
    x = CudaBuffer(client, 0x1000, 300, f32, None)
    out = CudaBuffer(client, 0x2000, 300, f32, None)
    launcher(3, (2.5, x, out))
    launcher((2, 3), (1, x, out))
    assert driver.calls == [
        (0xF00, 3, 1, 1, 128, 1, 1, 0, 0x5150),
        (0xF00, 2, 3, 1, 128, 1, 1, 0, 0x5150),
    ]
    a, x_ptr, x_len, out_ptr, out_len = driver.params[0]
    assert struct.unpack("<f", a[:4]) == (2.5,)
    assert struct.unpack("<QIQI", x_ptr + x_len[:4] + out_ptr + out_len[:4]) == (
        0x1000,
        300,
        0x2000,
        300,
    )
    assert struct.unpack("<f", driver.params[1][0][:4]) == (1.0,)


@pytest.mark.parametrize("generated", [False, True])
def test_launchers_of_one_parameter_list_share_its_plan_and_keep_their_own_launches(
    generated: bool, monkeypatch: Any
) -> None:
    monkeypatch.setattr(launch_module, "_codes", {})
    if generated:
        launch_module.launch_code(launch_module.layout_key(SAXPY, 1))
    client = FakeClient()
    driver = RecordingDriver(5)
    first = Launcher(client, 0xF00, SAXPY, (128, 1, 1), "k", driver, 0x5150)
    second = Launcher(client, 0xF01, SAXPY, (64, 2, 1), "k", driver, 0x5150)
    own = Launcher(client, 0xF02, tuple(list(SAXPY)), (32, 1, 1), "k", driver, 0x5150)
    plans = [launch_module._plan(SAXPY, 1), launch_module._plan(tuple(list(SAXPY)), 1)]
    assert plans[0] is launch_module._plan(SAXPY, 1)
    assert plans[0] is not plans[1]
    assert plans[0].packer.format == plans[1].packer.format
    x = CudaBuffer(client, 0x1000, 300, f32, None)
    out = CudaBuffer(client, 0x2000, 300, f32, None)
    a = 2.5
    for launcher in (first, second, own, first, second):
        launcher(3, (a, x, out))
    assert driver.calls == [
        (0xF00, 3, 1, 1, 128, 1, 1, 0, 0x5150),
        (0xF01, 3, 1, 1, 64, 2, 1, 0, 0x5150),
        (0xF02, 3, 1, 1, 32, 1, 1, 0, 0x5150),
        (0xF00, 3, 1, 1, 128, 1, 1, 0, 0x5150),
        (0xF01, 3, 1, 1, 64, 2, 1, 0, 0x5150),
    ]
    other = CudaBuffer(client, 0x3000, 300, f32, None)
    second(3, (a, x, other))
    first(3, (a, x, out))
    assert struct.unpack("<Q", driver.params[-2][3]) == (0x3000,)
    assert struct.unpack("<Q", driver.params[-1][3]) == (0x2000,)
    assert driver.calls[-1][0] == 0xF00


def test_every_scalar_type_is_packed_in_its_own_width() -> None:
    params = tuple(
        ParamSlot(t.name, t, SCALAR) for t in (bool_, i32, i64, u32, f16, bf16, f32, f64)
    )
    launcher, _, driver = make(params)
    launcher(1, (True, -5, -(2**40), 2**32 - 1, 1.5, 1.5, 0.1, 0.1))
    raw = driver.params[0]
    assert raw[0][:1] == b"\x01"
    assert struct.unpack("<i", raw[1][:4]) == (-5,)
    assert struct.unpack("<q", raw[2]) == (-(2**40),)
    assert struct.unpack("<I", raw[3][:4]) == (2**32 - 1,)
    assert struct.unpack("<e", raw[4][:2]) == (1.5,)
    assert struct.unpack("<H", raw[5][:2]) == (0x3FC0,)
    assert struct.unpack("<f", raw[6][:4]) == (np.float32(0.1),)
    assert struct.unpack("<d", raw[7]) == (0.1,)


def test_bf16_rounds_to_nearest_even() -> None:
    assert bf16_bits(1.0) == 0x3F80
    assert bf16_bits(1.0 + 2**-8) == 0x3F80
    assert bf16_bits(1.0 + 3 * 2**-8) == 0x3F82
    assert bf16_bits(float("inf")) == 0x7F80
    assert bf16_bits(float("nan")) & 0x7F80 == 0x7F80


BUFFER = object()
"""Stands for a fitting buffer in the cases below."""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((1.0,), "takes 3 arguments \\(a, x, out\\), got 1"),
        (("two", BUFFER, BUFFER), "kernel k: argument 'a' \\(f32\\) cannot hold str 'two'"),
        ((1.0, np.zeros(4, np.float32), BUFFER), "numpy array, in host memory"),
        ((1.0, "x", BUFFER), "argument 'x' \\(Array\\[f32\\]\\) must be an array, got str"),
    ],
)
def test_arguments_that_do_not_fit_raise_before_the_launch(
    args: tuple[Any, ...], message: str
) -> None:
    launcher, client, driver = make(SAXPY)
    out = CudaBuffer(client, 0x2000, 4, f32, None)
    args = tuple(out if a is BUFFER else a for a in args)
    with pytest.raises(LaunchError, match=message):
        launcher(1, args)
    assert driver.calls == []


def test_a_buffer_of_another_element_type_or_client_is_refused() -> None:
    launcher, client, driver = make(SAXPY)
    out = CudaBuffer(client, 0x2000, 4, f32, None)
    ints = CudaBuffer(client, 0x3000, 4, i32, None)
    with pytest.raises(LaunchError, match="holds int32 elements"):
        launcher(1, (1.0, ints, out))
    other = CudaBuffer(FakeClient(), 0x3000, 4, f32, None)
    with pytest.raises(LaunchError, match="buffer of another client"):
        launcher(1, (1.0, other, out))
    assert driver.calls == []


@pytest.mark.parametrize(
    ("cube_count", "message"),
    [(0, "positive int"), ((1, 2, 3, 4), "tuple of 1 to 3"), ((1, 70000), "along y")],
)
def test_a_cube_count_beyond_the_device_is_refused(cube_count: Any, message: str) -> None:
    launcher, client, driver = make(SAXPY)
    out = CudaBuffer(client, 0x2000, 4, f32, None)
    with pytest.raises(LaunchError, match=message):
        launcher(cube_count, (1.0, out, out))
    assert driver.calls == []


class Foreign:
    """A device array of another library, as ``__cuda_array_interface__`` shows it."""

    def __init__(self, typestr: str, shape: tuple[int, ...], strides: Any = None) -> None:
        self.__cuda_array_interface__ = {
            "data": (0xABC000, False),
            "shape": shape,
            "typestr": typestr,
            "strides": strides,
            "version": 3,
            "stream": 7,
        }


def test_another_librarys_device_array_is_taken_without_a_copy() -> None:
    launcher, client, driver = make(SAXPY)
    out = CudaBuffer(client, 0x2000, 4, f32, None)
    launcher(1, (1.0, Foreign("<f4", (3, 5)), out))
    assert struct.unpack("<Q", driver.params[0][1]) == (0xABC000,)
    assert struct.unpack("<I", driver.params[0][2][:4]) == (15,)
    assert [a.stream for a in client.adopted] == [7]


@pytest.mark.parametrize(
    ("foreign", "message"),
    [
        (Foreign("<f8", (4,)), "holds float64 elements"),
        (Foreign("<f4", (4, 4), strides=(4, 16)), "not contiguous"),
    ],
)
def test_an_unfit_device_array_of_another_library_is_refused(foreign: Any, message: str) -> None:
    launcher, client, driver = make(SAXPY)
    out = CudaBuffer(client, 0x2000, 4, f32, None)
    with pytest.raises(LaunchError, match=message):
        launcher(1, (1.0, foreign, out))
    assert driver.calls == []


WRITES_OUT = (
    ParamSlot("a", f32, SCALAR),
    ParamSlot("x", f32, ARRAY),
    ParamSlot("y", f32, ARRAY),
    ParamSlot("out", f32, ARRAY, written=True),
)
FUNCTIONS = {None: 0xB00, NO_ALIAS: 0xC00}
"""The plain and the coarsened artifact's functions, as a coarsened launcher is given them."""


def make_coarsened(variant: Any) -> tuple[Launcher, Any, Any, list[Any]]:
    client = FakeClient()
    driver = RecordingDriver(8)
    loads: list[Any] = []

    def load(other: Any) -> int:
        loads.append(other)
        return FUNCTIONS[other]

    launcher = Launcher(
        client,
        FUNCTIONS[variant],
        WRITES_OUT,
        (128, 1, 1),
        "k",
        driver,
        0x5150,
        coarsening=4,
        variant=variant,
        load=load,
    )
    return launcher, client, driver, loads


def test_a_launch_whose_written_array_overlaps_nothing_runs_four_cubes_per_block() -> None:
    launcher, client, driver, loads = make_coarsened(NO_ALIAS)
    x = CudaBuffer(client, 0x1000, 300, f32, None)
    y = CudaBuffer(client, 0x2000, 300, f32, None)
    out = CudaBuffer(client, 0x1000 + 4 * 300, 300, f32, None)
    launcher(10, (2.0, x, y, out))
    launcher((9, 2), (2.0, x, x, out))
    assert [call[:4] for call in driver.calls] == [(0xC00, 3, 1, 1), (0xC00, 3, 2, 1)]
    assert [struct.unpack("<I", params[7][:4]) for params in driver.params] == [(10,), (9,)]
    assert loads == []


def test_a_launch_whose_written_array_overlaps_another_takes_the_plain_form() -> None:
    launcher, client, driver, loads = make_coarsened(NO_ALIAS)
    x = CudaBuffer(client, 0x1000, 300, f32, None)
    y = CudaBuffer(client, 0x2000, 300, f32, None)
    last_of_x = CudaBuffer(client, 0x1000 + 4 * 299, 1, f32, None)
    launcher(10, (2.0, x, y, x))
    launcher(10, (2.0, y, x, last_of_x))
    launcher(10, (2.0, x, x, y))
    assert [call[:2] for call in driver.calls] == [(0xB00, 10), (0xB00, 10), (0xC00, 3)]
    assert loads == [None]


def test_a_launcher_that_began_with_the_plain_form_loads_the_coarsened_one_when_needed() -> None:
    launcher, client, driver, loads = make_coarsened(None)
    x = CudaBuffer(client, 0x1000, 300, f32, None)
    out = CudaBuffer(client, 0x2000, 300, f32, None)
    launcher(5, (2.0, x, x, x))
    launcher(5, (2.0, x, x, out))
    launcher(5, (2.0, x, x, out))
    assert [call[:2] for call in driver.calls] == [(0xB00, 5), (0xC00, 2), (0xC00, 2)]
    assert loads == [NO_ALIAS]


def test_arrays_are_apart_only_when_no_two_share_a_byte() -> None:
    client = FakeClient()
    params = (ir.Param("a", f32), ir.Param("x", ArrayType(f32)), ir.Param("y", ArrayType(f32)))
    x = CudaBuffer(client, 0x1000, 4, f32, None)
    after_x = CudaBuffer(client, 0x1010, 4, f32, None)
    empty = CudaBuffer(client, 0, 0, f32, None)
    assert arrays_apart(params, (1.0, x, after_x))
    assert arrays_apart(params, (1.0, empty, empty))
    assert not arrays_apart(params, (1.0, x, x))
    assert not arrays_apart(params, (1.0, x, CudaBuffer(client, 0x100C, 4, f32, None)))
    assert not arrays_apart(params, (1.0, x))
    assert not arrays_apart(params, (1.0, x, "not an array"))
    assert arrays_apart(params, (1.0, x, Foreign("<f4", (4,))))


def unpacked(raw: list[bytes]) -> tuple[Any, ...]:
    """The saxpy parameter values of one recorded call: a, x pointer, x length, out pointer."""
    return (
        struct.unpack("<f", raw[0][:4])[0],
        struct.unpack("<Q", raw[1])[0],
        struct.unpack("<I", raw[2][:4])[0],
        struct.unpack("<Q", raw[3])[0],
    )


def test_a_launch_repeating_the_last_arguments_passes_the_same_values() -> None:
    launcher, client, driver = make(SAXPY)
    a = 2.5
    x = CudaBuffer(client, 0x1000, 300, f32, None)
    y = CudaBuffer(client, 0x5000, 100, f32, None)
    out = CudaBuffer(client, 0x2000, 300, f32, None)
    for args in ((a, x, out), (a, x, out), (a, y, out), (a, y, out), (a, x, out), (1.0, x, out)):
        launcher(3, args)
    assert [unpacked(raw) for raw in driver.params] == [
        (2.5, 0x1000, 300, 0x2000),
        (2.5, 0x1000, 300, 0x2000),
        (2.5, 0x5000, 100, 0x2000),
        (2.5, 0x5000, 100, 0x2000),
        (2.5, 0x1000, 300, 0x2000),
        (1.0, 0x1000, 300, 0x2000),
    ]
    assert [call[1] for call in driver.calls] == [3] * 6


def test_a_launch_after_a_refused_one_packs_its_values_again() -> None:
    launcher, client, driver = make(SAXPY)
    x = CudaBuffer(client, 0x1000, 300, f32, None)
    out = CudaBuffer(client, 0x2000, 300, f32, None)
    launcher(3, (2.5, x, out))
    with pytest.raises(LaunchError):
        launcher(3, ("two", x, out))
    launcher(3, (2.5, x, out))
    assert [unpacked(raw) for raw in driver.params] == [(2.5, 0x1000, 300, 0x2000)] * 2


def test_remembering_the_last_arguments_keeps_no_buffer_alive() -> None:
    launcher, client, _ = make(SAXPY)
    x = CudaBuffer(client, 0x1000, 300, f32, None)
    out = CudaBuffer(client, 0x2000, 300, f32, None)
    launcher(3, (2.5, x, out))
    gone = weakref.ref(x)
    del x
    assert gone() is None


def test_a_launch_repeating_the_last_views_passes_their_values_and_keeps_none_alive() -> None:
    launcher, client, driver = make(SAXPY)
    x = CudaView(client, f32, 0x1000, (300,), (1,), None)
    y = CudaView(client, f32, 0x5000, (10, 10), (10, 1), None)
    out = CudaView(client, f32, 0x2000, (300,), (1,), None)
    for args in [(2.5, x, out)] * 10 + [(2.5, y, out)] * 2 + [(2.5, x, out)]:
        launcher(3, args)
    assert [unpacked(raw) for raw in driver.params] == [(2.5, 0x1000, 300, 0x2000)] * 10 + [
        (2.5, 0x5000, 100, 0x2000)
    ] * 2 + [(2.5, 0x1000, 300, 0x2000)]
    assert client.adopted == [], "a view was ordered by its maker"
    gone = weakref.ref(x)
    del x, args
    assert gone() is None


def test_launches_with_another_librarys_arrays_adopt_them_every_time() -> None:
    launcher, client, driver = make(SAXPY)
    out = CudaBuffer(client, 0x2000, 4, f32, None)
    foreign = Foreign("<f4", (15,))
    for _ in range(3):
        launcher(1, (1.0, foreign, out))
    assert len(client.adopted) == 3
    assert len(driver.calls) == 3


def test_threads_launching_different_arguments_each_pass_their_own() -> None:
    launcher, client, driver = make(SAXPY)
    out = CudaBuffer(client, 0x2000, 300, f32, None)
    inputs = [CudaBuffer(client, 0x10000 * (i + 1), 300, f32, None) for i in range(2)]
    start = threading.Barrier(2)

    def launch(i: int) -> None:
        start.wait()
        for _ in range(500):
            launcher(3, (float(i), inputs[i], out))

    threads = [threading.Thread(target=launch, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seen = {unpacked(raw)[:2] for raw in driver.params}
    assert seen == {(0.0, 0x10000), (1.0, 0x20000)}
    assert len(driver.params) == 1000


SCALARS = tuple(ParamSlot(t.name, t, SCALAR) for t in (bool_, i32, i64, u32, f16, bf16, f32, f64))


def _launches(params: tuple[ParamSlot, ...], coarsening: int) -> list[tuple[Any, Any]]:
    """Launches of every kind for a layout: own buffers, overlapping ones, another library's
    array, tuples of cube counts and refused arguments."""
    client = FakeClient()
    x = CudaBuffer(client, 0x1000, 300, f32, None)
    y = CudaBuffer(client, 0x1000 + 4 * 300, 300, f32, None)
    out = CudaBuffer(client, 0x9000, 300, f32, None)
    foreign = Foreign("<f4", (15,))
    if params is SCALARS:
        return [
            (1, (True, -5, -(2**40), 2**32 - 1, 1.5, 1.5, 0.1, 0.1)),
            ((2, 3), (False, 7, 2**40, 3, -2.0, 1.0 + 3 * 2**-8, 2.5, -0.5)),
            (1, (True, "seven", 1, 1, 1.0, 1.0, 1.0, 1.0)),
        ]
    if len(params) == 3:
        return [(3, (2.5, x, out)), ((2, 3), (1, foreign, out)), (1, (1.0, "x", out))]
    return [
        (10, (2.0, x, y, out)),
        ((9, 2), (2.0, x, x, out)),
        (10, (2.0, x, out, out)),
        (5, (2.0, foreign, y, out)),
        (0, (2.0, x, y, out)),
    ]


def _record(
    params: tuple[ParamSlot, ...], coarsening: int, generated: bool, monkeypatch: Any
) -> tuple[Any, ...]:
    monkeypatch.setattr(launch_module, "_codes", {})
    if generated:
        launch_module.launch_code(launch_module.layout_key(params, coarsening))
    client = FakeClient()
    driver = RecordingDriver(sum(p.words for p in params) + (coarsening > 1))
    loads: list[Any] = []

    def load(other: Any) -> int:
        loads.append(other)
        return FUNCTIONS[other]

    launcher = _plain_launcher(params, coarsening, client, driver, load)
    errors = []
    for cube_count, args in _launches(params, coarsening):
        try:
            launcher(cube_count, _of_client(client, args))
        except LaunchError as e:
            errors.append(str(e))
    return driver.calls, driver.params, loads, errors, len(client.adopted)


def _plain_launcher(
    params: tuple[ParamSlot, ...], coarsening: int, client: Any, driver: Any, load: Any
) -> Launcher:
    """A launcher of the plain artifact's function, loading the others with ``load``."""
    return Launcher(
        client,
        FUNCTIONS[None],
        params,
        (128, 1, 1),
        "k",
        driver,
        0x5150,
        coarsening=coarsening,
        variant=None,
        load=load,
    )


def _of_client(client: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` with each buffer made again as ``client``'s."""
    return tuple(
        CudaBuffer(client, a.ptr, a.n, f32, None) if isinstance(a, CudaBuffer) else a for a in args
    )


@pytest.mark.parametrize(
    ("params", "coarsening"), [(SAXPY, 1), (SCALARS, 1), (WRITES_OUT, 4)], ids=str
)
def test_the_generic_launch_passes_what_the_generated_one_does(
    params: tuple[ParamSlot, ...], coarsening: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    generic = _record(params, coarsening, False, monkeypatch)
    generated = _record(params, coarsening, True, monkeypatch)
    assert generic == generated
    assert generic[0]


@pytest.mark.parametrize(
    ("params", "coarsening"), [(SAXPY, 1), (SCALARS, 1), (WRITES_OUT, 4)], ids=str
)
def test_a_graph_node_holds_what_the_launch_of_the_same_arguments_passes(
    params: tuple[ParamSlot, ...], coarsening: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls, values, _, errors, _ = _record(params, coarsening, False, monkeypatch)
    client = FakeClient()
    driver = RecordingDriver(sum(p.words for p in params) + (coarsening > 1))
    launcher = _plain_launcher(params, coarsening, client, driver, FUNCTIONS.__getitem__)
    nodes, refused = [], []
    for cube_count, args in _launches(params, coarsening):
        try:
            nodes.append(launcher.node(cube_count, _of_client(client, args)))
        except LaunchError as e:
            refused.append(str(e))
    assert refused == errors
    assert len(nodes) == len(calls) > 0
    for node, call, raw in zip(nodes, calls, values, strict=True):
        assert (node.function, *node.grid, *node.block, node.shared) == call[:8]
        held = [ctypes.string_at(p, 8) for p in node.pointers]
        assert held == raw
        assert all(
            ctypes.addressof(node.values) <= p < ctypes.addressof(node.values) + len(node.values)
            for p in node.pointers
        )


def test_a_first_launch_compiles_no_python_and_a_kernel_launched_often_compiles_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(launch_module, "_codes", {})
    compiled: list[str] = []
    real_compile = builtins.compile

    def counting(source: Any, filename: str, *args: Any, **kwargs: Any) -> Any:
        compiled.append(filename)
        return real_compile(source, filename, *args, **kwargs)

    monkeypatch.setattr(builtins, "compile", counting)
    launcher, client, driver = make(SAXPY)
    x = CudaBuffer(client, 0x1000, 300, f32, None)
    out = CudaBuffer(client, 0x2000, 300, f32, None)
    launcher(3, (2.5, x, out))
    assert compiled == []
    for _ in range(launch_module.GENERIC_LAUNCHES):
        launcher(3, (2.5, x, out))
    assert len(compiled) == 1
    second, other, _ = make(SAXPY)
    second(3, (2.5, *(CudaBuffer(other, 0x1000 * j, 300, f32, None) for j in (1, 2))))
    assert len(compiled) == 1
    assert len(driver.calls) == launch_module.GENERIC_LAUNCHES + 1
