"""Bounds are an array's own bytes, not its rounded pool block: the raw-pointer BLAS checks
refuse a call that would touch one byte past the array (at the cost of a dict lookup for an
array's own pointer), and the emulator faults on any kernel access past the requested bytes,
and on any access to a block that went back to the pool."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.cuda import cublas
from oxicuda.driver.backend import api
from oxicuda.driver.errors import CudaError, LaunchError
from oxicuda.memory.pool import bucket_size, live_block_size

ONE = np.array(1.0, np.float32)
ZERO = np.array(0.0, np.float32)


@pytest.fixture
def handle():
    h = cublas.create()
    yield h
    cublas.destroy(h)


def _dev(rng, shape):
    return oxicuda.asarray(rng.standard_normal(shape).astype(np.float32))


def test_the_pool_records_the_requested_size_of_each_block():
    a = oxicuda.empty(12, np.float32)  # 48 bytes in a 512-byte bucket
    assert a.memory.size == bucket_size(48) == 512
    assert live_block_size(a.ptr) == 48 == a.nbytes


def test_sgemm_4x4_into_a_3x4_c_is_refused_and_writes_nothing(rng, handle):
    a, b = _dev(rng, (4, 4)), _dev(rng, (4, 4))
    c = oxicuda.asarray(np.full((3, 4), np.nan, np.float32))  # 48 bytes; 4x4 needs 64
    with oxicuda.trace() as t, pytest.raises(cublas.CUBLASError, match="past the end"):
        cublas.sgemm(handle, 0, 0, 4, 4, 4, ONE.ctypes.data, a.ptr, 4, b.ptr, 4, ZERO.ctypes.data, c.ptr, 4)
    assert t.launches == []
    assert np.isnan(c.get()).all()


def test_sdot_of_20_over_10_element_arrays_is_refused(rng, handle):
    x, y = _dev(rng, 10), _dev(rng, 10)
    out = np.full((), np.nan, np.float32)
    with pytest.raises(cublas.CUBLASError, match="past the end"):
        cublas.sdot(handle, 20, x.ptr, 1, y.ptr, 1, out.ctypes.data)
    assert np.isnan(out)
    cublas.sdot(handle, 10, x.ptr, 1, y.ptr, 1, out.ctypes.data)  # the right size computes
    np.testing.assert_allclose(out, np.dot(x.get().astype(np.float64), y.get()), rtol=1e-5)


def test_strided_batched_gemm_with_one_batch_too_many_is_refused(rng, handle):
    n, batches = 4, 3
    a, b = _dev(rng, (batches, n, n)), _dev(rng, (batches, n, n))
    c = oxicuda.asarray(np.full((batches, n, n), np.nan, np.float32))
    s = n * n
    args = (ONE.ctypes.data, a.ptr, n, s, b.ptr, n, s, ZERO.ctypes.data, c.ptr, n, s)
    with pytest.raises(cublas.CUBLASError, match="past the end"):
        cublas.sgemmStridedBatched(handle, 0, 0, n, n, n, *args, batches + 1)
    assert np.isnan(c.get()).all()
    cublas.sgemmStridedBatched(handle, 0, 0, n, n, n, *args, batches)
    # column-major C = A @ B over row-major storage reads back as b @ a per batch
    ref = b.get().astype(np.float64) @ a.get().astype(np.float64)
    np.testing.assert_allclose(c.get(), ref, rtol=1e-5, atol=1e-5)


def test_a_pointer_inside_an_array_is_checked_against_the_array_not_the_block(rng, handle):
    x, y = _dev(rng, 10), _dev(rng, 64)
    out = np.zeros((), np.float32)
    with pytest.raises(cublas.CUBLASError, match="past the end of its array"):
        cublas.sdot(handle, 8, x.ptr + 12, 1, y.ptr, 1, out.ctypes.data)  # elements 3..10
    cublas.sdot(handle, 7, x.ptr + 12, 1, y.ptr, 1, out.ctypes.data)  # elements 3..9 fit
    np.testing.assert_allclose(out, np.dot(x.get()[3:].astype(np.float64), y.get()[:7]), rtol=1e-5)


_STORE_ONE_PAST = """.version 8.0
.target sm_86
.address_size 64

.visible .entry store_n(
\t.param .u64 p,
\t.param .u32 n
)
{
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<4>;
\t.reg .pred %p<2>;
\t.reg .f32 %f<2>;
\tld.param.u64 %rd1, [p];
\tld.param.u32 %r1, [n];
\tmov.u32 %r2, %tid.x;
\tsetp.ge.u32 %p1, %r2, %r1;
\t@%p1 ret;
\tmul.wide.u32 %rd2, %r2, 4;
\tadd.s64 %rd3, %rd1, %rd2;
\tmov.f32 %f1, 0f3F800000;
\tst.global.f32 [%rd3], %f1;
\tret;
}
"""


def _emulator_only():
    if api().name != "emulator":
        pytest.skip("the emulator's exact bounds; a GPU does not fault inside a pool block")


def test_emulator_faults_on_a_store_one_element_past_a_64_float_array():
    _emulator_only()
    fn = oxicuda.driver.Module(_STORE_ONE_PAST).get_function("store_n")
    a = oxicuda.asarray(np.full(64, np.nan, np.float32))  # 256 bytes in a 512-byte block
    fn(1, 64, [a, np.uint32(64)])
    np.testing.assert_array_equal(a.get(), np.ones(64, np.float32))
    with pytest.raises(LaunchError, match="past the end of the 256 bytes in use"):
        fn(1, 65, [a, np.uint32(65)])


def test_emulator_faults_on_128_threads_storing_into_a_64_float_array():
    _emulator_only()
    fn = oxicuda.driver.Module(_STORE_ONE_PAST).get_function("store_n")
    a = oxicuda.empty(64, np.float32)
    with pytest.raises(LaunchError, match="global access"):
        fn(1, 128, [a, np.uint32(128)])


def test_emulator_copies_stop_at_the_array_too():
    _emulator_only()
    a = oxicuda.empty(10, np.float32)
    host = np.zeros(11, np.float32)
    with pytest.raises(CudaError, match="not inside one live allocation"):
        api().memcpy_dtoh(host.ctypes.data, a.ptr, 44)


def test_emulator_faults_on_a_block_that_went_back_to_the_pool():
    _emulator_only()
    fn = oxicuda.driver.Module(_STORE_ONE_PAST).get_function("store_n")
    a = oxicuda.empty(64, np.float32)
    stale = a.ptr
    a.memory.free()
    with pytest.raises(LaunchError, match="freed block"):
        fn(1, 1, [stale, np.uint32(1)])
