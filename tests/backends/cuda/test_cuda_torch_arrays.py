"""PyTorch's tensors read from their own methods, as their ``__cuda_array_interface__`` would
describe them (the interface is built in Python at each read): against a stand-in of PyTorch's
tensor type here, and real tensors launched on the GPU in ``tests/std``."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import pytest
from test_cuda_launch_args import SAXPY, make

from cubejit.backends.cuda import buffer
from cubejit.backends.cuda.buffer import CudaBuffer, device_array
from cubejit.ir.types import f32


class Tensor:
    """A CUDA tensor as PyTorch's type presents one: its layout through its own methods, and an
    interface computed from them as PyTorch's is (no stream; no strides when contiguous; it
    refuses a tensor needing its gradient)."""

    __module__ = "torch"
    ITEMSIZES = {"torch.float32": ("<f4", 4), "torch.float16": ("<f2", 2)}

    def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...], ptr: int, dtype: str):
        self.shape, self._strides, self._ptr, self.dtype = shape, strides, ptr, dtype
        self.is_cuda, self.requires_grad = True, False
        self.reads = 0

    def data_ptr(self) -> int:
        return self._ptr

    def stride(self) -> tuple[int, ...]:
        return self._strides

    def numel(self) -> int:
        count = 1
        for extent in self.shape:
            count *= extent
        return count

    def element_size(self) -> int:
        return self.ITEMSIZES[self.dtype][1]

    def is_contiguous(self) -> bool:
        step = 1
        for extent, stride in reversed(list(zip(self.shape, self._strides, strict=True))):
            if extent != 1 and stride != step:
                return False
            step *= extent
        return True

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if not self.is_cuda:
            raise AttributeError("a host tensor has no __cuda_array_interface__")
        if self.requires_grad:
            raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad")
        self.reads += 1
        typestr, item = self.ITEMSIZES[self.dtype]
        strides = None if self.is_contiguous() else tuple(item * s for s in self._strides)
        ptr = self._ptr if self.numel() else 0
        return {
            "typestr": typestr,
            "shape": tuple(self.shape),
            "strides": strides,
            "data": (ptr, False),
            "version": 2,
        }


@pytest.fixture(autouse=True)
def unseen() -> Iterator[None]:
    """Each test starts as a process that has seen no tensor type or dtype yet; what the
    process had learnt is given back after it."""
    learnt = dict(buffer.TORCH_TYPES), dict(buffer._torch_dtypes)
    buffer.TORCH_TYPES.clear()
    buffer._torch_dtypes.clear()
    yield
    for table, entries in zip((buffer.TORCH_TYPES, buffer._torch_dtypes), learnt, strict=True):
        table.clear()
        table.update(entries)


@pytest.mark.parametrize(
    ("shape", "strides", "dtype"),
    [
        ((67, 1031), (1031, 1), "torch.float32"),
        ((1031, 67), (1, 1031), "torch.float32"),
        ((8, 5), (20, 2), "torch.float16"),
        ((4, 1, 6), (6, 99, 1), "torch.float32"),
        ((0, 3), (3, 1), "torch.float32"),
    ],
)
def test_a_tensor_is_read_from_its_methods_as_its_interface_would_give_it(
    shape: tuple[int, ...], strides: tuple[int, ...], dtype: str
) -> None:
    first = Tensor(shape, strides, 1 << 30, dtype)
    assert device_array(first, None) == buffer._from_interface(first.__cuda_array_interface__)
    later = Tensor(shape, strides, 1 << 31, dtype)
    found = device_array(later, None)
    assert later.reads == 0, "once its type and dtype are known, the interface is not read"
    assert found == buffer._from_interface(later.__cuda_array_interface__)


def test_a_tensor_the_interface_refuses_is_still_refused_by_it() -> None:
    device_array(Tensor((4,), (1,), 1 << 30, "torch.float32"), None)
    needing = Tensor((4,), (1,), 1 << 30, "torch.float32")
    needing.requires_grad = True
    with pytest.raises(RuntimeError, match="requires grad"):
        device_array(needing, None)
    host = Tensor((4,), (1,), 1 << 30, "torch.float32")
    host.is_cuda = False
    assert device_array(host, None) is None


def test_a_launch_with_tensors_reads_no_interface_after_the_first() -> None:
    launcher, client, driver = make(SAXPY)
    out = CudaBuffer(client, 0x2000, 15, f32, None)
    tensors = [Tensor((3, 5), (5, 1), 0xABC000 + 0x1000 * k, "torch.float32") for k in range(3)]
    for tensor in tensors:
        launcher(1, (1.0, tensor, out))
    assert tensors[0].reads and [t.reads for t in tensors[1:]] == [0, 0]
    assert [struct.unpack("<Q", params[1]) for params in driver.params] == [
        (t.data_ptr(),) for t in tensors
    ]
    assert struct.unpack("<I", driver.params[-1][2][:4]) == (15,)
    assert [a.stream for a in client.adopted] == [None, None, None]
