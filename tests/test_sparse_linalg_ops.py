"""LinearOperator products (rmatvec, matmat, rmatmat, adjoint, transpose, compositions), the
transposed SpMV behind ``A.T @ x``, norm for every scipy ord and axis, gmres with a
preconditioner and callback_type, cg with M, element-wise products with dense operands, sparse
+/- dense, diagonal(k) and setdiag, against scipy on the emulator; results poisoned where the
library allocates them, kernels proven by trace, bad input raising before any launch; and a
cupyx.scipy.sparse script (construct, convert, SpMV, SpMM, SpGEMM, cg, gmres, norm) run with
only its imports changed."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spl

import oxicuda
import oxicuda.sparse as S
from oxicuda.memory.array import DeviceArray
from oxicuda.sparse import linalg as L

DTYPES = ["float32", "float64", "complex64", "complex128"]


def _tol(dtype):
    return 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


def _rand(rng, m, n, density, dtype):
    a = sp.random(m, n, density=density, format="csr", random_state=int(rng.integers(1 << 30)))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * sp.random(m, n, density=density, format="csr", random_state=int(rng.integers(1 << 30)))
    a = a.astype(dtype).tocsr()
    a.data[::3] *= -1
    return a


def _vec(rng, shape, dtype):
    v = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dtype)


class _Poisoned(DeviceArray):
    def __init__(self, shape, dtype=np.float32, order="C", *, stream=None):
        super().__init__(shape, dtype, order, stream=stream)
        if self.size and np.dtype(dtype).kind in "fc":
            self.fill(np.nan)


@pytest.fixture
def poisoned(monkeypatch):
    """Result arrays of the sparse library and of the norms' engine start NaN."""
    import oxicuda.memory.array as arr
    from oxicuda.solver import norms
    from oxicuda.sparse import elementwise, matrix, spmm
    from oxicuda.sparse.linalg import interface

    def empty(shape, dtype=np.float32, order="C", stream=None):
        return _Poisoned(shape if isinstance(shape, tuple) else (shape,), dtype, order, stream=stream)

    for mod in (matrix, spmm, interface, elementwise):
        monkeypatch.setattr(mod, "empty", empty)
    monkeypatch.setattr(norms, "DeviceArray", _Poisoned)
    return arr


def _variants(t):
    return {(s.family, getattr(s, "variant", None)) for s in t.specs() if s is not None}


@pytest.mark.parametrize("dtype", DTYPES)
def test_linear_operator_of_a_sparse_matrix_gives_every_product(rng, dtype, poisoned):
    ref = _rand(rng, 9, 7, 0.4, dtype)
    for A in (S.csr_matrix(ref), S.csc_matrix(ref), S.coo_matrix(ref)):
        op = L.aslinearoperator(A)
        x, y = _vec(rng, 7, dtype), _vec(rng, 9, dtype)
        X, Y = _vec(rng, (7, 3), dtype), _vec(rng, (9, 2), dtype)
        tol = _tol(dtype)
        np.testing.assert_allclose(op.matvec(x).get(), ref @ x, rtol=tol, atol=tol)
        np.testing.assert_allclose(op.rmatvec(y).get(), ref.conj().T @ y, rtol=tol, atol=tol)
        np.testing.assert_allclose(op.matmat(X).get(), ref @ X, rtol=tol, atol=tol)
        np.testing.assert_allclose(op.rmatmat(Y).get(), ref.conj().T @ Y, rtol=tol, atol=tol)
        np.testing.assert_allclose(op.H.matvec(y).get(), ref.conj().T @ y, rtol=tol, atol=tol)
        np.testing.assert_allclose(op.T.matvec(y).get(), ref.T @ y, rtol=tol, atol=tol)
        np.testing.assert_allclose(op.matvec(x.reshape(7, 1)).get(), (ref @ x).reshape(9, 1), rtol=tol, atol=tol)
        np.testing.assert_allclose((op @ X).get(), ref @ X, rtol=tol, atol=tol)


def test_adjoint_products_use_the_transposed_spmv_without_forming_the_transpose(rng):
    ref = _rand(rng, 40, 30, 0.1, "float64")
    A = S.csr_matrix(ref)
    x = rng.standard_normal(40)
    with oxicuda.trace() as t:
        got = (A.T @ oxicuda.asarray(x)).get()
    assert _variants(t) <= {("sparse_spmv", "transpose"), ("sparse_spmv", "scale")}
    np.testing.assert_allclose(got, ref.T @ x, rtol=1e-12)
    op = L.aslinearoperator(A)
    with oxicuda.trace() as t:
        got = op.rmatvec(oxicuda.asarray(x)).get()
    assert ("sparse_spmv", "transpose") in _variants(t) and ("prim_onesweep", None) not in _variants(t)
    np.testing.assert_allclose(got, ref.T @ x, rtol=1e-12)
    C = S.csc_matrix(_rand(rng, 12, 10, 0.3, "complex128"))
    z = _vec(rng, 12, "complex128")
    with oxicuda.trace() as t:
        got = C.spmv(oxicuda.asarray(z), transpose=True, conj=True).get()
    # the row statistics of the stored CSR are measured (a reduce), nothing is sorted or gathered
    assert {s.family for s in t.specs() if s is not None} <= {"sparse_spmv", "sparse_convert", "prim_reduce"}
    np.testing.assert_allclose(got, C.get().conj().T @ z, rtol=1e-12)


def test_composed_and_user_operators(rng):
    a, b = _rand(rng, 6, 6, 0.5, "float64"), _rand(rng, 6, 6, 0.5, "float64")
    A, B = L.aslinearoperator(S.csr_matrix(a)), L.aslinearoperator(S.csr_matrix(b))
    x = rng.standard_normal(6)
    dense = rng.standard_normal((6, 6))
    D = L.aslinearoperator(oxicuda.asarray(dense))
    cases = [(A + B, a + b), (A - B, a - b), (2.5 * A, 2.5 * a), (A * B, a @ b), (-A, -a), (A ** 2, a @ a),
             (D, dense), (D.H, dense.T), (A + D, a + dense)]
    for op, ref in cases:
        ref = np.asarray(ref.toarray() if sp.issparse(ref) else ref)
        np.testing.assert_allclose(op.matvec(x).get(), ref @ x, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(op.rmatvec(x).get(), ref.T @ x, rtol=1e-12, atol=1e-12)
    z = (1.5 - 2j) * A
    assert z.dtype.kind == "c"
    np.testing.assert_allclose(z.matvec(x).get(), (1.5 - 2j) * (a @ x), rtol=1e-12)
    np.testing.assert_allclose(z.rmatvec(x).get(), (1.5 + 2j) * (a.T @ x), rtol=1e-12)
    user = L.LinearOperator((6, 6), matvec=S.csr_matrix(a).spmv)
    with pytest.raises(NotImplementedError, match="rmatvec"):
        user.rmatvec(x)
    with pytest.raises(ValueError, match="shape"):
        A.matvec(np.ones(5))


@pytest.mark.parametrize("dtype", DTYPES)
def test_norm_of_every_scipy_ord_and_axis(rng, dtype, poisoned):
    ref = _rand(rng, 8, 11, 0.3, dtype)
    ref[2, :] = 0  # an empty row
    ref.eliminate_zeros()
    ref[5, 3] = 0  # an explicit zero (stored)
    A = S.csr_matrix(ref)
    cases = [(None, None), ("fro", None), (1, None), (-1, None), (np.inf, None), (-np.inf, None),
             (1, (1, 0)), (np.inf, (1, 0)), ("fro", (0, 1))]
    cases += [(o, ax) for ax in (0, 1, -1) for o in (None, 2, 1, 0, np.inf, -np.inf, 3, 0.5)]
    for fmt in ("csr", "csc", "coo"):
        M = A.asformat(fmt)
        for ord, axis in cases:
            got = L.norm(M, ord, axis)
            assert isinstance(got, DeviceArray)
            want = spl.norm(ref, ord, axis)
            np.testing.assert_allclose(got.get(), want, rtol=10 * _tol(dtype), err_msg=f"{fmt} ord={ord} axis={axis}")
    with oxicuda.trace() as t:
        L.norm(A, -np.inf, 1)
    assert any(s.family == "solver_norm" and s.segmented for s in t.specs() if s is not None)


def test_norm_bad_input_raises_before_any_launch():
    A = S.csr_matrix(np.eye(3))
    with oxicuda.trace() as t:
        with pytest.raises(TypeError, match="sparse"):
            L.norm(np.eye(3))
        with pytest.raises(NotImplementedError, match="ord=2"):
            L.norm(A, 2)
        with pytest.raises(ValueError, match="invalid norm order for matrices"):
            L.norm(A, "nuc")
        with pytest.raises(ValueError, match="invalid norm order for vectors"):
            L.norm(A, "fro", 0)
        with pytest.raises(ValueError, match="invalid"):
            L.norm(A, None, 2)
        with pytest.raises(ValueError, match="duplicate"):
            L.norm(A, 1, (0, 0))
    assert t.launches == []


def _system(n):
    diag = np.linspace(2, 60, n)
    A = S.diags([-np.ones(n - 1), diag, -0.5 * np.ones(n - 1)], [-1, 0, 1], format="csr")
    return A, S.diags([1 / diag], [0], format="csr")


def test_gmres_with_every_kind_of_preconditioner_matches_scipy(rng):
    n = 40
    A, Minv = _system(n)
    b = rng.standard_normal(n)
    ref = A.get().toarray()
    x_plain, info_plain = L.gmres(A, b, rtol=1e-10, restart=5, maxiter=2000)
    for M in (Minv, Minv.toarray(), Minv.get().toarray(), L.aslinearoperator(Minv)):
        seen = []
        x, info = L.gmres(A, oxicuda.asarray(b), M=M, rtol=1e-10, restart=5, callback=seen.append)
        assert info == 0
        np.testing.assert_allclose(ref @ x.get(), b, atol=1e-8)
        assert seen and all(isinstance(v, float) for v in seen) and seen[-1] <= 1e-10
    xs, _ = spl.gmres(ref, b, M=Minv.get(), rtol=1e-10, restart=5)
    np.testing.assert_allclose(x.get(), xs, atol=1e-8)
    xcol, info = L.gmres(A, oxicuda.asarray(b.reshape(n, 1)), M=Minv, rtol=1e-10)
    assert info == 0 and xcol.shape == (n,)
    with pytest.raises(ValueError, match=r"\(40, 1\)"):
        L.cg(A, np.ones((n, 2)))
    xs_list = []
    L.gmres(A, b, M=Minv, rtol=1e-10, callback=xs_list.append, callback_type="x")
    assert isinstance(xs_list[-1], DeviceArray)
    with pytest.raises(ValueError, match="callback_type"):
        L.gmres(A, b, callback_type="legacy")
    with pytest.raises(ValueError, match="M has shape"):
        L.gmres(A, b, M=S.eye(n - 1, format="csr"))
    assert info_plain == 0 and np.abs(ref @ x_plain.get() - b).max() < 1e-8


@pytest.mark.parametrize("dtype", ["float32", "complex64", "complex128"])
def test_gmres_solves_real_and_complex_nonsymmetric_systems(rng, dtype):
    n = 30
    ref = (sp.diags([np.linspace(3, 9, n)], [0]) + _rand(rng, n, n, 0.1, dtype)).astype(dtype).tocsr()
    b = _vec(rng, n, dtype)
    M = S.diags([(1 / ref.diagonal()).astype(dtype)], [0], format="csr")
    for m in (None, M):
        x, info = L.gmres(S.csr_matrix(ref), b, M=m, rtol=1e-5 if dtype in ("float32", "complex64") else 1e-11,
                          restart=7, maxiter=500)
        assert info == 0
        res = np.linalg.norm(ref.toarray().astype(np.complex128) @ x.get() - b) / np.linalg.norm(b)
        assert res <= (2e-5 if dtype in ("float32", "complex64") else 2e-11)


def test_preconditioned_gmres_needs_fewer_iterations():
    n = 60
    A, Minv = _system(n)
    b = np.ones(n)
    counts = []
    for M in (None, Minv):
        seen = []
        L.gmres(A, b, M=M, rtol=1e-10, restart=4, callback=seen.append)
        counts.append(len(seen))
    assert counts[1] < counts[0]


def test_cg_with_a_preconditioner(rng):
    n = 40
    A, Minv = _system(n)
    A = (A + A.T) * 0.5
    b = rng.standard_normal(n)
    ref = A.get().toarray()
    for M in (None, Minv, Minv.toarray(), L.aslinearoperator(Minv)):
        x, info = L.cg(A, b, M=M, rtol=1e-11)
        assert info == 0
        np.testing.assert_allclose(ref @ x.get(), b, atol=1e-8)


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
def test_multiply_with_dense_and_scalar_and_add_dense_match_scipy(rng, dtype, poisoned):
    ref = _rand(rng, 7, 9, 0.4, dtype)
    A = S.csr_matrix(ref)
    d = _vec(rng, (7, 9), dtype)
    tol = _tol(dtype)
    for other in (d, d[1], d[:, :1].copy(), d[:1].copy(), oxicuda.asarray(d), d.T.copy().T):
        got = A.multiply(other)
        want = ref.multiply(other.get() if isinstance(other, DeviceArray) else other)
        assert isinstance(got, S.csr_matrix)
        np.testing.assert_allclose(got.toarray().get(), want.toarray(), rtol=tol)
    np.testing.assert_allclose(A.multiply(2.5).toarray().get(), ref.multiply(2.5).toarray(), rtol=tol)
    with oxicuda.trace() as t:
        A.multiply(oxicuda.asarray(d))
    assert ("sparse_convert", "mul_dense") in _variants(t)
    for got, want in ((A + d, ref + d), (A - d, ref - d), (d - A, d - ref), (d + A, d + ref),
                      (A.tocsc() + oxicuda.asarray(d), ref + d)):
        assert isinstance(got, DeviceArray)
        np.testing.assert_allclose(got.get(), np.asarray(want), rtol=tol)
    with pytest.raises(ValueError, match="broadcast"):
        A.multiply(np.ones((3, 9)))
    with pytest.raises(ValueError, match="shapes"):
        A + np.ones((9, 7))
    with pytest.raises(NotImplementedError, match="nonzero scalar"):
        A + 1.0


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_diagonal_k_and_setdiag_match_scipy(rng, fmt, poisoned):
    ref = _rand(rng, 7, 10, 0.4, "float64")
    rows = np.array([1, 1, 4], np.int32)
    dup = sp.coo_matrix((np.array([1.0, 2.0, 3.0]), (rows, rows + 1)), shape=(7, 10))  # duplicates on k = 1
    r = ref.tocoo()
    entries = (np.r_[r.data, dup.data], (np.r_[r.row, rows].astype(np.int32), np.r_[r.col, rows + 1].astype(np.int32)))
    A = S.coo_matrix(entries, shape=(7, 10)).asformat(fmt)
    full = (ref + dup).tocsr()
    for k in (-7, -6, -2, 0, 1, 3, 9, 10):
        np.testing.assert_allclose(A.diagonal(k).get(), full.diagonal(k), rtol=1e-13, err_msg=f"k={k}")
    for values, k in ((np.arange(1, 4.0), 1), (2.5, -2), (np.arange(20.0), 0), (np.array([7.0]), 8)):
        A.setdiag(values, k)
        full.setdiag(values, k)
        np.testing.assert_allclose(A.toarray().get(), full.toarray(), rtol=1e-13, err_msg=f"k={k}")
    with pytest.raises(ValueError, match="exceeds"):
        A.setdiag(1.0, 10)
    with pytest.raises(TypeError, match="int"):
        A.diagonal(1.5)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_small_spmatrix_methods_match_scipy(rng, fmt):
    ref = _rand(rng, 6, 8, 0.4, "complex128")
    ref[1, 2] = 0  # a stored zero
    A = S.csr_matrix(ref).asformat(fmt)
    got = abs(A)
    assert got.format == fmt and got.dtype == np.float64
    np.testing.assert_allclose(got.toarray().get(), abs(ref).toarray(), rtol=1e-13)
    for k in (-2, 0, 3):
        np.testing.assert_allclose(A.trace(k).get(), ref.trace(k), rtol=1e-13)
    np.testing.assert_allclose(A.mean().get(), ref.mean(), rtol=1e-13)
    for axis in (0, 1):
        np.testing.assert_allclose(A.mean(axis).get(), ref.mean(axis), rtol=1e-13)
    assert A.count_nonzero() == ref.count_nonzero()
    np.testing.assert_allclose(A.getH().toarray().get(), ref.getH().toarray())
    np.testing.assert_allclose(A.H.toarray().get(), ref.getH().toarray())
    assert A.get_shape() == ref.shape and A.getformat() == fmt
    B = A.copy()
    B.eliminate_zeros()
    assert B.nnz == ref.count_nonzero()
    if fmt != "coo":
        assert np.array_equal(A.sorted_indices().indices.get(), ref.asformat(fmt).sorted_indices().indices)


CUPYX_SCRIPT = '''
import numpy as np
import cupy as cp
import cupyx.scipy.sparse as sparse
import cupyx.scipy.sparse.linalg as splinalg

rng = np.random.default_rng(5)
n = 30
main = cp.asarray(np.full(n, 4.0))
off = cp.asarray(np.full(n - 1, -1.0))
A = sparse.diags([off, main, off], [-1, 0, 1], format="csr")
assert sparse.isspmatrix_csr(A) and sparse.issparse(A)
R = sparse.random(n, n, density=0.1, format="coo", random_state=3)
C = R.tocsr()
Csc = C.tocsc()
B = sparse.csr_matrix((C.data, C.indices, C.indptr), shape=C.shape)
E = sparse.identity(n, format="csr") + sparse.eye(n, k=1, format="csr")
x = cp.asarray(rng.standard_normal(n))
X = cp.asarray(rng.standard_normal((n, 4)))
y = A @ x
Y = B @ X
yt = Csc.T @ x
P = A @ B
Q = (A + E).multiply(B)
b = cp.asarray(np.arange(n, dtype=np.float64))
xs, info = splinalg.cg(A, b, tol=1e-10)
xg, info_g = splinalg.gmres(A, b, tol=1e-10)
op = splinalg.aslinearoperator(A)
result = {
    "y": cp.asnumpy(y), "Y": cp.asnumpy(Y), "yt": cp.asnumpy(yt), "P": P.toarray().get(), "Q": Q.toarray().get(),
    "cg": cp.asnumpy(A @ xs), "gmres": cp.asnumpy(A @ xg), "info": (info, info_g),
    "norm": float(splinalg.norm(A)), "norm1": float(splinalg.norm(B, 1)), "rows": cp.asnumpy(splinalg.norm(B, axis=1)),
    "rmatvec": cp.asnumpy(op.rmatvec(x)), "diag": cp.asnumpy(B.diagonal(1)), "sum": cp.asnumpy(B.sum(axis=0)),
    "nnz": (A.nnz, C.nnz, P.nnz), "dense": cp.asnumpy(A.toarray()),
}
'''


def test_a_cupyx_script_with_only_its_imports_changed_matches_scipy():
    script = CUPYX_SCRIPT.replace("import cupy as cp", "import oxicuda as cp")
    script = script.replace("cupyx.scipy.sparse.linalg", "oxicuda.sparse.linalg").replace("cupyx.scipy.sparse",
                                                                                          "oxicuda.sparse")
    ns: dict = {}
    exec(compile(script, "cupyx_script", "exec"), ns)  # noqa: S102 (the script under test)
    got = ns["result"]
    n = 30
    rng = np.random.default_rng(5)
    x = rng.standard_normal(n)
    X = rng.standard_normal((n, 4))
    A = sp.diags([np.full(n - 1, -1.0), np.full(n, 4.0), np.full(n - 1, -1.0)], [-1, 0, 1], format="csr")
    B = S.random(n, n, density=0.1, format="coo", random_state=3).get().tocsr()
    E = sp.identity(n, format="csr") + sp.eye(n, k=1, format="csr")
    np.testing.assert_allclose(got["y"], A @ x, rtol=1e-12)
    np.testing.assert_allclose(got["Y"], B @ X, rtol=1e-12)
    np.testing.assert_allclose(got["yt"], B.T @ x, rtol=1e-12)
    np.testing.assert_allclose(got["P"], (A @ B).toarray(), rtol=1e-12)
    np.testing.assert_allclose(got["Q"], (A + E).multiply(B).toarray(), rtol=1e-12)
    np.testing.assert_allclose(got["cg"], np.arange(n), atol=1e-8)
    np.testing.assert_allclose(got["gmres"], np.arange(n), atol=1e-8)
    assert got["info"] == (0, 0)
    np.testing.assert_allclose(got["norm"], spl.norm(A), rtol=1e-12)
    np.testing.assert_allclose(got["norm1"], spl.norm(B, 1), rtol=1e-12)
    np.testing.assert_allclose(got["rows"], spl.norm(B, axis=1), rtol=1e-12)
    np.testing.assert_allclose(got["rmatvec"], A.T @ x, rtol=1e-12)
    np.testing.assert_allclose(got["diag"], B.diagonal(1), rtol=1e-12)
    np.testing.assert_allclose(got["sum"], B.sum(axis=0), rtol=1e-12)
    assert got["nnz"] == (A.nnz, B.nnz, (A @ B).nnz)
    np.testing.assert_allclose(got["dense"], A.toarray())


def test_every_sparse_kernel_the_new_methods_launch_is_registered(rng):
    from oxicuda.driver.facts import device_facts
    from oxicuda.ptx import registry

    registry.load_all_families()
    arch = device_facts().arch
    with oxicuda.trace() as t:
        for dtype in ("float32", "complex128"):
            A = S.csr_matrix(_rand(rng, 6, 5, 0.5, dtype))
            d = _vec(rng, (6, 5), dtype)
            A.multiply(d[0])
            A + d
            d - A
            A.diagonal(1)
            A.copy().setdiag(1.0, -1)
            abs(A.tocsc())
            A.T @ _vec(rng, 6, dtype)
            A.tocsc().spmv(_vec(rng, 6, dtype), transpose=True, conj=True)
    for family in ("sparse_convert", "sparse_spmv"):
        registered = set(registry.configurations(arch=arch, family=family))
        launched = {s for s in t.specs() if s is not None and s.family == family}
        assert launched <= registered, launched - registered
