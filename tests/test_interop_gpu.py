"""Zero-copy exchange with PyTorch and CuPy on a real GPU, and a large staged transfer.

Run on a GPU machine: ``OXICUDA_BACKEND=cuda python3 -m pytest -q tests/test_interop_gpu.py``.
Every test is marked ``gpu`` (skipped elsewhere by tests/conftest.py); PyTorch and CuPy tests skip
when the package is not installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.memory import from_cuda_array_interface, from_dlpack

pytestmark = pytest.mark.gpu


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA device")
    return torch


@pytest.fixture
def cupy():
    return pytest.importorskip("cupy")


def test_torch_tensor_to_oxicuda_through_cai_shares_memory(torch, rng):
    host = rng.standard_normal((64, 33)).astype(np.float32)
    t = torch.from_numpy(host).cuda()
    dev = from_cuda_array_interface(t)
    assert dev.ptr == t.data_ptr() and dev.shape == (64, 33)
    np.testing.assert_array_equal(dev.get(), host)
    dev[3:9, ::2].fill(-2.0)  # write on our side, read on theirs
    torch.cuda.synchronize()
    host[3:9, ::2] = -2.0
    np.testing.assert_array_equal(t.cpu().numpy(), host)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "complex64", "bool"])
def test_torch_tensor_to_oxicuda_through_dlpack_shares_memory(torch, rng, dtype):
    tdt = getattr(torch, dtype)
    t = (torch.randn(40, 17, device="cuda") * 10).to(tdt)
    view = t[::2, 1:].t()
    dev = from_dlpack(view)
    assert dev.ptr == view.data_ptr() and dev.shape == tuple(view.shape)
    assert tuple(s // dev.itemsize for s in dev.strides) == tuple(view.stride())
    expect = view.contiguous().cpu().view(torch.uint8).numpy().tobytes()
    assert dev.get().tobytes() == expect
    dev.fill(0)
    torch.cuda.synchronize()
    assert not (view != 0).any().item()


def test_oxicuda_to_torch_through_dlpack_and_cai_shares_memory(torch, rng):
    host = rng.standard_normal((128, 96))
    dev = oxicuda.asarray(host)
    t = torch.from_dlpack(dev)
    assert t.data_ptr() == dev.ptr and t.dtype == torch.float64
    t.mul_(2.0)  # write on their side, read on ours
    torch.cuda.synchronize()
    np.testing.assert_array_equal(dev.get(), host * 2.0)
    t2 = torch.as_tensor(dev.T, device="cuda")  # __cuda_array_interface__, strided
    assert t2.data_ptr() == dev.ptr and t2.stride() == (1, 96)
    np.testing.assert_array_equal(t2.cpu().numpy(), (host * 2.0).T)


def test_asarray_takes_torch_bfloat16_without_a_copy(torch):
    t = torch.randn(33, device="cuda").to(torch.bfloat16)
    dev = oxicuda.asarray(t)  # DLPack first: PyTorch's CAI refuses bfloat16
    assert dev.ptr == t.data_ptr() and dev.dtype == oxicuda.memory.BFLOAT16
    assert dev.get().tobytes() == t.cpu().view(torch.uint8).numpy().tobytes()


def test_torch_legacy_capsule(torch, rng):
    from torch.utils import dlpack as tdl

    t = torch.arange(1000, device="cuda", dtype=torch.int32)
    dev = from_dlpack(tdl.to_dlpack(t))
    assert dev.ptr == t.data_ptr()
    np.testing.assert_array_equal(dev.get(), np.arange(1000, dtype=np.int32))
    back = tdl.from_dlpack(dev.__dlpack__())
    assert back.data_ptr() == t.data_ptr()


def test_cupy_both_ways_through_cai_and_dlpack(cupy, rng):
    host = rng.standard_normal((50, 70)).astype(np.float32)
    c = cupy.asarray(host)
    dev = from_cuda_array_interface(c)
    assert dev.ptr == c.data.ptr
    dev.fill(3.0)
    cupy.cuda.Device().synchronize()
    assert float(c.sum()) == 3.0 * c.size
    d2 = from_dlpack(c[:, ::-1])
    assert d2.ptr == c[:, ::-1].data.ptr
    np.testing.assert_array_equal(d2.get(), np.full((50, 70), 3.0, np.float32))
    mine = oxicuda.asarray(host)
    c2 = cupy.asarray(mine)  # CAI from us
    assert c2.data.ptr == mine.ptr
    c2 *= 2
    cupy.cuda.Device().synchronize()
    np.testing.assert_array_equal(mine.get(), host * 2)
    c3 = cupy.from_dlpack(mine)
    assert c3.data.ptr == mine.ptr and cupy.asnumpy(c3).tobytes() == (host * 2).tobytes()


def test_256_mib_staged_transfer_is_bit_exact(rng):
    n = (256 << 20) // 8
    host = rng.integers(0, 1 << 63, n, dtype=np.int64)
    dev = oxicuda.asarray(host)
    back = dev.get()
    assert back.tobytes() == host.tobytes()
    dev[::2].fill(0)  # then a strided view through the device
    host[::2] = 0
    assert dev.get().tobytes() == host.tobytes()


def test_pool_pointers_are_real_device_memory():
    from oxicuda.driver.backend import api
    from oxicuda.driver.enums import MEMORY_TYPES, POINTER_ATTRIBUTES

    dev = oxicuda.zeros(1 << 20)
    kind = api().pointer_get_attribute(POINTER_ATTRIBUTES["MEMORY_TYPE"], dev.ptr)
    assert kind == MEMORY_TYPES["DEVICE"]
    base, size = api().mem_get_address_range(dev.ptr)
    assert base == dev.ptr and size >= dev.nbytes
