"""scikit-cuda's cublas<t>gelsBatched (least squares over device arrays of matrix pointers) on
our QR, ormqr and trsm kernels: solutions against numpy's lstsq, devInfo for a rank-deficient
matrix, and the argument errors cuBLAS reports through ``info``."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import oxicuda
from oxicuda.skcuda import cublas as skcublas


def _pointer_array(mats):
    return oxicuda.asarray(np.array([m.ptr for m in mats], np.uint64))


def _problem(rng, dtype, batch, m, n, nrhs):
    a = rng.standard_normal((batch, m, n))
    c = rng.standard_normal((batch, m, nrhs))
    if np.iscomplexobj(np.zeros(1, dtype)):
        a = a + 1j * rng.standard_normal((batch, m, n))
        c = c + 1j * rng.standard_normal((batch, m, nrhs))
    return a.astype(dtype), c.astype(dtype)


@pytest.mark.parametrize("dtype,prefix", [(np.float32, "S"), (np.float64, "D"), (np.complex64, "C"),
                                          (np.complex128, "Z")])
def test_gels_batched_matches_numpy_lstsq(dtype, prefix, rng):
    batch, m, n, nrhs = 3, 11, 5, 2
    a, c = _problem(rng, dtype, batch, m, n, nrhs)
    da = [oxicuda.asarray(np.asfortranarray(x)) for x in a]
    dc = [oxicuda.asarray(np.asfortranarray(x)) for x in c]
    info, dev_info = ctypes.c_int(-7), oxicuda.full((batch,), -7, np.int32)
    aptr, cptr = _pointer_array(da), _pointer_array(dc)  # kept alive: the call reads them
    h = skcublas.cublasCreate()
    try:
        with oxicuda.trace() as t:
            getattr(skcublas, f"cublas{prefix}gelsBatched")(
                h, "n", m, n, nrhs, aptr.ptr, m, cptr.ptr, m,
                ctypes.addressof(info), dev_info.ptr, batch)
    finally:
        skcublas.cublasDestroy(h)
    families = {r.spec.family for r in t.launches}
    assert any(f.startswith("solver_") for f in families) and "trsm" in " ".join(sorted(families)), families
    assert info.value == 0 and (dev_info.get() == 0).all()
    tol = 2e-4 if dtype in (np.float32, np.complex64) else 1e-10
    for z in range(batch):
        want = np.linalg.lstsq(a[z].astype(np.complex128), c[z].astype(np.complex128), rcond=None)[0]
        got = dc[z].get()[:n]
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        r = np.triu(da[z].get()[:n])  # A holds R above the reflectors: |R| matches numpy's QR
        np.testing.assert_allclose(np.abs(np.diag(r)), np.abs(np.diag(np.linalg.qr(a[z].astype(np.complex128))[1])),
                                   rtol=tol * 10, atol=tol * 10)


def test_gels_batched_reports_a_zero_diagonal_and_bad_arguments(rng):
    batch, m, n = 2, 6, 3
    a, c = _problem(rng, np.float64, batch, m, n, 1)
    a[1][:, 2] = 0.0  # the third column zero: R[2, 2] == 0
    da = [oxicuda.asarray(np.asfortranarray(x)) for x in a]
    dc = [oxicuda.asarray(np.asfortranarray(x)) for x in c]
    aptr, cptr = _pointer_array(da), _pointer_array(dc)
    info, dev_info = ctypes.c_int(-7), oxicuda.full((batch,), -7, np.int32)
    h = skcublas.cublasCreate()
    try:
        skcublas.cublasDgelsBatched(h, "n", m, n, 1, aptr.ptr, m, cptr.ptr, m, ctypes.addressof(info),
                                    dev_info.ptr, batch)
        assert info.value == 0 and dev_info.get().tolist() == [0, 3]
        before = [x.get() for x in dc]
        for args, position in (((h, "t", m, n, 1), 2), ((h, "n", 2, n, 1), 3), ((h, "n", m, n, -1), 5)):
            info.value = 99
            with pytest.raises(skcublas.cublasInvalidValue):
                skcublas.cublasDgelsBatched(*args, aptr.ptr, m, cptr.ptr, m, ctypes.addressof(info),
                                            dev_info.ptr, batch)
            assert info.value == -position
        info.value = 99
        with pytest.raises(skcublas.cublasInvalidValue):
            skcublas.cublasDgelsBatched(h, "n", m, n, 1, aptr.ptr, m - 1, cptr.ptr, m, ctypes.addressof(info),
                                        dev_info.ptr, batch)
        assert info.value == -7
        with pytest.raises(TypeError):
            skcublas.cublasDgelsBatched(h, "n", m, n, 1, 1.5, m, cptr.ptr, m, ctypes.addressof(info),
                                        dev_info.ptr, batch)
        for x, b in zip(dc, before):
            np.testing.assert_array_equal(x.get(), b)  # refused calls wrote nothing
    finally:
        skcublas.cublasDestroy(h)
