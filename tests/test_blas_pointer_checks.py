"""Raw-pointer GEMM and GEMV (``gemm_colmajor``, ``gemv_colmajor`` and the cuBLAS-compatible
calls) refuse an operand whose bytes do not lie inside one device allocation: a buffer too short
for the shape, an address that is no device memory, a bad device scalar or pointer table. They
raise ValueError naming the operand before any launch, on a first call and on a cached call
signature alike, and write nothing. On the GPU such a call would fault the kernel instead, and a
fault poisons the context for the rest of the process."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import gemm_core
from oxicuda.blas.gemm_core import gemm_colmajor
from oxicuda.blas.gemv import gemv_colmajor
from oxicuda.cuda import cublas
from oxicuda.driver.backend import api

M = 48


@pytest.fixture(autouse=True)
def fresh_plans():
    gemm_core.clear_plan_cache()
    yield
    gemm_core.clear_plan_cache()


def _matrices(rng, n=3, shape=(M, M)):
    host = [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]
    return host, [oxicuda.asarray(h) for h in host]


def _unallocated(dev) -> int:
    """An aligned address far past every allocation of the live backend."""
    return (dev.ptr + (1 << 44)) & ~0xFF


def _near_end(dev, nbytes: int) -> int:
    """The address ``nbytes`` before the end of ``dev``'s own bytes (pointer checks and the
    emulator stop there, not at the end of the rounded pool block)."""
    return dev.ptr + dev.nbytes - nbytes


def _refused(call, pattern: str, *untouched) -> None:
    before = [x.get() for x in untouched]
    with oxicuda.trace() as t, pytest.raises(ValueError, match=pattern):
        call()
    assert t.launches == []
    for x, old in zip(untouched, before):
        np.testing.assert_array_equal(x.get(), old)


@pytest.mark.parametrize("cached", [False, True])
def test_gemm_refuses_short_and_unallocated_operands(rng, cached):
    (A, B, C0), (dA, dB, dC) = _matrices(rng)
    short = oxicuda.asarray(rng.standard_normal(M).astype(np.float32))  # one column, not M x M
    if cached:  # the same signature once with good pointers: later calls take the cached plan
        gemm_colmajor("N", "N", M, M, M, 1.0, dA.ptr, M, dB.ptr, M, 0.0, dC.ptr, M, dtype="float32")
        assert gemm_core.plan_cache_size() == 1
    dC.set(C0)

    def g(a=dA.ptr, b=dB.ptr, c=dC.ptr, **kw):
        return lambda: gemm_colmajor("N", "N", M, M, M, 1.0, a, M, b, M, 0.0, c, M, dtype="float32", **kw)
    _refused(g(a=short.ptr), r"gemm: A \(48x48, lda=48\): 9216 bytes from 0x[0-9a-f]+ run \d+ bytes past the end",
             dA, dB, dC, short)
    _refused(g(b=short.ptr), r"gemm: B \(48x48, ldb=48\).*past the end", dA, dB, dC, short)
    _refused(g(c=short.ptr), r"gemm: C \(48x48, ldc=48\).*past the end", dA, dB, dC, short)
    _refused(g(a=_unallocated(dA)), r"gemm: A .* is not device memory", dA, dB, dC)
    _refused(g(c=_unallocated(dA)), r"gemm: C .* is not device memory", dA, dB, dC)
    _refused(g(alpha_ptr=_unallocated(dA), beta_ptr=short.ptr), r"gemm: alpha_ptr", dA, dB, dC)
    # a block of a larger matrix is fine as long as it stays inside the allocation
    big = oxicuda.asarray(np.zeros((M, 2 * M), np.float32, order="F"))
    gemm_colmajor("N", "N", M, M, M, 1.0, dA.ptr, M, dB.ptr, M, 0.0, big.ptr + M * M * 4, M, dtype="float32")
    # (row-major host matrices read column-major are their transposes)
    np.testing.assert_allclose(big.get()[:, M:], A.T @ B.T, rtol=1e-4, atol=1e-4)
    _refused(lambda: gemm_colmajor("N", "N", M, M, M, 1.0, dA.ptr, M, dB.ptr, M, 0.0, big.ptr + M * M * 4 + 4, M,
                                   dtype="float32"), r"gemm: C .*past the end", big)


def test_strided_batched_spans_cover_every_batch_entry(rng):
    batch = 3
    dA = oxicuda.asarray(rng.standard_normal((batch, M, M)).astype(np.float32))
    dB = oxicuda.asarray(rng.standard_normal((batch, M, M)).astype(np.float32))
    dC = oxicuda.asarray(np.zeros((batch - 1, M, M), np.float32))  # one entry short

    def call():
        gemm_colmajor("N", "N", M, M, M, 1.0, dA.ptr, M, dB.ptr, M, 0.0, dC.ptr, M, dtype="float32", batch=batch,
                      stride_a=M * M, stride_b=M * M, stride_c=M * M)
    _refused(call, r"gemm: C \(48x48, ldc=48, batch=3\).*past the end", dA, dB, dC)


def test_pointer_array_batches_check_their_tables(rng):
    (_A, _B, _C), (dA, dB, dC) = _matrices(rng)
    tables = [oxicuda.asarray(np.array([d.ptr, d.ptr], np.uint64)) for d in (dA, dB, dC)]
    short = oxicuda.asarray(np.array([dC.ptr], np.uint64))
    short_ptr = _near_end(short, 8)  # room for one pointer of the two
    api().memcpy_htod(short_ptr, np.array([dC.ptr], np.uint64).ctypes.data, 8)

    def call(c_table):
        return lambda: gemm_colmajor("N", "N", M, M, M, 1.0, 0, M, 0, M, 0.0, 0, M, dtype="float32", batch=2,
                                     a_array_ptr=tables[0].ptr, b_array_ptr=tables[1].ptr, c_array_ptr=c_table)
    _refused(call(short_ptr), r"gemm: c_array_ptr \(a device array of 2 pointers\).*past the end", dC)
    _refused(call(_unallocated(dA)), r"gemm: c_array_ptr .* is not device memory", dC)


def test_gemv_refuses_short_and_unallocated_operands(rng):
    (A,), (dA,) = _matrices(rng, 1)
    x = oxicuda.asarray(rng.standard_normal(M).astype(np.float32))
    y = oxicuda.asarray(np.full(M, np.nan, np.float32))
    short = oxicuda.asarray(rng.standard_normal(M // 2).astype(np.float32))
    tail = _near_end(short, M * 2)  # room for M // 2 floats

    def g(a=dA.ptr, xp=x.ptr, yp=y.ptr, incx=1, **kw):
        return lambda: gemv_colmajor("N", M, M, 1.0, a, M, xp, incx, 0.0, yp, 1, dtype="float32", **kw)
    _refused(g(xp=tail), r"gemv: x \(48 entries, incx=1\).*past the end", dA, x, y, short)
    _refused(g(yp=tail), r"gemv: y \(48 entries, incy=1\).*past the end", dA, x, y, short)
    _refused(g(a=tail), r"gemv: A \(48x48, lda=48\).*past the end", dA, x, y, short)
    _refused(g(incx=-3), r"gemv: x \(48 entries, incx=-3\).*past the end", dA, x, y)
    _refused(g(a=_unallocated(dA)), r"gemv: A .* is not device memory", x, y)
    _refused(g(beta_ptr=_unallocated(dA), alpha_ptr=x.ptr), r"gemv: beta_ptr", x, y)
    g()()  # and the good call computes A @ x in column-major terms
    np.testing.assert_allclose(y.get(), A.T @ x.get(), rtol=1e-4, atol=1e-4)


def test_the_cublas_surface_reports_a_short_buffer_as_invalid_value(rng):
    (_A, _B, _C), (dA, _dB, dC) = _matrices(rng)
    short = oxicuda.asarray(np.zeros(M, np.float32))
    one, zero = np.array(1.0, np.float32), np.array(0.0, np.float32)
    h = cublas.create()
    try:
        before = dC.get()
        with pytest.raises(cublas.CUBLASError, match="past the end"):
            cublas.sgemm(h, 0, 0, M, M, M, one.ctypes.data, dA.ptr, M, short.ptr, M, zero.ctypes.data, dC.ptr, M)
        np.testing.assert_array_equal(dC.get(), before)
        with pytest.raises(cublas.CUBLASError, match="not device memory"):
            cublas.sgemv(h, 0, M, M, one.ctypes.data, dA.ptr, M, _unallocated(dA), 1, zero.ctypes.data, dC.ptr, 1)
    finally:
        cublas.destroy(h)


def test_pool_blocks_skip_the_driver_and_a_freed_block_is_named(rng, monkeypatch):
    """An array's own .ptr is the start of a live pool block: the check is a dict lookup, no
    driver call. A pointer into the middle (a view) asks the driver. A pointer whose array is gone
    is still allocated as far as the driver knows (the pool caches it), so only the pool can call
    it a use after free, and it does."""
    (_A, _B, _C), (dA, dB, dC) = _matrices(rng)
    drv = api()
    calls = []
    real = drv.mem_get_address_range
    monkeypatch.setattr(drv, "mem_get_address_range", lambda p: calls.append(p) or real(p))
    gemm_colmajor("N", "N", M, M, M, 1.0, dA.ptr, M, dB.ptr, M, 0.0, dC.ptr, M, dtype="float32")
    assert calls == []
    gemm_colmajor("N", "N", M - 1, M, M, 1.0, dA.ptr + 4, M, dB.ptr, M, 0.0, dC.ptr, M, dtype="float32")
    assert calls == [dA.ptr + 4]
    gone = oxicuda.asarray(np.zeros((M, M), np.float32))
    stale = gone.ptr
    del gone  # back to the pool, not to the driver
    _refused(lambda: gemm_colmajor("N", "N", M, M, M, 1.0, dA.ptr, M, dB.ptr, M, 0.0, stale, M, dtype="float32"),
             r"gemm: C \(48x48, ldc=48\): 0x[0-9a-f]+ is a freed block", dA, dB, dC)
    _refused(lambda: gemv_colmajor("N", M, M, 1.0, dA.ptr, M, stale, 1, 0.0, dC.ptr, 1, dtype="float32"),
             r"gemv: x .* is a freed block", dA, dC)
