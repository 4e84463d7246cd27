"""GEMM kernels (naive, tiled, split_k, gemv, batched) against float64 numpy references on the live
backend: odd shapes, every transpose, lda > rows, sub-matrix pointers, beta = 0 over NaN, device
scalars. Outputs are poisoned with NaN (or hold random C for beta != 0) and every element checked."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import gemm_codegen as cg
from oxicuda.blas.gemm_core import gemm_colmajor
from oxicuda.memory.dtypes import (
    BFLOAT16,
    bfloat16_bits_to_float32,
    float32_to_bfloat16_bits,
    host_astype,
)

TOL = {"float32": 2e-5, "float64": 1e-12, "complex64": 2e-5, "complex128": 1e-12, "float16": 2e-3,
       "bfloat16": 2e-2}


def host_random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape)
    if dtype == "bfloat16":  # representable values: round through bf16 bits
        return bfloat16_bits_to_float32(float32_to_bfloat16_bits(x.astype(np.float32))).astype(np.float64)
    return x.astype(dtype).astype(np.complex128 if dtype.startswith("complex") else np.float64)


def to_device(x64, dtype, order="F"):
    """A float64 host array as a device array of ``dtype`` (column-major by default)."""
    if dtype == "bfloat16":
        host = host_astype(np.asarray(x64, dtype=np.float32), BFLOAT16)
        return oxicuda.asarray(np.asarray(host, order=order))
    return oxicuda.asarray(np.asarray(x64.astype(dtype), order=order))


def from_device(d, dtype):
    h = d.get()
    if dtype == "bfloat16":
        return bfloat16_bits_to_float32(h.view(np.uint16)).astype(np.float64)
    return h.astype(np.complex128 if dtype.startswith("complex") else np.float64)


def op(x, t):
    return x if t == "N" else (x.T if t == "T" else x.conj().T)


def run_case(rng, dtype, ta, tb, m, n, k, *, algo=None, alpha=1.25, beta=0.0, pad=3, offset=(2, 1),
             device_scalars=False):
    """One gemm_colmajor call on sub-matrices of padded buffers; returns (got, reference, trace)."""
    is_c = dtype.startswith("complex")
    if is_c:
        alpha, beta = complex(alpha, 0.5), (complex(beta, -0.25) if beta else 0)
    ra, ca = (m, k) if ta == "N" else (k, m)
    rb, cb = (k, n) if tb == "N" else (n, k)
    # each operand lives at a row/column offset inside a bigger buffer: lda > rows, interior pointer
    r0, c0 = offset
    A = host_random(rng, (ra + pad + r0, ca + c0), dtype)
    B = host_random(rng, (rb + pad + r0, cb + c0), dtype)
    C = host_random(rng, (m + pad + r0, n + c0), dtype)
    if beta == 0:
        C[r0:r0 + m, c0:c0 + n] = np.nan
    dA, dB, dC = to_device(A, dtype), to_device(B, dtype), to_device(C, dtype)
    es = cg.kind_of(dtype).nbytes
    sub = lambda d, ld: d.ptr + (r0 + c0 * ld) * es
    lda, ldb, ldc = A.shape[0], B.shape[0], C.shape[0]
    kw = {}
    keep = []
    if device_scalars:
        sdt = {"float16": "float32", "bfloat16": "float32"}.get(dtype, dtype)
        da, db = oxicuda.asarray(np.array([alpha], dtype=sdt)), oxicuda.asarray(np.array([beta], dtype=sdt))
        keep += [da, db]
        kw = {"alpha_ptr": da.ptr, "beta_ptr": db.ptr}
        call_alpha, call_beta = 0.0, 0.0  # ignored: the kernel reads the device scalars
    else:
        call_alpha, call_beta = alpha, beta
    with oxicuda.trace() as t:
        gemm_colmajor(ta, tb, m, n, k, call_alpha, sub(dA, lda), lda, sub(dB, ldb), ldb, call_beta,
                      sub(dC, ldc), ldc, dtype=dtype, algo=algo, **kw)
    got = from_device(dC, dtype)
    Asub = A[r0:r0 + ra, c0:c0 + ca]
    Bsub = B[r0:r0 + rb, c0:c0 + cb]
    ref = C.copy()
    base = 0 if beta == 0 else beta * C[r0:r0 + m, c0:c0 + n]
    ref[r0:r0 + m, c0:c0 + n] = alpha * (op(Asub, ta) @ op(Bsub, tb)) + base
    return got, ref, t


def check(got, ref, dtype, k):
    assert not np.isnan(got).any(), f"NaN left in the output at {np.argwhere(np.isnan(got))[:5].tolist()}"
    scale = max(1.0, np.sqrt(max(k, 1)))
    err = np.abs(got - ref)
    bound = TOL[dtype] * scale * np.maximum(1.0, np.abs(ref))
    bad = np.argwhere(err > bound)
    assert bad.size == 0, f"{len(bad)} elements off, first {bad[:3].tolist()}: got {got[tuple(bad[0])]}, " \
                          f"want {ref[tuple(bad[0])]}"


REAL_TRANS = [("N", "N"), ("T", "N"), ("N", "T"), ("T", "T")]
COMPLEX_TRANS = [("N", "C"), ("C", "N"), ("C", "T"), ("T", "C")]


@pytest.mark.parametrize("algo", ["naive", "tiled", "split_k"])
@pytest.mark.parametrize("ta,tb", REAL_TRANS)
def test_gemm_float32_matches_float64_reference_for_all_transposes(rng, algo, ta, tb):
    got, ref, t = run_case(rng, "float32", ta, tb, 17, 33, 19, algo=algo, beta=0.5)
    check(got, ref, "float32", 19)
    fams = [s.family for s in t.specs()]
    assert fams[0] == {"naive": "gemm_naive", "tiled": "gemm_tiled", "split_k": "gemm_tiled"}[algo]
    if algo == "split_k":
        assert fams == ["gemm_tiled", "gemm_splitk_reduce"] and t.launches[0].grid[2] > 1


@pytest.mark.parametrize("dtype", ["float64", "complex64", "complex128", "float16", "bfloat16"])
@pytest.mark.parametrize("algo", ["naive", "tiled", "split_k"])
def test_gemm_other_dtypes_match_reference(rng, dtype, algo):
    trans = COMPLEX_TRANS if dtype.startswith("complex") else [("T", "N")]
    ta, tb = trans[rng.integers(len(trans))]
    got, ref, _ = run_case(rng, dtype, ta, tb, 9, 17, 11, algo=algo, beta=0.75 if algo != "naive" else 0.0)
    check(got, ref, dtype, 11)


@pytest.mark.parametrize("ta,tb", COMPLEX_TRANS + [("C", "C")])
def test_gemm_complex_conjugate_transposes_tiled(rng, ta, tb):
    got, ref, _ = run_case(rng, "complex64", ta, tb, 5, 7, 9, algo="tiled")
    check(got, ref, "complex64", 9)


@pytest.mark.parametrize("algo", ["naive", "tiled", "split_k", "gemv"])
def test_gemm_device_pointer_scalars(rng, algo):
    n = 1 if algo == "gemv" else 6
    got, ref, _ = run_case(rng, "float32", "N", "T", 7, n, 12, algo=algo, alpha=-0.5, beta=2.0, device_scalars=True)
    check(got, ref, "float32", 12)


def test_gemm_tiled_vector_loads_and_big_tile(rng):
    """The 128x128 tile with 16-byte loads (aligned pointers and lds, extents multiples of 4)."""
    from oxicuda.blas.gemm_tiled import GemmTiledSpec

    m, n, k = 132, 40, 24
    A, B = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    dA, dB = oxicuda.asarray(np.asfortranarray(A)), oxicuda.asarray(np.asfortranarray(B))
    dC = oxicuda.full((n, m), np.nan, np.float32).T  # F-ordered view
    spec = GemmTiledSpec(arch=oxicuda.Device(0).arch.rstrip("a"), dtype="float32", vec_a=4, vec_b=4)
    with oxicuda.trace() as t:
        gemm_colmajor("N", "N", m, n, k, 1.0, dA.ptr, m, dB.ptr, k, 0.0, dC.ptr, m, dtype="float32", algo=spec)
    assert t.specs() == [spec]
    check(dC.get().astype(np.float64), A.astype(np.float64) @ B, "float32", k)


@pytest.mark.parametrize("dtype", ["float32", "complex128", "float16"])
@pytest.mark.parametrize("shape", [(1, 17, 33), (33, 1, 17), (1, 1, 5)])
def test_gemm_vector_shapes_take_gemv(rng, dtype, shape):
    m, n, k = shape
    trans = COMPLEX_TRANS if dtype.startswith("complex") else REAL_TRANS
    ta, tb = trans[rng.integers(len(trans))]
    got, ref, t = run_case(rng, dtype, ta, tb, m, n, k, beta=0.5)
    check(got, ref, dtype, k)
    assert [s.family for s in t.specs()] == ["gemv"]


def test_gemv_colmajor_negative_increments(rng):
    from oxicuda.blas.gemv import gemv_colmajor

    m, n = 9, 5
    A = rng.standard_normal((m, n))
    x = rng.standard_normal(m * 2)
    y = rng.standard_normal(n * 3)
    dA, dx, dy = oxicuda.asarray(np.asfortranarray(A)), oxicuda.asarray(x), oxicuda.asarray(y)
    gemv_colmajor("T", m, n, 2.0, dA.ptr, m, dx.ptr, -2, 0.5, dy.ptr, -3, dtype="float64")
    xs = x[::2][::-1]
    want = y.copy()
    want[::3] = (2.0 * A.T @ xs + 0.5 * y[::3][::-1])[::-1]
    np.testing.assert_allclose(dy.get(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("algo", ["naive", "tiled"])
def test_gemm_strided_batched_one_launch(rng, algo):
    batch, m, n, k = 3, 7, 9, 5
    A = rng.standard_normal((batch, k, m))   # transposed storage per batch entry (row-major of A^T...)
    B = rng.standard_normal((batch, n, k))
    C = np.full((batch, n, m), np.nan)
    dA, dB, dC = (oxicuda.asarray(x.astype(np.float32)) for x in (A, B, C))
    # each batch entry is a column-major m x k (A: lda=m ... here stored as C-order (k, m): col-major m x k)
    with oxicuda.trace() as t:
        gemm_colmajor("N", "N", m, n, k, 1.0, dA.ptr, m, dB.ptr, k, 0.0, dC.ptr, m, dtype="float32",
                      batch=batch, stride_a=k * m, stride_b=n * k, stride_c=n * m, algo=algo)
    assert len(t.launches) == 1 and t.launches[0].grid[2] == batch
    got = dC.get().astype(np.float64)
    for z in range(batch):
        ref = (A[z].astype(np.float32).astype(np.float64).T @ B[z].astype(np.float32).astype(np.float64).T).T
        check(got[z], ref, "float32", k)


@pytest.mark.parametrize("algo", ["naive", "tiled"])
def test_gemm_pointer_array_batched_one_launch(rng, algo):
    batch, m, n, k = 3, 6, 5, 7
    As = [oxicuda.asarray(np.asfortranarray(rng.standard_normal((m, k)))) for _ in range(batch)]
    Bs = [oxicuda.asarray(np.asfortranarray(rng.standard_normal((k, n)))) for _ in range(batch)]
    Cs = [oxicuda.asarray(np.asfortranarray(rng.standard_normal((m, n)))) for _ in range(batch)]
    before = [c.get() for c in Cs]
    tables = [oxicuda.asarray(np.array([x.ptr for x in xs], dtype=np.uint64)) for xs in (As, Bs, Cs)]
    with oxicuda.trace() as t:
        gemm_colmajor("N", "N", m, n, k, 0.5, 0, m, 0, k, -1.0, 0, m, dtype="float64", batch=batch,
                      a_array_ptr=tables[0].ptr, b_array_ptr=tables[1].ptr, c_array_ptr=tables[2].ptr, algo=algo)
    assert len(t.launches) == 1 and t.launches[0].spec.pointer_array
    for a, b, c, c0 in zip(As, Bs, Cs, before):
        np.testing.assert_allclose(c.get(), 0.5 * a.get() @ b.get() - c0, rtol=1e-12, atol=1e-12)


def test_gemm_k_zero_scales_c_and_beta_zero_ignores_nan(rng):
    C = np.full((4, 3), np.nan, dtype=np.float32, order="F")
    dC = oxicuda.asarray(C)
    dA = oxicuda.zeros((4, 1), np.float32)
    gemm_colmajor("N", "N", 4, 3, 0, 1.0, dA.ptr, 4, dA.ptr, 1, 0.0, dC.ptr, 4, dtype="float32", algo="tiled")
    assert (dC.get() == 0).all()
