"""GEMM dispatch (pure: problem + device -> plan), its branches reached through real launches
(``oxicuda.trace``), the Pythonic gemm/matmul layouts, and bad input rejected before any launch."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import gemm, matmul
from oxicuda.blas import gemm_dispatch as gd
from oxicuda.blas.gemm_batched import gemm_batched, gemm_strided_batched
from oxicuda.blas.gemm_core import gemm_colmajor
from oxicuda.driver.facts import board_facts, device_facts

H200 = board_facts("h200")
A4000 = board_facts("rtx-a4000")


def problem(m, n, k, dtype="float32", **kw):
    return gd.GemmProblem(m, n, k, dtype, lda=kw.pop("lda", m), ldb=kw.pop("ldb", k), ldc=kw.pop("ldc", m), **kw)


# -- pure dispatch ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape,algo", [
    ((4096, 4096, 4096), "tiled"),
    ((128, 128, 131072), "split_k"),
    ((512, 512, 65536), "split_k"),
    ((64, 4096, 16384), "split_k"),
    ((16384, 1, 16384), "gemv"),
    ((1, 16384, 16384), "gemv"),
    ((16, 16, 16), "naive"),
    ((4096, 4096, 64), "tiled"),
])
def test_dispatch_picks_the_branch_meant_for_each_shape(shape, algo):
    plan = gd.choose_algo(problem(*shape), H200)
    assert plan.algo == algo
    if algo == "split_k":
        assert plan.splits > 1 and plan.spec.raw_out
        assert plan.splits * gd.split_k_chunk(problem(*shape), plan.splits, plan.spec.bk) >= shape[2]


def test_dispatch_uses_the_big_tile_only_when_it_fills_the_sms():
    assert gd.choose_algo(problem(4096, 4096, 512), H200).spec.bm == 128
    assert gd.choose_algo(problem(256, 256, 512), H200).spec.bm == 64


def test_dispatch_vector_loads_follow_alignment():
    aligned = gd.choose_algo(problem(4096, 4096, 4096), H200).spec
    assert (aligned.vec_a, aligned.vec_b) == (4, 4)
    odd = gd.choose_algo(problem(4097, 4096, 4096, lda=4097), H200).spec
    assert odd.vec_a == 1 and odd.vec_b == 4
    misaligned = gd.choose_algo(problem(4096, 4096, 4096, align_a=4), H200).spec
    assert misaligned.vec_a == 1


@pytest.mark.parametrize("ta,tb", [("N", "N"), ("T", "N"), ("N", "T"), ("T", "T")])
def test_sm90_float32_with_16_byte_loads_takes_the_measured_loop_variant(ta, tb):
    kw = {"transa": ta, "transb": tb, "lda": 4096, "ldb": 4096}
    spec = gd.choose_algo(problem(4096, 4096, 4096, **kw), H200).spec
    assert (spec.tm, spec.tn, spec.prefetch, spec.vec_a, spec.vec_b) == (8, 16, True, 4, 4)
    batched = gd.choose_algo(problem(512, 512, 512, batch=64, lda=512, ldb=512, ldc=512), H200).spec
    assert batched.prefetch and batched.tn == 16
    # scalar loads (it would spill), another arch (unmeasured), float64, split-K: the plain tiles
    for p, dev in ((problem(4096, 4096, 4096, align_a=4, **kw), H200), (problem(4097, 4096, 4096, lda=4097), H200),
                   (problem(4096, 4096, 4096, **kw), A4000), (problem(4096, 4096, 4096, "float64", **kw), A4000)):
        plan = gd.choose_algo(p, dev)
        assert not plan.spec.prefetch and plan.spec.tn == 8, (p, dev)


@pytest.mark.parametrize("m,n,k,tile,splits", [
    (128, 128, 131072, (128, 64, 8, 8, True, False), 198),
    (512, 512, 65536, (128, 128, 8, 16, True, True), 33),
    (64, 4096, 16384, (64, 128, 8, 8, True, False), 12),
])
def test_sm90_split_k_takes_the_measured_prefetching_partials(m, n, k, tile, splits):
    # the skinny sweep: the fastest partial tile and count of each skinny shape (SPLIT_K_VARIANTS)
    plan = gd.choose_algo(problem(m, n, k, lda=m, ldb=k, ldc=m), H200)
    s = plan.spec
    assert plan.algo == "split_k" and plan.splits == splits
    assert (s.bm, s.bn, s.tm, s.tn, s.prefetch, s.interior, s.raw_out) == (*tile, True)
    # scalar loads (the prefetching tiles would spill) or another arch: the plain partial tiles
    for p, dev in ((problem(m, n, k, lda=m, ldb=k, ldc=m, align_a=4), H200), (problem(m, n, k, lda=m, ldb=k, ldc=m), A4000)):
        other = gd.choose_algo(p, dev)
        assert not other.spec.prefetch and not other.spec.interior, (p, dev)
    # every split-K tile dispatch can name is registered as a partial
    from oxicuda.blas.gemm_tiled import configurations

    assert s in set(configurations("sm_90"))


def test_dispatch_is_pure_and_deterministic():
    p = problem(300, 200, 5000)
    assert gd.choose_algo(p, A4000) == gd.choose_algo(p, A4000)


def test_dispatch_half_types_fall_back_to_simt_when_tensor_cores_refuse(monkeypatch):
    monkeypatch.setattr(gd, "tensor_core_modules", list)
    plan = gd.choose_algo(problem(4096, 4096, 4096, "bfloat16"), H200)
    assert plan.algo == "tiled" and plan.spec.dtype == "bfloat16"
    with pytest.raises(ValueError, match="tensor_core"):
        gd.choose_algo(problem(64, 64, 64, "float16"), H200, algo="tensor_core")


def test_dispatch_rejects_unknown_algo():
    with pytest.raises(ValueError, match="algo='fast'"):
        gd.choose_algo(problem(8, 8, 8), H200, algo="fast")


# -- branches reached through launches ---------------------------------------------------------

def _run(m, n, k, rng, **kw):
    A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    dA, dB = oxicuda.asarray(np.asfortranarray(A)), oxicuda.asarray(np.asfortranarray(B))
    dC = oxicuda.asarray(np.full((m, n), np.nan, order="F"))
    with oxicuda.trace() as t:
        gemm_colmajor("N", "N", m, n, k, 1.0, dA.ptr, m, dB.ptr, k, 0.0, dC.ptr, m, dtype="float64", **kw)
    np.testing.assert_allclose(dC.get(), A @ B, rtol=1e-11, atol=1e-11)
    return [s.family for s in t.specs()], t


def test_launch_branches_follow_dispatch(rng, monkeypatch):
    assert _run(5, 6, 7, rng)[0] == ["gemm_naive"]
    assert _run(40, 1, 7, rng)[0] == ["gemv"]
    live_arch = device_facts().arch.rstrip("a")
    # float64 runs on DMMA tensor cores where that was measured faster (sm_90), else SIMT
    assert _run(40, 37, 33, rng)[0] == ["gemm_dmma" if live_arch in gd.THRESHOLDS["float64_dmma"] else "gemm_tiled"]
    monkeypatch.setitem(gd.THRESHOLDS, "split_k_min_k", 64)
    monkeypatch.setitem(gd.THRESHOLDS, "split_k_min_chunk", 16)
    fams, t = _run(40, 12, 100, rng)
    assert fams == ["gemm_tiled", "gemm_splitk_reduce"] and t.launches[0].grid[2] > 1


# -- Pythonic API ------------------------------------------------------------------------------

@pytest.mark.parametrize("order_a,order_b,order_c", [("C", "C", "C"), ("F", "C", "F"), ("C", "F", "F"), ("F", "F", "C")])
def test_gemm_layouts_without_copies(rng, order_a, order_b, order_c):
    A, B = rng.standard_normal((13, 21)).astype(np.float32), rng.standard_normal((21, 6)).astype(np.float32)
    C = rng.standard_normal((13, 6)).astype(np.float32)
    dA, dB = oxicuda.asarray(np.asarray(A, order=order_a)), oxicuda.asarray(np.asarray(B, order=order_b))
    dC = oxicuda.asarray(np.asarray(C, order=order_c))
    with oxicuda.trace() as t:
        out = gemm(dA, dB, dC, alpha=2.0, beta=-1.0, algo="tiled")
    assert out is dC and len(t.launches) == 1  # no copy kernels, one GEMM
    np.testing.assert_allclose(out.get(), 2.0 * A.astype(np.float64) @ B - C, rtol=1e-5, atol=1e-5)


def test_gemm_strided_views_and_transposes(rng):
    H = rng.standard_normal((30, 40)).astype(np.float32)
    big = oxicuda.asarray(H)
    a = big[2:19, 3:36]          # 17 x 33 view, row stride 40
    b = big[5:22, 1:12]          # 17 x 11 view
    out = gemm(a, b, transa=True, algo="tiled")
    ref = H[2:19, 3:36].astype(np.float64).T @ H[5:22, 1:12]
    np.testing.assert_allclose(out.get(), ref, rtol=1e-5, atol=1e-5)
    every_other = big[::2, ::2]  # no unit stride: copied, still correct
    out = matmul(every_other, big[:20, :7])
    np.testing.assert_allclose(out.get(), H[::2, ::2].astype(np.float64) @ H[:20, :7], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ta,tb", [("C", False), (False, "C"), ("C", "C"), (True, "C")])
def test_gemm_complex_conjugates_in_both_storage_orders(rng, ta, tb):
    X = (rng.standard_normal((6, 6)) + 1j * rng.standard_normal((6, 6))).astype(np.complex128)
    Y = (rng.standard_normal((6, 6)) + 1j * rng.standard_normal((6, 6))).astype(np.complex128)
    f = lambda x, t: x if t is False else (x.T if t is True else x.conj().T)
    for order in "CF":
        out = gemm(oxicuda.asarray(np.asarray(X, order=order)), oxicuda.asarray(Y), transa=ta, transb=tb)
        np.testing.assert_allclose(out.get(), f(X, ta) @ f(Y, tb), rtol=1e-12, atol=1e-12)


def test_matmul_vectors_and_batches(rng):
    A = rng.standard_normal((4, 9, 5)).astype(np.float32)
    B = rng.standard_normal((4, 5, 3)).astype(np.float32)
    with oxicuda.trace() as t:
        out = matmul(oxicuda.asarray(A), oxicuda.asarray(B))
    assert len(t.launches) == 1 and t.launches[0].grid[2] == 4
    np.testing.assert_allclose(out.get(), A.astype(np.float64) @ B, rtol=1e-5, atol=1e-5)
    shared = matmul(oxicuda.asarray(A), oxicuda.asarray(B[0]))  # broadcast b, batch stride 0
    np.testing.assert_allclose(shared.get(), A.astype(np.float64) @ B[0], rtol=1e-5, atol=1e-5)
    v = rng.standard_normal(5).astype(np.float32)
    np.testing.assert_allclose(matmul(oxicuda.asarray(A[0]), oxicuda.asarray(v)).get(), A[0].astype(np.float64) @ v,
                               rtol=1e-5, atol=1e-5)


def test_batched_wrappers(rng):
    A = rng.standard_normal((3, 4, 6))
    B = rng.standard_normal((3, 6, 5))
    out = gemm_strided_batched(oxicuda.asarray(A), oxicuda.asarray(B), transa=False, algo="tiled")
    np.testing.assert_allclose(out.get(), A @ B, rtol=1e-12, atol=1e-12)
    outs = gemm_batched([oxicuda.asarray(x) for x in A], [oxicuda.asarray(np.asfortranarray(y)) for y in B])
    for o, x, y in zip(outs, A, B):
        np.testing.assert_allclose(o.get(), x @ y, rtol=1e-12, atol=1e-12)


# -- bad input: raises before any launch, C untouched ------------------------------------------

def _bad(call, match, error=ValueError):
    with oxicuda.trace() as t, pytest.raises(error, match=match):
        call()
    assert t.launches == []


def test_bad_pointer_level_arguments_raise_before_launch():
    buf = oxicuda.full((64, 64), 7.0, np.float32)
    p = buf.ptr
    hi = p + 32 * 64 * 4
    args = {"dtype": "float32"}
    _bad(lambda: gemm_colmajor("N", "N", 8, 8, 8, 1.0, p, 4, p, 8, 0.0, hi, 8, **args), "lda=4 must be >= 8")
    _bad(lambda: gemm_colmajor("T", "N", 8, 8, 5, 1.0, p, 4, p, 5, 0.0, hi, 8, **args), "lda=4 must be >= 5")
    _bad(lambda: gemm_colmajor("N", "N", -1, 8, 8, 1.0, p, 8, p, 8, 0.0, hi, 8, **args), "m=-1")
    _bad(lambda: gemm_colmajor("X", "N", 8, 8, 8, 1.0, p, 8, p, 8, 0.0, hi, 8, **args), "transa='X'")
    _bad(lambda: gemm_colmajor("N", "N", 8, 8, 8, 1.0, p, 8, p, 8, 0.0, hi, 7, **args), "ldc=7")
    _bad(lambda: gemm_colmajor("N", "N", 8, 8, 8, 1.0, p, 8, p, 8, 0.0, hi, 8, dtype="int32"), "dtype", TypeError)
    _bad(lambda: gemm_colmajor("N", "N", 8, 8, 8, 1.0, 0, 8, p, 8, 0.0, hi, 8, **args), "a_ptr is 0")
    _bad(lambda: gemm_colmajor("N", "N", 8, 8, 8, 1.0, p, 8, p, 8, 0.0, p + 4 * 4, 8, **args), "overlaps input A")
    _bad(lambda: gemm_colmajor("N", "N", 8, 8, 8, 1.0, p, 8, p, 8, 0.0, hi, 8, compute="tf16", **args), "compute")
    _bad(lambda: gemm_colmajor("N", "N", 8, 8, 8, 1.0, p, 8, p, 8, 0.0, hi, 8, batch=2, stride_c=10, **args),
         "stride_c=10")
    _bad(lambda: gemm_colmajor("N", "N", 8, 8, 8, 1.0, p, 8, p, 8, 0.0, hi, 8, a_array_ptr=p, **args),
         "pointer-array")
    _bad(lambda: gemm_colmajor("N", "N", 8, 8, 8, 1.0, p, 8, p, 8, 0.0, hi, 8, algo="gemv", **args), "gemv")
    assert (buf.get() == 7.0).all()


def test_disjoint_blocks_of_one_matrix_are_not_overlap(rng):
    H = rng.standard_normal((16, 16))
    M = oxicuda.asarray(np.asfortranarray(H))
    p, es = M.ptr, 8
    # C = top-left 8x8 block, A = bottom-left block, B = right half top rows: same ld, disjoint
    gemm_colmajor("N", "N", 8, 8, 8, 1.0, p + 8 * es, 16, p + 8 * 16 * es, 16, 0.0, p, 16, dtype="float64")
    np.testing.assert_allclose(M.get()[:8, :8], H[8:, :8] @ H[:8, 8:], rtol=1e-12, atol=1e-12)


def test_bad_array_arguments_raise_before_launch():
    # every operand is made before the traced calls (oxicuda.full itself launches a fill kernel)
    a = oxicuda.full((6, 4), 1.0, np.float32)
    b = oxicuda.full((5, 3), 1.0, np.float32)
    c = oxicuda.full((6, 3), 3.0, np.float32)
    b64 = oxicuda.full((4, 3), 1.0, np.float64)
    c64 = oxicuda.full((6, 6), 1.0, np.float64)
    c65 = oxicuda.full((6, 5), 1.0, np.float32)
    b43 = oxicuda.full((4, 3), 1.0, np.float32)
    _bad(lambda: gemm(a, b, c), "op\\(a\\) has 4 columns but op\\(b\\) has 5 rows")
    _bad(lambda: gemm(a, b64), "dtype", TypeError)
    _bad(lambda: gemm(a, a.T, c64), "c has dtype float64", TypeError)
    ints = oxicuda.asarray(np.ones((4, 4), np.int32))
    _bad(lambda: gemm(ints, ints), "dtype int32 is not supported", TypeError)
    _bad(lambda: gemm(a, a.T, c65), "c has shape")
    _bad(lambda: gemm(a, a.T, beta=1.0), "beta")
    _bad(lambda: gemm(a, b43, c, transa="Q"), "transa")
    aliased = oxicuda.full((6, 6), 1.0, np.float32)
    _bad(lambda: gemm(aliased, aliased, aliased), "overlaps")
    assert (c.get() == 3.0).all() and (aliased.get() == 1.0).all()


@pytest.mark.parametrize("algo", ["split_k", "tiled", "naive", None])
def test_k_zero_writes_beta_c_for_every_algo(rng, algo):
    C = rng.standard_normal((9, 7)).astype(np.float32)
    a = oxicuda.asarray(np.ones((9, 0), np.float32))
    b = oxicuda.asarray(np.ones((0, 7), np.float32))
    c = oxicuda.asarray(C)
    gemm(a, b, c, alpha=2.0, beta=0.5, algo=algo)
    np.testing.assert_allclose(c.get(), 0.5 * C.astype(np.float64), rtol=1e-6)


def test_row_major_overlap_names_the_users_operand():
    buf = oxicuda.full((8, 8), 1.0, np.float32)
    a = oxicuda.full((8, 8), 1.0, np.float32)
    with oxicuda.trace() as t, pytest.raises(ValueError, match=r"output c .* overlaps input b "):
        gemm(a, buf, buf)  # row-major: gemm_colmajor sees b first
    with pytest.raises(ValueError, match=r"output c .* overlaps input a "):
        gemm(buf, a, buf)
    assert t.launches == []
