"""Tensor-core attention forward (attention_fwd_mma) against the float64 reference of
test_dnn_attention: tails, causal (top-left), unequal lengths, GQA, custom scale, logsumexp;
dispatch proven with oxicuda.trace(); every configuration assembled with ptxas without spills."""

from __future__ import annotations

import numpy as np
import pytest
from test_dnn_attention import TOL, attention_ref, poisoned
from test_dnn_conv_reference import as_float64, to_dtype

import oxicuda
from oxicuda.dnn import attention_mma as mma
from oxicuda.dnn.attention_api import attention, choose_algo
from oxicuda.ptx import registry


def run_mma(rng, b, hq, hkv, sq, sk, d, causal=False, scale=None, dtype="bfloat16", algo="mma"):
    """One forced (or dispatched) call with a poisoned output; checks every element and the lse,
    and returns the traced spec."""
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


@pytest.mark.parametrize("sq, sk", [(1, 1), (17, 17), (64, 64), (80, 80), (17, 80), (80, 17)])
@pytest.mark.parametrize("causal", [False, True])
def test_mma_attention_d64_bf16_matches_reference_for_tails_and_unequal_lengths(rng, sq, sk, causal):
    spec = run_mma(rng, 1, 2, 2, sq, sk, 64, causal, dtype="bfloat16")
    assert isinstance(spec, mma.AttentionMmaSpec) and spec.causal == causal and spec.lse


@pytest.mark.parametrize("sq, sk", [(1, 1), (64, 64), (17, 80), (80, 17)])
@pytest.mark.parametrize("causal", [False, True])
def test_mma_attention_d128_f16_matches_reference(rng, sq, sk, causal):
    spec = run_mma(rng, 1, 2, 2, sq, sk, 128, causal, dtype="float16")
    assert isinstance(spec, mma.AttentionMmaSpec) and spec.head_dim == 128 and spec.dtype == "f16"


@pytest.mark.slow
@pytest.mark.parametrize("d, dtype", [(64, "float16"), (128, "bfloat16")])
def test_mma_attention_other_dtype_per_head_dim(rng, d, dtype):
    run_mma(rng, 1, 2, 2, 33, 70, d, causal=True, dtype=dtype)


@pytest.mark.slow
def test_mma_grouped_query_attention_reads_kv_head_h_over_group(rng):
    run_mma(rng, 2, 4, 2, 17, 80, 64, causal=True)
    run_mma(rng, 1, 3, 1, 20, 17, 64, dtype="float16")


@pytest.mark.parametrize("scale", [2.0, -0.3])
def test_mma_custom_scale_including_negative(rng, scale):
    # a large scale moves the running max between key tiles (the rescale path); a negative one
    # checks that masking happens after scaling
    run_mma(rng, 1, 2, 2, 80, 80, 64, causal=True, scale=scale)


@pytest.mark.slow
def test_dispatch_picks_mma_for_bf16_d64_and_simt_otherwise(rng):
    assert choose_algo("bf16", 64, "sm_86") == "mma" and choose_algo("f16", 128, "sm_80") == "mma"
    assert choose_algo("f16", 128, "sm_90") == "wgmma"  # Hopper prefers test_dnn_attention_wgmma's family
    assert choose_algo("bf16", 48, "sm_90") == "simt" and choose_algo("f32", 64, "sm_90") == "simt"
    assert choose_algo("bf16", 64, "sm_75") == "simt" and choose_algo("bf16", 64, "sm_90", aligned=False) == "simt"
    from oxicuda.ptx.target import device_arch

    picked = run_mma(rng, 1, 2, 2, 9, 20, 64, dtype="bfloat16", algo=None)
    assert type(picked).__name__ == ("AttentionWgmmaSpec" if device_arch() == "sm_90" else "AttentionMmaSpec")
    simt = run_mma(rng, 1, 2, 2, 9, 20, 48, dtype="bfloat16", algo=None)
    assert type(simt).__name__ == "AttentionSimtSpec"
    simt = run_mma(rng, 1, 2, 2, 9, 20, 64, dtype="float32", algo=None)
    assert type(simt).__name__ == "AttentionSimtSpec"


@pytest.mark.slow
def test_forced_simt_still_serves_halves_at_d64(rng):
    spec = run_mma(rng, 1, 1, 1, 9, 20, 64, dtype="bfloat16", algo="simt")
    assert type(spec).__name__ == "AttentionSimtSpec"


def test_misaligned_half_data_falls_back_to_simt_and_mma_refuses_it(rng):
    shape = (1, 2, 9, 64)
    n = int(np.prod(shape))
    host = to_dtype(rng.standard_normal(n + 1).astype(np.float32), "float16")
    q = oxicuda.asarray(host)[1:].reshape(*shape)  # starts 2 bytes past an aligned address
    assert int(q.ptr) % 16
    with oxicuda.trace() as t:
        o = attention(q, q, q)
    assert [type(r.spec).__name__ for r in t.launches] == ["AttentionSimtSpec"]
    h = as_float64(host[1:].reshape(shape))
    ref, _ = attention_ref(h, h, h)
    assert np.abs(as_float64(o.get()) - ref).max() <= TOL["float16"] * max(1.0, np.abs(ref).max())
    with oxicuda.trace() as t, pytest.raises(ValueError, match="16-byte aligned"):
        attention(q, q, q, algo="mma")
    assert t.launches == []


@pytest.mark.parametrize("d, dtype", [(48, np.float16), (64, np.float32)])
def test_forced_mma_rejects_what_it_cannot_do_before_launch(d, dtype):
    q = oxicuda.asarray(np.zeros((1, 1, 4, d), dtype))
    with oxicuda.trace() as t, pytest.raises(ValueError, match="algo='mma' needs"):
        attention(q, q, q, algo="mma")
    assert t.launches == []


def test_spec_rejects_unsupported_fields():
    for kwargs in ({"dtype": "f32"}, {"head_dim": 96}, {"arch": "sm_75"}):
        with pytest.raises(ValueError, match="AttentionMmaSpec"):
            mma.AttentionMmaSpec(**kwargs)


@pytest.mark.slow
def test_every_configuration_assembles_without_spills(capsys):
    from oxicuda.ptx.validate import PtxasNotFound, assemble_many

    specs = [s for arch in mma.ARCHS for s in registry.configurations(arch, family=mma.FAMILY)]
    assert len(specs) == 3 * 16
    try:
        reports = assemble_many([(registry.generate_ptx(s), s.arch) for s in specs])
    except PtxasNotFound as exc:
        pytest.skip(str(exc))
    bad = [(s, r.message[:200]) for s, r in zip(specs, reports) if not r.ok]
    assert not bad, bad
    with capsys.disabled():
        for s, r in zip(specs, reports):
            if not s.lse:
                print(f"\n{s.arch} {s.dtype} d{s.head_dim} causal={s.causal}: {r.registers} registers, "
                      f"{r.spills} spill bytes, {s.shared_bytes} B shared", end="")
    assert max(r.spills for r in reports) == 0
    assert max(r.registers for r in reports) <= 255


def test_more_heads_than_one_launch_takes_raise_before_launch():
    q = oxicuda.asarray(np.zeros((1, 65536, 1, 64), np.float16))
    with oxicuda.trace() as t, pytest.raises(ValueError, match="at most 65535"):
        attention(q, q, q)
    assert t.launches == []


@pytest.mark.parametrize("d, dtype, causal, scale", [(128, "bfloat16", True, None), (64, "float16", False, 1.7)])
def test_mma_many_key_tiles_keep_the_copy_groups_and_running_max_straight(rng, d, dtype, causal, scale):
    # 4-5 key tiles: the emulator lands cp.async data only at wait_group, so a wrong group count
    # reads a stale tile; the running max moves across tiles
    run_mma(rng, 1, 1, 1, 65, 260, d, causal, scale=scale, dtype=dtype)
