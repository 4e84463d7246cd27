"""DLPack and CUDA Array Interface exchange on the live backend (the emulator in CI)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import oxicuda
from oxicuda.memory import SUPPORTED_DTYPES, interop
from oxicuda.memory.interop import from_cuda_array_interface, from_dlpack


class CAIHolder:
    """A foreign producer exposing only ``__cuda_array_interface__``."""

    def __init__(self, cai: dict, keep: object = None) -> None:
        self.__cuda_array_interface__ = cai
        self.keep = keep


def test_cai_export_describes_the_array(rng):
    dev = oxicuda.asarray(rng.standard_normal((4, 6)).astype(np.float32))
    cai = dev.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (4, 6) and cai["typestr"] == "<f4"
    assert cai["data"] == (dev.ptr, False) and cai["strides"] is None and cai["stream"] == 1
    assert dev.T.__cuda_array_interface__["strides"] == (4, 24)


def test_cai_consumer_is_zero_copy_and_shares_writes(rng):
    host = rng.standard_normal((5, 8))
    dev = oxicuda.asarray(host)
    view = dev[1:, ::2]
    holder = CAIHolder(view.__cuda_array_interface__, keep=view)
    imported = oxicuda.asarray(holder)
    assert imported.ptr == view.ptr and imported.strides == view.strides
    np.testing.assert_array_equal(imported.get(), host[1:, ::2])
    imported.fill(-1.0)
    host[1:, ::2] = -1.0
    np.testing.assert_array_equal(dev.get(), host)


@pytest.mark.slow
def test_cai_consumer_keeps_the_producer_alive(rng):
    host = rng.integers(0, 100, 64).astype(np.int64)
    dev = oxicuda.asarray(host)
    imported = from_cuda_array_interface(CAIHolder(dev.__cuda_array_interface__, keep=dev))
    del dev
    gc.collect()
    np.testing.assert_array_equal(imported.get(), host)


def test_cai_read_only_and_bad_dictionaries():
    dev = oxicuda.zeros(4)
    cai = dict(dev.__cuda_array_interface__, data=(dev.ptr, True))
    ro = from_cuda_array_interface(CAIHolder(cai, dev))
    assert ro.readonly
    with pytest.raises(ValueError, match="read-only"):
        ro.fill(1.0)
    with pytest.raises(ValueError, match="mask"):
        from_cuda_array_interface(CAIHolder(dict(cai, mask=object()), dev))
    with pytest.raises(ValueError, match="lacks shape"):
        from_cuda_array_interface(CAIHolder({"typestr": "<f4"}, dev))
    with pytest.raises(TypeError, match="allowed dtypes"):
        from_cuda_array_interface(CAIHolder(dict(cai, typestr="|O8"), dev))


@pytest.mark.parametrize("versioned", [True, False])
@pytest.mark.parametrize("name", ["float32", "bfloat16", "int8", "complex128", "bool", "uint64"])
def test_dlpack_round_trip_gives_the_same_pointer_and_data(rng, versioned, name):
    dt = SUPPORTED_DTYPES[name]
    host = rng.integers(0, 2 if name == "bool" else 120, (3, 7)).astype(np.uint8)
    host = host.astype(bool) if name == "bool" else oxicuda.memory.host_astype(host, dt)
    dev = oxicuda.asarray(host)
    view = dev[::-1, 1::3]
    capsule = view.__dlpack__(max_version=(1, 0) if versioned else None)
    assert type(capsule).__name__ == "PyCapsule"
    imported = from_dlpack(capsule)
    assert imported.ptr == view.ptr and imported.strides == view.strides
    assert imported.dtype == dt and imported.shape == view.shape
    assert imported.get().tobytes() == np.asarray(host[::-1, 1::3], order="C").tobytes()
    with pytest.raises(ValueError, match="consumed once"):
        from_dlpack(capsule)


@pytest.mark.slow
def test_from_dlpack_takes_producers_and_calls_the_deleter_when_done(rng):
    host = rng.standard_normal(50).astype(np.float32)
    dev = oxicuda.asarray(host)
    before = len(interop._exported)
    imported = oxicuda.from_dlpack(dev)
    assert imported.ptr == dev.ptr and len(interop._exported) == before + 1
    del dev
    gc.collect()
    np.testing.assert_array_equal(imported.get(), host)  # the export keeps the memory alive
    del imported
    gc.collect()
    assert len(interop._exported) == before  # the deleter ran


def test_an_unconsumed_capsule_frees_its_tensor():
    dev = oxicuda.zeros(10)
    before = len(interop._exported)
    capsule = dev.__dlpack__()
    assert len(interop._exported) == before + 1
    del capsule
    gc.collect()
    interop.sweep_exports()  # capsules have no destructor (see interop): the next sweep frees it
    assert len(interop._exported) == before


def test_asarray_accepts_dlpack_producers_on_cuda_devices(rng):
    class Producer:
        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self, stream=None, max_version=None):
            return self.arr.__dlpack__(stream=stream, max_version=max_version)

        def __dlpack_device__(self):
            return self.arr.__dlpack_device__()

    host = rng.standard_normal((2, 3))
    dev = oxicuda.asarray(host)
    got = oxicuda.asarray(Producer(dev))
    assert got.ptr == dev.ptr
    np.testing.assert_array_equal(oxicuda.asnumpy(Producer(dev)), host)


def test_dlpack_device_and_refusals():
    dev = oxicuda.zeros(3)
    assert dev.__dlpack_device__() == (2, dev.device)
    with pytest.raises(BufferError, match="cannot be exported"):
        dev.__dlpack__(dl_device=(2, dev.device + 1))
    with pytest.raises(BufferError, match="needs a copy"):
        dev.__dlpack__(dl_device=(1, 0), copy=False)
    with pytest.raises(BufferError, match="device type 1"):
        from_dlpack(np.zeros(3))
    with pytest.raises(ValueError, match="ambiguous"):
        dev.__dlpack__(stream=0)
    copied = from_dlpack(dev.__dlpack__(copy=True, max_version=(1, 0)))
    assert copied.ptr != dev.ptr


def test_read_only_flag_travels_in_versioned_capsules():
    dev = oxicuda.zeros(4)
    ro = from_cuda_array_interface(CAIHolder(dict(dev.__cuda_array_interface__,
                                                  data=(dev.ptr, True)), dev))
    assert from_dlpack(ro.__dlpack__(max_version=(1, 0))).readonly


def test_dlpack_byte_strides_wrap_to_signed_steps():
    from oxicuda.memory.interop import _signed64

    assert _signed64(-4) == -4 and _signed64(280) == 280
    assert _signed64(((1 << 62) - 1) * 4) == -4  # CuPy 14's export of c[:, ::-1] (float32)
    assert _signed64(((1 << 61) - 1) * 8) == -8
