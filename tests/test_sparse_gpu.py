"""Large sparse cases on the GPU against cupyx.scipy.sparse (cuSPARSE) and scipy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import oxicuda
import oxicuda.sparse as S

pytestmark = pytest.mark.gpu


def _power_law(n, rng, dtype=np.float32):
    lengths = np.minimum(n, (rng.pareto(1.1, n) * 4).astype(np.int64) + 1)
    rows = np.repeat(np.arange(n), lengths)
    cols = rng.integers(0, n, rows.size)
    a = sp.csr_matrix((rng.standard_normal(rows.size).astype(dtype), (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    return a


def _uniform(n, per_row, rng, dtype=np.float32):
    """``per_row`` uniform column draws in every row (repeats merged), built from the entries:
    scipy.sparse.random(n, n, density=32 / n) with an int random_state samples through
    RandomState.choice(n * n, replace=False), a permutation of all n^2 = 2^36 positions (the
    OOM killer stopped it at 130 GB on the GPU machine)."""
    rows = np.repeat(np.arange(n, dtype=np.int32), per_row)
    cols = rng.integers(0, n, rows.size, dtype=np.int32)
    a = sp.csr_matrix((rng.standard_normal(rows.size).astype(dtype), (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    return a


@pytest.mark.parametrize("kind", ["uniform", "power_law"])
def test_spmv_of_a_large_matrix_matches_cupyx(kind):
    rng = np.random.default_rng(0)
    n = 1 << 18  # about 8.4M entries: a few hundred MB on the host
    ref = _uniform(n, 32, rng) if kind == "uniform" else _power_law(n, rng)
    a = S.csr_matrix(ref)
    assert a.spmv_kernel()[0] == ("vector" if kind == "uniform" else "merge")
    x = rng.standard_normal(n).astype(np.float32)
    got = (a @ oxicuda.asarray(x)).get()
    want = ref.astype(np.float64) @ x.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    cupy = pytest.importorskip("cupy")
    cs = pytest.importorskip("cupyx.scipy.sparse")
    vendor = cupy.asnumpy(cs.csr_matrix(ref) @ cupy.asarray(x))
    np.testing.assert_allclose(got, vendor, rtol=1e-4, atol=1e-3)


def test_coo_to_csr_and_csr_to_csc_with_a_million_entries():
    rng = np.random.default_rng(2)
    n, nnz = 1 << 16, 1 << 20
    r, c = rng.integers(0, n, nnz).astype(np.int32), rng.integers(0, n, nnz).astype(np.int32)
    d = rng.standard_normal(nnz)
    ref = sp.coo_matrix((d, (r, c)), shape=(n, n)).tocsr()
    ref.sum_duplicates()
    a = S.coo_matrix((d, (r, c)), shape=(n, n)).tocsr()
    np.testing.assert_array_equal(a.indptr.get(), ref.indptr)
    np.testing.assert_array_equal(a.indices.get(), ref.indices)
    np.testing.assert_allclose(a.data.get(), ref.data, rtol=1e-12)
    csc = a.tocsc()
    want = ref.tocsc()
    np.testing.assert_array_equal(csc.indptr.get(), want.indptr)
    np.testing.assert_array_equal(csc.indices.get(), want.indices)


def test_cg_on_a_2d_poisson_matrix():
    from oxicuda.sparse import linalg as L

    side = 64
    t = sp.diags([-np.ones(side - 1), 4 * np.ones(side), -np.ones(side - 1)], [-1, 0, 1])
    ref = (sp.kron(sp.identity(side), t) + sp.kron(sp.diags([-np.ones(side - 1)] * 2, [-1, 1]),
                                                    sp.identity(side))).tocsr()
    b = np.random.default_rng(3).standard_normal(side * side)
    x, info = L.cg(S.csr_matrix(ref), b, rtol=1e-10)
    assert info == 0
    np.testing.assert_allclose(ref @ x.get(), b, atol=1e-7)


def test_spgemm_with_long_rows_uses_the_global_table_and_matches_cupyx():
    rng = np.random.default_rng(4)
    a = sp.random(2000, 2000, density=0.002, format="csr", random_state=5)
    b = sp.random(2000, 3000, density=0.002, format="csr", random_state=6)
    b = (b + sp.csr_matrix((np.ones(2500), (np.full(2500, 7), rng.permutation(3000)[:2500])), shape=(2000, 3000))).tocsr()
    a = (a + sp.csr_matrix((np.ones(2000), (np.arange(2000), np.full(2000, 7))), shape=(2000, 2000))).tocsr()
    c = S.csr_matrix(a) @ S.csr_matrix(b)  # every row of A hits row 7 of B: tables of 8192 slots, global
    want = (a @ b).tocsr()
    want.sum_duplicates()
    want.sort_indices()
    np.testing.assert_array_equal(c.indptr.get(), want.indptr)
    np.testing.assert_array_equal(c.indices.get(), want.indices)
    np.testing.assert_allclose(c.data.get(), want.data, rtol=1e-12)


def test_spgemm_of_a_poisson_matrix_with_itself_and_sptrsv_of_its_lower_triangle():
    import scipy.sparse.linalg as spl

    from oxicuda.sparse import linalg as L

    side = 256
    t = sp.diags([-np.ones(side - 1), 4 * np.ones(side), -np.ones(side - 1)], [-1, 0, 1])
    p = (sp.kron(sp.identity(side), t) + sp.kron(sp.diags([-np.ones(side - 1)] * 2, [-1, 1]),
                                                  sp.identity(side))).tocsr()
    a = S.csr_matrix(p)
    c = a @ a
    want = (p @ p).tocsr()
    want.sort_indices()
    np.testing.assert_array_equal(c.indices.get(), want.indices)
    np.testing.assert_allclose(c.data.get(), want.data, rtol=1e-12)
    low = sp.tril(p).tocsr()
    b = np.random.default_rng(7).standard_normal(side * side)
    x = L.spsolve_triangular(S.csr_matrix(low), b)
    np.testing.assert_allclose(x.get(), spl.spsolve_triangular(low, b), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("lower", [True, False])
def test_sptrsv_of_a_long_dependency_chain_waits_for_every_row(lower):
    """Every row depends on its neighbour (one level per row) and on a random earlier row: with
    all CTAs of the launch resident at once, a wait that does not wait reads x before it is
    written (the H200 showed it, with the flag loads deleted by ptxas)."""
    import scipy.sparse.linalg as spl

    from oxicuda.sparse import linalg as L

    rng = np.random.default_rng(8)
    n = 20000
    far = rng.integers(0, np.arange(1, n), n - 1)  # row i (i >= 1) also reads a row < i
    rows = np.concatenate([np.arange(n), np.arange(1, n), np.arange(1, n)])
    cols = np.concatenate([np.arange(n), np.arange(n - 1), far])
    vals = np.concatenate([4 + rng.random(n), -rng.random(2 * (n - 1))])
    low = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    ref = low if lower else low.T.tocsr()
    b = rng.standard_normal(n)
    x = L.spsolve_triangular(S.csr_matrix(ref), b, lower=lower)
    np.testing.assert_allclose(x.get(), spl.spsolve_triangular(ref, b, lower=lower), rtol=1e-10, atol=1e-10)
