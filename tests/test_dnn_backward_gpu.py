"""Backward passes on a real GPU at real sizes against PyTorch's autograd (float64 where the
comparison is exact math, the half type where it is what users run). Skipped off a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda import dnn

pytestmark = pytest.mark.gpu


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


def _rel(a, b):
    return ((a.double() - b.double()).abs().max() / b.double().abs().max().clamp_min(1e-30)).item()


def _grad(torch, fn, inputs, dy):
    xs = [t.detach().double().requires_grad_(True) for t in inputs]
    return torch.autograd.grad(fn(*xs), xs, dy.double())


@pytest.mark.parametrize("rows,cols", [(4096, 1024), (512, 8192), (64, 32768), (3, 100003), (70000, 7)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_row_backward_passes_match_torch_autograd(rows, cols, dtype):
    torch = _torch()
    tdt = getattr(torch, dtype)
    tol = 2e-5 if dtype == "float32" else 3e-2
    x = torch.randn(rows, cols, device="cuda", dtype=tdt) * 2
    w = torch.randn(cols, device="cuda", dtype=tdt)
    dy = torch.randn(rows, cols, device="cuda", dtype=tdt)
    ox = oxicuda.asarray
    for name, fwd in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)):
        y = fwd(x.double(), -1).to(tdt)
        (ref,) = _grad(torch, lambda t, f=fwd: f(t, -1), [x], dy)
        got = getattr(dnn, f"{name}_backward")(ox(dy), ox(y))
        assert _rel(torch.from_dlpack(got), ref) < tol, name
    _, mean, rstd = dnn.layer_norm(ox(x), None, ox(w), ox(w), return_stats=True)
    for stats in ({}, {"mean": mean, "rstd": rstd}):
        dx, dw, db = dnn.layer_norm_backward(ox(dy), ox(x), None, ox(w), ox(w), **stats)
        refs = _grad(torch, lambda a, b, c: torch.nn.functional.layer_norm(a, (cols,), b, c), [x, w, w], dy)
        for got, ref in zip((dx, dw, db), refs):
            assert _rel(torch.from_dlpack(got), ref) < tol * 4
    dx, dw = dnn.rms_norm_backward(ox(dy), ox(x), ox(w))
    refs = _grad(torch, lambda a, b: torch.nn.functional.rms_norm(a, (cols,), b, eps=1e-6), [x, w], dy)
    for got, ref in zip((dx, dw), refs):
        assert _rel(torch.from_dlpack(got), ref) < tol * 4


def test_activation_backward_passes_match_torch_autograd():
    torch = _torch()
    x = torch.randn(1 << 22, device="cuda") * 3
    dy = torch.randn(1 << 22, device="cuda")
    ox = oxicuda.asarray
    cases = [("relu", torch.relu, lambda: dnn.relu_backward(ox(dy), ox(torch.relu(x)))),
             ("gelu", torch.nn.functional.gelu, lambda: dnn.gelu_backward(ox(dy), ox(x))),
             ("gelu_tanh", lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
              lambda: dnn.gelu_backward(ox(dy), ox(x), approximate="tanh")),
             ("silu", torch.nn.functional.silu, lambda: dnn.silu_backward(ox(dy), ox(x))),
             ("sigmoid", torch.sigmoid, lambda: dnn.sigmoid_backward(ox(dy), ox(torch.sigmoid(x)))),
             ("tanh", torch.tanh, lambda: dnn.tanh_backward(ox(dy), ox(torch.tanh(x))))]
    for name, fwd, ours in cases:
        (ref,) = _grad(torch, fwd, [x], dy)
        assert _rel(torch.from_dlpack(ours()), ref) < 1e-5, name


def _sdpa_grads(torch, q, k, v, do, causal, scale=None):
    g = q.shape[1] // k.shape[1]
    xs = [t.detach().double().requires_grad_(True) for t in (q, k, v)]
    kk, vv = xs[1].repeat_interleave(g, 1), xs[2].repeat_interleave(g, 1)
    out = torch.nn.functional.scaled_dot_product_attention(xs[0], kk, vv, is_causal=causal, scale=scale)
    return torch.autograd.grad(out, xs, do.double())


@pytest.mark.parametrize("d", [64, 128, 96])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward_float32_matches_torch_autograd(d, causal):
    torch = _torch()
    b, hq, hkv, sq, sk = 2, 8, 2, 1000, 1000 if causal else 777
    q = torch.randn(b, hq, sq, d, device="cuda")
    k, v = (torch.randn(b, hkv, sk, d, device="cuda") for _ in range(2))
    do = torch.randn(b, hq, sq, d, device="cuda")
    ox = oxicuda.asarray
    o, lse = dnn.attention(ox(q), ox(k), ox(v), causal=causal, return_lse=True)
    got = dnn.attention_backward(ox(q), ox(k), ox(v), o, ox(do), lse, causal=causal)
    for name, g, ref in zip(("dq", "dk", "dv"), got, _sdpa_grads(torch, q, k, v, do, causal)):
        assert _rel(torch.from_dlpack(g), ref) < 2e-4, name


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward_halves_match_torch_autograd(dtype, d, causal):
    torch = _torch()
    tdt = getattr(torch, dtype)
    b, h, hkv, s = 2, 16, 4, 2047  # GQA (group 4); a length that is not a multiple of the tiles
    q, do = (torch.randn(b, h, s, d, device="cuda", dtype=tdt) for _ in range(2))
    k, v = (torch.randn(b, hkv, s, d, device="cuda", dtype=tdt) for _ in range(2))
    ox = oxicuda.asarray
    o, lse = dnn.attention(ox(q), ox(k), ox(v), causal=causal, return_lse=True, scale=0.1)
    with oxicuda.trace() as t:
        got = dnn.attention_backward(ox(q), ox(k), ox(v), o, ox(do), lse, causal=causal, scale=0.1)
    fams = [(s.family, s.kind) for s in t.specs() if s is not None and s.family.startswith("attention_bwd")]
    assert fams[-1] == ("attention_bwd_mma", "dq")
    assert fams[1] == (("attention_bwd_mma", "dkdv") if d == 64 else ("attention_bwd_simt", "dkdv"))
    for name, g, ref in zip(("dq", "dk", "dv"), got, _sdpa_grads(torch, q, k, v, do, causal, 0.1)):
        assert _rel(torch.from_dlpack(g), ref) < 3e-2, name


def test_attention_backward_is_deterministic():
    torch = _torch()
    q, k, v, do = (torch.randn(1, 4, 1500, 64, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    ox = oxicuda.asarray
    o, lse = dnn.attention(ox(q), ox(k), ox(v), return_lse=True)
    first = [torch.from_dlpack(g).clone() for g in dnn.attention_backward(ox(q), ox(k), ox(v), o, ox(do), lse)]
    again = [torch.from_dlpack(g) for g in dnn.attention_backward(ox(q), ox(k), ox(v), o, ox(do), lse)]
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert np.isfinite(first[0].float().cpu().numpy()).all()
