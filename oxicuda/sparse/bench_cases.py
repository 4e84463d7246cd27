"""Sparse benchmark cases (issue 18's figures) beside cuSPARSE through cupyx.scipy.sparse in the
same process. The matrices are built with numpy/scipy on the host once per case and uploaded to
both libraries.

Bytes per SpMV (CSR, int32 indices): the row pointers (4 (m + 1)), the column indices and values
(nnz (4 + s)), x once (s n: a lower bound, gathers may read it more) and y written (s m).
"""

from __future__ import annotations

import numpy as np

from oxicuda.bench.case import Case, Prepared, register_case


def _cupyx():
    try:
        import cupy
        import cupyx.scipy.sparse as cs

        cupy.cuda.runtime.getDeviceCount()
        return cupy, cs
    except Exception:
        return None


def _on_gpu() -> bool:
    import oxicuda

    return oxicuda.get_backend() == "cuda"


def _uniform(n: int, nnz: int, dtype, rng):
    import scipy.sparse as sp

    per = max(1, nnz // n)
    rows = np.repeat(np.arange(n, dtype=np.int64), per)
    cols = rng.integers(0, n, rows.size)
    a = sp.csr_matrix((rng.standard_normal(rows.size).astype(dtype), (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    return a


def _power_law(n: int, nnz: int, dtype, rng):
    import scipy.sparse as sp

    lengths = np.minimum(n, (rng.pareto(1.1, n) + 1) * (nnz / n) * 0.1).astype(np.int64)
    lengths = np.maximum(1, (lengths * (nnz / max(1, lengths.sum()))).astype(np.int64))
    rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
    cols = rng.integers(0, n, rows.size)
    a = sp.csr_matrix((rng.standard_normal(rows.size).astype(dtype), (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    return a


def _poisson(side: int, dtype):
    import scipy.sparse as sp

    t = sp.diags([-np.ones(side - 1), 4 * np.ones(side), -np.ones(side - 1)], [-1, 0, 1])
    i = sp.identity(side)
    return (sp.kron(i, t) + sp.kron(sp.diags([-np.ones(side - 1), -np.ones(side - 1)], [-1, 1]), i)).astype(dtype).tocsr()


def _spmv_bytes(a) -> float:
    s = a.dtype.itemsize
    m, n = a.shape
    return float(4 * (m + 1) + a.nnz * (4 + s) + s * n + s * m)


def _spmv_case(build, gpu_args, emu_args, dtype):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        import oxicuda.sparse as S

        rng = np.random.default_rng(0)
        ref = build(*(gpu_args if _on_gpu() else emu_args), dtype, rng) if build is not _poisson else \
            build(*(gpu_args if _on_gpu() else emu_args), dtype)
        a = S.csr_matrix(ref)
        a.spmv_kernel()
        x = rng.standard_normal(ref.shape[1]).astype(dtype)
        dx = oxicuda.asarray(x)
        y = oxicuda.empty((ref.shape[0],), dtype)

        def ours(i: int) -> None:
            a.spmv(dx, y)

        def check() -> float:
            ours(0)
            want = ref.astype(np.float64) @ x.astype(np.float64)
            return float(np.max(np.abs(y.get() - want)) / max(1e-30, np.max(np.abs(want))))

        p = Prepared(ours=ours, check=check, tolerance=1e-4 if dtype == np.float32 else 1e-10,
                     bytes=_spmv_bytes(ref), problem=f"{ref.shape[0]} rows, {ref.nnz} nnz, {a.spmv_kernel()[0]}")
        v = _cupyx()
        if v is not None:
            cp, cs = v
            ca, cx = cs.csr_matrix(ref), cp.asarray(x)
            p.vendor, p.vendor_name = (lambda i: ca @ cx), "cuSPARSE (cupyx.scipy.sparse)"
        return p

    return prepare


def _convert_case(kind: str):
    def prepare(quick: bool) -> Prepared:
        import oxicuda.sparse as S

        rng = np.random.default_rng(0)
        ref = _uniform(*((1 << 21, 67_000_000) if _on_gpu() else (300, 3000)), np.float32, rng)
        coo = ref.tocoo()
        if kind == "coo2csr":
            src = S.coo_matrix(coo)
            run = src.tocsr
        else:
            src = S.csr_matrix(ref)
            run = src.tocsc
        res = [None]

        def ours(i: int) -> None:
            res[0] = run()

        def check() -> float:
            ours(0)
            want = ref if kind == "coo2csr" else ref.tocsc()
            return float(np.count_nonzero(res[0].indices.get() != want.indices)
                         + np.count_nonzero(res[0].indptr.get() != want.indptr))

        nnz = ref.nnz
        p = Prepared(ours=ours, check=check, tolerance=0.5, bytes=float(nnz * 12 * 2), problem=f"nnz={nnz}")
        v = _cupyx()
        if v is not None:
            _cp, cs = v
            csrc = cs.coo_matrix(coo) if kind == "coo2csr" else cs.csr_matrix(ref)
            p.vendor = (lambda i: csrc.tocsr()) if kind == "coo2csr" else (lambda i: csrc.tocsc())
            p.vendor_name = "cuSPARSE (cupyx.scipy.sparse)"
        return p

    return prepare


register_case(Case("sparse", "spmv_csr_f32_uniform_2^21_67M", _spmv_case(_uniform, (1 << 21, 67_000_000), (500, 8000), np.float32),
                   unit="GB/s", note="vendor mark 1027 GB/s"))
register_case(Case("sparse", "spmv_csr_f32_powerlaw_2^21_67M", _spmv_case(_power_law, (1 << 21, 67_000_000), (500, 8000), np.float32),
                   unit="GB/s", note="goal >= 1.5x cuSPARSE"))
register_case(Case("sparse", "spmv_csr_f64_poisson2d_2^24", _spmv_case(_poisson, (4096,), (24,), np.float64),
                   unit="GB/s", quick=False))
register_case(Case("sparse", "coo_to_csr_67M", _convert_case("coo2csr"), unit="GB/s", quick=False))
register_case(Case("sparse", "csr_to_csc_67M", _convert_case("csr2csc"), unit="GB/s", quick=False))


def _spmm_case(cols: int):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        import oxicuda.sparse as S

        rng = np.random.default_rng(0)
        ref = _uniform(*((1 << 21, 67_000_000) if _on_gpu() else (300, 3000)), np.float32, rng)
        a = S.csr_matrix(ref)
        x = rng.standard_normal((ref.shape[1], cols)).astype(np.float32)
        dx = oxicuda.asarray(x)
        y = oxicuda.empty((ref.shape[0], cols), np.float32)

        def ours(i: int) -> None:
            a.spmm(dx, y)

        def check() -> float:
            ours(0)
            rows = rng.choice(ref.shape[0], size=min(64, ref.shape[0]), replace=False)
            want = ref[rows].astype(np.float64) @ x.astype(np.float64)
            return float(np.max(np.abs(y.get()[rows] - want)) / max(1e-30, np.max(np.abs(want))))

        m, n = ref.shape
        moved = 4 * (m + 1) + 8 * ref.nnz + 4 * cols * (n + m)
        p = Prepared(ours=ours, check=check, tolerance=1e-4, bytes=float(moved), problem=f"{m} rows, {ref.nnz} nnz x {cols}")
        v = _cupyx()
        if v is not None:
            cp, cs = v
            ca, cx = cs.csr_matrix(ref), cp.asarray(x)
            p.vendor, p.vendor_name = (lambda i: ca @ cx), "cuSPARSE (cupyx.scipy.sparse)"
        return p

    return prepare


def _spgemm_prepare(quick: bool) -> Prepared:
    import oxicuda.sparse as S

    ref = _poisson(2048 if _on_gpu() else 12, np.float64)
    a = S.csr_matrix(ref)
    res = [None]

    def ours(i: int) -> None:
        res[0] = a @ a

    def check() -> float:
        ours(0)
        want = (ref @ ref).tocsr()
        want.sort_indices()
        return float(np.max(np.abs(res[0].data.get() - want.data)) / np.max(np.abs(want.data)))

    nnz_c = (ref @ ref).nnz if not _on_gpu() else 13 * ref.shape[0]
    p = Prepared(ours=ours, check=check, tolerance=1e-12,
                 bytes=float(2 * 12 * ref.nnz + 12 * nnz_c), problem=f"{ref.shape[0]} rows")
    v = _cupyx()
    if v is not None:
        _, cs = v
        ca = cs.csr_matrix(ref)
        p.vendor, p.vendor_name = (lambda i: ca @ ca), "cuSPARSE (cupyx.scipy.sparse)"
    return p


def _sptrsv_prepare(quick: bool) -> Prepared:
    import scipy.sparse as sp

    import oxicuda
    import oxicuda.sparse as S
    from oxicuda.sparse import linalg as L

    low = sp.tril(_poisson(4096 if _on_gpu() else 12, np.float64)).tocsr()
    a = S.csr_matrix(low)
    b = np.random.default_rng(0).standard_normal(low.shape[0])
    db = oxicuda.asarray(b)
    res = [None]

    def ours(i: int) -> None:
        res[0] = L.spsolve_triangular(a, db)

    def check() -> float:
        ours(0)
        r = low @ res[0].get() - b
        return float(np.max(np.abs(r)) / np.max(np.abs(b)))

    p = Prepared(ours=ours, check=check, tolerance=1e-10,
                 bytes=float(12 * low.nnz + 4 * (low.shape[0] + 1) + 16 * low.shape[0]), problem=f"{low.shape[0]} rows")
    v = _cupyx()
    if v is not None:
        cp, cs = v
        import cupyx.scipy.sparse.linalg as cl

        ca, cb = cs.csr_matrix(low), cp.asarray(b)
        p.vendor, p.vendor_name = (lambda i: cl.spsolve_triangular(ca, cb)), "cuSPARSE (cupyx spsolve_triangular)"
    return p


register_case(Case("sparse", "spmm_csr_f32_67M_x64", _spmm_case(64), unit="GB/s", quick=False))
register_case(Case("sparse", "spgemm_poisson2d_2^22", _spgemm_prepare, unit="GB/s", quick=False,
                   note="2048^2 grid (the issue's 4096^2 grid gives C of ~220M nnz)"))
register_case(Case("sparse", "sptrsv_poisson2d_lower_2^24", _sptrsv_prepare, unit="GB/s", quick=False,
                   note="our level analysis is cached on the matrix (made in check); cupyx analyses per call"))
