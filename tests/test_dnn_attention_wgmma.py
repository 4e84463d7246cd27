"""Hopper attention forward (attention_fwd_wgmma: wgmma + TMA + mbarriers) against the float64
reference of test_dnn_attention: tails, causal (top-left), unequal lengths, a key range that wraps
the stage ring, GQA, custom scale, logsumexp, poisoned outputs; dispatch proven with
oxicuda.trace(); every configuration assembled with ptxas for sm_90a without spills.

The kernel tests need an sm_90 device: the H200, or the emulator started with
OXICUDA_EMULATOR_ARCH=sm_90. The emulator picks its arch when the backend is created, so on a
default (sm_86) emulator one test re-runs this file in a subprocess with that variable set and
requires it to pass."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from test_dnn_attention import TOL, attention_ref, poisoned
from test_dnn_conv_reference import as_float64, to_dtype

import oxicuda
from oxicuda.dnn import attention_wgmma as wg
from oxicuda.dnn.attention_api import attention, choose_algo, wgmma_supports
from oxicuda.ptx import registry


def _live_arch() -> str:
    from oxicuda.ptx.target import device_arch

    return device_arch()


def _skip_unless_sm90():
    if _live_arch() != "sm_90":
        pytest.skip(f"wgmma needs an sm_90 device; the live one is {_live_arch()} (the emulator runs these tests "
                    "in test_wgmma_attention_tests_pass_on_an_emulated_sm90)")


def run_attention(rng, b, hq, hkv, sq, sk, d, causal=False, scale=None, dtype="bfloat16", algo="wgmma"):
    """One forced (or dispatched) call with a NaN-poisoned output; checks every element and the
    logsumexp against float64, and returns the traced spec."""
    q = to_dtype(rng.standard_normal((b, hq, sq, d)).astype(np.float32), dtype)
    k = to_dtype(rng.standard_normal((b, hkv, sk, d)).astype(np.float32), dtype)
    v = to_dtype(rng.standard_normal((b, hkv, sk, d)).astype(np.float32), dtype)
    out = poisoned(q.shape, dtype)
    with oxicuda.trace() as t:
        o, lse = attention(oxicuda.asarray(q), oxicuda.asarray(k), oxicuda.asarray(v), causal=causal, scale=scale,
                           return_lse=True, out=out, algo=algo)
    assert o is out
    ref, ref_lse = attention_ref(as_float64(q), as_float64(k), as_float64(v), causal, scale)
    got = as_float64(o.get())
    assert np.isfinite(got).all(), "output has NaN/inf (an element was never written?)"
    err = np.abs(got - ref).max() / max(1.0, np.abs(ref).max())
    assert err <= TOL[dtype], f"output max error {err:.3g} > {TOL[dtype]}"
    lerr = np.abs(lse.get().astype(np.float64) - ref_lse).max() / max(1.0, np.abs(ref_lse).max())
    assert lerr <= 2e-6 * max(1.0, d / 16), f"logsumexp max error {lerr:.3g}"
    assert len(t.launches) == 1
    return t.launches[0].spec


@pytest.mark.parametrize("sq, sk, causal", [(1, 1, False), (150, 150, True), (17, 150, True), (150, 17, False),
                                            (150, 17, True), (200, 200, False)])
def test_wgmma_attention_d64_bf16_matches_reference_for_tails_and_unequal_lengths(rng, sq, sk, causal):
    _skip_unless_sm90()
    spec = run_attention(rng, 1, 1, 1, sq, sk, 64, causal, dtype="bfloat16")
    assert isinstance(spec, wg.AttentionWgmmaSpec) and spec.causal == causal and spec.lse
    assert spec.consumers == wg.CONSUMERS[64] and spec.overlap == wg.DISPATCH_OVERLAP


@pytest.mark.parametrize("sq, sk, causal", [(129, 129, False), (129, 129, True), (40, 150, True), (150, 40, False)])
def test_wgmma_attention_d128_f16_matches_reference(rng, sq, sk, causal):
    _skip_unless_sm90()
    spec = run_attention(rng, 1, 1, 1, sq, sk, 128, causal, dtype="float16")
    assert isinstance(spec, wg.AttentionWgmmaSpec) and spec.head_dim == 128 and spec.dtype == "f16"


def force_wgmma_variant(monkeypatch, **fields):
    """Make dispatch build its wgmma specs with ``fields`` replaced (overlap, consumers)."""
    import dataclasses

    import oxicuda.dnn.attention_api as api

    monkeypatch.setattr(api, "wgmma_spec", lambda *a: dataclasses.replace(wg.choose_spec(*a), **fields))


@pytest.fixture(params=[True, False], ids=["overlap", "serial"])
def overlap(request, monkeypatch):
    """Dispatch builds wgmma specs with this ``overlap`` (the intra-warpgroup pipeline or not)."""
    force_wgmma_variant(monkeypatch, overlap=request.param)
    return request.param


@pytest.mark.parametrize("causal", [False, True])
def test_wgmma_key_tiles_wrap_the_k_and_v_rings(rng, causal, overlap):
    # 5 key tiles over 2 ring slots: every slot is refilled by the last warpgroup to release it and
    # its barrier phase flips twice; causal: 5 query blocks, the diagonal in every one
    _skip_unless_sm90()
    sq = 520 if causal else 20
    spec = run_attention(rng, 1, 1, 1, sq, 520, 64 if causal else 128, causal=causal)
    assert spec.overlap == overlap


def test_wgmma_serial_pipeline_matches_reference_for_tails(rng, overlap):
    _skip_unless_sm90()
    for sq, sk, causal in ((150, 130, True), (40, 150, True)):
        assert run_attention(rng, 1, 1, 1, sq, sk, 64, causal=causal).overlap == overlap


def test_wgmma_two_consumer_warpgroups_at_head_dim_64(rng, monkeypatch):
    _skip_unless_sm90()
    force_wgmma_variant(monkeypatch, consumers=2)
    for sq, sk, causal in ((150, 300, True), (17, 40, True)):
        spec = run_attention(rng, 1, 1, 1, sq, sk, 64, causal=causal)
        assert spec.consumers == 2 and spec.block_q == 128


def test_wgmma_grouped_query_attention_reads_kv_head_h_over_group(rng):
    _skip_unless_sm90()
    run_attention(rng, 2, 4, 2, 17, 80, 64, causal=True)
    run_attention(rng, 1, 3, 1, 20, 17, 128, dtype="float16")


@pytest.mark.parametrize("scale", [2.0, -0.3])
def test_wgmma_custom_scale_including_negative(rng, scale):
    # a large scale moves the running max between key tiles (the rescale path); a negative one
    # checks that masking happens after scaling
    _skip_unless_sm90()
    run_attention(rng, 1, 1, 1, 140, 150, 64, causal=True, scale=scale)


def test_dispatch_on_sm90_picks_wgmma_and_each_algo_stays_reachable(rng):
    _skip_unless_sm90()
    assert isinstance(run_attention(rng, 1, 2, 2, 9, 20, 64, algo=None), wg.AttentionWgmmaSpec)
    assert type(run_attention(rng, 1, 1, 1, 9, 20, 64, algo="mma")).__name__ == "AttentionMmaSpec"
    assert type(run_attention(rng, 1, 1, 1, 9, 20, 64, algo="simt")).__name__ == "AttentionSimtSpec"
    assert type(run_attention(rng, 1, 1, 1, 9, 20, 48, algo=None)).__name__ == "AttentionSimtSpec"


def test_choose_algo_prefers_wgmma_on_sm90_only():
    assert choose_algo("bf16", 128, "sm_90") == "wgmma" and choose_algo("f16", 64, "sm_90") == "wgmma"
    assert choose_algo("bf16", 128, "sm_86") == "mma" and choose_algo("bf16", 128, "sm_80") == "mma"
    assert choose_algo("bf16", 128, "sm_90", aligned=False) == "simt"
    assert choose_algo("bf16", 96, "sm_90") == "simt" and choose_algo("f32", 64, "sm_90") == "simt"
    assert wgmma_supports("bf16", 64, "sm_90a") and not wgmma_supports("bf16", 64, "sm_89")


def test_forcing_wgmma_where_it_cannot_run_raises_before_launch(rng):
    q = oxicuda.asarray(rng.standard_normal((1, 1, 8, 64)).astype(np.float32))
    with oxicuda.trace() as t, pytest.raises(ValueError, match="algo='wgmma' needs float16/bfloat16"):
        attention(q, q, q, algo="wgmma")  # float32
    if _live_arch() != "sm_90":
        h = oxicuda.asarray(to_dtype(rng.standard_normal((1, 1, 8, 64)).astype(np.float32), "bfloat16"))
        with oxicuda.trace() as t, pytest.raises(ValueError, match="on sm_90"):
            attention(h, h, h, algo="wgmma")
    assert not t.launches


def test_spec_rejects_what_the_kernel_cannot_do():
    for bad in ({"arch": "sm_90"}, {"dtype": "f32"}, {"head_dim": 96}, {"head_dim": 128, "consumers": 3},
                {"head_dim": 64, "consumers": 4}):
        with pytest.raises(ValueError):
            wg.AttentionWgmmaSpec(**bad)


@pytest.mark.slow
def test_every_wgmma_attention_configuration_assembles_for_sm90a_without_spills():
    from oxicuda.ptx.validate import PtxasNotFound, assemble

    specs = registry.configurations("sm_90a", family=wg.FAMILY)
    assert len(specs) == 48
    # every variant at bf16 with lse, and the dispatched f16 kernels without (dtype and lse change
    # a few lines each; `python -m oxicuda kernels --validate` assembles all 48)
    specs = [x for x in specs if (x.dtype == "bf16" and x.lse)
             or (x.dtype == "f16" and not x.lse and x == wg.choose_spec(x.dtype, x.head_dim, x.causal, x.lse))]
    assert len(specs) == 16
    try:
        reports = [assemble(registry.generate_ptx(s), "sm_90a") for s in specs]
    except PtxasNotFound as exc:
        pytest.skip(str(exc))
    assert all(r.ok for r in reports), [r.message[:300] for r in reports if not r.ok]
    assert max(r.spills for r in reports) == 0
    assert all(r.registers <= 255 for r in reports)


@pytest.mark.slow
def test_wgmma_attention_tests_pass_on_an_emulated_sm90():
    if oxicuda.get_backend() != "emulator" or _live_arch() == "sm_90":
        pytest.skip("the wgmma tests run directly on this backend")
    env = dict(os.environ, OXICUDA_EMULATOR_ARCH="sm_90", OXICUDA_BACKEND="emulator")
    here = os.path.dirname(__file__)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                           "-k", "not assembles and not emulated_sm90"],
                          cwd=os.path.dirname(here), env=env, capture_output=True, text=True, timeout=600, check=False)
    tail = (proc.stdout + proc.stderr)[-3000:]
    assert proc.returncode == 0, tail
    assert "skipped" not in tail.splitlines()[-1], tail
