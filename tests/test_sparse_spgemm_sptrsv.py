"""SpGEMM (canonical output, duplicates in the operands, empty rows) and SpTRSV (lower/upper,
unit/non-unit, analysis reused, singular diagonal) against scipy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spl

import oxicuda
import oxicuda.sparse as S
from oxicuda.sparse import linalg as L


def _rand(rng, m, n, density, dtype):
    a = sp.random(m, n, density=density, format="csr", random_state=int(rng.integers(1 << 30)))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * sp.random(m, n, density=density, format="csr", random_state=int(rng.integers(1 << 30)))
    return a.astype(dtype).tocsr()


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_spgemm_is_canonical_and_matches_scipy(rng, dtype):
    a = _rand(rng, 14, 11, 0.3, dtype)
    b = _rand(rng, 11, 9, 0.3, dtype)
    b = (b + sp.csr_matrix((np.ones(9, dtype), (np.full(9, 2), np.arange(9))), shape=(11, 9))).tocsr()
    dup = S.coo_matrix((np.concatenate([a.tocoo().data, a.tocoo().data[:3]]),
                        (np.concatenate([a.tocoo().row, a.tocoo().row[:3]]).astype(np.int32),
                         np.concatenate([a.tocoo().col, a.tocoo().col[:3]]).astype(np.int32))), shape=a.shape)
    ref_a = dup.get().tocsr()
    with oxicuda.trace() as t:
        c = dup.tocsr() @ S.csr_matrix(b)
    assert [r.spec.variant for r in t.launches if r.spec.family == "sparse_spgemm"] == ["nprod", "symbolic", "numeric"]
    want = (ref_a @ b).tocsr()
    want.sum_duplicates()
    want.sort_indices()
    assert c.has_canonical_format
    np.testing.assert_array_equal(c.indptr.get(), want.indptr)
    np.testing.assert_array_equal(c.indices.get(), want.indices)
    tol = 1e-5 if dtype in ("float32", "complex64") else 1e-12
    np.testing.assert_allclose(c.data.get(), want.data, rtol=tol, atol=tol)


def test_spgemm_edge_shapes_and_errors(rng):
    e = S.csr_matrix((5, 4)) @ S.csr_matrix(_rand(rng, 4, 3, 0.5, "float64"))
    assert e.shape == (5, 3) and e.nnz == 0
    one = S.csr_matrix(np.array([[2.0]])) @ S.csr_matrix(np.array([[3.0]]))
    np.testing.assert_array_equal(one.toarray().get(), [[6.0]])
    with pytest.raises(ValueError, match="A.shape\\[1\\] must equal"):
        S.eye(3, format="csr") @ S.eye(4, format="csr")
    with pytest.raises(TypeError, match="dtype"):
        S.eye(3, format="csr") @ S.eye(3, format="csr", dtype=np.float32)


def _triangular(rng, n, lower, dtype):
    a = _rand(rng, n, n, 0.15, dtype) + sp.identity(n, dtype=dtype) * 3
    a = sp.tril(a) if lower else sp.triu(a)
    return a.tocsr()


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_spsolve_triangular_matches_scipy(rng, dtype, lower, unit):
    ref = _triangular(rng, 30, lower, dtype)
    a = S.csr_matrix(ref)
    b = (rng.standard_normal(30) + (1j * rng.standard_normal(30) if dtype == "complex64" else 0)).astype(dtype)
    with oxicuda.trace() as t:
        x = L.spsolve_triangular(a, b, lower=lower, unit_diagonal=unit)
    assert "levels" in [r.spec.variant for r in t.launches if r.spec.family == "sparse_sptrsv"]
    want = spl.spsolve_triangular(ref, b, lower=lower, unit_diagonal=unit)
    tol = 1e-4 if dtype == "complex64" else 1e-12
    np.testing.assert_allclose(x.get(), want, rtol=tol, atol=tol)
    with oxicuda.trace() as t:
        L.spsolve_triangular(a, b, lower=lower, unit_diagonal=unit)
    assert [r.spec.variant for r in t.launches if r.spec.family == "sparse_sptrsv"] == ["solve"]  # analysis reused


def test_spsolve_triangular_with_several_right_hand_sides_and_errors(rng):
    ref = _triangular(rng, 20, True, "float64")
    b = rng.standard_normal((20, 3))
    got = L.spsolve_triangular(S.csr_matrix(ref), b).get()
    np.testing.assert_allclose(got, spl.spsolve_triangular(ref, b), rtol=1e-12, atol=1e-12)
    singular = ref.tolil()
    singular[7, 7] = 0
    singular = singular.tocsr()
    singular.eliminate_zeros()
    with pytest.raises(ValueError, match="row 7"):
        L.spsolve_triangular(S.csr_matrix(singular), b[:, 0])
    with pytest.raises(ValueError, match="square"):
        L.spsolve_triangular(S.csr_matrix(np.ones((2, 3))), np.ones(2))
    with pytest.raises(TypeError, match="dtype"):
        L.spsolve_triangular(S.csr_matrix(ref), b[:, 0].astype(np.float32))


@pytest.mark.parametrize("dtype,k,vec", [("float32", 8, 4), ("float32", 7, 1), ("float64", 6, 2),
                                         ("complex64", 5, 1)])
def test_spmm_tiles_dense_columns_with_vector_loads(rng, dtype, k, vec):
    ref = _rand(rng, 40, 23, 0.2, dtype)
    x = rng.standard_normal((23, k)).astype(dtype)
    y0 = rng.standard_normal((40, k)).astype(dtype)
    y = oxicuda.asarray(y0)
    with oxicuda.trace() as t:
        S.csr_matrix(ref).spmm(oxicuda.asarray(x), y, alpha=2.0, beta=-1.0)
    assert [r.spec.vec for r in t.launches if r.spec.family == "sparse_spmm"] == [vec]
    tol = 1e-5 if dtype in ("float32", "complex64") else 1e-12
    np.testing.assert_allclose(y.get(), 2.0 * (ref @ x) - y0, rtol=tol, atol=tol)
    poisoned = oxicuda.full((40, k), np.nan, dtype)
    S.csr_matrix(ref).spmm(oxicuda.asarray(x), poisoned)
    np.testing.assert_allclose(poisoned.get(), ref @ x, rtol=tol, atol=tol)
    with pytest.raises(ValueError, match="must be"):
        S.csr_matrix(ref) @ oxicuda.asarray(x[:5])
