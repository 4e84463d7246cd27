"""cuBLAS's batched LU (getrf/getrs/getriBatched) through both compat surfaces, on the solver
library's one-CTA-per-matrix kernels: factors, solutions and inverses against numpy."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import oxicuda
from oxicuda.cuda import cublas
from oxicuda.skcuda import cublas as skcublas


def _pointer_array(mats):
    ptrs = np.array([m.ptr for m in mats], np.uint64)
    return oxicuda.asarray(ptrs)


@pytest.mark.parametrize("surface", ["cupy", "skcuda"])
@pytest.mark.parametrize("dtype,prefix", [(np.float32, "s"), (np.complex128, "z")])
def test_getrf_getrs_getri_batched_match_numpy(surface, dtype, prefix, rng):
    n, nrhs, batch = 7, 3, 3
    a = rng.standard_normal((batch, n, n)) + 3 * np.eye(n)
    b = rng.standard_normal((batch, n, nrhs))
    if np.iscomplexobj(np.zeros(1, dtype)):
        a = a + 1j * rng.standard_normal((batch, n, n))
        b = b + 1j * rng.standard_normal((batch, n, nrhs))
    a, b = a.astype(dtype), b.astype(dtype)
    da = [oxicuda.asarray(np.asfortranarray(m)) for m in a]
    db = [oxicuda.asarray(np.asfortranarray(m)) for m in b]
    dc = [oxicuda.full((n, n), np.nan, dtype, order="F") for _ in range(batch)]
    aptr, bptr, cptr = _pointer_array(da), _pointer_array(db), _pointer_array(dc)
    piv = oxicuda.full((n * batch,), -7, np.int32)
    info = oxicuda.full((batch,), -7, np.int32)
    host_info = ctypes.c_int(-7)
    with oxicuda.trace() as t:
        if surface == "cupy":
            h = cublas.create()
            getattr(cublas, f"{prefix}getrfBatched")(h, n, aptr.ptr, n, piv.ptr, info.ptr, batch)
            getattr(cublas, f"{prefix}getrsBatched")(h, cublas.CUBLAS_OP_N, n, nrhs, aptr.ptr, n, piv.ptr,
                                                     bptr.ptr, n, ctypes.addressof(host_info), batch)
            getattr(cublas, f"{prefix}getriBatched")(h, n, aptr.ptr, n, piv.ptr, cptr.ptr, n, info.ptr, batch)
        else:
            h = skcublas.cublasCreate()
            P = prefix.upper()
            getattr(skcublas, f"cublas{P}getrfBatched")(h, n, aptr.ptr, n, piv.ptr, info.ptr, batch)
            getattr(skcublas, f"cublas{P}getrsBatched")(h, "n", n, nrhs, aptr.ptr, n, piv.ptr, bptr.ptr, n,
                                                        ctypes.addressof(host_info), batch)
            getattr(skcublas, f"cublas{P}getriBatched")(h, n, aptr.ptr, n, piv.ptr, cptr.ptr, n, info.ptr,
                                                        batch)
    assert t.launches and all(r.kernel.startswith("oxi_solver") for r in t.launches), \
        sorted({r.kernel for r in t.launches})
    assert host_info.value == 0 and (info.get() == 0).all()
    tol = 2e-4 if dtype == np.float32 else 1e-10
    for z in range(batch):
        x = db[z].get()
        np.testing.assert_allclose(x, np.linalg.solve(a[z].astype(np.complex128), b[z]), rtol=tol, atol=tol)
        np.testing.assert_allclose(dc[z].get(), np.linalg.inv(a[z].astype(np.complex128)), rtol=tol, atol=tol)
    ipiv = piv.get().reshape(batch, n)
    assert ((ipiv >= 1) & (ipiv <= n)).all()  # 1-based pivots, as cuBLAS


def test_getrs_batched_rejects_a_bad_transpose_flag():
    h = cublas.create()
    host_info = ctypes.c_int(-7)
    with pytest.raises(cublas.CUBLASError, match="CUBLAS_STATUS_INVALID_VALUE: trans=5"):
        cublas.sgetrsBatched(h, 5, 4, 1, 0, 4, 0, 0, 4, ctypes.addressof(host_info), 1)
