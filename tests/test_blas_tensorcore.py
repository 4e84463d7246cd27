"""The mma.sync tensor-core GEMM (oxicuda.blas.gemm_tensorcore) on the live backend, through
its ``launch`` interface, against float64 numpy; plus supports(), spec rules and ptxas over every
registered configuration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import gemm_tensorcore as tc
from oxicuda.blas.gemm_problem import column_major_problem
from oxicuda.memory.dtypes import bfloat16_bits_to_float32, float32_to_bfloat16_bits
from oxicuda.ptx import fragments, registry

EMULATOR_GAPS = ("no handler for opcode", "interpreter does not support")
TOLERANCE = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 4e-3}  # relative to max |reference|


def _live_arch() -> str:
    from oxicuda.ptx.target import device_arch

    return device_arch()


def _launch_or_skip(call) -> None:
    try:
        call()
    except Exception as exc:  # only the emulator's "instruction missing" message may skip
        text = str(exc)
        if any(gap in text for gap in EMULATOR_GAPS):
            pytest.skip(f"the emulator lacks an instruction: {text[:300]}")
        raise


class Operands:
    """Random column-major operands of a GEMM with padded, 16-byte aligned leading dims."""

    def __init__(self, rng, m, n, k, dtype, transa, transb, batch=1, poison=True, pad=8):
        self.m, self.n, self.k, self.dtype, self.batch = m, n, k, dtype, batch
        q = 4 if dtype == "float32" else 8
        up = lambda x: -(-x // q) * q
        ra, ca = (k, m) if transa else (m, k)
        rb, cb = (n, k) if transb else (k, n)
        self.lda, self.ldb, self.ldc = up(ra + pad), up(rb + pad), up(m + pad)
        self.a_host, self.a = self._make(rng, self.lda, ca)
        self.b_host, self.b = self._make(rng, self.ldb, cb)
        self.c_host, self.c = self._make(rng, self.ldc, n)
        self.stride_a, self.stride_b, self.stride_c = (x.shape[0] * x.shape[1] for x in (self.a_host[0], self.b_host[0],
                                                                                         self.c_host[0]))
        op_a = self.a_host[:, :ra].transpose(0, 2, 1) if transa else self.a_host[:, :ra]
        op_b = self.b_host[:, :rb].transpose(0, 2, 1) if transb else self.b_host[:, :rb]
        self.product = np.einsum("bik,bkj->bij", op_a.astype(np.float64), op_b.astype(np.float64))
        if poison:
            nan = np.full((batch, self.ldc, n), np.nan, np.float32)
            self.c_host = nan
            self.c = oxicuda.asarray(self._raw(nan))

    def _raw(self, x: np.ndarray) -> np.ndarray:
        # (batch, ld, cols) float32 -> device layout: column-major per batch, batches back to back
        raw = float32_to_bfloat16_bits(x) if self.dtype == "bfloat16" else x.astype(self.dtype)
        return np.ascontiguousarray(raw.transpose(0, 2, 1))

    def _make(self, rng, ld, cols):
        x = rng.standard_normal((self.batch, ld, cols)).astype(np.float32)
        raw = self._raw(x)
        host = (bfloat16_bits_to_float32(raw) if self.dtype == "bfloat16" else raw.astype(np.float32))
        return np.ascontiguousarray(host.transpose(0, 2, 1)), oxicuda.asarray(raw)

    def result(self) -> np.ndarray:
        raw = self.c.get()
        x = bfloat16_bits_to_float32(raw) if self.dtype == "bfloat16" else raw.astype(np.float32)
        return x.transpose(0, 2, 1)  # (batch, ldc, n)


def _problem(ops: Operands, transa, transb, compute=None) -> tc.GemmProblem:
    compute = compute or ("tf32" if ops.dtype == "float32" else "f32")
    return column_major_problem(ops.m, ops.n, ops.k, ops.dtype, compute, transa, transb, ops.lda, ops.ldb, ops.ldc, 16,
                          _live_arch())


def _check(ops: Operands, alpha, beta, old_c):
    got = ops.result()
    ref = alpha * ops.product + (beta * old_c[:, :ops.m].astype(np.float64) if beta else 0.0)
    body = got[:, :ops.m]
    assert not np.isnan(body).any(), f"{np.isnan(body).sum()} elements of C were not written"
    scale = np.abs(ref).max() + 1e-30
    err = np.abs(body - ref).max() / scale
    assert err < TOLERANCE[ops.dtype], f"max error {err:.3g} x max|ref| for {ops.dtype}"
    # rows past m (the leading-dimension padding) must be exactly as they were
    np.testing.assert_array_equal(got[:, ops.m:], old_c[:, ops.m:])


def _skip_unless_sm80():
    if int(_live_arch()[3:].rstrip("a")) < 80:
        pytest.skip(f"tensor-core gemm needs sm_80+; the live device is {_live_arch()}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("transa,transb", list(itertools.product((False, True), repeat=2)))
def test_tensor_core_gemm_matches_float64_reference_for_all_transposes(rng, dtype, transa, transb):
    _skip_unless_sm80()
    ops = Operands(rng, 17, 33, 40, dtype, transa, transb, poison=True)
    old = ops.c_host.copy()
    alpha = float(rng.uniform(0.5, 2.0))
    _launch_or_skip(lambda: tc.launch(_problem(ops, transa, transb), alpha, ops.a.ptr, ops.lda, ops.b.ptr, ops.ldb,
                                      0.0, ops.c.ptr, ops.ldc))
    _check(ops, alpha, 0.0, old)


@pytest.mark.parametrize("dtype,m,n,k", [("float16", 64, 64, 64), ("bfloat16", 130, 72, 49), ("float32", 70, 129, 37)])
def test_tensor_core_gemm_accumulates_beta_times_c_on_tile_tails(rng, dtype, m, n, k):
    _skip_unless_sm80()
    transa, transb = bool(rng.integers(2)), bool(rng.integers(2))
    ops = Operands(rng, m, n, k, dtype, transa, transb, poison=False)
    old = ops.c_host.copy()
    alpha, beta = float(rng.uniform(-2, 2)), float(rng.uniform(0.25, 2))
    _launch_or_skip(lambda: tc.launch(_problem(ops, transa, transb), alpha, ops.a.ptr, ops.lda, ops.b.ptr, ops.ldb,
                                      beta, ops.c.ptr, ops.ldc))
    _check(ops, alpha, beta, old)


def test_tensor_core_gemm_batched_with_device_scalars(rng):
    _skip_unless_sm80()
    ops = Operands(rng, 24, 20, 36, "float16", False, True, batch=3, poison=False)
    old = ops.c_host.copy()
    scalars = oxicuda.asarray(np.array([1.25, -0.5], np.float32))
    _launch_or_skip(lambda: tc.launch(_problem(ops, False, True), 99.0, ops.a.ptr, ops.lda, ops.b.ptr, ops.ldb,
                                      99.0, ops.c.ptr, ops.ldc, batch=3, stride_a=ops.stride_a,
                                      stride_b=ops.stride_b, stride_c=ops.stride_c, alpha_ptr=scalars.ptr,
                                      beta_ptr=scalars.ptr + 4))
    _check(ops, 1.25, -0.5, old)


def test_tensor_core_launch_is_traced_with_its_spec(rng):
    _skip_unless_sm80()
    ops = Operands(rng, 16, 16, 16, "bfloat16", True, False, poison=True)
    with oxicuda.trace() as tr:
        _launch_or_skip(lambda: tc.launch(_problem(ops, True, False), 1.0, ops.a.ptr, ops.lda, ops.b.ptr, ops.ldb,
                                          0.0, ops.c.ptr, ops.ldc))
    specs = [rec.spec for rec in tr.launches]
    assert len(specs) == 1 and isinstance(specs[0], tc.GemmTensorCoreSpec)
    assert specs[0].dtype == "bf16" and specs[0].a_kmajor and specs[0].b_kmajor


# -- pure parts ---------------------------------------------------------------------------------
def test_supports_accepts_half_and_tf32_and_rejects_what_it_cannot_do():
    base = {"m": 64, "n": 64, "k": 64, "dtype": "float16", "compute": "f32", "transa": False, "transb": False, "lda": 64, "ldb": 64,
                "ldc": 64, "alignment": 16, "arch": "sm_86"}
    assert tc.supports(base)
    assert tc.supports({**base, "dtype": "bfloat16", "transa": "T"})
    assert tc.supports({**base, "dtype": "float32", "compute": "tf32", "arch": "sm_90"})
    assert not tc.supports({**base, "dtype": "float32", "compute": "f32"})  # exact f32 is not tf32
    assert not tc.supports({**base, "dtype": "float64"})
    assert not tc.supports({**base, "alignment": 8})
    assert not tc.supports({**base, "arch": "sm_75"})
    assert not tc.supports({**base, "lda": 32})  # lda < m
    with pytest.raises(ValueError, match="transa"):
        column_major_problem(1, 1, 1, transa="X")


def test_launch_rejects_an_unsupported_problem_before_touching_the_device():
    p = column_major_problem(8, 8, 8, "float32", "f32", lda=8, ldb=8, ldc=8, arch="sm_86")
    with pytest.raises(ValueError, match="tf32|compute"):
        tc.launch(p, 1.0, 0, 8, 0, 8, 0.0, 0, 8)


def test_spec_rejects_tiles_that_do_not_split():
    with pytest.raises(ValueError, match="tile"):
        tc.GemmTensorCoreSpec(block_m=48)
    with pytest.raises(ValueError, match="sm_80"):
        tc.GemmTensorCoreSpec(arch="sm_75")


def test_operand_plans_reproduce_the_fragment_tables():
    # ldmatrix origins + lane mapping give exactly the fragment table, element by element
    for dtype, op in itertools.product(("f16", "bf16", "tf32"), ("a", "b")):
        plan = tc.PLANS[(dtype, op)]
        shape = fragments.mma_shape(tc.MMA_FOR[dtype][0], dtype, "f32")
        frag = shape.a if op == "a" else shape.b
        for lane in range(32):
            g, t = lane >> 2, lane % 4
            for e, rc in enumerate(frag.table[lane]):
                mn, k = rc if op == "a" else (rc[1], rc[0])
                e_mn, e_k = plan.elems[e]
                assert (e_mn + plan.lane_mn[0] * g + plan.lane_mn[1] * t,
                        e_k + plan.lane_k[0] * g + plan.lane_k[1] * t) == (mn, k)


@pytest.mark.slow
def test_every_registered_configuration_assembles_with_ptxas():
    from oxicuda.ptx.validate import PtxasNotFound, assemble_many

    specs = [s for arch in tc.ARCHS for s in registry.configurations(arch, family=tc.FAMILY)]
    assert len(specs) == 3 * len(tc.configurations("sm_86"))
    try:
        reports = assemble_many([(registry.generate_ptx(s), s.arch) for s in specs])
    except PtxasNotFound as exc:
        pytest.skip(str(exc))
    bad = [(s, r.message[:200]) for s, r in zip(specs, reports) if not r.ok]
    assert not bad, bad
    assert max(r.spills for r in reports) == 0
    assert max(r.registers for r in reports) <= 255


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_public_gemm_with_algo_tensor_core_runs_this_family(rng, dtype):
    _skip_unless_sm80()
    blas = pytest.importorskip("oxicuda.blas")
    if not hasattr(blas, "gemm"):
        pytest.skip("oxicuda.blas.gemm is not there yet")
    a32 = rng.standard_normal((40, 24)).astype(np.float32)
    b32 = rng.standard_normal((24, 48)).astype(np.float32)
    if dtype == "bfloat16":
        a_bits, b_bits = float32_to_bfloat16_bits(a32), float32_to_bfloat16_bits(b32)
        a_host, b_host = bfloat16_bits_to_float32(a_bits), bfloat16_bits_to_float32(b_bits)
        a_dev, b_dev = oxicuda.asarray(a_host).astype("bfloat16"), oxicuda.asarray(b_host).astype("bfloat16")
    else:
        a_host, b_host = a32.astype(np.float16), b32.astype(np.float16)
        a_dev, b_dev = oxicuda.asarray(a_host), oxicuda.asarray(b_host)
    with oxicuda.trace() as tr:
        c = blas.gemm(a_dev, b_dev, algo="tensor_core")
    assert [type(rec.spec) for rec in tr.launches] == [tc.GemmTensorCoreSpec]
    got = c.get()
    got = bfloat16_bits_to_float32(got) if dtype == "bfloat16" else got.astype(np.float32)
    ref = a_host.astype(np.float64) @ b_host.astype(np.float64)
    assert np.abs(got - ref).max() / np.abs(ref).max() < TOLERANCE[dtype]
