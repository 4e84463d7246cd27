"""Host cost of a cached GEMM call on the sm_90 wgmma path (bfloat16 through dispatch), with the
driver's launch replaced by a recorder: a repeated signature runs its launch plan without
re-deciding (no supports/choose_spec, no spec hashing), and its tensor maps are encoded once per
(A, B) address pair, not per call. On a non-sm_90 emulator the tests re-run themselves on an
emulated sm_90."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import gemm_core
from oxicuda.blas import gemm_wgmma as wg
from oxicuda.blas.gemm_core import gemm_colmajor
from oxicuda.driver.backend import api
from oxicuda.driver.facts import device_facts
from oxicuda.memory.dtypes import BFLOAT16
from oxicuda.ptx import cache


def _skip_unless_sm90():
    if device_facts().arch != "sm_90":
        pytest.skip("the wgmma path needs sm_90 (test_host_cost_tests_pass_on_an_emulated_sm90 runs these)")


@pytest.fixture
def recorded(monkeypatch):
    """Launches recorded (function, grid, block, params) instead of run, tensor-map encodes
    counted; memory and plan caches emptied before and after (Functions bind the launch call)."""
    drv = api()
    launches, encodes = [], []
    encode = drv.tensor_map_encode_tiled

    def record(func, grid, block, shared_mem, stream, params):
        launches.append((func, grid, block, bytes(params.data)))

    def counted(*args):
        encodes.append(args[2])  # the global address
        return encode(*args)

    cache.clear_memory_cache()
    gemm_core.clear_plan_cache()
    monkeypatch.setattr(drv, "launch_kernel", record)
    monkeypatch.setattr(drv, "tensor_map_encode_tiled", counted)
    yield launches, encodes
    monkeypatch.undo()
    cache.clear_memory_cache()
    gemm_core.clear_plan_cache()


def _bf16(rng, *shape):
    return oxicuda.asarray(np.asfortranarray(rng.standard_normal(shape)).astype(BFLOAT16))


@pytest.mark.parametrize("size", [64, 512])
def test_cached_bf16_wgmma_call_runs_its_plan_without_redeciding(benchmark, rng, recorded, monkeypatch, size):
    _skip_unless_sm90()
    launches, encodes = recorded
    a, b, c = _bf16(rng, size, size), _bf16(rng, size, size), _bf16(rng, size, size)

    def call(x=a, y=b, out=c):
        gemm_colmajor("N", "N", size, size, size, 1.5, x.ptr, size, y.ptr, size, 0.0, out.ptr, size,
                      dtype="bfloat16")

    call()
    (plan,) = gemm_core._plans.values()
    assert plan.gemm_plan.algo == "wgmma" and len(encodes) == 2
    fn = plan.launch_plan.steps[0].function
    assert fn.spec.family == wg.FAMILY

    def refuse(*args, **kwargs):
        raise AssertionError("a cached call re-decided its kernel")

    for name in ("supports", "choose_spec", "plan", "operand_map"):
        monkeypatch.setattr(wg, name, refuse)
    benchmark.pedantic(call, rounds=100, iterations=10, warmup_rounds=1)
    assert len(encodes) == 2  # the same pointers: the maps encoded by the first call
    func, _, block, raw = launches[-1]
    assert func == fn.handle and block == (fn.spec.threads, 1, 1)
    head = fn.packer.pack([a.ptr, b.ptr, c.ptr, size, size, size, size, size, size, 1.5, 0.0, 0, 0, 0, 0, 0,
                           b"\0" * 128, b"\0" * 128])
    assert raw[:len(head) - 256] == head[:len(head) - 256]


def test_new_pointers_get_their_own_tensor_maps(rng, recorded):
    _skip_unless_sm90()
    launches, encodes = recorded
    m = 64
    a, b, c = _bf16(rng, m, m), _bf16(rng, m, m), _bf16(rng, m, m)
    a2, b2 = _bf16(rng, m, m), _bf16(rng, m, m)
    gemm_colmajor("N", "N", m, m, m, 1.0, a.ptr, m, b.ptr, m, 0.0, c.ptr, m, dtype="bfloat16")
    gemm_colmajor("N", "N", m, m, m, 1.0, a2.ptr, m, b2.ptr, m, 0.0, c.ptr, m, dtype="bfloat16")
    gemm_colmajor("N", "N", m, m, m, 1.0, a.ptr, m, b.ptr, m, 0.0, c.ptr, m, dtype="bfloat16")
    assert encodes == [a.ptr, b.ptr, a2.ptr, b2.ptr]
    assert launches[1][3] != launches[0][3] and launches[2][3] == launches[0][3]


def test_cached_wgmma_calls_compute_with_each_calls_pointers(rng):
    """The real kernels (emulated sm_90): one signature, new operands each call, every element
    of C against a float64 reference."""
    _skip_unless_sm90()
    m, n, k = 64, 72, 40
    gemm_core.clear_plan_cache()
    for _ in range(3):
        A = rng.standard_normal((m, k)).astype(BFLOAT16)
        B = rng.standard_normal((k, n)).astype(BFLOAT16)
        a, b = oxicuda.asarray(np.asfortranarray(A)), oxicuda.asarray(np.asfortranarray(B))
        c = oxicuda.asarray(np.full((m, n), np.nan, BFLOAT16, order="F"))
        with oxicuda.trace() as t:
            gemm_colmajor("N", "N", m, n, k, 1.0, a.ptr, m, b.ptr, k, 0.0, c.ptr, m, dtype="bfloat16")
        assert [r.spec.family for r in t.launches] == [wg.FAMILY]
        ref = A.astype(np.float64) @ B.astype(np.float64)
        got = np.asarray(c.get(), np.float64)
        np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2 * np.abs(ref).max())
    assert gemm_core.plan_cache_size() == 1


def test_host_cost_tests_pass_on_an_emulated_sm90():
    if oxicuda.get_backend() != "emulator" or device_facts().arch == "sm_90":
        pytest.skip("the tests above run directly on this backend")
    env = dict(os.environ, OXICUDA_EMULATOR_ARCH="sm_90", OXICUDA_BACKEND="emulator")
    root = os.path.dirname(os.path.dirname(__file__))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                           "-k", "not emulated_sm90", "--benchmark-disable"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False)
    tail = (proc.stdout + proc.stderr)[-3000:]
    assert proc.returncode == 0, tail
    assert "skipped" not in tail.splitlines()[-1], tail
