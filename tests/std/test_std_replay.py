"""Standard calls on CUDA replayed from the first call of their signature: what the replay
launches (against a client that only keeps its launches, for the replay's own logic), and that
replayed calls compute what numpy does on the GPU."""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

import numpy as np
import pytest

import cubejit as cj
import cubejit.std as cs
from cubejit import config
from cubejit.backends.cuda.buffer import CudaBuffer, CudaView
from cubejit.errors import BackendUnavailableError
from cubejit.ir.types import Scalar
from cubejit.std import lined_rows, reductions, replay, rows, scan


@pytest.fixture(autouse=True)
def untuned(monkeypatch: pytest.MonkeyPatch) -> None:
    """One form for each tuned launch: a client that only keeps its launches has nothing to
    time."""
    monkeypatch.setitem(scan.LINED, "cuda", scan.LINED["cuda"][:1])
    monkeypatch.setitem(reductions.LINES, "cuda", reductions.LINES["cuda"][:1])
    for what in ("softmax", "layer_norm"):
        monkeypatch.setitem(lined_rows.LINES_PER_UNIT, what, lined_rows.LINES_PER_UNIT[what][:1])


class KeepingClient:
    """A CUDA client as the replay sees one: it keeps each launch and hands out addresses."""

    backend = "cuda"
    stream_handle = 7

    def __init__(self) -> None:
        self.launches: list[tuple[Any, Any, tuple[Any, ...]]] = []
        self.adopted: list[int] = []
        self._next = 1 << 24

    def launch(self, spec: Any, cube_count: Any, args: tuple[Any, ...]) -> None:
        self.launches.append((spec, cube_count, args))

    def graph(self, launches: Any) -> None:
        """A client of no graphs: a replay launches one by one."""

    def adopt_address(self, ptr: int, stream: Any, where: str) -> None:
        self.adopted.append(ptr)

    def empty(self, shape: tuple[int, ...], scalar: Scalar) -> CudaBuffer:
        self._next += 1 << 20
        return CudaBuffer(self, self._next, int(np.prod(shape)), scalar, None, tuple(shape))

    def to_device(self, array: np.ndarray) -> CudaBuffer:
        from cubejit.ir.types import from_dtype

        scalar = from_dtype(array.dtype)
        assert scalar is not None
        return self.empty(array.shape, scalar)


class Foreign:
    """Another library's array: only its ``__cuda_array_interface__``."""

    def __init__(self, shape: tuple[int, ...], ptr: int) -> None:
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": "<f4",
            "data": (ptr, False),
            "version": 3,
            "strides": None,
            "stream": 1,
        }


def _calls_of(module: Any, name: str, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seen: list[int] = []
    original = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        seen.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return seen


def test_a_second_call_of_a_signature_launches_the_same_specs_on_its_own_arrays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = KeepingClient()
    first_x, first_out = 1 << 30, (1 << 30) + (1 << 26)
    cs.softmax(Foreign((8, 1024), first_x), out=Foreign((8, 1024), first_out), client=client)
    operands = _calls_of(rows, "operand", monkeypatch)
    second_x, second_out = 1 << 31, (1 << 31) + (1 << 27)
    cs.softmax(Foreign((8, 1024), second_x), out=Foreign((8, 1024), second_out), client=client)
    assert operands == []
    (spec_a, count_a, args_a), (spec_b, count_b, args_b) = client.launches
    assert spec_b is spec_a and count_b == count_a
    assert [type(a) for a in args_b] == [type(a) for a in args_a]
    assert args_b[0].ptr == second_x and args_b[1].ptr == second_out
    assert (args_b[0].shape, args_b[0].strides) == (args_a[0].shape, args_a[0].strides)
    assert client.adopted[-2:] == [second_x, second_out]


def test_a_replayed_call_returns_a_new_result_and_keeps_its_scratch_for_the_next() -> None:
    client = KeepingClient()
    results = [cs.sum(Foreign((1 << 20,), 1 << 30), client=client) for _ in range(3)]
    assert all(isinstance(r, CudaBuffer) for r in results)
    assert len({r.ptr for r in results}) == 3
    partials = [args[2] for _, _, args in client.launches if isinstance(args[2], CudaBuffer)]
    assert len(partials) == 3
    assert partials[0].ptr != partials[1].ptr, "the recorded call's scratch is its own"
    assert partials[1] is partials[2], "replays share the plan's scratch"
    finals = [args[1] for _, count, args in client.launches if count == 1]
    assert [f.ptr for f in finals] == [r.ptr for r in results]
    assert all(isinstance(f, CudaView) for f in finals)


def test_a_call_that_fills_a_buffer_of_its_own_is_never_replayed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = KeepingClient()
    x, out = Foreign((8, 1024), 1 << 30), Foreign((8, 1024), 1 << 29)
    cs.layer_norm(x, None, None, 1e-5, out=out, client=client)
    operands = _calls_of(rows, "operand", monkeypatch)
    cs.layer_norm(x, None, None, 1e-5, out=out, client=client)
    assert operands, "layer_norm's ones and zeros are filled on the host: it runs as written"
    operands.clear()
    cs.layer_norm(x, None, None, 1e-5, out=out, client=client)
    assert operands, "recorded once more after its first call, then never replayed"


def test_a_signature_whose_first_record_cannot_be_said_is_replayed_from_its_third_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = KeepingClient()
    x = Foreign((1 << 20,), 1 << 30)
    made = reductions.new_array
    monkeypatch.setattr(reductions, "new_array", lambda c, shape, scalar: c.empty(shape, scalar))
    cs.sum(x, client=client)
    monkeypatch.setattr(reductions, "new_array", made)
    operands = _calls_of(reductions, "operand", monkeypatch)
    cs.sum(x, client=client)
    assert operands, "a first call whose scratch the record could not say (as a tuning call's "
    "copies) leaves its signature to be recorded by the next"
    operands.clear()
    cs.sum(x, client=client)
    assert operands == [], "which the third replays"


def test_another_layout_or_value_is_another_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    client = KeepingClient()
    cs.cumsum(Foreign((8192,), 1 << 30), out=Foreign((8192,), 1 << 29), client=client)
    operands = _calls_of(scan, "operand", monkeypatch)
    cs.cumsum(Foreign((8192,), 1 << 30), out=Foreign((8192,), 1 << 29), client=client)
    assert operands == []
    cs.cumsum(Foreign((8190,), 1 << 30), out=Foreign((8190,), 1 << 29), client=client)
    assert operands
    operands.clear()
    cs.cumsum(Foreign((8192,), (1 << 30) + 4), out=Foreign((8192,), 1 << 29), client=client)
    assert operands, "another alignment may take other line sizes"


def test_a_replay_on_the_same_addresses_launches_the_very_same_arguments() -> None:
    client = KeepingClient()
    x, out = Foreign((8, 1024), 1 << 30), Foreign((8, 1024), 1 << 29)
    for _ in range(3):
        cs.softmax(x, out=out, client=client)
    cs.softmax(Foreign((8, 1024), 1 << 31), out=out, client=client)
    _, first, second, moved = (args for _, _, args in client.launches)
    assert second is first, "the launch functions then find their last arguments"
    assert moved is not second and moved[0].ptr == 1 << 31
    assert client.adopted[-4:] == [1 << 30, 1 << 29, 1 << 31, 1 << 29], "ordered every call"


class GraphingClient(KeepingClient):
    """A client whose graphs keep what they were made of and count their launches; a graph
    of ``stale`` ones says its kernels are no longer the client's."""

    def __init__(self) -> None:
        super().__init__()
        self.graphs: list[Graph] = []
        self.stale = False

    def graph(self, launches: Any) -> Graph:
        made = Graph(self, tuple(launches))
        self.graphs.append(made)
        return made


class Graph:
    def __init__(self, client: GraphingClient, launches: tuple[Any, ...]) -> None:
        self.client, self.launches, self.runs = client, launches, 0

    def launch(self) -> bool:
        if self.client.stale:
            return False
        self.runs += 1
        return True


def test_a_replay_on_the_same_addresses_runs_one_graph_of_the_last_replays_launches() -> None:
    client = GraphingClient()
    x, out = Foreign((8, 1024), 1 << 30), Foreign((8, 1024), 1 << 29)
    for _ in range(5):
        cs.softmax(x, out=out, client=client)
    assert len(client.launches) == 2, "the call recorded, and the replay that bound them"
    (graph,) = client.graphs
    assert graph.runs == 3
    assert graph.launches == tuple((spec, count, args) for spec, count, args in client.launches[1:])
    assert client.adopted.count(1 << 30) == 5, "the producers' streams are waited on still"
    cs.softmax(Foreign((8, 1024), 1 << 31), out=out, client=client)
    cs.softmax(Foreign((8, 1024), 1 << 31), out=out, client=client)
    assert len(client.launches) == 3 and len(client.graphs) == 2, "other addresses, another"
    assert client.graphs[1].launches[0][2][0].ptr == 1 << 31
    client.stale = True
    cs.softmax(Foreign((8, 1024), 1 << 31), out=out, client=client)
    assert len(client.launches) == 4, "a graph of kernels loaded again launches one by one"
    client.stale = False
    cs.softmax(Foreign((8, 1024), 1 << 31), out=out, client=client)
    assert len(client.graphs) == 3 and client.graphs[2].runs == 1


def test_replayed_launches_keep_none_of_the_callers_arrays_alive() -> None:
    client = KeepingClient()
    for _ in range(3):
        x, out = Foreign((8, 1024), 1 << 30), Foreign((8, 1024), 1 << 29)
        cs.softmax(x, out=out, client=client)
    client.launches.clear()
    gone = weakref.ref(x), weakref.ref(out)
    del x, out
    assert [ref() for ref in gone] == [None, None]


class TorchLike:
    """A CUDA tensor as PyTorch's type presents one: its layout through its own methods, and a
    ``__cuda_array_interface__`` naming no stream."""

    __module__ = "torch"

    def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...], ptr: int) -> None:
        self.shape, self._strides, self._ptr = shape, strides, ptr
        self.dtype, self.is_cuda, self.requires_grad = "float32", True, False
        self.reads = 0

    def data_ptr(self) -> int:
        return self._ptr

    def stride(self) -> tuple[int, ...]:
        return self._strides

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        self.reads += 1
        return {
            "shape": self.shape,
            "typestr": "<f4",
            "data": (self._ptr, False),
            "version": 2,
            "strides": tuple(4 * s for s in self._strides),
        }


def test_a_torch_tensors_signature_is_read_from_its_methods_not_its_interface(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = KeepingClient()
    out = TorchLike((8, 1024), (1024, 1), 1 << 29)
    cs.softmax(TorchLike((8, 1024), (1024, 1), 1 << 30), out=out, client=client)
    operands = _calls_of(rows, "operand", monkeypatch)
    again = TorchLike((8, 1024), (1024, 1), 1 << 31)
    out.reads = 0
    cs.softmax(again, out=out, client=client)
    assert operands == [] and again.reads == 0 and out.reads == 0
    assert client.launches[-1][2][0].ptr == 1 << 31
    cs.softmax(TorchLike((8, 1024), (1, 8), 1 << 30), out=out, client=client)
    assert operands, "another stride is another signature"


def test_a_replay_at_the_last_addresses_asks_no_device_again_but_waits_on_streams() -> None:
    client = KeepingClient()
    x, out = TorchLike((8, 1024), (1024, 1), 1 << 30), TorchLike((8, 1024), (1024, 1), 1 << 29)
    cs.softmax(x, out=out, client=client)
    client.adopted.clear()
    for _ in range(3):
        cs.softmax(x, out=out, client=client)
    assert client.adopted == [1 << 30, 1 << 29], "a stream-less array's device is asked once"
    x._ptr = 1 << 31
    cs.softmax(x, out=out, client=client)
    assert client.adopted[2:] == [1 << 31, 1 << 29], "another address is asked again"
    streamed = Foreign((8, 1024), 1 << 28)
    for _ in range(3):
        cs.softmax(streamed, out=out, client=client)
    assert client.adopted[4:].count(1 << 28) == 3, "a producer's stream is waited on every call"


def test_the_very_same_call_again_runs_its_graph_without_reading_a_signature(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = GraphingClient()
    x, out = TorchLike((8, 1024), (1024, 1), 1 << 30), TorchLike((8, 1024), (1024, 1), 1 << 29)
    for _ in range(4):
        assert cs.softmax(x, out=out, client=client) is out
    signatures = _calls_of(replay, "_signature", monkeypatch)
    for _ in range(4):
        assert cs.softmax(x, out=out, client=client) is out
    assert signatures == [] and client.graphs[-1].runs == 6
    assert len(client.launches) == 2, "nothing launched one by one"


def test_the_very_same_call_with_a_stale_graph_reads_its_signature_and_launches_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = GraphingClient()
    x, out = TorchLike((8, 1024), (1024, 1), 1 << 30), TorchLike((8, 1024), (1024, 1), 1 << 29)
    for _ in range(4):
        cs.softmax(x, out=out, client=client)
    launched = len(client.launches)
    client.stale = True
    signatures = _calls_of(replay, "_signature", monkeypatch)
    cs.softmax(x, out=out, client=client)
    assert signatures, "a remembered call whose graph is stale falls back to its signature"
    assert len(client.launches) == launched + 1, "and its launches run one by one"
    client.stale = False
    cs.softmax(x, out=out, client=client)
    assert client.graphs[-1].runs == 1, "the next call on those addresses runs a new graph"
    assert len(client.launches) == launched + 1, "launching nothing one by one"


def test_new_arrays_at_the_same_addresses_each_call_are_not_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = GraphingClient()
    remembered = _calls_of(replay, "_again_of", monkeypatch)
    for _ in range(6):
        x = TorchLike((8, 1024), (1024, 1), 1 << 30)
        out = TorchLike((8, 1024), (1024, 1), 1 << 29)
        cs.softmax(x, out=out, client=client)
    assert client.graphs[-1].runs == 4 and remembered == []


@pytest.mark.parametrize(
    "change",
    ["address", "shape", "strides", "gradient", "object", "keyword", "settings"],
)
def test_a_call_unlike_the_last_one_reads_its_signature_again(
    change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = GraphingClient()
    x, out = TorchLike((8, 1024), (1024, 1), 1 << 30), TorchLike((8, 1024), (1024, 1), 1 << 29)
    for _ in range(4):
        cs.softmax(x, out=out, client=client)
    signatures = _calls_of(replay, "_signature", monkeypatch)
    kwargs: dict[str, Any] = {"out": out, "client": client}
    if change == "address":
        x._ptr = 1 << 31
    elif change == "shape":
        for t in (x, out):
            t.shape, t._strides = (16, 512), (512, 1)
    elif change == "strides":
        x._strides = (1, 8)
    elif change == "gradient":
        x.requires_grad = True
    elif change == "object":
        x = TorchLike((8, 1024), (1024, 1), 1 << 30)
    elif change == "keyword":
        kwargs = {"client": client, "out": TorchLike((8, 1024), (1024, 1), 1 << 29)}
    else:
        monkeypatch.setattr(config, "_current", dataclasses.replace(config.settings()))
    cs.softmax(x, **kwargs)
    assert signatures, f"a call with another {change} is read as it is"


def test_the_same_objects_under_swapped_keywords_are_another_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = GraphingClient()
    x, out = TorchLike((8, 1024), (1024, 1), 1 << 30), TorchLike((8, 1024), (1024, 1), 1 << 29)
    w, b = TorchLike((1024,), (1,), 1 << 28), TorchLike((1024,), (1,), 1 << 27)
    for _ in range(4):
        cs.layer_norm(x, weight=w, bias=b, out=out, client=client)
    signatures = _calls_of(replay, "_signature", monkeypatch)
    cs.layer_norm(x, weight=w, bias=b, out=out, client=client)
    assert signatures == [], "the very same call runs its graph again"
    cs.layer_norm(x, bias=w, weight=b, out=out, client=client)
    assert signatures, "the same objects in one another's places are read as they are"


def test_a_remembered_call_keeps_none_of_its_arrays_alive() -> None:
    client = GraphingClient()
    x, out = TorchLike((8, 1024), (1024, 1), 1 << 30), TorchLike((8, 1024), (1024, 1), 1 << 29)
    for _ in range(4):
        cs.softmax(x, out=out, client=client)
    client.graphs.clear()
    client.launches.clear()
    gone = weakref.ref(x), weakref.ref(out)
    del x, out
    assert [ref() for ref in gone] == [None, None]


def test_another_librarys_array_is_waited_on_at_every_call_of_a_graph() -> None:
    client = GraphingClient()
    x, out = Foreign((8, 1024), 1 << 28), Foreign((8, 1024), 1 << 27)
    for _ in range(5):
        cs.softmax(x, out=out, client=client)
    assert client.graphs[-1].runs == 3
    assert client.adopted.count(1 << 28) == 5


@pytest.fixture(scope="module")
def gpu() -> Any:
    try:
        return cj.client("cuda")
    except BackendUnavailableError as e:
        pytest.skip(f"needs an NVIDIA GPU: {e}")


@pytest.mark.gpu
def test_replayed_calls_on_new_data_compute_what_numpy_does(gpu: Any) -> None:
    rng = np.random.default_rng(12)
    for _ in range(3):
        x = rng.standard_normal((33, 1025)).astype(np.float32)
        w = rng.random(1025, dtype=np.float32)
        b = rng.random(1025, dtype=np.float32)
        flat = rng.random(100003, dtype=np.float32)
        dx, dw, db, dflat = (gpu.to_device(a) for a in (x, w, b, flat))
        out = gpu.empty((33, 1025), cj.f32)
        cs.softmax(dx, out=out)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(gpu.read(out), e / e.sum(axis=1, keepdims=True), rtol=1e-5)
        normed = gpu.read(cs.layer_norm(dx, dw, db, 1e-5))
        mu, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
        np.testing.assert_allclose(normed, (x - mu) / np.sqrt(var + 1e-5) * w + b, atol=1e-4)
        np.testing.assert_allclose(
            gpu.read(cs.sum(dflat)).item(), flat.astype(np.float64).sum(), rtol=1e-5
        )
        np.testing.assert_allclose(
            gpu.read(cs.mean(dflat)).item(), flat.astype(np.float64).mean(), rtol=1e-5
        )
        np.testing.assert_allclose(
            gpu.read(cs.cumsum(dflat)), np.cumsum(flat.astype(np.float64)), rtol=1e-4, atol=1e-2
        )


@cj.kernel
def _copy(src: cj.Array[cj.f32], dst: cj.Array[cj.f32]):
    i = cj.ABSOLUTE_POS
    if i < dst.len():
        dst[i] = src[i]


@pytest.mark.gpu
def test_calls_on_the_same_memory_run_as_a_graph_that_reads_what_it_holds_now(
    gpu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cubejit.backends.cuda.graphs import LaunchGraph

    graphed = _calls_of(LaunchGraph, "launch", monkeypatch)
    rng = np.random.default_rng(21)
    dx, dw, db = gpu.empty((33, 1025), cj.f32), gpu.empty(1025, cj.f32), gpu.empty(1025, cj.f32)
    dflat = gpu.empty(100003, cj.f32)
    out, normed = gpu.empty((33, 1025), cj.f32), gpu.empty((33, 1025), cj.f32)
    running = gpu.empty(100003, cj.f32)
    graphed_by_round = []
    for _ in range(5):
        x = rng.standard_normal((33, 1025)).astype(np.float32)
        w, b = rng.random(1025, dtype=np.float32), rng.random(1025, dtype=np.float32)
        flat = rng.random(100003, dtype=np.float32)
        for host, device in ((x, dx), (w, dw), (b, db), (flat, dflat)):
            _copy.launch(gpu, cj.cdiv(host.size, 256), 256, gpu.to_device(host.ravel()), device)
        cs.softmax(dx, out=out)
        cs.layer_norm(dx, dw, db, 1e-5, out=normed)
        cs.cumsum(dflat, out=running)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(gpu.read(out), e / e.sum(axis=1, keepdims=True), rtol=1e-5)
        mu, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
        np.testing.assert_allclose(
            gpu.read(normed), (x - mu) / np.sqrt(var + 1e-5) * w + b, atol=1e-4
        )
        np.testing.assert_allclose(
            gpu.read(running), np.cumsum(flat.astype(np.float64)), rtol=1e-4, atol=1e-2
        )
        graphed_by_round.append(len(graphed))
    # A signature seen before this test replays from its first call here.
    assert np.diff(graphed_by_round)[-2:].tolist() == [3, 3], "all three, from the third call"
