"""Host cost of cached BLAS calls (the GEMM call-plan cache), as pytest-benchmark figures that
also check what was computed, and the properties that make the cache safe: a repeated call
signature computes the right result after changing pointers, scalars and shapes, and wrong
arguments still raise before any launch.

The benchmarks replace the driver's launch with a recorder (so they measure host time only) and
check the recorded parameter bytes; the correctness tests run the real kernels on the live backend.
"""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import gemm_core
from oxicuda.blas.gemm_core import gemm_colmajor
from oxicuda.driver.backend import api
from oxicuda.ptx import cache

M = 64


@pytest.fixture
def fresh_plans():
    gemm_core.clear_plan_cache()
    yield
    gemm_core.clear_plan_cache()


@pytest.fixture
def recorded_launches(monkeypatch, fresh_plans):
    """The live driver's launch replaced by a recorder of (function, grid, block, params bytes).
    Functions bind the launch call when they are created, so the memory cache is emptied before
    (new Functions bind the recorder) and after (later tests get Functions that really launch)."""
    launches = []
    drv = api()

    def record(func, grid, block, shared_mem, stream, params):
        launches.append((func, grid, block, bytes(params.data)))

    cache.clear_memory_cache()
    monkeypatch.setattr(drv, "launch_kernel", record)
    yield launches
    monkeypatch.undo()
    cache.clear_memory_cache()
    gemm_core.clear_plan_cache()


def _f32_matrices(rng, *shapes):
    host = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return host, [oxicuda.asarray(np.asfortranarray(h)) for h in host]


def _poisoned(shape, dtype=np.float32):
    return oxicuda.asarray(np.full(shape, np.nan, dtype=dtype, order="F"))


def _only_plan_function():
    """The loaded Function of the one cached plan (tests start with an empty plan cache)."""
    assert gemm_core.plan_cache_size() == 1, gemm_core.plan_cache_size()
    (plan,) = gemm_core._plans.values()
    assert plan.gemm_plan.algo == "tiled", plan.gemm_plan
    return cache.load(plan.gemm_plan.spec)


def _tiled_params(fn, a, b, c, alpha, beta, m=M, n=M, k=M):
    """The parameter bytes a tiled GEMM launch must carry (column-major, batch 1, host scalars)."""
    return fn.packer.pack([m, n, k, 0, a, m, b, k, c, m, 0, 0, 0, alpha, 0, beta, 0])


def test_cached_gemm_colmajor_host_cost_launches_once_with_this_calls_arguments(benchmark, rng,
                                                                                recorded_launches):
    _, (a, b) = _f32_matrices(rng, (M, M), (M, M))
    c = _poisoned((M, M))
    calls = [0]

    def call():
        calls[0] += 1
        gemm_colmajor("N", "N", M, M, M, 1.5, a.ptr, M, b.ptr, M, 0.0, c.ptr, M, dtype="float32")

    benchmark.pedantic(call, rounds=200, iterations=20, warmup_rounds=1)
    fn = _only_plan_function()
    assert len(recorded_launches) == calls[0]
    func, grid, block, raw = recorded_launches[-1]
    spec = fn.spec
    assert func == fn.handle and grid == (M // spec.bm, M // spec.bn, 1) and block == (spec.threads, 1, 1)
    assert raw == _tiled_params(fn, a.ptr, b.ptr, c.ptr, 1.5, 0.0)
    # the cached signature with other pointers and scalars packs those
    c2 = _poisoned((M, M))
    gemm_colmajor("N", "N", M, M, M, -0.25, b.ptr, M, a.ptr, M, 2, c2.ptr, M, dtype="float32")
    assert recorded_launches[-1][3] == _tiled_params(fn, b.ptr, a.ptr, c2.ptr, -0.25, 2.0)
    assert gemm_core.plan_cache_size() == 1


def test_cached_blas_gemm_host_cost_on_device_arrays(benchmark, rng, recorded_launches):
    _, (a, b) = _f32_matrices(rng, (M, M), (M, M))
    out = benchmark.pedantic(oxicuda.blas.gemm, args=(a, b), rounds=100, iterations=10, warmup_rounds=1)
    assert out.shape == (M, M) and out.dtype == np.float32 and out.is_c_contiguous
    fn = _only_plan_function()
    # F-ordered a, b and a C-ordered result: C^T = B^T A^T in column-major terms
    assert recorded_launches[-1][3] == fn.packer.pack([M, M, M, 0, b.ptr, M, a.ptr, M, out.ptr, M, 0, 0, 0,
                                                       1.0, 0, 0.0, 0])


def test_cached_cublas_sgemm_host_cost(benchmark, rng, recorded_launches):
    from oxicuda.cuda import cublas

    _, (a, b) = _f32_matrices(rng, (M, M), (M, M))
    c = _poisoned((M, M))
    alpha, beta = np.array([2.0], np.float32), np.array([0.5], np.float32)
    handle = cublas.create()
    try:
        benchmark.pedantic(cublas.sgemm, args=(handle, 0, 0, M, M, M, alpha.ctypes.data, a.ptr, M, b.ptr, M,
                                               beta.ctypes.data, c.ptr, M), rounds=100, iterations=10,
                           warmup_rounds=1)
        fn = _only_plan_function()
        assert recorded_launches[-1][3] == _tiled_params(fn, a.ptr, b.ptr, c.ptr, 2.0, 0.5)
        alpha[0] = -3.0  # host pointer mode reads the scalar at each call
        cublas.sgemm(handle, 0, 0, M, M, M, alpha.ctypes.data, a.ptr, M, b.ptr, M, beta.ctypes.data, c.ptr, M)
        assert recorded_launches[-1][3] == _tiled_params(fn, a.ptr, b.ptr, c.ptr, -3.0, 0.5)
    finally:
        cublas.destroy(handle)


# -- the cached path computes what a first call computes -------------------------------------------

def _reference(alpha, A, B, beta=0.0, C=None):
    out = alpha * (A.astype(np.float64) @ B.astype(np.float64))
    return out if C is None else out + beta * C.astype(np.float64)


def _check(dc, expected):
    # float32 sums of k = 64 products: an element near cancellation is off by ~eps * max|C|, not
    # by 1e-5 of itself (seen: 1.35e-5 at C = -0.266 with max|C| ~ 30); a wrong call is off by O(1)
    np.testing.assert_allclose(dc.get(), expected, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(expected).max()))


@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (5, 6, 7), (37, 20, 33)])
def test_cached_signature_is_right_after_new_pointers_scalars_and_another_shape(rng, fresh_plans, m, n, k):
    (A, B, A2, B2, C2), (dA, dB, dA2, dB2, dC2) = _f32_matrices(rng, (m, k), (k, n), (m, k), (k, n), (m, n))
    dC = _poisoned((m, n))
    gemm_colmajor("N", "N", m, n, k, 1.0, dA.ptr, m, dB.ptr, k, 0.0, dC.ptr, m, dtype="float32")
    _check(dC, _reference(1.0, A, B))
    size = gemm_core.plan_cache_size()
    # same signature: other pointers, other scalars (beta != 0 reads C), an int alpha
    with oxicuda.trace() as t:
        gemm_colmajor("N", "N", m, n, k, -2, dA2.ptr, m, dB2.ptr, k, 0.5, dC2.ptr, m, dtype="float32")
    assert len(t.launches) == 1 and gemm_core.plan_cache_size() == size
    _check(dC2, _reference(-2.0, A2, B2, 0.5, C2))
    # another shape in between, then the first signature again on poisoned output
    (A3, B3), (dA3, dB3) = _f32_matrices(rng, (k + 3, m), (k + 3, n))
    dC3 = _poisoned((m, n))
    gemm_colmajor("T", "N", m, n, k + 3, 0.75, dA3.ptr, k + 3, dB3.ptr, k + 3, 0.0, dC3.ptr, m, dtype="float32")
    _check(dC3, _reference(0.75, A3.T, B3))
    dC = _poisoned((m, n))
    gemm_colmajor("N", "N", m, n, k, 1.0, dA.ptr, m, dB.ptr, k, 0.0, dC.ptr, m, dtype="float32")
    _check(dC, _reference(1.0, A, B))
    assert gemm_core.plan_cache_size() == size + 1


def test_cached_complex_signature_is_right(rng, fresh_plans):
    m, n, k = 9, 7, 5
    A = rng.standard_normal((m, k)) + 1j * rng.standard_normal((m, k))
    B = rng.standard_normal((k, n)) + 1j * rng.standard_normal((k, n))
    dA, dB = oxicuda.asarray(np.asfortranarray(A)), oxicuda.asarray(np.asfortranarray(B))
    for alpha in (1.0 + 0.0j, 0.5 - 2.0j, 3):
        dC = oxicuda.asarray(np.full((m, n), np.nan + 0j, order="F"))
        gemm_colmajor("N", "N", m, n, k, alpha, dA.ptr, m, dB.ptr, k, 0j, dC.ptr, m, dtype="complex128")
        np.testing.assert_allclose(dC.get(), alpha * (A @ B), rtol=1e-12, atol=1e-12)
    assert gemm_core.plan_cache_size() == 1


def test_disjoint_blocks_of_one_matrix_pass_the_exact_overlap_test_on_a_cached_signature(rng, fresh_plans):
    # A and C are the left and right halves of one 8 x 16 matrix (ld 8): their extents intersect,
    # so the plan's quick test refuses them and the full check clears them
    big = rng.standard_normal((8, 16)).astype(np.float32)
    (B,), (dB,) = _f32_matrices(rng, (8, 8))
    dbig = oxicuda.asarray(np.asfortranarray(big))
    for _ in range(2):
        gemm_colmajor("N", "N", 8, 8, 8, 1.0, dbig.ptr, 8, dB.ptr, 8, 0.0, dbig.ptr + 64 * 4, 8, dtype="float32")
        expected = big.copy()
        expected[:, 8:] = _reference(1.0, big[:, :8], B)
        np.testing.assert_allclose(dbig.get(), expected, rtol=1e-5, atol=1e-5)
        big = dbig.get()


def _bad_calls(dA, dB, dC):
    """(what, call) pairs for a cached 64^3 float32 signature, each wrong in one argument."""
    a, b, c = dA.ptr, dB.ptr, dC.ptr

    def g(**changes):
        args = {"m": M, "n": M, "k": M, "alpha": 1.0, "a": a, "lda": M, "b": b, "ldb": M, "beta": 0.0, "c": c,
                "ldc": M}
        args.update(changes)
        return lambda: gemm_colmajor("N", "N", args["m"], args["n"], args["k"], args["alpha"], args["a"],
                                     args["lda"], args["b"], args["ldb"], args["beta"], args["c"], args["ldc"],
                                     dtype="float32")

    return [
        ("a null pointer", g(c=0)), ("a null A", g(a=0)), ("a misaligned C", g(c=c + 2)),
        ("C overlapping A", g(c=a)), ("C overlapping B partly", g(c=b + 4 * M)),
        ("a float m", g(m=64.0)), ("a bool k", g(k=True)), ("a string alpha", g(alpha="1")),
        ("a complex beta on real data", g(beta=1j)), ("lda too small", g(lda=M - 1)),
        ("a negative A", g(a=-a)), ("a negative C", g(c=-c)),
    ]


def test_wrong_arguments_raise_before_any_launch_on_a_cached_signature(rng, fresh_plans):
    (A, B), (dA, dB) = _f32_matrices(rng, (M, M), (M, M))
    dC = _poisoned((M, M))
    gemm_colmajor("N", "N", M, M, M, 1.0, dA.ptr, M, dB.ptr, M, 0.0, dC.ptr, M, dtype="float32")
    before = (dA.get(), dB.get(), dC.get())
    for what, call in _bad_calls(dA, dB, dC):
        with oxicuda.trace() as t, pytest.raises(ValueError):
            call()
        assert t.launches == [], what
    for x, old in zip((dA, dB, dC), before):  # nothing written
        np.testing.assert_array_equal(x.get(), old)
    _check(dC, _reference(1.0, A, B))


def test_prepared_launch_checks_geometry_once_and_packs_like_a_call(rng, fresh_plans):
    (A, B), (dA, dB) = _f32_matrices(rng, (M, M), (M, M))
    dC = _poisoned((M, M))
    gemm_colmajor("N", "N", M, M, M, 1.0, dA.ptr, M, dB.ptr, M, 0.0, dC.ptr, M, dtype="float32")
    fn = _only_plan_function()
    with pytest.raises(ValueError, match="threads"):
        fn.prepared_launch((1, 1, 1), (4096,))
    launch = fn.prepared_launch((1, 1, 1), (fn.spec.threads,))
    with pytest.raises(TypeError, match="argument"):
        launch([M, M, M, 0, dA.ptr, M, dB.ptr, M, dC.ptr, M, 0, 0, 0, 1.0, 0, "x", 0])
    dC2 = _poisoned((M, M))
    launch([M, M, M, 0, dA.ptr, M, dB.ptr, M, dC2.ptr, M, 0, 0, 0, 2.0, 0, 0.0, 0])  # the first 64x64 tile
    _check(dC2, _reference(2.0, A, B))


# -- gemm on arrays: the cached layout mapping -------------------------------------------------------

@pytest.mark.parametrize("order_a,order_b,order_c,transa,transb", [
    ("C", "C", "C", False, False), ("F", "C", "F", True, False), ("C", "F", "C", "N", "T"),
    ("F", "F", "F", "T", True)])
def test_cached_array_gemm_is_right_for_new_arrays_of_one_layout(rng, fresh_plans, order_a, order_b, order_c,
                                                                  transa, transb):
    from oxicuda.blas import gemm_api

    gemm_api.clear_layout_plan_cache()
    m, n, k = 19, 12, 23
    ta, tb = transa in (True, "T"), transb in (True, "T")
    for round_ in range(3):
        A = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
        B = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
        C = rng.standard_normal((m, n)).astype(np.float32)
        dA, dB = oxicuda.asarray(np.asarray(A, order=order_a)), oxicuda.asarray(np.asarray(B, order=order_b))
        dC = oxicuda.asarray(np.asarray(C, order=order_c))
        alpha, beta = float(rng.standard_normal()), float(rng.standard_normal())
        opA, opB = (A.T if ta else A), (B.T if tb else B)
        with oxicuda.trace() as t:
            out = oxicuda.blas.gemm(dA, dB, dC, alpha=alpha, beta=beta, transa=transa, transb=transb)
        assert out is dC and len(t.launches) == 1
        np.testing.assert_allclose(out.get(), _reference(alpha, opA, opB, beta, C), rtol=1e-5, atol=1e-5)
        fresh = oxicuda.blas.gemm(dA, dB, transa=transa, transb=transb)
        np.testing.assert_allclose(fresh.get(), _reference(1.0, opA, opB), rtol=1e-5, atol=1e-5)
        assert len(gemm_api._layout_plans) == 2, round_  # with c and without c


def test_cached_array_gemm_still_refuses_bad_calls(rng, fresh_plans):
    from oxicuda.blas import gemm_api

    gemm_api.clear_layout_plan_cache()
    (A, B), (dA, dB) = _f32_matrices(rng, (M, M), (M, M))
    oxicuda.blas.gemm(dA, dB)
    oxicuda.blas.gemm(dA, dB, _poisoned((M, M)))  # the signatures with and without c are cached
    assert len(gemm_api._layout_plans) == 2
    dC = _poisoned((M, M))
    readonly = oxicuda.DeviceArray.from_pointer(dC.ptr, dC.shape, dC.dtype, dC.strides, owner=dC, readonly=True)
    bad = [
        (lambda: oxicuda.blas.gemm(dA, dB, beta=1.0), "needs an input c"),
        (lambda: oxicuda.blas.gemm(dA, dB, readonly), "read-only"),
        (lambda: oxicuda.blas.gemm(dA, dB, transa=2), "transa"),  # 0/1 are False/True; 2 is no flag
        (lambda: oxicuda.blas.gemm(dA, dB, dC, alpha="2"), "alpha"),
        (lambda: oxicuda.blas.gemm(dA, dB, dA), "overlaps"),
    ]
    for call, match in bad:
        with oxicuda.trace() as t, pytest.raises(ValueError, match=match):
            call()
        assert t.launches == [], match
    assert np.isnan(dC.get()).all()
    out = oxicuda.blas.gemm(dA, dB, dC)
    np.testing.assert_allclose(out.get(), _reference(1.0, A, B), rtol=1e-5, atol=1e-5)


def test_cached_batched_matmul_is_right_for_new_arrays(rng, fresh_plans):
    for _ in range(3):
        A = rng.standard_normal((3, 10, 7)).astype(np.float32)
        B = rng.standard_normal((3, 7, 5)).astype(np.float32)
        out = oxicuda.blas.matmul(oxicuda.asarray(A), oxicuda.asarray(B))
        np.testing.assert_allclose(out.get(), A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)
    assert gemm_core.plan_cache_size() == 1
