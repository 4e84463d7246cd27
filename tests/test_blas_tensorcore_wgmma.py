"""The sm_90a wgmma + TMA GEMM (oxicuda.blas.gemm_wgmma) against float64 numpy.

It needs an sm_90 device: the H200, or the emulator started with OXICUDA_EMULATOR_ARCH=sm_90.
The emulator picks its arch when the backend is created, so on a default (sm_86) emulator one
test re-runs this file in a subprocess with that variable set and requires it to pass.

Most kernel tests use a small tile (``SMALL``: 64x64, one consumer, 2 stages, raster 2) so the
emulator stays fast while K tiles still wrap the stage ring several times; the production tiles
run too (128x256 with two consumers for every layout, 128x128 once)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest
from test_blas_tensorcore import Operands, _check, _launch_or_skip, _live_arch

import oxicuda
from oxicuda.blas import gemm_tensorcore as tc
from oxicuda.blas import gemm_wgmma as wg
from oxicuda.blas.gemm_problem import column_major_problem
from oxicuda.driver.facts import device_facts
from oxicuda.ptx import registry

LAYOUTS = [(True, False), (False, False), (True, True), (False, True)]  # (transa, transb)
SMALL = (64, 64, 1, 2, 2)


def _skip_unless_sm90():
    arch = _live_arch()
    if arch != "sm_90":
        pytest.skip(f"wgmma needs an sm_90 device; the live one is {arch} (the emulator runs these tests in "
                    "test_wgmma_tests_pass_on_an_emulated_sm90)")


def _problem(ops: Operands, transa: bool, transb: bool) -> tc.GemmProblem:
    compute = "tf32" if ops.dtype == "float32" else "f32"
    return column_major_problem(ops.m, ops.n, ops.k, ops.dtype, compute, transa, transb, ops.lda, ops.ldb, ops.ldc, 16,
                          _live_arch())


def _spec(ops: Operands, transa: bool, transb: bool, tile) -> wg.GemmWgmmaSpec:
    natural = wg.choose_spec(_problem(ops, transa, transb))
    return wg._spec(natural.dtype, natural.a_kmajor, natural.b_kmajor, tile)


def _run(ops: Operands, transa: bool, transb: bool, alpha, beta, tile=None, **kw):
    spec = None if tile is None else _spec(ops, transa, transb, tile)
    _launch_or_skip(lambda: wg.launch(_problem(ops, transa, transb), alpha, ops.a.ptr, ops.lda, ops.b.ptr, ops.ldb,
                                      beta, ops.c.ptr, ops.ldc, spec=spec, **kw))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("transa,transb", LAYOUTS)
def test_wgmma_gemm_matches_float64_reference_for_all_transposes(rng, dtype, transa, transb):
    _skip_unless_sm90()
    ops = Operands(rng, 75, 130, 201, dtype, transa, transb, poison=True)  # 4 K tiles over 2 stages
    old = ops.c_host.copy()
    with oxicuda.trace() as tr:
        _run(ops, transa, transb, 1.5, 0.0, SMALL)
    _check(ops, 1.5, 0.0, old)
    spec = tr.launches[0].spec
    assert (spec.a_kmajor, spec.b_kmajor) == (transa, not transb)
    assert tr.launches[0].grid == (2 * 3, 1, 1)  # 2 x 3 tiles in raster groups of 2


def test_wgmma_tf32_matches_float64_reference_with_k_tail(rng):
    _skip_unless_sm90()
    ops = Operands(rng, 33, 70, 77, "float32", True, False, poison=True)  # K tail inside the 3rd tile of 32
    old = ops.c_host.copy()
    _run(ops, True, False, -0.5, 0.0, SMALL)
    _check(ops, -0.5, 0.0, old)


@pytest.mark.parametrize("transa,transb", [(False, False), (True, True)])  # A MN + B K, A K + B MN
def test_wgmma_production_tile_two_consumers_wraps_stages_and_accumulates_beta(rng, monkeypatch, transa, transb):
    _skip_unless_sm90()
    monkeypatch.setattr(wg, "SMALL_PROBLEM_MN", 0)  # the 128x256 two-consumer tile, raster 8
    ops = Operands(rng, 140, 260, 330, "bfloat16", transa, transb, poison=False)  # 6 K tiles over 4 stages
    old = ops.c_host.copy()
    with oxicuda.trace() as tr:
        _run(ops, transa, transb, -0.75, 1.25)
    _check(ops, -0.75, 1.25, old)
    spec = tr.launches[0].spec
    assert (spec.block_m, spec.block_n, spec.consumers, spec.raster) == wg.TILES[0][:3] + (wg.TILES[0][4],)
    assert tr.launches[0].block[0] == 256


@pytest.mark.parametrize("m,n,k", [(75, 130, 201), (70, 200, 40), (64, 64, 0)])
def test_wgmma_persistent_tiles_share_one_stage_ring(rng, monkeypatch, m, n, k):
    """Two CTAs loop over 6 (or 8, 1) output tiles; with k=40 (one K tile, 2 stages) the
    prologue already loads the next output tile, with k=0 only beta * C is written."""
    _skip_unless_sm90()
    two_sms = dataclasses.replace(device_facts(), sm_count=2)
    monkeypatch.setattr(wg, "device_facts", lambda ordinal=None: two_sms)
    monkeypatch.setattr(wg.GemmWgmmaSpec, "ctas_per_sm", lambda self, device: 1)  # a 2-CTA wave
    ops = Operands(rng, m, n, k, "bfloat16", False, True, poison=k > 0)
    old = ops.c_host.copy()
    with oxicuda.trace() as tr:
        _run(ops, False, True, 1.5, 0.0 if k else 0.5, SMALL + (True,))
    _check(ops, 1.5, 0.0 if k else 0.5, old)
    assert tr.launches[0].grid[0] == min(2, -(-m // 64) * -(-n // 64))


def test_wgmma_three_consumer_sweep_tile(rng):
    """The 192x256 sweep candidate: three consumer warpgroups, three MN-major A boxes."""
    _skip_unless_sm90()
    tile = next(t for t in wg.SWEEP_TILES if t[2] == 3)
    ops = Operands(rng, 200, 300, 130, "bfloat16", False, False, poison=True)
    old = ops.c_host.copy()
    _run(ops, False, False, 1.0, 0.0, tile)
    _check(ops, 1.0, 0.0, old)


def test_wgmma_small_problem_tile_tf32_and_fp16(rng):
    _skip_unless_sm90()
    for dtype, (ta, tb) in (("float32", (True, False)), ("float16", (False, True))):
        ops = Operands(rng, 100, 129, 96, dtype, ta, tb, poison=True)
        old = ops.c_host.copy()
        with oxicuda.trace() as tr:
            _run(ops, ta, tb, 2.0, 0.0)
        _check(ops, 2.0, 0.0, old)
        spec = tr.launches[0].spec
        assert (spec.block_m, spec.block_n, spec.consumers) == wg.TILES[1][:3]


@pytest.mark.parametrize("transa,transb", [(False, False), (True, True)])
def test_wgmma_gemm_batched_strided_and_device_scalars(rng, transa, transb):
    _skip_unless_sm90()
    ops = Operands(rng, 24, 70, 72, "float16", transa, transb, batch=2, poison=False)
    old = ops.c_host.copy()
    scalars = oxicuda.asarray(np.array([0.5, 2.0], np.float32))
    with oxicuda.trace() as tr:
        _run(ops, transa, transb, 9.0, 9.0, SMALL, batch=2, stride_a=ops.stride_a, stride_b=ops.stride_b,
             stride_c=ops.stride_c, alpha_ptr=scalars.ptr, beta_ptr=scalars.ptr + 4)
    _check(ops, 0.5, 2.0, old)
    assert [rec.grid[2] for rec in tr.launches] == [2]


def test_matmul_on_row_major_bf16_dispatches_to_wgmma(rng):
    """The public row-major ``matmul`` (column-major NN underneath: A MN-major, B K-major)."""
    _skip_unless_sm90()
    from oxicuda.memory.dtypes import BFLOAT16, host_astype

    a = host_astype(rng.standard_normal((40, 72)).astype(np.float32), BFLOAT16)
    b = host_astype(rng.standard_normal((72, 136)).astype(np.float32), BFLOAT16)
    with oxicuda.trace() as tr:
        c = oxicuda.blas.matmul(oxicuda.asarray(a), oxicuda.asarray(b))
    ref = host_astype(a, np.float64) @ host_astype(b, np.float64)
    got = host_astype(c.get(), np.float64)
    assert np.abs(got - ref).max() <= 1.6e-2 * np.abs(ref).max()
    specs = [rec.spec for rec in tr.launches]
    assert len(specs) == 1 and isinstance(specs[0], wg.GemmWgmmaSpec)
    # C^T = B^T A^T column-major: op1 is b's storage (N contiguous: MN-major), op2 a's (K-major)
    assert (specs[0].a_kmajor, specs[0].b_kmajor) == (False, True)


def test_wgmma_supports_every_layout_for_f16_bf16_and_tf32_on_sm90():
    base = {"m": 64, "n": 64, "k": 64, "dtype": "float16", "compute": "f32", "transa": True, "transb": False,
            "lda": 64, "ldb": 64, "ldc": 64, "alignment": 16, "arch": "sm_90"}
    for dtype, compute in (("float16", "f32"), ("bfloat16", "f32"), ("float32", "tf32")):
        for ta, tb in LAYOUTS:
            p = {**base, "dtype": dtype, "compute": compute, "transa": ta, "transb": tb}
            assert wg.supports(p)
            spec = wg.choose_spec(p)
            # tf32 wgmma reads K-major operands only: the MN-major ones are transposed in launch
            want = (True, True) if dtype == "float32" else (ta, not tb)
            assert (spec.a_kmajor, spec.b_kmajor) == want
            assert wg.needs_transpose(p) == ((not ta, tb) if dtype == "float32" else (False, False))
    assert not wg.supports({**base, "dtype": "float32", "compute": "f32"})
    # K past the transpose's grid (65535 tiles of 64 in y): only the layout without transposes
    huge_k = {**base, "dtype": "float32", "compute": "tf32", "k": 65536 * 64, "lda": 65536 * 64, "ldb": 65536 * 64}
    assert wg.supports(huge_k) and not wg.supports({**huge_k, "transa": False, "lda": 64})
    assert not wg.supports({**base, "arch": "sm_86"})
    assert not wg.supports({**base, "alignment": 8})
    assert not wg.supports({**base, "transa": False, "lda": 63})
    assert not wg.supports({**base, "c_dtype": "float32"})  # a float32 C over f16 data: mma.sync only
    with pytest.raises(ValueError, match="sm_90a"):
        wg.GemmWgmmaSpec(arch="sm_90")
    with pytest.raises(ValueError, match="K-major"):
        wg.GemmWgmmaSpec(dtype="tf32", a_kmajor=False)
    with pytest.raises(ValueError, match="multiple of 64"):
        wg.GemmWgmmaSpec(b_kmajor=False, block_n=96)


def test_dispatch_routes_tf32_in_every_layout_to_wgmma_on_sm90_and_mma_sync_on_sm86():
    from oxicuda.blas.gemm_dispatch import GemmProblem, choose_algo
    from oxicuda.driver.facts import board_facts

    h200 = board_facts("h200")
    a4000 = board_facts("rtx-a4000")
    for ta, tb in (("N", "N"), ("T", "T"), ("N", "T"), ("T", "N")):
        for dtype, compute in (("float32", "tf32"), ("bfloat16", "f32")):
            p = GemmProblem(4096, 4096, 4096, dtype, compute, ta, tb, 4096, 4096, 4096, arch="sm_90")
            assert choose_algo(p, h200).algo == "wgmma"
        p = GemmProblem(4096, 4096, 4096, "float32", "tf32", ta, tb, 4096, 4096, 4096, arch="sm_86")
        assert choose_algo(p, a4000).algo == "tensor_core"


@pytest.mark.parametrize("transa,transb", LAYOUTS)
def test_wgmma_tf32_every_layout_runs_the_transpose_then_the_k_major_gemm(rng, transa, transb):
    """The public column-major entry with compute tf32 on 64x72x40 (padded leading dimensions,
    C NaN-filled, beta 0): MN-major operands go through the transpose kernel into scratch, then
    one K-major wgmma launch; the trace shows both."""
    _skip_unless_sm90()
    from oxicuda.blas import transpose_kernels as tk
    from oxicuda.blas.gemm_core import gemm_colmajor

    ops = Operands(rng, 64, 72, 40, "float32", transa, transb, poison=True, pad=12)
    old = ops.c_host.copy()
    with oxicuda.trace() as tr:
        _launch_or_skip(lambda: gemm_colmajor("T" if transa else "N", "T" if transb else "N", ops.m, ops.n, ops.k,
                                              1.5, ops.a.ptr, ops.lda, ops.b.ptr, ops.ldb, 0.0, ops.c.ptr, ops.ldc,
                                              dtype="float32", compute="tf32"))
    _check(ops, 1.5, 0.0, old)
    specs = [rec.spec for rec in tr.launches]
    transposes = [s for s in specs[:-1] if isinstance(s, tk.TransposeSpec)]
    assert len(transposes) == len(specs) - 1 == (not transa) + transb, specs
    assert isinstance(specs[-1], wg.GemmWgmmaSpec) and (specs[-1].a_kmajor, specs[-1].b_kmajor) == (True, True)
    # the transposes read the operands as stored: A (m x k) first, then B (n x k)
    rows = ([ops.m] if not transa else []) + ([ops.n] if transb else [])
    assert [rec.grid[0] for rec in tr.launches[:-1]] == [-(-r // 64) for r in rows]


@pytest.mark.parametrize("m,n,k", [(17, 127, 1), (1, 17, 127), (127, 1, 17), (64, 64, 0)])
def test_wgmma_tf32_odd_shapes_with_both_operands_transposed(rng, m, n, k):
    """A not transposed, B transposed (both MN-major): two transposes, then the K-major GEMM; with
    k = 0 nothing is transposed and C = beta * C."""
    _skip_unless_sm90()
    ops = Operands(rng, m, n, k, "float32", False, True, poison=k > 0)
    old = ops.c_host.copy()
    beta = 0.0 if k else 0.5
    with oxicuda.trace() as tr:
        _run(ops, False, True, -1.25, beta)
    _check(ops, -1.25, beta, old)
    assert len(tr.launches) == (3 if k else 1)


def test_wgmma_tf32_batched_transposes_each_batch_in_one_launch_and_shares_a_stride0_operand(rng):
    """Batched tf32 with both operands MN-major (A not transposed, B transposed), beta != 0,
    device-pointer scalars: one transpose launch per operand covering the batch (grid.z), one
    GEMM; then the same with A shared by all batch entries (stride_a 0: transposed once)."""
    _skip_unless_sm90()
    from oxicuda.blas import transpose_kernels as tk

    ops = Operands(rng, 40, 70, 36, "float32", False, True, batch=3, poison=False)
    old = ops.c_host.copy()
    scalars = oxicuda.asarray(np.array([0.5, -2.0], np.float32))
    with oxicuda.trace() as tr:
        _run(ops, False, True, 9.0, 9.0, SMALL, batch=3, stride_a=ops.stride_a, stride_b=ops.stride_b,
             stride_c=ops.stride_c, alpha_ptr=scalars.ptr, beta_ptr=scalars.ptr + 4)
    _check(ops, 0.5, -2.0, old)
    assert [type(rec.spec) for rec in tr.launches] == [tk.TransposeSpec, tk.TransposeSpec, wg.GemmWgmmaSpec]
    assert [rec.grid[2] for rec in tr.launches] == [3, 3, 3]

    c = oxicuda.asarray(np.full((3, ops.n, ops.ldc), np.nan, np.float32))
    with oxicuda.trace() as tr:
        _launch_or_skip(lambda: wg.launch(_problem(ops, False, True), 1.0, ops.a.ptr, ops.lda, ops.b.ptr, ops.ldb,
                                          0.0, c.ptr, ops.ldc, batch=3, stride_a=0, stride_b=ops.stride_b,
                                          stride_c=ops.stride_c))
    a0 = ops.a_host[0, :ops.m].astype(np.float64)  # A of batch entry 0, for every entry
    ref = np.einsum("ik,bjk->bij", a0, ops.b_host[:, :ops.n].astype(np.float64))
    got = c.get().transpose(0, 2, 1)
    assert np.abs(got[:, :ops.m] - ref).max() < 4e-3 * np.abs(ref).max()
    assert np.isnan(got[:, ops.m:]).all()
    assert [rec.grid[2] for rec in tr.launches] == [1, 3, 1, 1, 1]  # A once; per-entry GEMMs (stride 0)


@pytest.mark.slow
def test_wgmma_configurations_assemble_for_sm90a_without_spills_or_serialized_wgmma():
    """A representative subset (every layout and tile shape; f16 differs from bf16 only in type
    names) through ptxas here; ``python -m oxicuda kernels --validate sm_90`` assembles all."""
    from oxicuda.ptx.validate import PtxasNotFound, assemble_many, find_ptxas

    specs = registry.configurations("sm_90a", family=wg.FAMILY)
    assert len(specs) == len(wg.configurations("sm_90a")) >= 30
    subset = [s for s in specs if (s.dtype == "bf16" and (s.block_m, s.block_n, s.consumers, s.stages, s.raster)
                                   == wg.TILES[0][:5] and not s.persistent)
              or (s.dtype == "bf16" and (s.a_kmajor, s.b_kmajor) == (False, True))
              or (s.dtype != "bf16" and (s.a_kmajor, s.b_kmajor) == (True, True)
                  and (s.block_m, s.block_n, s.consumers, s.stages, s.raster) in [t[:5] for t in wg.TILES])]
    assert len(subset) >= 14
    try:
        reports = assemble_many([(registry.generate_ptx(s), s.arch) for s in subset])
        ptxas = find_ptxas()
    except PtxasNotFound as exc:
        pytest.skip(str(exc))
    assert all(r.ok for r in reports), [r.message[:300] for r in reports if not r.ok]
    assert max(r.spills for r in reports) == 0
    # ptxas says so when it has to serialize wgmma (C7517/C7518: every wgmma would stall)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for spec in (wg._spec("bf16", False, True, wg.TILES[0]), wg._spec("tf32", True, True, wg.SWEEP_TILES[-1])):
            path = os.path.join(tmp, "k.ptx")
            with open(path, "w") as f:
                f.write(registry.generate_ptx(spec))
            out = subprocess.run([ptxas, "-arch=sm_90a", "-v", path, "-o", os.path.join(tmp, "k.cubin")],
                                 capture_output=True, text=True, check=True)
            text = out.stdout + out.stderr
            assert "serializ" not in text.lower() and "warning" not in text.lower(), text[-2000:]


@pytest.mark.slow
def test_wgmma_tests_pass_on_an_emulated_sm90():
    if oxicuda.get_backend() != "emulator" or _live_arch() == "sm_90":
        pytest.skip("the wgmma tests run directly on this backend")
    env = dict(os.environ, OXICUDA_EMULATOR_ARCH="sm_90", OXICUDA_BACKEND="emulator")
    here = os.path.dirname(__file__)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                           "-k", "not assembles and not emulated_sm90"],
                          cwd=os.path.dirname(here), env=env, capture_output=True, text=True, timeout=600, check=False)
    tail = (proc.stdout + proc.stderr)[-3000:]
    if "the emulator lacks an instruction" in tail and proc.returncode == 0:
        pytest.skip(f"the emulator lacks an instruction the wgmma kernel uses:\n{tail}")
    assert proc.returncode == 0, tail
    assert "skipped" not in tail.splitlines()[-1], tail
