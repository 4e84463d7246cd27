"""Array-operation benchmark cases (issue 21's figures) beside CuPy's operators in the same
process: ``a + b`` and ``a * 2 + b`` over 2^28 float32 (bytes: 3 n x 4 read+write for
``a + b``; ``a * 2 + b`` as two kernels moves 6 n x 4, the figure's floor is the fused 3 n x 4),
``sum`` of 2^28 float32 (n x 4 read) and ``max(axis=1)`` of 16384 x 16384 float32 (n x 4 read).
Off a GPU the cases run small problems on the emulator so that ``bench --quick`` checks them.
"""

from __future__ import annotations

import numpy as np

from oxicuda.bench.case import Case, Prepared, register_case

N_ELEMENTWISE = 1 << 28
N_ROWS = 16384


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


def _binary_case(expr: str):
    def prepare(quick: bool) -> Prepared:
        import oxicuda

        n = N_ELEMENTWISE if _on_gpu() else 4096
        rng = np.random.default_rng(0)
        a = rng.standard_normal(n, dtype=np.float32)
        b = rng.standard_normal(n, dtype=np.float32)
        da, db = oxicuda.asarray(a), oxicuda.asarray(b)
        fn = (lambda x, y: x + y) if expr == "add" else (lambda x, y: x * 2 + y)
        want = fn(a.astype(np.float64), b.astype(np.float64))

        def check() -> float:
            got = fn(da, db).get().astype(np.float64)
            return float(np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want))))

        p = Prepared(ours=lambda i: fn(da, db), check=check, tolerance=1e-6, bytes=12.0 * n,
                     problem=f"n={n}")
        cp = _cupy()
        if cp is not None:
            ca, cb = cp.asarray(a), cp.asarray(b)
            p.vendor, p.vendor_name = (lambda i: fn(ca, cb)), "CuPy operators"
        return p

    return prepare


def _sum_case(quick: bool) -> Prepared:
    import oxicuda

    n = N_ELEMENTWISE if _on_gpu() else 1 << 14
    a = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
    da = oxicuda.asarray(a)
    want = float(np.sum(a, dtype=np.float64))

    def check() -> float:
        return abs(float(da.sum()) - want) / max(1.0, float(np.sum(np.abs(a), dtype=np.float64)))

    p = Prepared(ours=lambda i: da.sum(), check=check, tolerance=1e-6, bytes=4.0 * n,
                 problem=f"n={n}")
    cp = _cupy()
    if cp is not None:
        ca = cp.asarray(a)
        p.vendor, p.vendor_name = (lambda i: ca.sum()), "CuPy sum"
    return p


def _max_rows_case(quick: bool) -> Prepared:
    import oxicuda

    rows = N_ROWS if _on_gpu() else 64
    a = np.random.default_rng(2).standard_normal((rows, rows), dtype=np.float32)
    da = oxicuda.asarray(a)
    want = a.max(axis=1)

    def check() -> float:
        return float(np.count_nonzero(da.max(axis=1).get() != want))

    p = Prepared(ours=lambda i: da.max(axis=1), check=check, tolerance=0.5,
                 bytes=4.0 * rows * rows, problem=f"{rows}x{rows}")
    cp = _cupy()
    if cp is not None:
        ca = cp.asarray(a)
        p.vendor, p.vendor_name = (lambda i: ca.max(axis=1)), "CuPy max(axis=1)"
    return p


register_case(Case("array", "add_f32_2^28", _binary_case("add"), bytes=12.0 * N_ELEMENTWISE,
                   unit="GB/s"))
register_case(Case("array", "mul2_add_f32_2^28", _binary_case("axpb"),
                   bytes=12.0 * N_ELEMENTWISE, unit="GB/s",
                   note="a * 2 + b: two operator kernels; bytes are the fused floor"))
register_case(Case("array", "sum_f32_2^28", _sum_case, bytes=4.0 * N_ELEMENTWISE, unit="GB/s"))
register_case(Case("array", "max_axis1_f32_16384^2", _max_rows_case,
                   bytes=4.0 * N_ROWS * N_ROWS, unit="GB/s"))
