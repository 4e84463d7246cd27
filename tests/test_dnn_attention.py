"""Fused attention forward against a float64 naive reference: causal masks (top-left, as PyTorch),
odd and unequal lengths, head_dim up to 256, GQA, custom scale, logsumexp, half types, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from test_dnn_conv_reference import as_float64, to_dtype

import oxicuda
from oxicuda.dnn.attention_api import attention

TOL = {"float32": 2e-6, "float16": 2e-3, "bfloat16": 1.6e-2}


def attention_ref(q, k, v, causal=False, scale=None):
    """Naive float64 attention: (output, natural-log logsumexp). k/v heads repeat for GQA; causal
    keeps key j for query i when j <= i (top-left, torch's is_causal)."""
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = np.einsum("bhid,bhjd->bhij", q, k) * scale
    if causal:
        sq, sk = s.shape[2:]
        s = np.where(np.tril(np.ones((sq, sk), bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    lsum = p.sum(-1, keepdims=True)
    return p / lsum @ v, (np.log(lsum) + m)[..., 0]


def poisoned(shape, dtype="float32"):
    a = oxicuda.empty(tuple(shape), dtype)
    a.set(to_dtype(np.full(tuple(shape), np.nan, np.float32), dtype))
    return a


def run(rng, b, hq, hkv, sq, sk, d, causal=False, scale=None, dtype="float32"):
    q = to_dtype(rng.standard_normal((b, hq, sq, d)).astype(np.float32), dtype)
    k = to_dtype(rng.standard_normal((b, hkv, sk, d)).astype(np.float32), dtype)
    v = to_dtype(rng.standard_normal((b, hkv, sk, d)).astype(np.float32), dtype)
    out = poisoned(q.shape, dtype)
    o, lse = attention(oxicuda.asarray(q), oxicuda.asarray(k), oxicuda.asarray(v), causal=causal, scale=scale,
                       return_lse=True, out=out)
    assert o is out
    ref, ref_lse = attention_ref(as_float64(q), as_float64(k), as_float64(v), causal, scale)
    got = as_float64(o.get())
    assert np.isfinite(got).all(), "output has NaN/inf (an element was never written?)"
    err = np.abs(got - ref).max() / max(1.0, np.abs(ref).max())
    assert err <= TOL[dtype], f"output max error {err:.3g} > {TOL[dtype]}"
    lerr = np.abs(lse.get().astype(np.float64) - ref_lse).max() / max(1.0, np.abs(ref_lse).max())
    assert lerr <= max(TOL[dtype], 2e-6), f"logsumexp max error {lerr:.3g}"
    return o


@pytest.mark.parametrize("sq, sk", [(1, 1), (17, 17), (37, 21), (9, 40)])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_reference_for_odd_and_unequal_lengths(rng, sq, sk, causal):
    run(rng, 1, 2, 2, sq, sk, 16, causal)


@pytest.mark.parametrize("d", [64, 72, 128, 256, 5])
def test_attention_head_dims_up_to_256(rng, d):
    run(rng, 1, 2, 2, 7 if d >= 128 else 33, 9 if d >= 128 else 40, d, causal=d % 2 == 0)


def test_grouped_query_attention_reads_kv_head_h_over_group(rng):
    run(rng, 2, 4, 2, 11, 13, 16, causal=True)
    run(rng, 1, 3, 1, 6, 5, 16)


def test_custom_scale(rng):
    run(rng, 1, 2, 2, 10, 12, 16, scale=0.9)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_types_compute_in_float32(rng, dtype):
    run(rng, 1, 2, 2, 19, 23, 16, causal=True, dtype=dtype)


def test_causal_alignment_is_top_left_like_pytorch(rng):
    # Sq > Sk: query rows i >= Sk see every key; Sq < Sk: row i sees keys 0..i only
    q = rng.standard_normal((1, 1, 4, 8)).astype(np.float32)
    k = rng.standard_normal((1, 1, 2, 8)).astype(np.float32)
    v = rng.standard_normal((1, 1, 2, 8)).astype(np.float32)
    o = attention(oxicuda.asarray(q), oxicuda.asarray(k), oxicuda.asarray(v), causal=True).get()
    assert np.allclose(o[0, 0, 0], v[0, 0, 0], atol=1e-6)  # row 0 sees key 0 only
    full = attention(oxicuda.asarray(q), oxicuda.asarray(k), oxicuda.asarray(v)).get()
    assert np.allclose(o[0, 0, 1:], full[0, 0, 1:], atol=1e-6)


def test_default_launch_is_traced_with_its_spec(rng):
    q = oxicuda.asarray(rng.standard_normal((1, 1, 3, 16)).astype(np.float32))
    with oxicuda.trace() as t:
        attention(q, q, q, causal=True)
    assert [type(r.spec).__name__ for r in t.launches] == ["AttentionSimtSpec"]
    assert t.launches[0].spec.causal and t.launches[0].spec.head_dim == 16


def _qkv(q=(1, 2, 4, 16), k=(1, 2, 4, 16), v=None, dtype=np.float32, kdtype=None):
    mk = lambda s, dt: oxicuda.asarray(np.zeros(s, dt))
    return mk(q, dtype), mk(k, kdtype or dtype), mk(v or k, kdtype or dtype)


@pytest.mark.parametrize("kwargs, exc, text", [
    ({"q": (2, 4, 16)}, ValueError, "4-D"),
    ({"k": (1, 3, 4, 16)}, ValueError, "must divide"),
    ({"k": (1, 2, 4, 8)}, ValueError, "head_dim"),
    ({"k": (2, 2, 4, 16)}, ValueError, "batch"),
    ({"v": (1, 2, 5, 16)}, ValueError, "k has shape"),
    ({"q": (1, 2, 4, 300), "k": (1, 2, 4, 300)}, ValueError, "head_dim 300"),
    ({"kdtype": np.float16}, TypeError, "must match"),
    ({"dtype": np.int32}, TypeError, "allowed dtypes"),
])
def test_bad_input_raises_before_launch(kwargs, exc, text):
    q, k, v = _qkv(**kwargs)
    with oxicuda.trace() as t, pytest.raises(exc, match=text):
        attention(q, k, v)
    assert t.launches == []


def test_bad_options_raise_before_launch():
    q, k, v = _qkv()
    with oxicuda.trace() as t:
        with pytest.raises(ValueError, match="algo"):
            attention(q, k, v, algo="flash3")
        with pytest.raises(ValueError, match="scale"):
            attention(q, k, v, scale=float("nan"))
        with pytest.raises(ValueError, match="out has shape"):
            attention(q, k, v, out=oxicuda.empty((1, 2, 4, 8), "float32"))
    assert t.launches == []


def test_dnn_attention_stays_the_function_after_its_module_is_imported():
    import importlib

    from oxicuda import dnn

    importlib.import_module("oxicuda.dnn.attention_api")
    assert callable(dnn.attention) and dnn.attention is attention
    assert not hasattr(dnn.attention, "__path__") and type(dnn.attention).__name__ == "function"
