"""attention_backward on the live backend (small sizes: the emulator is slow): dq, dk, dv against
a float64 numpy reference of the same math and against finite differences of float64 attention,
with results and workspace poisoned first; the forward's log-sum-exp from both the SIMT and the
mma.sync forward; GQA sums over the group; dispatch proven with oxicuda.trace(); bad input
raising before any launch; every registered configuration assembling with ptxas."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import oxicuda
from oxicuda import dnn
from oxicuda.dnn import attention_bwd, attention_bwd_mma
from oxicuda.memory.array import empty as real_empty
from oxicuda.memory.dtypes import host_astype
from oxicuda.ptx import launch_plan

workspace_module = importlib.import_module("oxicuda.memory.workspace")


@pytest.fixture(autouse=True)
def poisoned(monkeypatch):
    def empty_nan(shape, dtype, *args, **kwargs):
        a = real_empty(shape, dtype, *args, **kwargs)
        if a.size:
            a.fill(np.nan)
        return a

    def workspace_nan(request, stream=None):
        ws = workspace_module.workspace(request, stream)
        ws.fill(255)
        return ws.ptr

    monkeypatch.setattr(attention_bwd, "empty", empty_nan)
    monkeypatch.setattr(launch_plan, "_workspace_source", workspace_nan)


def attention_grads(q, k, v, do, causal, scale):
    """float64 (o, lse, dq, dk, dv) with kv heads repeated over each group and summed back."""
    b, hq, sq, d = q.shape
    hkv, sk = k.shape[1], k.shape[2]
    g = hq // hkv
    kk, vv = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q, kk) * scale
    if causal:
        s = np.where(np.tril(np.ones((sq, sk), bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    total = p.sum(-1, keepdims=True)
    p /= total
    o = p @ vv
    ds = p * (do @ vv.transpose(0, 1, 3, 2) - (do * o).sum(-1, keepdims=True))
    dq = ds @ kk * scale
    dk = np.einsum("bhij,bhid->bhjd", ds, q) * scale
    dv = np.einsum("bhij,bhid->bhjd", p, do)

    def fold(a):
        return a.reshape(b, hkv, g, sk, d).sum(2)

    return o, (m + np.log(total))[..., 0], dq, fold(dk), fold(dv)


FAMILIES = (attention_bwd.FAMILY, attention_bwd_mma.FAMILY)


def mine(t):
    return [s for s in t.specs() if s is not None and s.family in FAMILIES]


def _rel(got, ref):
    return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))


@pytest.mark.parametrize("b,hq,hkv,sq,sk,d,causal", [
    (1, 2, 1, 37, 45, 64, True),     # GQA (group 2), tails of both tiles, Sq < Sk
    (1, 1, 1, 20, 33, 16, False),
    (2, 2, 2, 33, 17, 72, True),     # padded head_dim, Sq > Sk
    (1, 1, 1, 17, 19, 128, False),
    (1, 1, 1, 1, 1, 1, False),       # the smallest problem
    (1, 3, 1, 5, 3, 8, True),        # MQA (one kv head for three query heads)
])
def test_attention_backward_float32_matches_float64(rng, b, hq, hkv, sq, sk, d, causal):
    q, do = (rng.standard_normal((b, hq, sq, d)) for _ in range(2))
    k, v = (rng.standard_normal((b, hkv, sk, d)) for _ in range(2))
    scale = 1 / np.sqrt(d)
    _, lse_ref, *ref = attention_grads(q, k, v, do, causal, scale)
    f = [t.astype(np.float32) for t in (q, k, v, do)]
    o, lse = dnn.attention(f[0], f[1], f[2], causal=causal, return_lse=True, algo="simt")
    np.testing.assert_allclose(lse.get(), lse_ref, rtol=1e-5, atol=1e-5)
    with oxicuda.trace() as t:
        grads = dnn.attention_backward(f[0], f[1], f[2], o, f[3], lse, causal=causal)
    assert [(s.kind, s.causal, s.head_dim) for s in mine(t)] == [("delta", False, 1), ("dkdv", causal, d),
                                                                 ("dq", causal, d)]
    for name, got, r in zip(("dq", "dk", "dv"), grads, ref):
        assert got.shape == r.shape and got.dtype == np.float32
        assert _rel(got.get(), r) < 2e-5, name


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward_halves_from_the_mma_forward_lse(rng, dtype, causal):
    b, h, sq, sk, d = 1, 1, 24, 40, 64
    q, k, v, do = (host_astype(rng.standard_normal((b, h, s, d)), dtype) for s in (sq, sk, sk, sq))
    dev = [oxicuda.asarray(t) for t in (q, k, v, do)]
    with oxicuda.trace() as t:
        o, lse = dnn.attention(*dev[:3], causal=causal, return_lse=True)
    assert "attention_fwd_mma" in {s.family for s in t.specs() if s is not None}
    h64 = [host_astype(t, "float32").astype(np.float64) for t in (q, k, v, do)]
    _, _, *ref = attention_grads(*h64, causal, 1 / np.sqrt(d))
    with oxicuda.trace() as t:
        grads = dnn.attention_backward(*dev[:3], o, dev[3], lse, causal=causal)
    assert [(s.family, s.kind) for s in mine(t)] == [
        ("attention_bwd_simt", "delta"), ("attention_bwd_mma", "dkdv"), ("attention_bwd_mma", "dq")]
    for name, got, r in zip(("dq", "dk", "dv"), grads, ref):
        assert got.dtype == dev[0].dtype
        assert _rel(host_astype(got.get(), "float32").astype(np.float64), r) < 3e-2, name


@pytest.mark.parametrize("b,hq,hkv,sq,sk,d,causal", [(1, 2, 1, 70, 45, 64, True), (1, 1, 1, 20, 67, 128, False),
                                                     (1, 1, 1, 65, 65, 128, True), (1, 2, 2, 20, 130, 64, False)])
def test_mma_kernels_match_float64_for_tails_gqa_and_both_head_dims(rng, b, hq, hkv, sq, sk, d, causal):
    h = [host_astype(rng.standard_normal(s), "bfloat16") for s in ((b, hq, sq, d), (b, hkv, sk, d), (b, hkv, sk, d),
                                                                      (b, hq, sq, d))]
    dev = [oxicuda.asarray(t) for t in h]
    o, lse = dnn.attention(*dev[:3], causal=causal, return_lse=True, scale=0.2)
    _, _, *ref = attention_grads(*(host_astype(t, "float32").astype(np.float64) for t in h), causal, 0.2)
    with oxicuda.trace() as t:
        mma = dnn.attention_backward(*dev[:3], o, dev[3], lse, causal=causal, scale=0.2, algo="mma")
    arch = mine(t)[-1].arch
    assert mine(t)[-1] == attention_bwd_mma.AttentionBwdMmaSpec(arch=arch, dtype="bf16", head_dim=d, causal=causal)
    dkdv = mine(t)[1]
    assert (dkdv.family, dkdv.kind) == ((attention_bwd_mma.FAMILY, "dkdv") if d == 64 else
                                        (attention_bwd.FAMILY, "dkdv"))
    with oxicuda.trace() as t:
        simt = dnn.attention_backward(*dev[:3], o, dev[3], lse, causal=causal, scale=0.2, algo="simt")
    assert {s.family for s in mine(t)} == {attention_bwd.FAMILY}
    for grads in (mma, simt):
        for name, got, r in zip(("dq", "dk", "dv"), grads, ref):
            assert _rel(host_astype(got.get(), "float32").astype(np.float64), r) < 2e-2, name


def test_attention_backward_matches_finite_differences_of_attention(rng):
    b, hq, hkv, sq, sk, d, scale = 1, 2, 1, 9, 11, 16, 0.3
    q, do = (rng.standard_normal((b, hq, sq, d)) for _ in range(2))
    k, v = (rng.standard_normal((b, hkv, sk, d)) for _ in range(2))
    dirs = [rng.standard_normal(t.shape) for t in (q, k, v)]
    f = [t.astype(np.float32) for t in (q, k, v, do)]
    o, lse = dnn.attention(f[0], f[1], f[2], causal=True, scale=scale, return_lse=True)
    grads = dnn.attention_backward(f[0], f[1], f[2], o, f[3], lse, causal=True, scale=scale)
    directional = sum((g.get().astype(np.float64) * u).sum() for g, u in zip(grads, dirs))
    h = 1e-5

    def loss(sign):
        moved = [t + sign * h * u for t, u in zip((q, k, v), dirs)]
        return (do * attention_grads(*moved, do, True, scale)[0]).sum()

    np.testing.assert_allclose(directional, (loss(1) - loss(-1)) / (2 * h), rtol=1e-4, atol=1e-4)


def test_attention_backward_keys_no_query_sees_get_zero_gradients(rng):
    # causal with Sq < Sk: keys past Sq - 1 are masked for every query (top-left alignment)
    q, do = (rng.standard_normal((1, 1, 5, 16)).astype(np.float32) for _ in range(2))
    k, v = (rng.standard_normal((1, 1, 40, 16)).astype(np.float32) for _ in range(2))
    o, lse = dnn.attention(q, k, v, causal=True, return_lse=True)
    _, dk, dv = dnn.attention_backward(q, k, v, o, do, lse, causal=True)
    assert np.all(dk.get()[0, 0, 5:] == 0) and np.all(dv.get()[0, 0, 5:] == 0)
    assert np.abs(dv.get()[0, 0, :5]).max() > 0


def test_attention_backward_rejects_bad_input_before_launch(rng):
    q = rng.standard_normal((1, 2, 8, 16)).astype(np.float32)
    k = rng.standard_normal((1, 1, 8, 16)).astype(np.float32)
    o, lse = dnn.attention(q, k, k, return_lse=True)
    bf = oxicuda.asarray(host_astype(q, "bfloat16"))
    cases = [
        (ValueError, lambda: dnn.attention_backward(q, k, k, o, q[:, :, :4], lse)),
        (TypeError, lambda: dnn.attention_backward(q, k, k, o, bf, lse)),
        (ValueError, lambda: dnn.attention_backward(q, k, k, o, q, oxicuda.zeros((1, 2, 7), "float32"))),
        (ValueError, lambda: dnn.attention_backward(q, k, k, o, q, oxicuda.zeros((1, 2, 8), "float16"))),
        (TypeError, lambda: dnn.attention_backward(q, k, k, o, q, np.zeros((1, 2, 8), np.float32))),
        (ValueError, lambda: dnn.attention_backward(q, rng.standard_normal((1, 3, 8, 16)).astype(np.float32),
                                                    rng.standard_normal((1, 3, 8, 16)).astype(np.float32), o, q, lse)),
        (ValueError, lambda: dnn.attention_backward(q, k, k, o, q, lse, scale=float("nan"))),
        (ValueError, lambda: dnn.attention_backward(q, k, k, o, q, lse, algo="tiled")),
        (ValueError, lambda: dnn.attention_backward(q, k, k, o, q, lse, algo="mma")),
        (NotImplementedError, lambda: dnn.attention_backward(q, k, k, o, q, lse, algo="wgmma")),
    ]
    for exc, call in cases:
        with oxicuda.trace() as t, pytest.raises(exc):
            call()
        assert mine(t) == []


def test_every_launched_configuration_is_registered(rng):
    from oxicuda.ptx import registry

    arch = oxicuda.driver.facts.device_facts().arch
    registered = set(registry.configurations(arch, attention_bwd.FAMILY))
    registered |= set(registry.configurations(attention_bwd._mma_arch(arch), attention_bwd_mma.FAMILY))
    log = []

    class Recorded:
        def __init__(self, spec):
            self.spec, self.name = spec, spec.kernel_name()

        def prepared_launch(self, grid, block, shared_mem=0):
            return lambda args, stream=None: log.append(self.spec)

    from oxicuda.ptx import cache

    real = cache.load
    cache.load = Recorded
    attention_bwd.PLANS.clear()
    try:
        for dtype in ("float32", "float16", "bfloat16"):
            for d in (16, 64, 128):
                for causal in (False, True):
                    q = oxicuda.zeros((1, 2, 5, d), dtype)
                    k = oxicuda.zeros((1, 1, 7, d), dtype)
                    dnn.attention_backward(q, k, k, q, q, oxicuda.zeros((1, 2, 5), "float32"), causal=causal)
    finally:
        cache.load = real
        attention_bwd.PLANS.clear()
    assert log and set(log) <= registered, set(log) - registered


def test_backward_kernels_assemble_without_spills():
    from oxicuda.ptx import registry, validate

    try:
        validate.find_ptxas()
    except validate.PtxasNotFound:
        pytest.skip("no ptxas")
    specs = [s for arch in ("sm_80", "sm_86", "sm_90") for s in registry.configurations(arch, attention_bwd.FAMILY)
             if s.head_dim in (1, 16, 64, 128) and s.dtype in ("f32", "bf16")]
    specs += [s for arch in ("sm_80", "sm_86", "sm_90") for s in registry.configurations(arch, attention_bwd_mma.FAMILY)]
    reports = validate.assemble_many([(registry.generate_ptx(s), s.arch) for s in specs])
    for s, r in zip(specs, reports):
        assert r.ok, (s, r.message)
        assert r.spills == 0, (s, r.registers, r.spills)
