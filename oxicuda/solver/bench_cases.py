"""Solver benchmark cases (issue 19's figures) beside cuSOLVER / cuBLAS through CuPy in the same
process. The factorizations work in place, so every timed call (ours and the vendor's) first
restores the input with one device-to-device copy (about 1% of a factorization at n = 8192);
both sides pay it. On the emulator each case shrinks to a tiny problem and reports what it ran.

eigh: oxicuda.solver.eigh (the tridiagonal path above SYEVD_VECTORS_MIN) against
cupy.linalg.eigh (cuSOLVER syevd); the check is the scaled residual and orthogonality
(LAPACK's measures, divided by 30 so that 1.0 is LAPACK's threshold) on sampled columns.
Not here yet: gesvd.
"""

from __future__ import annotations

import numpy as np

from oxicuda.bench.case import Case, Prepared, register_case

CHECK_SAMPLE = 64
TOL = {"float32": 1e-3, "float64": 1e-9}


def _cupy():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:  # no usable CuPy is no vendor column, whatever the cause
        return None


def _on_gpu() -> bool:
    import oxicuda

    return oxicuda.get_backend() == "cuda"


def _matrix(rng, n: int, dtype: str, spd: bool) -> np.ndarray:
    """Random normal (column-major storage = the transpose; irrelevant for random input), or
    symmetric and diagonally dominant (positive definite) for potrf; O(n^2) on the host."""
    a = rng.standard_normal((n, n))
    if spd:
        a = (a + a.T) / 2 + n * np.eye(n)
    return a.astype(dtype)


def _restore(dst, src, nbytes: int) -> None:
    from oxicuda.driver.backend import api

    api().memcpy_dtod(dst, src, nbytes)


def _vendor_buffers(cupy, host):
    pristine = cupy.asarray(np.asfortranarray(host))
    return pristine, cupy.empty_like(pristine)


def _factor_case(kind: str, n: int, dtype: str):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda.solver import geqrf, lu, potrf

        N = n if _on_gpu() else min(n, 24)
        rng = np.random.default_rng(0)
        host = _matrix(rng, N, dtype, spd=kind == "potrf")
        src = oxicuda.asarray(np.asfortranarray(host))
        work = oxicuda.empty((N, N), dtype, order="F")
        piv = oxicuda.empty((N,), np.int32)
        tau = oxicuda.empty((N,), dtype)
        info = oxicuda.empty((1,), np.int32)
        nbytes = src.nbytes

        def ours(i: int) -> None:
            _restore(work.ptr, src.ptr, nbytes)
            if kind == "potrf":
                potrf.potrf_ptr("L", N, work.ptr, N, info.ptr, dtype=dtype)
            elif kind == "getrf":
                lu.getrf_ptr(N, N, work.ptr, N, piv.ptr, info.ptr, dtype=dtype)
            else:
                geqrf.geqrf_ptr(N, N, work.ptr, N, tau.ptr, dtype=dtype)

        def check() -> float:
            ours(0)
            f = work.get().astype(np.float64)
            a = host.astype(np.float64)
            cols = np.sort(rng.choice(N, size=min(N, CHECK_SAMPLE), replace=False))
            if kind == "potrf":
                low = np.tril(f)
                got, ref = low @ low[cols].T, a[:, cols]
            elif kind == "getrf":
                pa = a[:, cols].copy()
                for r, p in enumerate(piv.get() - 1):
                    pa[[r, p]] = pa[[p, r]]
                got, ref = (np.tril(f, -1) + np.eye(N)) @ np.triu(f)[:, cols], pa
            else:  # A^T A = R^T R (Q orthogonal), sampled columns
                r = np.triu(f)
                got, ref = r.T @ r[:, cols], a.T @ a[:, cols]
            return float(np.max(np.abs(got - ref)) / max(1e-30, np.max(np.abs(ref))))

        flops = {"potrf": N ** 3 / 3.0, "getrf": 2.0 * N ** 3 / 3.0, "geqrf": 4.0 * N ** 3 / 3.0}[kind]
        prepared = Prepared(ours=ours, check=check, tolerance=TOL[dtype] * (10 if kind == "geqrf" else 1),
                            flops=flops, problem=f"{N}x{N}")
        cupy = _cupy()
        if cupy is not None:
            from cupy_backends.cuda.libs import cusolver

            handle = cupy.cuda.device.get_cusolver_handle()
            pristine, a = _vendor_buffers(cupy, host)
            letter = "s" if dtype == "float32" else "d"
            dinfo = cupy.empty(1, np.int32)
            dpiv = cupy.empty(N, np.int32)
            dtau = cupy.empty(N, dtype)
            if kind == "potrf":
                lwork = getattr(cusolver, f"{letter}potrf_bufferSize")(handle, 0, N, a.data.ptr, N)
            elif kind == "getrf":
                lwork = getattr(cusolver, f"{letter}getrf_bufferSize")(handle, N, N, a.data.ptr, N)
            else:
                lwork = getattr(cusolver, f"{letter}geqrf_bufferSize")(handle, N, N, a.data.ptr, N)
            ws = cupy.empty(max(1, lwork), dtype)
            fn = getattr(cusolver, f"{letter}{kind}")

            def vendor(i: int) -> None:
                cupy.copyto(a, pristine)
                if kind == "potrf":
                    fn(handle, 0, N, a.data.ptr, N, ws.data.ptr, lwork, dinfo.data.ptr)
                elif kind == "getrf":
                    fn(handle, N, N, a.data.ptr, N, ws.data.ptr, dpiv.data.ptr, dinfo.data.ptr)
                else:
                    fn(handle, N, N, a.data.ptr, N, dtau.data.ptr, ws.data.ptr, lwork, dinfo.data.ptr)
            prepared.vendor, prepared.vendor_name = vendor, f"cuSOLVER (CuPy {letter}{kind})"
        return prepared
    return prepare


def _batched_case(kind: str, n: int, batch: int, dtype: str):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda.solver import batched

        B = batch if _on_gpu() else 3
        rng = np.random.default_rng(0)
        host = np.stack([_matrix(rng, n, dtype, spd=kind == "potrf") for _ in range(B)])
        src = oxicuda.asarray(np.ascontiguousarray(host.transpose(0, 2, 1)))  # column-major matrices
        work = oxicuda.empty(src.shape, dtype)
        es = np.dtype(dtype).itemsize
        ptrs = oxicuda.asarray(np.array([work.ptr + z * n * n * es for z in range(B)], np.uint64))
        piv = oxicuda.empty((B, n), np.int32)
        info = oxicuda.empty((B,), np.int32)

        def ours(i: int) -> None:
            _restore(work.ptr, src.ptr, src.nbytes)
            if kind == "potrf":
                batched.potrf_batched_ptr("L", n, ptrs.ptr, n, info.ptr, B, dtype=dtype)
            else:
                batched.getrf_batched_ptr(n, ptrs.ptr, n, piv.ptr, info.ptr, B, dtype=dtype)

        def check() -> float:
            ours(0)
            f = work.get().transpose(0, 2, 1).astype(np.float64)
            worst = 0.0
            for z in range(min(B, 8)):
                a = host[z].astype(np.float64)
                if kind == "potrf":
                    low = np.tril(f[z])
                    err = np.abs(low @ low.T - a).max()
                else:
                    pa = a.copy()
                    for r, p in enumerate(piv.get()[z] - 1):
                        pa[[r, p]] = pa[[p, r]]
                    err = np.abs((np.tril(f[z], -1) + np.eye(n)) @ np.triu(f[z]) - pa).max()
                worst = max(worst, err / np.abs(a).max())
            return float(worst)

        flops = B * (n ** 3 / 3.0 if kind == "potrf" else 2.0 * n ** 3 / 3.0)
        prepared = Prepared(ours=ours, check=check, tolerance=TOL[dtype], flops=flops, problem=f"{B}x{n}x{n}")
        cupy = _cupy()
        if cupy is not None:
            pristine = cupy.asarray(np.ascontiguousarray(host.transpose(0, 2, 1)))
            a = cupy.empty_like(pristine)
            vptrs = cupy.asarray(np.array([a.data.ptr + z * n * n * es for z in range(B)], np.uint64))
            dinfo = cupy.empty(B, np.int32)
            dpiv = cupy.empty(B * n, np.int32)
            letter = "s" if dtype == "float32" else "d"
            if kind == "potrf":
                from cupy_backends.cuda.libs import cusolver

                handle = cupy.cuda.device.get_cusolver_handle()
                fn = getattr(cusolver, f"{letter}potrfBatched")

                def vendor(i: int) -> None:
                    cupy.copyto(a, pristine)
                    fn(handle, 0, n, vptrs.data.ptr, n, dinfo.data.ptr, B)
                name = f"cuSOLVER (CuPy {letter}potrfBatched)"
            else:
                from cupy_backends.cuda.libs import cublas

                handle = cupy.cuda.device.get_cublas_handle()
                fn = getattr(cublas, f"{letter}getrfBatched")

                def vendor(i: int) -> None:
                    cupy.copyto(a, pristine)
                    fn(handle, n, vptrs.data.ptr, n, dpiv.data.ptr, dinfo.data.ptr, B)
                name = f"cuBLAS (CuPy {letter}getrfBatched)"
            prepared.vendor, prepared.vendor_name = vendor, name
        return prepared
    return prepare


def _solve_case(n: int, dtype: str):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        import oxicuda.solver as S

        N = n if _on_gpu() else min(n, 24)
        rng = np.random.default_rng(0)
        ha, hb = rng.standard_normal((N, N)).astype(dtype), rng.standard_normal(N).astype(dtype)
        a, b = oxicuda.asarray(ha), oxicuda.asarray(hb)
        out = [None]

        def ours(i: int) -> None:
            out[0] = S.solve(a, b)

        def check() -> float:
            ours(0)
            x = out[0].get().astype(np.float64)
            r = ha.astype(np.float64) @ x - hb
            return float(np.abs(r).max() / (np.abs(ha).max() * np.abs(x).max() * N))

        prepared = Prepared(ours=ours, check=check, tolerance=TOL[dtype] * 1e-3,
                            flops=2.0 * N ** 3 / 3.0 + 2.0 * N * N, problem=f"{N}x{N}")
        cupy = _cupy()
        if cupy is not None:
            ca, cb = cupy.asarray(ha), cupy.asarray(hb)
            prepared.vendor = lambda i: cupy.linalg.solve(ca, cb)
            prepared.vendor_name = "cuSOLVER (cupy.linalg.solve)"
        return prepared
    return prepare


for _kind, _n, _dt in (("potrf", 8192, "float64"), ("potrf", 8192, "float32"), ("getrf", 8192, "float32"),
                       ("getrf", 8192, "float64"), ("geqrf", 8192, "float64")):
    register_case(Case("solver", f"{_kind}_{_dt}_{_n}", _factor_case(_kind, _n, _dt),
                       flops={"potrf": _n ** 3 / 3.0, "getrf": 2.0 * _n ** 3 / 3.0, "geqrf": 4.0 * _n ** 3 / 3.0}[_kind],
                       quick=False, note="in place: each call restores A with one device copy (both sides)"))
for _kind in ("potrf", "getrf"):
    register_case(Case("solver", f"{_kind}_batched_float32_10000x32", _batched_case(_kind, 32, 10000, "float32"),
                       flops=10000 * (32 ** 3 / 3.0 if _kind == "potrf" else 2.0 * 32 ** 3 / 3.0),
                       note="device pointer arrays; each call restores the batch with one device copy"))
register_case(Case("solver", "solve_float64_4096", _solve_case(4096, "float64"), flops=2.0 * 4096 ** 3 / 3.0,
                   quick=False, note="end to end: copies, getrf, the singularity check (one sync), getrs"))


def _eigh_case(n: int, dtype: str):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        import oxicuda.solver as S

        N = n if _on_gpu() else min(n, 24)
        rng = np.random.default_rng(0)
        x = rng.standard_normal((N, N))
        host = ((x + x.T) / 2).astype(dtype)
        a = oxicuda.asarray(host)
        out = [None]

        def ours(i: int) -> None:
            out[0] = S.eigh(a, algo="tridiagonal")

        def check() -> float:
            ours(0)
            w, v = (o.get().astype(np.float64) for o in out[0])
            h = host.astype(np.float64)
            eps = float(np.finfo(dtype).eps)
            norm = np.abs(h).sum(axis=0).max()
            cols = np.sort(rng.choice(N, size=min(N, CHECK_SAMPLE), replace=False))
            res = np.abs(h @ v[:, cols] - v[:, cols] * w[cols]).max() / (N * norm * eps)
            orth = np.abs(v.T @ v[:, cols] - np.eye(N)[:, cols]).max() / (N * eps)
            return float(max(res, orth) / 30.0)

        # syevd's count with vectors (LAPACK's working note: 4/3 n^3 sytrd + 2 n^3 ormtr); ours
        # also spends 8/3 n^3 on the reorthogonalizing QR, not counted
        prepared = Prepared(ours=ours, check=check, tolerance=1.0, flops=4.0 * N ** 3 / 3.0 + 2.0 * N ** 3,
                            problem=f"{N}x{N}")
        cupy = _cupy()
        if cupy is not None:
            ca = cupy.asarray(host)
            prepared.vendor = lambda i: cupy.linalg.eigh(ca)
            prepared.vendor_name = "cuSOLVER (cupy.linalg.eigh)"
        return prepared
    return prepare


for _n in (1024, 4096, 8192):
    for _dt in ("float32", "float64"):
        register_case(Case("solver", f"eigh_{_dt}_{_n}", _eigh_case(_n, _dt), flops=4.0 * _n ** 3 / 3.0 + 2.0 * _n ** 3,
                           quick=False, note="eigh with vectors, tridiagonal path forced; flops: syevd's count"))
