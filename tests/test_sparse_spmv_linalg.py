"""SpMV (vector and merge-path kernels, chosen per matrix and proven by trace), alpha/beta, the
transposed product, SpMM, the linalg solvers, and a cupyx.scipy.sparse script with its imports
changed."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import oxicuda
import oxicuda.sparse as S
from oxicuda.sparse import linalg as L
from oxicuda.sparse.spmv import DISPATCH, choose_kernel

DTYPES = ["float32", "float64", "complex64", "complex128"]


def _rand(rng, m, n, density, dtype):
    a = sp.random(m, n, density=density, format="csr", random_state=int(rng.integers(1 << 30)), dtype=np.float64)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * sp.random(m, n, density=density, format="csr", random_state=int(rng.integers(1 << 30)))
    return a.astype(dtype).tocsr()


def _vec(rng, n, dtype):
    v = rng.standard_normal(n)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(n)
    return v.astype(dtype)


def _tol(dtype):
    return 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-11


def _power_law(rng, m, n, dtype):
    lengths = np.minimum(n, (rng.pareto(1.2, m) * 2).astype(int))
    lengths[3] = n  # one row as long as the matrix is wide
    rows = np.repeat(np.arange(m), lengths)
    cols = np.concatenate([rng.permutation(n)[:k] for k in lengths])
    a = sp.csr_matrix((_vec(rng, len(rows), dtype), (rows, cols)), shape=(m, n))
    a.sum_duplicates()
    return a


@pytest.mark.parametrize("dtype", DTYPES)
def test_spmv_kernel_choice_is_proven_by_trace_and_both_match_scipy(rng, dtype):
    uniform = _rand(rng, 300, 200, 0.03, dtype)
    skewed = _power_law(rng, 300, 400, dtype)
    for ref, kernel in ((uniform, "vector"), (skewed, "merge")):
        a = S.csr_matrix(ref)
        assert a.spmv_kernel()[0] == kernel
        x = _vec(rng, ref.shape[1], dtype)
        y0 = _vec(rng, ref.shape[0], dtype)
        out = oxicuda.asarray(y0)
        with oxicuda.trace() as t:
            a.spmv(oxicuda.asarray(x), out, alpha=1.5, beta=-0.5)
        variants = [r.spec.variant for r in t.launches if r.spec.family == "sparse_spmv"]
        assert variants == (["vector"] if kernel == "vector" else ["merge", "fixup"])
        want = 1.5 * (ref @ x) - 0.5 * y0
        np.testing.assert_allclose(out.get(), want, rtol=_tol(dtype), atol=_tol(dtype) * 10)
        poisoned = oxicuda.full((ref.shape[0],), np.nan, dtype)
        a.spmv(oxicuda.asarray(x), poisoned)  # beta = 0 never reads y
        np.testing.assert_allclose(poisoned.get(), ref @ x, rtol=_tol(dtype), atol=_tol(dtype) * 10)
        np.testing.assert_allclose((a @ x).get(), ref @ x, rtol=_tol(dtype), atol=_tol(dtype) * 10)


def test_kernel_choice_thresholds():
    assert choose_kernel(1000, 4000, 6) == ("vector", 4)
    assert choose_kernel(1000, 40000, 60) == ("vector", 32)
    assert choose_kernel(1000, 4000, 5000)[0] == "merge"
    assert choose_kernel(10, 0, 0) == ("vector", 2)
    assert choose_kernel(1000, 1000, DISPATCH["MERGE_MIN_MAX"] - 1)[0] == "vector"


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
def test_transposed_product_without_forming_the_transpose(rng, dtype):
    ref = _power_law(rng, 120, 90, dtype)
    a = S.csr_matrix(ref)
    x = _vec(rng, 120, dtype)
    y0 = _vec(rng, 90, dtype)
    y = oxicuda.asarray(y0)
    with oxicuda.trace() as t:
        a.spmv(oxicuda.asarray(x), y, alpha=2.0, beta=0.5, transpose=True)
    assert [r.spec.variant for r in t.launches] == ["scale", "transpose"]
    np.testing.assert_allclose(y.get(), 2.0 * (ref.T @ x) + 0.5 * y0, rtol=_tol(dtype), atol=_tol(dtype) * 10)
    h = a.spmv(oxicuda.asarray(x), transpose=True, conj=True)
    np.testing.assert_allclose(h.get(), ref.conj().T @ x, rtol=_tol(dtype), atol=_tol(dtype) * 10)


def test_spmv_edge_matrices(rng):
    one = S.csr_matrix(np.array([[3.0]]))
    np.testing.assert_array_equal((one @ np.array([2.0])).get(), [6.0])
    empty = S.csr_matrix((5, 4))
    np.testing.assert_array_equal((empty @ np.ones(4)).get(), np.zeros(5))
    a = S.csr_matrix(_rand(rng, 40, 7, 0.2, "float64"))
    x = rng.standard_normal((7, 3))
    np.testing.assert_allclose((a @ oxicuda.asarray(x)).get(), a.get() @ x, rtol=1e-12, atol=1e-12)


def test_spmv_bad_operands_raise_before_launching():
    a = S.eye(4, format="csr")
    b32 = S.eye(4, format="csc", dtype=np.float32)
    with oxicuda.trace() as t:
        with pytest.raises(ValueError, match="length 4"):
            a @ np.ones(3)
        with pytest.raises(TypeError, match="dtype float32"):
            a @ np.ones(4, np.float32)
        with pytest.raises(ValueError, match="not contiguous"):
            a.spmv(np.ones(4), oxicuda.zeros((8,), np.float64)[::2], beta=1.0)
        with pytest.raises(TypeError, match="dtype"):
            a @ b32
    assert t.launches == []


def test_cg_and_gmres_solve_a_poisson_system(rng):
    n = 24
    A = S.diags([-np.ones(n - 1), 4 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csr")
    b = rng.standard_normal(n)
    ref = A.get().toarray()
    for solver in (L.cg, L.gmres):
        x, info = solver(A, oxicuda.asarray(b), rtol=1e-10)
        assert info == 0
        np.testing.assert_allclose(ref @ x.get(), b, atol=1e-8)
    op = L.LinearOperator(A.shape, A.spmv, dtype=np.float64)
    x, info = L.cg(op, b, rtol=1e-10)
    assert info == 0
    np.testing.assert_allclose(ref @ x.get(), b, atol=1e-8)
    assert abs(float(L.norm(A)) - np.linalg.norm(ref)) < 1e-12
    bad = b.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        L.cg(A, bad)


CUPYX_SCRIPT = '''
import numpy as np
import cupy as cp
import cupyx.scipy.sparse as sparse
import cupyx.scipy.sparse.linalg as splinalg

n = 50
main = cp.asarray(np.full(n, 4.0))
off = cp.asarray(np.full(n - 1, -1.0))
A = sparse.diags([off, main, off], [-1, 0, 1], format="csr")
b = cp.asarray(np.arange(n, dtype=np.float64))
x, info = splinalg.cg(A, b, tol=1e-10)
r = A @ x
B = sparse.csr_matrix(A.get())
C = (A + B.T).tocoo().tocsr()
result = (float(np.abs(cp.asnumpy(r) - np.arange(n)).max()), info, C.nnz, float(cp.asnumpy(C.sum())))
'''


def test_a_cupyx_script_runs_with_only_its_imports_changed():
    script = CUPYX_SCRIPT.replace("import cupy as cp", "import oxicuda as cp")
    script = script.replace("cupyx.scipy.sparse.linalg", "oxicuda.sparse.linalg").replace("cupyx.scipy.sparse", "oxicuda.sparse")
    ns: dict = {}
    exec(compile(script, "cupyx_script", "exec"), ns)  # noqa: S102 (the script under test)
    err, info, nnz, total = ns["result"]
    assert err < 1e-6 and info == 0 and nnz == 148 and total == 2 * (4 * 50 - 2 * 49)


@pytest.mark.parametrize("tail", ["empty_rows", "full_last_row"])
def test_merge_spmv_keeps_row_ends_right_to_the_last_row(rng, tail):
    m, n = 97, 120
    lengths = rng.integers(0, 4, m)
    lengths[5] = n  # long: the merge kernel
    if tail == "empty_rows":
        lengths[-7:] = 0
    else:
        lengths[-1] = n
    rows = np.repeat(np.arange(m), lengths)
    cols = np.concatenate([rng.permutation(n)[:k] for k in lengths])
    ref = sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(m, n))
    a = S.csr_matrix(ref)
    assert a.spmv_kernel()[0] == "merge"
    x = rng.standard_normal(n)
    y = oxicuda.full((m,), np.nan, np.float64)
    a.spmv(oxicuda.asarray(x), y)
    np.testing.assert_allclose(y.get(), ref @ x, rtol=1e-12, atol=1e-12)


def test_merge_spmv_over_several_ctas_matches_scipy(rng):
    """Rows and entries enough for six CTAs of the merge kernel, long and empty rows landing on
    CTA edges: each thread's search runs between the rows its CTA's span starts and ends in."""
    m, n = 3000, 500
    lengths = rng.integers(0, 6, m)
    lengths[[7, 1500, 2999]] = n
    lengths[2000:2300] = 0
    rows = np.repeat(np.arange(m), lengths)
    cols = np.concatenate([rng.permutation(n)[:k] for k in lengths])
    ref = sp.csr_matrix((rng.standard_normal(rows.size).astype(np.float32), (rows, cols)), shape=(m, n))
    a = S.csr_matrix(ref)
    assert a.spmv_kernel()[0] == "merge"
    x = rng.standard_normal(n).astype(np.float32)
    y0 = rng.standard_normal(m).astype(np.float32)
    y = oxicuda.asarray(y0)
    with oxicuda.trace() as t:
        a.spmv(oxicuda.asarray(x), y, alpha=2.0, beta=0.5)
    grids = [r.grid[0] for r in t.launches if r.spec.variant == "merge"]
    assert len(grids) == 1 and grids[0] >= 6
    np.testing.assert_allclose(y.get(), 2.0 * (ref.astype(np.float64) @ x) + 0.5 * y0, rtol=1e-4, atol=1e-4)
