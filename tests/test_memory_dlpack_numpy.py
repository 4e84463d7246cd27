"""numpy.from_dlpack of a device array: numpy refuses device memory with its own clean error
(no SystemError), nothing is printed as an ignored exception from a capsule destructor, and the
refused export is released."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import oxicuda
from oxicuda.memory import interop


def test_numpy_from_dlpack_of_a_device_array_fails_cleanly(monkeypatch):
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    dev = oxicuda.asarray(np.arange(6.0))
    before = interop.sweep_exports()
    with pytest.raises((BufferError, RuntimeError)) as info:
        np.from_dlpack(dev)
    assert not isinstance(info.value, SystemError)
    assert "device" in str(info.value).lower()
    gc.collect()
    assert unraisable == []
    assert interop.sweep_exports() == before  # the refused capsule's export was released
    np.testing.assert_array_equal(dev.get(), np.arange(6.0))  # and the array is intact


def test_a_consumed_capsule_is_released_by_its_deleter_only():
    dev = oxicuda.asarray(np.arange(3.0))
    before = interop.sweep_exports()
    view = oxicuda.from_dlpack(dev.__dlpack__(max_version=(1, 0)))
    assert interop.sweep_exports() == before + 1  # the consumer holds the tensor
    np.testing.assert_array_equal(view.get(), np.arange(3.0))
    del view
    gc.collect()
    assert interop.sweep_exports() == before


def test_numpy_from_dlpack_with_device_cpu_gets_a_host_copy(rng):
    host = rng.standard_normal((5, 7))
    dev = oxicuda.asarray(host)
    view = dev[1:, ::-2]
    got = np.from_dlpack(view, device="cpu")
    np.testing.assert_array_equal(got, host[1:, ::-2])
    got[...] = 0.0  # a copy: the device array is untouched
    np.testing.assert_array_equal(dev.get(), host)
    with pytest.raises(BufferError, match="needs a copy"):
        np.from_dlpack(dev, device="cpu", copy=False)
    with pytest.raises(BufferError):
        dev.__dlpack__(dl_device=(2, 7))
