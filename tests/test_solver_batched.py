"""Batched small matrices over device pointer arrays (cuBLAS getrfBatched/getrsBatched/
getriBatched and cuSOLVER potrfBatched/potrsBatched meaning) against float64 numpy."""

from __future__ import annotations

import numpy as np
import pytest
from solver_cases import DTYPES, assert_forward_close, rand, rel

import oxicuda
import oxicuda.solver as S

TOL = {"float32": 2e-4, "float64": 1e-11, "complex64": 2e-4, "complex128": 1e-11}


def pointer_batch(mats):
    """Device copies (column-major, NaN-padded leading dimension n + 1) and their pointer array."""
    n = mats[0].shape[0]
    devs = []
    for m in mats:
        buf = np.full((n + 1, m.shape[1]), np.nan, m.dtype)
        buf[:n] = m
        devs.append(oxicuda.asarray(np.asfortranarray(buf)))
    return devs, oxicuda.asarray(np.array([d.ptr for d in devs], np.uint64))


@pytest.mark.parametrize("dt, n", [(d, n) for d in DTYPES for n in (1, 7)] + [("float32", 16)])
def test_getrf_getrs_getri_batched(rng, dt, n):
    batch = 3
    a = rand(rng, (batch, n, n), dt)
    _devs, arr = pointer_batch(list(a))
    ipiv = oxicuda.full((batch, n), -5, np.int32)
    info = oxicuda.full((batch,), -5, np.int32)
    with oxicuda.trace() as t:
        S.getrf_batched_ptr(n, arr.ptr, n + 1, ipiv.ptr, info.ptr, batch, dtype=dt)
    assert [s.space for s in t.specs() if s is not None and s.family == "solver_getf2"] == ["shared"]
    assert info.get().tolist() == [0] * batch
    b = rand(rng, (batch, n, 2), dt)
    bdevs, barr = pointer_batch(list(b))
    S.getrs_batched_ptr("C", n, 2, arr.ptr, n + 1, ipiv.ptr, barr.ptr, n + 1, batch, dtype=dt)
    cdevs, carr = pointer_batch([np.full((n, n), np.nan, dt)] * batch)
    info2 = oxicuda.full((batch,), -5, np.int32)
    S.getri_batched_ptr(n, arr.ptr, n + 1, ipiv.ptr, carr.ptr, n + 1, info2.ptr, batch, dtype=dt)
    assert info2.get().tolist() == [0] * batch
    for z in range(batch):
        ra = a[z].astype(rel(dt))
        x = bdevs[z].get()
        assert np.isnan(x[n]).all()  # the padding row is never written
        assert_forward_close(x[:n], np.linalg.solve(ra.conj().T, b[z]), a[z], factor=20)
        assert_forward_close(cdevs[z].get()[:n], np.linalg.inv(ra), a[z], factor=20)


def test_getrf_batched_without_pivoting_and_singular_info(rng):
    n, batch = 6, 3
    a = rand(rng, (batch, n, n), "float64") + 8 * np.eye(n)  # diagonally dominant: no pivots needed
    a[2, :, 4] = 0.0
    a[2, 4, 4] = 0.0
    devs, arr = pointer_batch(list(a))
    info = oxicuda.full((batch,), -5, np.int32)
    S.getrf_batched_ptr(n, arr.ptr, n + 1, 0, info.ptr, batch, dtype="float64")
    assert info.get().tolist()[:2] == [0, 0] and info.get()[2] > 0
    for z in range(2):
        f = devs[z].get()[:n]
        lower, upper = np.tril(f, -1) + np.eye(n), np.triu(f)
        np.testing.assert_allclose(lower @ upper, a[z], atol=1e-12)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("uplo", ("L", "U"))
def test_potrf_potrs_batched(rng, dt, uplo):
    n, batch = 9, 3
    x = rand(rng, (batch, n, n), dt)
    a = (x @ np.conj(np.swapaxes(x, 1, 2)) / n + np.eye(n)).astype(dt)
    a[1, 3, 3] = -4.0  # matrix 1 is indefinite
    _devs, arr = pointer_batch(list(a))
    info = oxicuda.full((batch,), -5, np.int32)
    S.potrf_batched_ptr(uplo, n, arr.ptr, n + 1, info.ptr, batch, dtype=dt)
    got = info.get()
    assert got[0] == 0 and got[2] == 0 and 1 <= got[1] <= 4
    b = rand(rng, (batch, n, 1), dt)
    bdevs, barr = pointer_batch(list(b))
    S.potrs_batched_ptr(uplo, n, 1, arr.ptr, n + 1, barr.ptr, n + 1, batch, dtype=dt)
    for z in (0, 2):
        np.testing.assert_allclose(bdevs[z].get()[:n], np.linalg.solve(a[z].astype(rel(dt)), b[z]),
                                   atol=TOL[dt] * 20)


def test_orders_past_the_small_limit_run_in_global_memory(rng, monkeypatch):
    from oxicuda.solver import dispatch

    monkeypatch.setitem(dispatch.DISPATCH, "SMALL_MAX", 8)  # n = 12 then takes the global path
    n, batch = 12, 2
    a = rand(rng, (batch, n, n), "float64")
    devs, arr = pointer_batch(list(a))
    ipiv = oxicuda.zeros((batch, n), np.int32)
    info = oxicuda.zeros((batch,), np.int32)
    with oxicuda.trace() as t:
        S.getrf_batched_ptr(n, arr.ptr, n + 1, ipiv.ptr, info.ptr, batch, dtype="float64")
    assert [s.space for s in t.specs() if s is not None and s.family == "solver_getf2"] == ["global"]
    import scipy.linalg

    lu_ref, piv_ref = scipy.linalg.lu_factor(a[1])
    np.testing.assert_allclose(devs[1].get()[:n], lu_ref, atol=1e-10)
    assert np.array_equal(ipiv.get()[1] - 1, piv_ref)


@pytest.mark.parametrize("call, words", [
    (lambda p: S.getrf_batched_ptr(4, p, 3, 0, p, 1, dtype="float32"), "lda"),
    (lambda p: S.getrf_batched_ptr(4, p + 4, 4, 0, p, 1, dtype="float32"), "aligned"),
    (lambda p: S.getrs_batched_ptr("X", 4, 1, p, 4, 0, p, 4, 1, dtype="float32"), "trans"),
    (lambda p: S.potrf_batched_ptr("Q", 4, p, 4, p, 1, dtype="float32"), "uplo"),
    (lambda p: S.getrf_batched_ptr(4, p, 4, 0, p, 1, dtype="int32"), "int32"),
    (lambda p: S.getrf_batched_ptr(4, p, 4, 0, p, 1000, dtype="float32"), "pointers"),
])
def test_bad_arguments_raise_before_any_launch(call, words):
    buf = oxicuda.zeros((16,), np.float64)
    with oxicuda.trace() as t, pytest.raises((ValueError, TypeError), match=words):
        call(buf.ptr)
    assert t.launches == []
