"""Benchmark cases of Python kernels (issue 21's figures), beside CuPy in the same process:

- ``saxpy_f32_2^28`` and ``fused3_f32_2^28``: a compiled saxpy (``@oxicuda.kernel``) and the
  3-input fused ``x * y + z`` (``oxicuda.elementwise``) over 2^28 float32, as GB/s of the bytes
  they must move (12 and 16 bytes per element); the figure to reach is 90% of the copy bandwidth
  (4257 GB/s on the H200, DESIGN.md). Vendor: CuPy's RawKernel / ElementwiseKernel of the same
  C++;
- ``compile_cold_20_lines`` / ``compile_warm_20_lines``: host milliseconds (as us) to compile
  and load a 20-line kernel on its first call with an empty disk cache, and with a warm one
  (memory cache cleared, disk kept);
- ``launch_host_cost``: host microseconds of one cached ``kern[grid, block](...)`` call against
  CuPy's RawKernel launch of the same kernel (4.6 us measured, DESIGN.md);
- ``sgemm_tiled_4096``: the docs' 16x16 shared-memory tiled SGEMM (``bounds_check=False``)
  against CuPy's RawKernel of the same algorithm in C++.
"""

from __future__ import annotations

import numpy as np

from oxicuda.bench.case import Case, Prepared, register_case

N = 1 << 28
TILE = 16

_SAXPY_CU = r"""
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, const float* __restrict__ y,
                                 float* __restrict__ out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""

_SGEMM_CU = r"""
#define TILE 16
extern "C" __global__ void sgemm_tiled(const float* a, const float* b, float* c, int m, int n, int k) {
    __shared__ float ta[TILE][TILE];
    __shared__ float tb[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t0 = 0; t0 < k; t0 += TILE) {
        ta[ty][tx] = (row < m && t0 + tx < k) ? a[(long long)row * k + t0 + tx] : 0.0f;
        tb[ty][tx] = (t0 + ty < k && col < n) ? b[(long long)(t0 + ty) * n + col] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) acc = fmaf(ta[ty][kk], tb[kk][tx], acc);
        __syncthreads();
    }
    if (row < m && col < n) c[(long long)row * n + col] = acc;
}
"""


def _cupy():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:  # noqa: BLE001 - no CuPy or no GPU: no vendor side
        return None


def _on_gpu() -> bool:
    import oxicuda

    return oxicuda.get_backend() == "cuda"


def _kernels():
    import oxicuda
    from oxicuda.jit import block_idx, grid, shared, syncthreads, thread_idx
    from oxicuda.types import In, Out, f32

    @oxicuda.kernel(bounds_check=False)
    def saxpy(a: f32, x: In[f32, 1], y: In[f32, 1], out: Out[f32, 1]):
        i = grid(1)
        if i < len(out):
            out[i] = a * x[i] + y[i]

    @oxicuda.kernel(bounds_check=False)
    def sgemm_tiled(a: In[f32, 2], b: In[f32, 2], c: Out[f32, 2]):
        ta = shared.array((TILE, TILE), f32)
        tb = shared.array((TILE, TILE), f32)
        tx, ty = thread_idx.x, thread_idx.y
        row = block_idx.y * TILE + ty
        col = block_idx.x * TILE + tx
        m, k, n = a.shape[0], a.shape[1], b.shape[1]
        acc = f32(0)
        for t0 in range(0, k, TILE):
            ta[ty, tx] = a[row, t0 + tx] if row < m and t0 + tx < k else f32(0)
            tb[ty, tx] = b[t0 + ty, col] if t0 + ty < k and col < n else f32(0)
            syncthreads()
            for kk in range(TILE, unroll=True):
                acc = oxicuda.jit.fma(ta[ty, kk], tb[kk, tx], acc)
            syncthreads()
        if row < m and col < n:
            c[row, col] = acc

    return saxpy, sgemm_tiled


def _saxpy_case(quick: bool) -> Prepared:
    import oxicuda

    n = N if _on_gpu() else 4096
    saxpy, _ = _kernels()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dx, dy, out = oxicuda.asarray(x), oxicuda.asarray(y), oxicuda.empty(n, np.float32)
    launch = saxpy[-(-n // 256), 256]

    def ours(i: int) -> None:
        launch(np.float32(2.0), dx, dy, out)

    def check() -> float:
        ours(0)
        return float(np.abs(out.get() - (np.float32(2.0) * x + y)).max())

    p = Prepared(ours=ours, check=check, tolerance=0.0, bytes=12.0 * n, problem=f"n={n}")
    cp = _cupy()
    if cp is not None:
        k = cp.RawKernel(_SAXPY_CU, "saxpy")
        cx, cy, co = cp.asarray(x), cp.asarray(y), cp.empty(n, cp.float32)
        p.vendor = lambda i: k((-(-n // 256),), (256,), (np.float32(2.0), cx, cy, co, np.int64(n)))
        p.vendor_name = "CuPy RawKernel (same C++)"
    return p


def _fused_case(quick: bool) -> Prepared:
    import oxicuda

    n = N if _on_gpu() else 4096
    fused = oxicuda.elementwise(lambda x, y, z: x * y + z, name="fused3")
    rng = np.random.default_rng(1)
    hs = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    ds = [oxicuda.asarray(h) for h in hs]
    out = oxicuda.empty(n, np.float32)

    def ours(i: int) -> None:
        fused(*ds, out=out)

    def check() -> float:
        ours(0)
        return float(np.abs(out.get() - (hs[0] * hs[1] + hs[2])).max())

    p = Prepared(ours=ours, check=check, tolerance=0.0, bytes=16.0 * n, problem=f"n={n}")
    cp = _cupy()
    if cp is not None:
        ek = cp.ElementwiseKernel("float32 x, float32 y, float32 z", "float32 o",
                                  "o = __fadd_rn(__fmul_rn(x, y), z)", "fused3")
        cs = [cp.asarray(h) for h in hs]
        co = cp.empty(n, cp.float32)
        p.vendor, p.vendor_name = (lambda i: ek(*cs, co)), "CuPy ElementwiseKernel"
    return p


_TWENTY_LINES = '''
import math
import oxicuda
from oxicuda.jit import grid
from oxicuda.types import In, Out, f32


@oxicuda.kernel
def twenty(x: In[f32], y: In[f32], out: Out[f32], a: f32, b: f32):
    i = grid(1)
    if i < len(out):
        u = x[i] * a + y[i]
        v = u if u > 0 else -u
        w = f32(0)
        for k in range(4):
            w += v * k - b
        if w > 100:
            w = f32(100)
        elif w < -100:
            w = f32(-100)
        s = math.sqrt(v + 1)
        out[i] = w + s * b - math.floor(u)
'''


def _compile_case(warm: bool):
    def prepare(quick: bool) -> Prepared:
        import importlib.util
        import os
        import tempfile

        import oxicuda
        from oxicuda.ptx import cache

        tmp = tempfile.mkdtemp(prefix="oxicuda-jit-bench-")
        path = os.path.join(tmp, "twenty.py")
        with open(path, "w") as fh:
            fh.write(_TWENTY_LINES)
        x = oxicuda.asarray(np.ones(1024, np.float32))
        out = oxicuda.empty(1024, np.float32)
        old = os.environ.get("OXICUDA_CACHE_DIR")

        def compile_once(i: int) -> None:
            if not warm:  # a fresh disk cache every call
                os.environ["OXICUDA_CACHE_DIR"] = os.path.join(tmp, f"cache{i}")
            else:
                os.environ["OXICUDA_CACHE_DIR"] = os.path.join(tmp, "warm")
            cache.clear_memory_cache()
            spec = importlib.util.spec_from_file_location(f"twenty_{i}", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            mod.twenty[4, 256](x, x, out, 2.0, 0.5)

        if warm:
            compile_once(-1)

        def cleanup() -> None:
            if old is None:
                os.environ.pop("OXICUDA_CACHE_DIR", None)
            else:
                os.environ["OXICUDA_CACHE_DIR"] = old
            cache.clear_memory_cache()

        return Prepared(ours=compile_once, cleanup=cleanup, problem="20-line kernel, first call")

    return prepare


def _host_cost_case(quick: bool) -> Prepared:
    import oxicuda

    saxpy, _ = _kernels()
    x = oxicuda.asarray(np.ones(256, np.float32))
    out = oxicuda.empty(256, np.float32)
    launch = saxpy[1, 256]
    launch(np.float32(1.0), x, x, out)

    def ours(i: int) -> None:
        launch(np.float32(1.0), x, x, out)

    p = Prepared(ours=ours, problem="saxpy, 256 elements, cached")
    cp = _cupy()
    if cp is not None:
        k = cp.RawKernel(_SAXPY_CU, "saxpy")
        cx, co = cp.ones(256, cp.float32), cp.empty(256, cp.float32)
        p.vendor = lambda i: k((1,), (256,), (np.float32(1.0), cx, cx, co, np.int64(256)))
        p.vendor_name = "CuPy RawKernel"
    return p


def _sgemm_case(n: int):
    def prepare(quick: bool) -> Prepared:
        import oxicuda

        size = n if _on_gpu() else 48
        _, sgemm = _kernels()
        rng = np.random.default_rng(2)
        a = rng.standard_normal((size, size)).astype(np.float32)
        b = rng.standard_normal((size, size)).astype(np.float32)
        da, db, dc = oxicuda.asarray(a), oxicuda.asarray(b), oxicuda.empty((size, size), np.float32)
        g = -(-size // TILE)
        launch = sgemm[(g, g), (TILE, TILE)]

        def ours(i: int) -> None:
            launch(da, db, dc)

        def check() -> float:
            ours(0)
            ref = a.astype(np.float64) @ b
            return float(np.abs(dc.get() - ref).max() / np.abs(ref).max())

        p = Prepared(ours=ours, check=check, tolerance=1e-5, flops=2.0 * size**3,
                     problem=f"{size}^3")
        cp = _cupy()
        if cp is not None:
            k = cp.RawKernel(_SGEMM_CU, "sgemm_tiled")
            ca, cb, cc = cp.asarray(a), cp.asarray(b), cp.empty((size, size), cp.float32)
            s32 = np.int32(size)
            p.vendor = lambda i: k((g, g), (TILE, TILE), (ca, cb, cc, s32, s32, s32))
            p.vendor_name = "CuPy RawKernel (same C++ algorithm)"
        return p

    return prepare


register_case(Case("jit", "saxpy_f32_2^28", _saxpy_case, bytes=12.0 * N, unit="GB/s",
                   note="@oxicuda.kernel saxpy; target >= 90% of copy bandwidth"))
register_case(Case("jit", "fused3_f32_2^28", _fused_case, bytes=16.0 * N, unit="GB/s",
                   note="oxicuda.elementwise x*y+z; target >= 90% of copy bandwidth"))
register_case(Case("jit", "compile_cold_20_lines", _compile_case(False), unit="us", timing="host",
                   gpu_only=True, note="first call, empty disk cache (generation + driver JIT)"))
register_case(Case("jit", "compile_warm_20_lines", _compile_case(True), unit="us", timing="host",
                   gpu_only=True, note="first call in a process, warm disk cache"))
register_case(Case("jit", "launch_host_cost", _host_cost_case, unit="us", timing="host",
                   gpu_only=True, note="cached kern[grid, block](...) vs CuPy RawKernel launch"))
register_case(Case("jit", "sgemm_tiled_4096", _sgemm_case(4096), flops=2.0 * 4096**3,
                   note="docs/jit.md 16x16 tiled SGEMM vs CuPy RawKernel of the same C++"))
