"""Shared by the GPU tests of the CuPy-shaped cuBLAS surface: CuPy (skipped when absent), a pair
of handles (ours, CuPy's cuBLAS) and host-scalar pointers."""

from __future__ import annotations

import numpy as np
import pytest

from oxicuda.cuda import cublas as ox


@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


@pytest.fixture
def handles(cp):
    from cupy.cuda import cublas as vendor

    ho, hv = ox.create(), vendor.create()
    yield ho, hv, vendor
    ox.destroy(ho)
    vendor.destroy(hv)


def hp(value, dtype):
    arr = np.array(value, dtype=dtype)
    return arr, arr.ctypes.data
