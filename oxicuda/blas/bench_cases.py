"""GEMM benchmark cases (issue 5's figures) beside cuBLAS through PyTorch or CuPy.

Inputs are random-normal, column-major, and rotate through ``ROTATE`` sets when they fit (so the
60 MB L2 of the H200 does not flatter repeated calls). On the emulator every case shrinks to a
tiny problem and reports the flops/bytes it actually ran.
"""

from __future__ import annotations

import numpy as np

from oxicuda.bench.case import Case, Prepared, register_case

ROTATE = 3
CHECK_SAMPLE = 96
TOL = {"float32": 1e-4, "float64": 1e-10, "tf32": 5e-3, "bfloat16": 3e-2, "float16": 1e-2}


def _torch():
    try:
        import torch

        return torch if torch.cuda.is_available() else None
    except Exception:
        return None


def _cupy():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:
        return None


def _on_gpu() -> bool:
    import oxicuda

    return oxicuda.get_backend() == "cuda"


def _gemm_case(m: int, n: int, k: int, dtype: str = "float32", *, batch: int = 1, compute: str | None = None,
               algo: str | None = None, transa: str = "N"):
    """C (m x n) = op(A) B, column-major; transa="T" stores A as k x m (lda = k)."""
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda.blas.gemm_core import gemm_colmajor
        from oxicuda.memory.dtypes import BFLOAT16, host_astype

        M, N, K, B = (m, n, k, batch) if _on_gpu() else (min(m, 32), min(n, 16), min(k, 40), min(batch, 2))
        rng = np.random.default_rng(0)
        store = BFLOAT16 if dtype == "bfloat16" else np.dtype(dtype)
        per_set = B * (M * K + K * N) * store.itemsize
        # rotate only while one set could sit in the 60 MB L2; bigger sets defeat it on their own
        sets = ROTATE if per_set < (256 << 20) else 1
        hosts = [(rng.standard_normal((B, K, M), dtype=np.float32), rng.standard_normal((B, N, K), dtype=np.float32))
                 for _ in range(sets)]
        # hosts hold A as (B, K, M): column-major M x K. For transa="T" upload it as K x M.
        dev = [(oxicuda.asarray(host_astype(a if transa == "N" else np.ascontiguousarray(a.transpose(0, 2, 1)), store)),
                oxicuda.asarray(host_astype(b, store))) for a, b in hosts]
        lda = M if transa == "N" else K
        c = oxicuda.empty((B, N, M), store)

        def ours(i: int) -> None:
            a, b = dev[i % sets]
            gemm_colmajor(transa, "N", M, N, K, 1.0, a.ptr, lda, b.ptr, K, 0.0, c.ptr, M, dtype=dtype, compute=compute,
                          batch=B, stride_a=M * K, stride_b=K * N, stride_c=M * N, algo=algo)

        def check() -> float:
            ours(0)
            a, b = hosts[0]
            # every element of a random sample of CHECK_SAMPLE rows x columns (a float64 reference
            # of the whole 8192^3 product would take minutes on the host)
            mi = np.sort(rng.choice(M, size=min(M, CHECK_SAMPLE), replace=False))
            ni = np.sort(rng.choice(N, size=min(N, CHECK_SAMPLE), replace=False))
            a, b = a[:, :, mi], b[:, ni, :]
            a64 = host_astype(host_astype(a, store), np.float64) if dtype == "bfloat16" else a.astype(store).astype(np.float64)
            b64 = host_astype(host_astype(b, store), np.float64) if dtype == "bfloat16" else b.astype(store).astype(np.float64)
            ref = np.einsum("zkm,znk->znm", a64, b64)
            got = c.get()[:, ni][:, :, mi]
            got = host_astype(got, np.float64) if dtype == "bfloat16" else got.astype(np.float64)
            return float(np.max(np.abs(got - ref)) / max(1e-30, np.max(np.abs(ref))))

        prepared = Prepared(ours=ours, check=check, tolerance=TOL.get(compute or dtype, 1e-4),
                            flops=2.0 * M * N * K * B, bytes=float((M * K + K * N + M * N) * B * store.itemsize))
        torch = _torch()
        if torch is not None:
            tdt = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
                   "bfloat16": torch.bfloat16}[dtype]
            # the same column-major problem as ours: row-major (N, K) @ (K, M) is what cuBLAS sees
            # as C (M x N) = A (M x K) B (K x N), both "N". ((M, K) @ (K, N)
            # would hand cuBLAS the transposed N x M problem: the same for square shapes, another
            # problem for 64x4096x16384, where cuBLAS ran 44.8 TFLOP/s on that layout and 40.2-40.9
            # on ours.)
            ta = [torch.randn(B, K, M, device="cuda", dtype=tdt) for _ in range(sets)]
            tb = [torch.randn(B, N, K, device="cuda", dtype=tdt) for _ in range(sets)]
            torch.backends.cuda.matmul.allow_tf32 = compute == "tf32"

            def vendor(i: int) -> None:
                torch.bmm(tb[i % sets], ta[i % sets]) if B > 1 else torch.mm(tb[i % sets][0], ta[i % sets][0])

            prepared.vendor, prepared.vendor_name = vendor, "cuBLAS (PyTorch)"
        return prepared

    return prepare


def _matmul_case(s: int, dtype: str, algo: str | None = None):
    """Row-major ``C = A @ B`` (s x s x s) through the public ``oxicuda.blas.matmul``, which is
    what ``torch.matmul`` is timed with (column-major NN underneath: op1 MN-major, op2 K-major)."""
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda.blas import matmul
        from oxicuda.memory.dtypes import BFLOAT16, host_astype

        S = s if _on_gpu() else min(s, 48)
        rng = np.random.default_rng(0)
        store = BFLOAT16 if dtype == "bfloat16" else np.dtype(dtype)
        per_set = 2 * S * S * store.itemsize
        sets = ROTATE if per_set < (256 << 20) else 1
        hosts = [(rng.standard_normal((S, S), dtype=np.float32), rng.standard_normal((S, S), dtype=np.float32))
                 for _ in range(sets)]
        dev = [(oxicuda.asarray(host_astype(a, store)), oxicuda.asarray(host_astype(b, store))) for a, b in hosts]
        out = [None]

        def ours(i: int) -> None:
            a, b = dev[i % sets]
            out[0] = matmul(a, b, algo=algo)

        def check() -> float:
            ours(0)
            a, b = hosts[0]
            mi = np.sort(rng.choice(S, size=min(S, CHECK_SAMPLE), replace=False))
            ni = np.sort(rng.choice(S, size=min(S, CHECK_SAMPLE), replace=False))
            a64 = host_astype(host_astype(a[mi], store), np.float64)
            b64 = host_astype(host_astype(b[:, ni], store), np.float64)
            ref = a64 @ b64
            got = host_astype(out[0].get()[mi][:, ni], np.float64)
            return float(np.max(np.abs(got - ref)) / max(1e-30, np.max(np.abs(ref))))

        prepared = Prepared(ours=ours, check=check, tolerance=TOL[dtype], flops=2.0 * S ** 3,
                            bytes=float(3 * S * S * store.itemsize))
        torch = _torch()
        if torch is not None:
            tdt = {"float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
            ta = [torch.randn(S, S, device="cuda", dtype=tdt) for _ in range(sets)]
            tb = [torch.randn(S, S, device="cuda", dtype=tdt) for _ in range(sets)]
            prepared.vendor = lambda i: torch.matmul(ta[i % sets], tb[i % sets])
            prepared.vendor_name = "cuBLAS (torch.matmul)"
        return prepared

    return prepare


def _sgemv_case(m: int, n: int):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda.blas.gemv import gemv_colmajor

        M, N = (m, n) if _on_gpu() else (min(m, 64), min(n, 48))
        rng = np.random.default_rng(0)
        A = [oxicuda.asarray(rng.standard_normal((N, M)).astype(np.float32)) for _ in range(ROTATE)]
        x = oxicuda.asarray(rng.standard_normal(M).astype(np.float32))
        y = oxicuda.empty(N, np.float32)

        def ours(i: int) -> None:  # y = A^T x with A column-major M x N (each output a contiguous column)
            gemv_colmajor("T", M, N, 1.0, A[i % ROTATE].ptr, M, x.ptr, 1, 0.0, y.ptr, 1, dtype="float32")

        def check() -> float:
            ours(0)
            ref = A[0].get().astype(np.float64) @ x.get().astype(np.float64)
            return float(np.max(np.abs(y.get() - ref)) / np.max(np.abs(ref)))

        prepared = Prepared(ours=ours, check=check, tolerance=1e-4, bytes=float(4 * (M * N + M + N)))
        torch = _torch()
        if torch is not None:
            tA = [torch.randn(N, M, device="cuda") for _ in range(ROTATE)]
            tx = torch.randn(M, device="cuda")
            prepared.vendor, prepared.vendor_name = (lambda i: torch.mv(tA[i % ROTATE], tx)), "cuBLAS (PyTorch)"
        return prepared

    return prepare


def _host_cost_prepare(quick: bool) -> Prepared:
    import oxicuda
    from oxicuda.blas.gemm_core import gemm_colmajor

    a = oxicuda.asarray(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32))
    c = oxicuda.empty((64, 64), np.float32)

    def ours(i: int) -> None:
        gemm_colmajor("N", "N", 64, 64, 64, 1.0, a.ptr, 64, a.ptr, 64, 0.0, c.ptr, 64, dtype="float32")

    def check() -> float:
        ours(0)
        h = a.get().astype(np.float64)
        return float(np.max(np.abs(c.get().T - (h.T @ h.T))) / np.max(np.abs(h.T @ h.T)))

    prepared = Prepared(ours=ours, check=check, tolerance=1e-5)
    cupy = _cupy()
    if cupy is not None:
        from cupy.cuda import cublas, device

        handle = device.get_cublas_handle()
        ca, cc = cupy.asarray(a.get()), cupy.empty((64, 64), dtype=cupy.float32)
        one, zero = np.array(1.0, np.float32), np.array(0.0, np.float32)

        def vendor(i: int) -> None:
            cublas.sgemm(handle, 0, 0, 64, 64, 64, one.ctypes.data, ca.data.ptr, 64, ca.data.ptr, 64,
                         zero.ctypes.data, cc.data.ptr, 64)

        prepared.vendor, prepared.vendor_name = vendor, "CuPy cupy.cuda.cublas.sgemm"
    return prepared


def _flops(m, n, k, b=1):
    return 2.0 * m * n * k * b


for _name, (_m, _n, _k, _dt, _kw) in {
    "sgemm_4096": (4096, 4096, 4096, "float32", {}),
    "sgemm_8192": (8192, 8192, 8192, "float32", {}),
    "tf32_8192": (8192, 8192, 8192, "float32", {"compute": "tf32"}),
    "bf16_8192": (8192, 8192, 8192, "bfloat16", {}),
    "bf16_8192_mma_sync": (8192, 8192, 8192, "bfloat16", {"algo": "tensor_core"}),
    "bf16_8192_wgmma_tn": (8192, 8192, 8192, "bfloat16", {"algo": "wgmma", "transa": "T"}),
    "tf32_8192_wgmma": (8192, 8192, 8192, "float32", {"compute": "tf32", "algo": "wgmma", "transa": "T"}),
    "bf16_8192_mma_sync_tn": (8192, 8192, 8192, "bfloat16", {"algo": "tensor_core", "transa": "T"}),
    "fp16_8192_mma_sync": (8192, 8192, 8192, "float16", {"algo": "tensor_core"}),
    "tf32_8192_mma_sync": (8192, 8192, 8192, "float32", {"compute": "tf32", "algo": "tensor_core"}),
    "fp16_8192": (8192, 8192, 8192, "float16", {}),
    "dgemm_4096": (4096, 4096, 4096, "float64", {}),
    "sgemm_128x128x131072": (128, 128, 131072, "float32", {}),
    "sgemm_512x512x65536": (512, 512, 65536, "float32", {}),
    "sgemm_64x4096x16384": (64, 4096, 16384, "float32", {}),
}.items():
    register_case(Case("blas", _name, _gemm_case(_m, _n, _k, _dt, **_kw), flops=_flops(_m, _n, _k),
                       gpu_only="_wgmma" in _name, archs=("sm_90",) if "_wgmma" in _name else (),
                       quick=_name in ("sgemm_4096", "bf16_8192_mma_sync", "bf16_8192_wgmma_tn", "tf32_8192_wgmma",
                                       "bf16_8192_mma_sync_tn", "tf32_8192_mma_sync", "sgemm_128x128x131072")))

for _name, _dt, _algo in (("bf16_8192_wgmma", "bfloat16", "wgmma"), ("fp16_8192_wgmma", "float16", "wgmma"),
                          ("bf16_8192_matmul", "bfloat16", None)):
    register_case(Case("blas", _name, _matmul_case(8192, _dt, _algo), flops=_flops(8192, 8192, 8192),
                       gpu_only=_algo == "wgmma", archs=("sm_90",) if _algo == "wgmma" else (),
                       quick=_name != "bf16_8192_matmul",
                       note="row-major oxicuda.blas.matmul vs torch.matmul"))

register_case(Case("blas", "sgemm_strided_batched_64x512", _gemm_case(512, 512, 512, "float32", batch=64),
                   flops=_flops(512, 512, 512, 64)))
register_case(Case("blas", "sgemv_16384", _sgemv_case(16384, 16384), bytes=4.0 * (16384 * 16384 + 2 * 16384),
                   unit="GB/s"))
register_case(Case("blas", "sgemm_64_host_cost", _host_cost_prepare, unit="us", timing="host", gpu_only=True,
                   note="host microseconds of one cached 64x64 sgemm call vs CuPy's raw cublas.sgemm"))
register_case(Case("blas", "dgemm_4096_dmma", _gemm_case(4096, 4096, 4096, "float64", algo="dmma"),
                   flops=_flops(4096, 4096, 4096), quick=False,
                   note="float64 on DMMA tensor cores (mma.sync m16n8k8 on sm_90, m8n8k4 before)"))


def _bf16_host_cost_prepare(size: int):
    """Host microseconds of one cached bf16 size^3 GEMM through dispatch (the wgmma path on
    sm_90) against torch.mm (or cupy.matmul) into a preallocated output."""

    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda.blas.gemm_core import gemm_colmajor
        from oxicuda.memory.dtypes import BFLOAT16

        host = np.random.default_rng(0).standard_normal((size, size)).astype(BFLOAT16)
        a = oxicuda.asarray(np.asfortranarray(host))
        c = oxicuda.empty((size, size), BFLOAT16, order="F")

        def ours(i: int) -> None:
            gemm_colmajor("N", "N", size, size, size, 1.0, a.ptr, size, a.ptr, size, 0.0, c.ptr, size,
                          dtype="bfloat16")

        def check() -> float:
            ours(0)
            h = host.astype(np.float64)
            ref = h @ h
            return float(np.max(np.abs(np.asarray(c.get(), np.float64) - ref)) / np.max(np.abs(ref)))

        prepared = Prepared(ours=ours, check=check, tolerance=TOL["bfloat16"])
        torch = _torch()
        if torch is not None:
            ta = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
            tc = torch.empty_like(ta)
            prepared.vendor, prepared.vendor_name = (lambda i: torch.mm(ta, ta, out=tc)), "PyTorch torch.mm(out=)"
        elif (cupy := _cupy()) is not None:
            ca = cupy.asarray(np.asarray(host, np.float32)).astype(cupy.float16)
            cc = cupy.empty_like(ca)
            prepared.vendor, prepared.vendor_name = (lambda i: cupy.matmul(ca, ca, out=cc)), "CuPy matmul (fp16)"
        return prepared

    return prepare


for _size in (64, 512):
    register_case(Case("blas", f"bf16_gemm_{_size}_host_cost", _bf16_host_cost_prepare(_size), unit="us",
                       timing="host", gpu_only=True,
                       note=f"host microseconds of one cached bf16 {_size}^3 gemm through dispatch (wgmma on "
                            "sm_90) vs torch.mm"))
