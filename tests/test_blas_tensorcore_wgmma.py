"""The sm_90a wgmma + TMA GEMM (oxicuda.blas.gemm_wgmma) against float64 numpy.

It needs an sm_90 device: the H200, or the emulator started with OXICUDA_EMULATOR_ARCH=sm_90.
The emulator picks its arch when the backend is created, so on a default (sm_86) emulator one
test re-runs this file in a subprocess with that variable set and requires it to pass."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from test_blas_tensorcore import Operands, _check, _launch_or_skip, _live_arch

import oxicuda
from oxicuda.blas import gemm_tensorcore as tc
from oxicuda.blas import gemm_wgmma as wg
from oxicuda.ptx import registry


def _skip_unless_sm90():
    arch = _live_arch()
    if arch != "sm_90":
        pytest.skip(f"wgmma needs an sm_90 device; the live one is {arch} (the emulator runs these tests in "
                    "test_wgmma_tests_pass_on_an_emulated_sm90)")


def _problem(ops: Operands) -> tc.GemmProblem:
    compute = "tf32" if ops.dtype == "float32" else "f32"
    return tc.GemmProblem(ops.m, ops.n, ops.k, ops.dtype, compute, True, False, ops.lda, ops.ldb, ops.ldc, 16,
                          _live_arch())


def _run(ops: Operands, alpha, beta, **kw):
    _launch_or_skip(lambda: wg.launch(_problem(ops), alpha, ops.a.ptr, ops.lda, ops.b.ptr, ops.ldb, beta, ops.c.ptr,
                                      ops.ldc, **kw))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_wgmma_gemm_matches_float64_reference(rng, dtype):
    _skip_unless_sm90()
    ops = Operands(rng, 17, 33, 40, dtype, True, False, poison=True)
    old = ops.c_host.copy()
    _run(ops, 1.5, 0.0)
    _check(ops, 1.5, 0.0, old)


def test_wgmma_gemm_two_consumers_pipeline_wraps_and_accumulates_beta(rng, monkeypatch):
    _skip_unless_sm90()
    monkeypatch.setattr(wg, "SMALL_PROBLEM_MN", 0)  # force the 128x256 two-warpgroup tile
    ops = Operands(rng, 70, 260, 300, "bfloat16", True, False, poison=False)  # 5 k-tiles over 4 stages
    old = ops.c_host.copy()
    with oxicuda.trace() as tr:
        _run(ops, -0.75, 1.25)
    _check(ops, -0.75, 1.25, old)
    spec = tr.launches[0].spec
    assert isinstance(spec, wg.GemmWgmmaSpec) and spec.consumers == 2 and spec.block_n == 256


def test_wgmma_gemm_batched_strided_and_per_batch_launches(rng):
    _skip_unless_sm90()
    ops = Operands(rng, 24, 40, 72, "float16", True, False, batch=2, poison=False)
    old = ops.c_host.copy()
    scalars = oxicuda.asarray(np.array([0.5, 2.0], np.float32))
    with oxicuda.trace() as tr:
        _run(ops, 9.0, 9.0, batch=2, stride_a=ops.stride_a, stride_b=ops.stride_b, stride_c=ops.stride_c,
             alpha_ptr=scalars.ptr, beta_ptr=scalars.ptr + 4)
    _check(ops, 0.5, 2.0, old)
    assert [rec.grid[2] for rec in tr.launches] == [2]


def test_wgmma_supports_only_k_major_operands_on_sm90():
    base = {"m": 64, "n": 64, "k": 64, "dtype": "float16", "compute": "f32", "transa": True, "transb": False, "lda": 64, "ldb": 64,
                "ldc": 64, "alignment": 16, "arch": "sm_90"}
    assert wg.supports(base)
    assert wg.supports({**base, "dtype": "float32", "compute": "tf32"})
    assert not wg.supports({**base, "transa": False})
    assert not wg.supports({**base, "transb": True})
    assert not wg.supports({**base, "arch": "sm_86"})
    assert not wg.supports({**base, "alignment": 8})
    with pytest.raises(ValueError, match="sm_90a"):
        wg.GemmWgmmaSpec(arch="sm_90")


def test_every_wgmma_configuration_assembles_for_sm90a():
    from oxicuda.ptx.validate import PtxasNotFound, assemble_many

    specs = registry.configurations("sm_90a", family=wg.FAMILY)
    assert len(specs) == len(wg.configurations("sm_90a")) >= 6
    try:
        reports = assemble_many([(registry.generate_ptx(s), s.arch) for s in specs])
    except PtxasNotFound as exc:
        pytest.skip(str(exc))
    assert all(r.ok for r in reports), [r.message[:300] for r in reports if not r.ok]
    assert max(r.spills for r in reports) == 0


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
