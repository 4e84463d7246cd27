"""Primitives benchmark cases (issue 18's figures) beside CUB through CuPy in the same process:
inclusive scan of 2^28 int32 (``cupy.cumsum``), radix sort of 2^28 uint32 keys and of 2^27
key-value pairs (``cupy.sort`` / ``cupy.argsort`` + gather, CuPy's CUB-backed sorts), segmented
reduce (``cupy`` reduction over a reshaped array: equal segments).

Bytes are what one call must move: scan reads and writes n elements; the onesweep radix sort of
32-bit keys reads the keys once for its histograms and makes 4 passes of 8 bits, each reading
and writing every key (and value): 4 n + 4 * 8 n bytes for keys, plus 4 * 8 n for values (the
same count as CUB's onesweep). The segmented reduce reads every element once and writes one per
segment. ``radix_sort_uint32_2^28_classic`` times the 4-bit classic sort on the same input.
"""

from __future__ import annotations

import numpy as np

from oxicuda.bench.case import Case, Prepared, register_case


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


def _scan_case(n: int):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        import oxicuda.primitives as prim

        N = n if _on_gpu() else 5000
        x = np.random.default_rng(0).integers(-100, 100, N).astype(np.int32)
        dx = oxicuda.asarray(x)
        out = oxicuda.empty((N,), np.int32)

        def ours(i: int) -> None:
            prim.inclusive_scan(dx, out=out)

        def check() -> float:
            ours(0)
            return float(np.count_nonzero(out.get() != np.cumsum(x, dtype=np.int64).astype(np.int32)))

        p = Prepared(ours=ours, check=check, tolerance=0.5, bytes=8.0 * N, problem=f"n={N}")
        cp = _cupy()
        if cp is not None:
            cx = cp.asarray(x)
            p.vendor, p.vendor_name = (lambda i: cp.cumsum(cx)), "CUB (cupy.cumsum)"
        return p

    return prepare


def _sort_case(n: int, pairs: bool, algo: str | None = None):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        import oxicuda.primitives as prim

        N = n if _on_gpu() else 3000
        rng = np.random.default_rng(0)
        k = rng.integers(0, 1 << 32, N, dtype=np.uint64).astype(np.uint32)
        v = np.arange(N, dtype=np.uint32)
        dk, dv = oxicuda.asarray(k), oxicuda.asarray(v)
        res = [None]

        def ours(i: int) -> None:
            res[0] = prim.radix_sort(dk, dv if pairs else None, algo=algo)

        def check() -> float:
            ours(0)
            got = res[0][0] if pairs else res[0]
            bad = np.count_nonzero(got.get() != np.sort(k))
            if pairs:
                bad += np.count_nonzero(res[0][1].get() != np.argsort(k, kind="stable"))
            return float(bad)

        moved = 4 * N + 4 * 8 * N + (4 * 8 * N if pairs else 0)
        p = Prepared(ours=ours, check=check, tolerance=0.5, bytes=float(moved), problem=f"n={N}")
        cp = _cupy()
        if cp is not None:
            ck, cv = cp.asarray(k), cp.asarray(v)
            if pairs:
                def vendor(i: int) -> None:
                    order = cp.argsort(ck)
                    cp.take(cv, order)
            else:
                def vendor(i: int) -> None:
                    cp.sort(ck)
            p.vendor, p.vendor_name = vendor, "CUB (cupy.sort / argsort)"
        return p

    return prepare


def _segreduce_case(segments: int, length: int):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        import oxicuda.primitives as prim

        S, L = (segments, length) if _on_gpu() else (64, 37)
        x = np.random.default_rng(0).standard_normal(S * L).astype(np.float32)
        off = (np.arange(S + 1) * L).astype(np.int32)
        dx, doff = oxicuda.asarray(x), oxicuda.asarray(off)
        out = oxicuda.empty((S,), np.float32)

        def ours(i: int) -> None:
            prim.segmented_reduce(dx, doff, out=out)

        def check() -> float:
            ours(0)
            ref = x.reshape(S, L).astype(np.float64).sum(1)
            return float(np.max(np.abs(out.get() - ref)) / max(1e-30, np.max(np.abs(ref))))

        p = Prepared(ours=ours, check=check, tolerance=1e-4, bytes=float(4 * S * L + 4 * S + 4 * (S + 1)),
                     problem=f"{S} segments x {L}")
        cp = _cupy()
        if cp is not None:
            cx = cp.asarray(x).reshape(S, L)
            p.vendor, p.vendor_name = (lambda i: cx.sum(axis=1)), "CuPy (CUB segmented reduce)"
        return p

    return prepare


register_case(Case("primitives", "inclusive_scan_int32_2^28", _scan_case(1 << 28), bytes=8.0 * (1 << 28), unit="GB/s"))
register_case(Case("primitives", "radix_sort_uint32_2^28", _sort_case(1 << 28, False),
                   bytes=36.0 * (1 << 28), unit="GB/s", quick=False))
register_case(Case("primitives", "radix_sort_uint32_2^28_classic", _sort_case(1 << 28, False, "classic"),
                   bytes=36.0 * (1 << 28), unit="GB/s", quick=False, note="same bytes as onesweep: a slower path shows as fewer GB/s"))
register_case(Case("primitives", "radix_sort_pairs_uint32_2^27", _sort_case(1 << 27, True),
                   bytes=68.0 * (1 << 27), unit="GB/s", quick=False))
register_case(Case("primitives", "segmented_reduce_f32_2^20x256", _segreduce_case(1 << 20, 256),
                   bytes=4.0 * (1 << 28), unit="GB/s"))
