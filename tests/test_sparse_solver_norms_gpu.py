"""Large cases on the GPU of the session-8 additions: solver.norm (every ord, the two-pass path
of long rows), sparse.linalg.norm, the transposed SpMV of ``A.T @ x``, gmres with a Jacobi
preconditioner, dense element-wise products and sums, diagonal(k), against numpy/scipy and
cupyx.scipy.sparse / cupy.linalg when CuPy is importable."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spl

import oxicuda
import oxicuda.sparse as S
from oxicuda import solver
from oxicuda.sparse import linalg as L

pytestmark = pytest.mark.gpu


def _uniform(n, per_row, rng, dtype=np.float32):
    rows = np.repeat(np.arange(n, dtype=np.int32), per_row)
    cols = rng.integers(0, n, rows.size, dtype=np.int32)
    a = sp.csr_matrix((rng.standard_normal(rows.size).astype(dtype), (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    return a


def _cupy():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:
        return None


@pytest.mark.parametrize("ord", [None, 0, 1, -1, 2, np.inf, -np.inf, 3, 0.5])
def test_vector_norm_of_2_26_floats(ord):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(1 << 26).astype(np.float32)
    with oxicuda.trace() as t:
        got = float(solver.norm(oxicuda.asarray(x), ord).get())
    assert [s.fn for s in t.specs() if s is not None and s.family == "solver_norm"][-1] == "id"  # two passes
    with np.errstate(all="ignore"):
        want = np.linalg.norm(x.astype(np.float64), ord)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    cupy = _cupy()
    if cupy is not None and ord != 0.5:
        np.testing.assert_allclose(got, float(cupy.linalg.norm(cupy.asarray(x), ord)), rtol=1e-4)


@pytest.mark.parametrize("ord", [None, "fro", 1, -1, np.inf, -np.inf])
def test_matrix_norms_of_a_4096_square_float64(ord):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4096, 4096))
    got = float(solver.norm(oxicuda.asarray(a), ord).get())
    np.testing.assert_allclose(got, np.linalg.norm(a, ord), rtol=1e-12)


@pytest.mark.parametrize("ord", [2, -2, "nuc"])
def test_svd_norms_of_a_batch(ord):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((8, 300, 200))
    got = solver.norm(oxicuda.asarray(a), ord, (-2, -1)).get()
    np.testing.assert_allclose(got, np.linalg.norm(a, ord, (-2, -1)), rtol=1e-10)


def test_row_and_column_vector_norms_of_a_wide_batch_axis():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((1 << 14, 1000)).astype(np.float32)
    for axis in (0, 1):
        for ord in (None, 1, np.inf, -np.inf, 3):
            got = solver.norm(oxicuda.asarray(a), ord, axis).get()
            np.testing.assert_allclose(got, np.linalg.norm(a.astype(np.float64), ord, axis), rtol=1e-5)


def test_sparse_norms_of_a_matrix_of_8m_entries():
    rng = np.random.default_rng(5)
    n = 1 << 18
    ref = _uniform(n, 32, rng)
    A = S.csr_matrix(ref)
    r64 = ref.astype(np.float64)
    for ord, axis in ((None, None), (1, None), (np.inf, None), (-np.inf, None), (None, 1), (np.inf, 0), (0, 1),
                      (3, 0)):
        got = L.norm(A, ord, axis).get()
        np.testing.assert_allclose(got, spl.norm(r64, ord, axis), rtol=1e-5, err_msg=f"ord={ord} axis={axis}")


def test_transposed_spmv_of_a_large_matrix_matches_cupyx():
    rng = np.random.default_rng(6)
    n = 1 << 20
    ref = _uniform(n, 16, rng)
    A = S.csr_matrix(ref)
    x = rng.standard_normal(n).astype(np.float32)
    with oxicuda.trace() as t:
        got = (A.T @ oxicuda.asarray(x)).get()
    assert {s.family for s in t.specs() if s is not None} == {"sparse_spmv"}
    np.testing.assert_allclose(got, ref.T.astype(np.float64) @ x.astype(np.float64), rtol=1e-4, atol=1e-3)
    cupy = _cupy()
    if cupy is not None:
        import cupyx.scipy.sparse as cs

        vendor = cupy.asnumpy(cs.csr_matrix(ref).T @ cupy.asarray(x))
        np.testing.assert_allclose(got, vendor, rtol=1e-4, atol=1e-3)


def test_jacobi_preconditioned_gmres_on_a_varying_coefficient_poisson_system():
    side = 128
    n = side * side
    rng = np.random.default_rng(7)
    c = np.exp(rng.uniform(0, 4, n))
    lap = sp.kronsum(sp.diags([-1, 2, -1], [-1, 0, 1], shape=(side, side), dtype=np.float64),
                     sp.diags([-1, 2, -1], [-1, 0, 1], shape=(side, side), dtype=np.float64))
    ref = (sp.diags(c) @ lap + sp.diags(c)).tocsr()
    A = S.csr_matrix(ref)
    M = S.diags([1.0 / ref.diagonal()], [0], format="csr")
    b = rng.standard_normal(n)
    x, info = L.gmres(A, b, M=M, rtol=1e-8, restart=50, maxiter=20000)
    assert info == 0
    assert np.linalg.norm(ref @ x.get() - b) <= 1e-8 * np.linalg.norm(b) * 1.01


def test_dense_products_sums_and_diagonals_of_a_large_matrix():
    rng = np.random.default_rng(8)
    m, n = 4096, 3000
    ref = sp.random(m, n, density=0.01, format="csr", random_state=8, dtype=np.float64)
    A = S.csr_matrix(ref)
    d = rng.standard_normal((m, n))
    np.testing.assert_allclose(A.multiply(oxicuda.asarray(d)).toarray().get(), ref.multiply(d).toarray(), rtol=1e-13)
    np.testing.assert_allclose(A.multiply(d[0]).toarray().get(), ref.multiply(d[0]).toarray(), rtol=1e-13)
    np.testing.assert_allclose((A + oxicuda.asarray(d)).get(), np.asarray(ref + d), rtol=1e-13)
    np.testing.assert_allclose((A - d).get(), np.asarray(ref - d), rtol=1e-13)
    for k in (-4000, -17, 0, 5, 2999):
        np.testing.assert_allclose(A.diagonal(k).get(), ref.diagonal(k), rtol=1e-13)
        np.testing.assert_allclose(A.tocsc().diagonal(k).get(), ref.diagonal(k), rtol=1e-13)
