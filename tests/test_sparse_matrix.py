"""oxicuda.sparse matrices against scipy.sparse: constructors, conversions, element operations
and reductions on random matrices with empty rows, a long row, duplicates, unsorted indices,
1x1, 0-nnz and rectangular shapes."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import oxicuda
import oxicuda.sparse as S

DTYPES = ["float32", "float64", "complex64", "complex128"]


def _tol(dtype):
    return 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


def _values(rng, dtype, k):
    v = rng.standard_normal(k)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(k)
    return v.astype(dtype)


def _coo(rng, m, n, dtype, nnz, long_row=True, dups=True):
    """Random COO triplets: rows 0 and m//2 empty, row 1 long, some duplicates, unsorted."""
    rows = rng.integers(0, m, nnz)
    cols = rng.integers(0, n, nnz)
    if m > 2:
        rows[rows == 0] = 1
        rows[rows == m // 2] = m - 1
    if long_row and m > 1:
        extra = min(n, 40)
        rows = np.concatenate([rows, np.full(extra, 1)])
        cols = np.concatenate([cols, rng.permutation(n)[:extra]])
    if dups and len(rows) > 3:
        rows = np.concatenate([rows, rows[:3]])
        cols = np.concatenate([cols, cols[:3]])
    perm = rng.permutation(len(rows))
    return _values(rng, dtype, len(rows)), rows[perm].astype(np.int32), cols[perm].astype(np.int32)


SHAPES = [(1, 1), (37, 23), (5, 64), (64, 5)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_coo_to_csr_and_csc_sum_duplicates_like_scipy(rng, dtype):
    for m, n in SHAPES:
        d, r, c = _coo(rng, m, n, dtype, 3 * (m + n))
        ref = sp.coo_matrix((d, (r, c)), shape=(m, n))
        a = S.coo_matrix((oxicuda.asarray(d), (oxicuda.asarray(r), oxicuda.asarray(c))), shape=(m, n))
        with oxicuda.trace() as t:
            csr = a.tocsr()
        fams = {x.spec.family for x in t.launches}
        assert ({"prim_onesweep"} if m * n > 1 else set()) | {"prim_segreduce", "sparse_convert"} <= fams
        want = ref.tocsr()
        want.sum_duplicates()
        np.testing.assert_array_equal(csr.indptr.get(), want.indptr)
        np.testing.assert_array_equal(csr.indices.get(), want.indices)
        np.testing.assert_allclose(csr.data.get(), want.data, rtol=_tol(dtype), atol=_tol(dtype))
        assert csr.has_canonical_format
        csc = a.tocsc()
        wc = ref.tocsc()
        wc.sum_duplicates()
        np.testing.assert_array_equal(csc.indptr.get(), wc.indptr)
        np.testing.assert_array_equal(csc.indices.get(), wc.indices)
        np.testing.assert_allclose(csc.toarray().get(), ref.toarray(), rtol=_tol(dtype), atol=_tol(dtype))
        np.testing.assert_allclose(csr.tocsc().toarray().get(), ref.toarray(), rtol=_tol(dtype), atol=_tol(dtype))
        back = csr.tocoo()
        np.testing.assert_allclose(sp.coo_matrix((back.data.get(), (back.row.get(), back.col.get())),
                                                 shape=(m, n)).toarray(), ref.toarray(), rtol=_tol(dtype), atol=_tol(dtype))


def test_constructors_and_attributes(rng):
    A = sp.random(20, 30, density=0.2, format="csr", random_state=int(rng.integers(1 << 30)))
    dense = A.toarray()
    for obj in (A, dense, oxicuda.asarray(dense), S.csr_matrix(A), (A.data, A.indices, A.indptr)):
        kw = {"shape": A.shape} if isinstance(obj, tuple) else {}
        a = S.csr_matrix(obj, **kw)
        assert a.shape == (20, 30) and a.dtype == np.float64 and a.nnz == A.nnz and a.format == "csr"
        np.testing.assert_array_equal(a.toarray().get(), dense)
    c = S.csc_matrix(dense)
    np.testing.assert_array_equal(c.toarray().get(), dense)
    np.testing.assert_array_equal(c.indptr.get(), A.tocsc().indptr)
    got = S.csr_matrix(A).get()
    assert sp.isspmatrix_csr(got) and (got != A).nnz == 0
    e = S.csr_matrix((4, 6))
    assert e.nnz == 0 and e.shape == (4, 6)
    np.testing.assert_array_equal(e.toarray().get(), np.zeros((4, 6)))
    assert S.isspmatrix_csr(e) and not S.isspmatrix_csc(e) and S.isspmatrix_coo(e.tocoo())
    z = S.csr_matrix(np.zeros((3, 3)))
    assert z.nnz == 0 and z.indptr.get().tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_arithmetic_transpose_and_reductions(rng, dtype):
    m, n = 31, 17
    d, r, c = _coo(rng, m, n, dtype, 60)
    d2, r2, c2 = _coo(rng, m, n, dtype, 40, long_row=False)
    ref_a = sp.coo_matrix((d, (r, c)), shape=(m, n)).toarray()
    ref_b = sp.coo_matrix((d2, (r2, c2)), shape=(m, n)).toarray()
    a = S.coo_matrix((d, (r, c)), shape=(m, n)).tocsr()
    b = S.coo_matrix((d2, (r2, c2)), shape=(m, n)).tocsr()
    tol = {"rtol": _tol(dtype) * 10, "atol": _tol(dtype) * 10}
    np.testing.assert_allclose((a + b).toarray().get(), ref_a + ref_b, **tol)
    np.testing.assert_allclose((a - b).toarray().get(), ref_a - ref_b, **tol)
    np.testing.assert_allclose((a * 2.5).toarray().get(), 2.5 * ref_a, **tol)
    np.testing.assert_allclose((-a).toarray().get(), -ref_a, **tol)
    np.testing.assert_allclose(a.T.toarray().get(), ref_a.T, **tol)
    np.testing.assert_allclose(a.conj().toarray().get(), ref_a.conj(), **tol)
    np.testing.assert_allclose(a.H.toarray().get(), ref_a.conj().T, **tol)
    np.testing.assert_allclose(complex(a.sum().get()), ref_a.sum(), **tol)
    np.testing.assert_allclose(a.sum(axis=1).get().ravel(), ref_a.sum(1), **tol)
    np.testing.assert_allclose(a.sum(axis=0).get().ravel(), ref_a.sum(0), **tol)
    np.testing.assert_allclose(a.diagonal().get(), np.diagonal(ref_a), **tol)
    other = "complex128" if dtype != "complex128" else "complex64"
    np.testing.assert_allclose(a.astype(other).toarray().get(), ref_a.astype(other), **tol)
    cp = a.copy()
    assert cp.data.ptr != a.data.ptr


def test_sum_duplicates_sort_indices_and_eliminate_zeros(rng):
    m, n = 12, 9
    data = np.array([1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0])
    indices = np.array([5, 1, 3, 1, 8, 2, 0], np.int32)
    indptr = np.array([0, 4, 4, 7] + [7] * (m - 3), np.int32)
    ref = sp.csr_matrix((data, indices, indptr), shape=(m, n))
    a = S.csr_matrix((data, indices, indptr), shape=(m, n))
    assert not a.has_canonical_format
    s = a.copy()
    s.sort_indices()
    want = ref.copy()
    want.sort_indices()
    np.testing.assert_array_equal(s.indices.get(), want.indices)
    np.testing.assert_array_equal(s.data.get(), want.data)
    a.sum_duplicates()
    want = ref.copy()
    want.sum_duplicates()
    np.testing.assert_array_equal(a.indptr.get(), want.indptr)
    np.testing.assert_array_equal(a.indices.get(), want.indices)
    np.testing.assert_array_equal(a.data.get(), want.data)
    a.eliminate_zeros()
    want.eliminate_zeros()
    np.testing.assert_array_equal(a.indptr.get(), want.indptr)
    np.testing.assert_array_equal(a.data.get(), want.data)


def _sorts(t):
    """The key types of the radix sorts in a trace (one entry per sort: its histogram launch)."""
    return [x.spec.key_type for x in t.launches if x.spec.family == "prim_onesweep" and x.spec.stage == "hist"]


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
def test_conversions_sort_only_what_is_out_of_order(rng, dtype):
    m, n = 300, 170
    ref = sp.random(m, n, density=0.05, format="csr", random_state=int(rng.integers(1 << 30)), dtype=np.float64)
    ref.data = _values(rng, dtype, ref.nnz)
    coo = ref.tocoo()
    r, c = coo.row.astype(np.int32), coo.col.astype(np.int32)
    a = S.coo_matrix((oxicuda.asarray(coo.data), (oxicuda.asarray(r), oxicuda.asarray(c))), shape=(m, n))
    # sorted and unique: no sort, no merge; copy=False shares the arrays (scipy allows it)
    with oxicuda.trace() as t:
        csr = a.tocsr()
    assert _sorts(t) == [] and "prim_segreduce" not in {x.spec.family for x in t.launches}
    assert csr.data.ptr == a.data.ptr and csr.indices.ptr == a.col.ptr
    assert a.tocsr(copy=True).data.ptr != a.data.ptr
    np.testing.assert_array_equal(csr.indptr.get(), ref.indptr)
    np.testing.assert_array_equal(csr.indices.get(), ref.indices)
    np.testing.assert_array_equal(csr.data.get(), ref.data)
    # sorted with duplicates: merged without a sort
    k = np.repeat(np.arange(coo.nnz), 1 + (np.arange(coo.nnz) % 3 == 0))
    dup = S.coo_matrix((oxicuda.asarray(coo.data[k]), (oxicuda.asarray(r[k]), oxicuda.asarray(c[k]))), shape=(m, n))
    with oxicuda.trace() as t:
        merged = dup.tocsr()
    assert _sorts(t) == []
    want = sp.coo_matrix((coo.data[k], (r[k], c[k])), shape=(m, n)).tocsr()
    want.sum_duplicates()
    np.testing.assert_array_equal(merged.indices.get(), want.indices)
    np.testing.assert_allclose(merged.data.get(), want.data, rtol=_tol(dtype), atol=_tol(dtype))
    # CSR -> CSC: the rows are in order, so one sort of the int32 column indices
    with oxicuda.trace() as t:
        csc = csr.tocsc()
    assert _sorts(t) == ["int32"]
    wc = ref.tocsc()
    np.testing.assert_array_equal(csc.indptr.get(), wc.indptr)
    np.testing.assert_array_equal(csc.indices.get(), wc.indices)
    np.testing.assert_array_equal(csc.data.get(), wc.data)
    # shuffled: the u64 (row, col) keys
    p = rng.permutation(coo.nnz)
    shuf = S.coo_matrix((oxicuda.asarray(coo.data[p]), (oxicuda.asarray(r[p]), oxicuda.asarray(c[p]))), shape=(m, n))
    with oxicuda.trace() as t:
        back = shuf.tocsr()
    assert _sorts(t) == ["uint64"]
    np.testing.assert_array_equal(back.indices.get(), ref.indices)
    np.testing.assert_array_equal(back.data.get(), ref.data)


def test_order_bits_of_every_kind_of_neighbour_across_cta_tiles():
    from oxicuda.sparse import device_ops as D
    from oxicuda.sparse.kernels.convert import ORDER_DUPLICATE, ORDER_MINOR_UNSORTED, ORDER_UNSORTED

    tile = 256 * 4
    for n in (0, 1, 2, tile - 1, tile, tile + 1, 3 * tile + 5):
        major = np.arange(n, dtype=np.int32) // 3
        minor = (np.arange(n, dtype=np.int32) % 3) * 7
        assert D.order_bits(oxicuda.asarray(major), oxicuda.asarray(minor), None) == \
            (ORDER_MINOR_UNSORTED if n > 3 else 0)
        for at in sorted({1, n // 2, n - 1, tile, tile + 1} & set(range(1, n))):
            mj, mn = major.copy(), minor.copy()
            mj[at], mn[at] = mj[at - 1], mn[at - 1]  # a duplicate of the entry before
            bits = D.order_bits(oxicuda.asarray(mj), oxicuda.asarray(mn), None)
            assert bits & ORDER_DUPLICATE and not bits & ORDER_UNSORTED, (n, at)
            mj = major.copy()
            mj[at - 1] = mj[at] + 1  # one pair out of order, at a tile edge too
            bits = D.order_bits(oxicuda.asarray(mj), oxicuda.asarray(minor), None)
            assert bits & ORDER_UNSORTED, (n, at)


def test_construction_helpers_match_scipy():
    np.testing.assert_array_equal(S.eye(4, 6, k=2).toarray().get(), sp.eye(4, 6, k=2).toarray())
    np.testing.assert_array_equal(S.eye(5, 3, k=-1, format="csc").toarray().get(), sp.eye(5, 3, k=-1).toarray())
    np.testing.assert_array_equal(S.identity(3, dtype=np.complex64).toarray().get(), np.eye(3, dtype=np.complex64))
    d = S.diags([[1.0, 2.0], [3.0, 4.0, 5.0]], [1, 0])
    np.testing.assert_array_equal(d.toarray().get(), sp.diags([[1.0, 2.0], [3.0, 4.0, 5.0]], [1, 0]).toarray())
    r = S.random(20, 10, 0.3, format="csr", random_state=4)
    assert r.nnz == 60 and S.isspmatrix_csr(r)
    h = S.random(1 << 20, 1 << 20, 1e-9, random_state=5).get()  # 2^40 positions, 1100 entries
    assert h.nnz == 1100 and np.unique(h.row.astype(np.int64) * (1 << 20) + h.col).size == 1100


def test_random_positions_are_distinct_and_take_memory_in_the_entries_not_the_shape():
    import tracemalloc

    from oxicuda.sparse.construct import _distinct_positions

    rng = np.random.default_rng(0)
    for total, k in [(1, 1), (10, 10), (10, 3), (100, 60), (1 << 40, 1000)]:
        p = _distinct_positions(rng, total, k)
        assert p.size == k and np.unique(p).size == k and 0 <= p.min() and p.max() < total
    tracemalloc.start()
    p = _distinct_positions(rng, 16_000_000, 800_000)  # numpy's choice makes a 128 MB arange here
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert np.unique(p).size == 800_000 and peak < 40e6, peak
    # uniform: each of 20 positions is drawn about equally often
    counts = np.bincount(np.concatenate([_distinct_positions(rng, 20, 5) for _ in range(4000)]), minlength=20)
    assert counts.min() > 850 and counts.max() < 1150, counts


def test_bad_input_raises_before_anything_is_written():
    data = np.ones(3)
    with pytest.raises(ValueError, match="indptr has 3 entries"):
        S.csr_matrix((data, np.array([0, 1, 2]), np.array([0, 1, 3])), shape=(3, 3))
    with pytest.raises(ValueError, match="not monotone"):
        S.csr_matrix((data, np.array([0, 1, 2]), np.array([0, 2, 1, 3])), shape=(3, 3))
    with pytest.raises(ValueError, match=r"indices must lie in \[0, 3\)"):
        S.csr_matrix((data, np.array([0, 5, 2]), np.array([0, 1, 2, 3])), shape=(3, 3))
    with pytest.raises(ValueError, match="indptr\\[-1\\] = 2"):
        S.csr_matrix((data, np.array([0, 1, 2]), np.array([0, 1, 2, 2])), shape=(3, 3))
    with pytest.raises(ValueError, match="row index is 7"):
        S.coo_matrix((data, (np.array([0, 7, 1]), np.array([0, 1, 2]))), shape=(3, 3))
    with pytest.raises(TypeError, match="dtype float16"):
        S.csr_matrix(np.eye(3, dtype=np.float16))
    a = S.eye(3, format="csr")
    with pytest.raises(ValueError, match="inconsistent shapes"):
        a + S.eye(4, format="csr")
    with pytest.raises(TypeError, match="dtypes"):
        a + S.eye(3, format="csr", dtype=np.float32)
    S.csr_matrix((data, np.array([0, 5, 2]), np.array([0, 1, 2, 3])), shape=(3, 3), check=False)


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
def test_elementwise_multiply_with_sparse_and_dense(rng, dtype):
    a_ref = sp.random(25, 18, 0.3, format="csr", random_state=int(rng.integers(1 << 30))).astype(dtype)
    b_ref = sp.random(25, 18, 0.3, format="csr", random_state=int(rng.integers(1 << 30))).astype(dtype)
    dense = _values(rng, dtype, 25 * 18).reshape(25, 18)
    a = S.csr_matrix(a_ref)
    with oxicuda.trace() as t:
        c = a.multiply(S.csr_matrix(b_ref))
    assert "mul_sparse" in [r.spec.variant for r in t.launches if r.spec.family == "sparse_convert"]
    want = a_ref.multiply(b_ref).tocsr()
    assert c.nnz == want.nnz
    tol = {"rtol": _tol(dtype), "atol": _tol(dtype)}
    np.testing.assert_allclose(c.toarray().get(), want.toarray(), **tol)
    np.testing.assert_allclose(a.multiply(dense).toarray().get(), a_ref.multiply(dense).toarray(), **tol)
    with pytest.raises(ValueError, match="shape"):
        a.multiply(dense[:5])


def test_int64_index_arrays_are_narrowed_on_the_device_or_rejected():
    data = np.array([1.0, 2.0, 3.0])
    ind = np.array([0, 2, 1], np.int64)
    ptr = np.array([0, 1, 3], np.int64)
    with oxicuda.trace() as t:
        a = S.csr_matrix((oxicuda.asarray(data), oxicuda.asarray(ind), oxicuda.asarray(ptr)), shape=(2, 3))
    assert "narrow_index" in [r.spec.variant for r in t.launches if r.spec.family == "sparse_convert"]
    np.testing.assert_array_equal(a.toarray().get(), [[1, 0, 0], [0, 3, 2]])
    with pytest.raises(ValueError, match="int32"):
        S.coo_matrix((data, (np.array([0, 1, 1 << 33]), np.array([0, 1, 2]))), shape=(2, 3))
    with pytest.raises(TypeError, match="integers"):
        S.csr_matrix((data, ind.astype(float), ptr), shape=(2, 3))
