"""Fused attention on a real GPU against PyTorch's scaled_dot_product_attention (float64)."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.dnn.attention_api import attention

pytestmark = pytest.mark.gpu


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


@pytest.mark.parametrize("d", [64, 128, 96, 256])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_torch_sdpa_in_float64(rng, d, causal):
    torch = _torch()
    b, h, sq, sk = 2, 4, 333, 300 if not causal else 333
    q, k, v = (rng.standard_normal((b, h, s, d), dtype=np.float32) for s in (sq, sk, sk))
    o = attention(oxicuda.asarray(q), oxicuda.asarray(k), oxicuda.asarray(v), causal=causal)
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(t).cuda().double() for t in (q, k, v)), is_causal=causal).cpu().numpy()
    assert np.abs(o.get() - ref).max() / np.abs(ref).max() < 1e-5


@pytest.mark.parametrize("causal", [False, True])
def test_bf16_causal_unequal_lengths_match_torch_top_left_alignment(rng, causal):
    torch = _torch()
    q = torch.randn(1, 8, 257, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, 8, 513, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(1, 8, 513, 128, device="cuda", dtype=torch.bfloat16)
    o = attention(oxicuda.asarray(q), oxicuda.asarray(k), oxicuda.asarray(v), causal=causal)
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
    got = torch.from_dlpack(o).double()
    assert (got - ref).abs().max().item() / ref.abs().max().item() < 2e-2


def test_gqa_and_lse_match_torch(rng):
    torch = _torch()
    q = torch.randn(2, 8, 100, 64, device="cuda", dtype=torch.float64)
    k = torch.randn(2, 2, 120, 64, device="cuda", dtype=torch.float64)
    v = torch.randn(2, 2, 120, 64, device="cuda", dtype=torch.float64)
    o, lse = attention(oxicuda.asarray(q.float()), oxicuda.asarray(k.float()), oxicuda.asarray(v.float()),
                       return_lse=True, scale=0.2)
    kr, vr = k.repeat_interleave(4, dim=1), v.repeat_interleave(4, dim=1)
    s = q @ kr.transpose(-1, -2) * 0.2
    ref = torch.softmax(s, -1) @ vr
    assert (torch.from_dlpack(o).double() - ref).abs().max().item() < 1e-5
    assert (torch.from_dlpack(lse).double() - torch.logsumexp(s, -1)).abs().max().item() < 1e-5


@pytest.mark.parametrize("causal", [False, True])
def test_mma_bf16_d128_matches_torch_sdpa_in_float64(causal):
    torch = _torch()
    gen = torch.Generator(device="cuda").manual_seed(1234 + causal)
    q, k, v = (torch.randn(2, 4, 1000, 128, device="cuda", generator=gen).to(torch.bfloat16) for _ in range(3))
    with oxicuda.trace() as t:
        o = attention(oxicuda.asarray(q), oxicuda.asarray(k), oxicuda.asarray(v), causal=causal, algo="mma")
    assert [type(r.spec).__name__ for r in t.launches] == ["AttentionMmaSpec"]
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
    got = torch.from_dlpack(o).double()
    assert torch.isfinite(got).all()
    assert (got - ref).abs().max().item() / ref.abs().max().item() < 2e-2


def test_mma_dispatch_and_lse_with_gqa_match_torch():
    torch = _torch()
    gen = torch.Generator(device="cuda").manual_seed(99)
    q = torch.randn(2, 8, 300, 64, device="cuda", generator=gen).to(torch.float16)
    k, v = (torch.randn(2, 2, 333, 64, device="cuda", generator=gen).to(torch.float16) for _ in range(2))
    with oxicuda.trace() as t:
        o, lse = attention(oxicuda.asarray(q), oxicuda.asarray(k), oxicuda.asarray(v), causal=True, return_lse=True)
    from oxicuda.ptx.target import device_arch

    expected = "AttentionWgmmaSpec" if device_arch() == "sm_90" else "AttentionMmaSpec"  # Hopper prefers wgmma
    assert [type(r.spec).__name__ for r in t.launches] == [expected]
    kr, vr = (x.double().repeat_interleave(4, dim=1) for x in (k, v))
    s = q.double() @ kr.transpose(-1, -2) / 8.0
    s = s.masked_fill(torch.ones(300, 333, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
    ref = torch.softmax(s, -1) @ vr
    assert (torch.from_dlpack(o).double() - ref).abs().max().item() / ref.abs().max().item() < 2e-3
    assert (torch.from_dlpack(lse).double() - torch.logsumexp(s, -1)).abs().max().item() < 1e-4
