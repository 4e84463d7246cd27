"""oxicuda.dnn activations (fused bias) on the live backend against float64 numpy, every element."""

from __future__ import annotations

import math

import numpy as np
import pytest

import oxicuda
from oxicuda import dnn
from oxicuda.memory.dtypes import host_astype
from oxicuda.ptx import registry

_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def ref_activation(op: str, v: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        if op == "relu":
            return np.where(v < 0, 0.0, v)
        if op == "sigmoid":
            return 1.0 / (1.0 + np.exp(-v))
        if op == "silu":
            return v / (1.0 + np.exp(-v))
        if op == "tanh":
            return np.tanh(v)
        if op == "gelu":
            return 0.5 * v * _erfc(-v / math.sqrt(2.0))
        if op == "gelu_tanh":  # x/2 (1 + tanh u) written as x * sigmoid(2u): exact in float64 too
            u = math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3)
            return v / (1.0 + np.exp(-2.0 * u))
    raise AssertionError(op)


def call(op: str, x, bias=None, **kw):
    if op == "gelu_tanh":
        return dnn.gelu(x, bias, approximate="tanh", **kw)
    return getattr(dnn, op)(x, bias, **kw)


OPS = ["relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh"]
# float32: a few ulp where the result is well scaled; tiny results (deep negative tails of gelu,
# silu) carry the rounding of their argument (|x|^2 eps relative), covered by the absolute term
F32_TOL = {"rtol": 4e-6, "atol": 1e-7}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", [(1,), (3, 33), (2, 3, 7)])
def test_activation_matches_float64_reference(rng, op, shape):
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    y = call(op, x)
    assert y.shape == shape and y.dtype == np.float32
    np.testing.assert_allclose(y.get(), ref_activation(op, x.astype(np.float64)), **F32_TOL)


@pytest.mark.parametrize("op", OPS)
def test_activation_with_fused_bias_on_last_and_channel_axes(rng, op):
    x = (rng.standard_normal((2, 3, 4, 5)) * 3).astype(np.float32)
    b_last = rng.standard_normal(5).astype(np.float32)
    b_chan = rng.standard_normal(3).astype(np.float32)
    with oxicuda.trace() as tr:
        y_last = call(op, x, b_last)
        y_chan = call(op, x, b_chan, bias_axis=1)
    assert all(r.spec.has_bias for r in tr.launches) and len(tr.launches) == 2
    v_last = (x + b_last).astype(np.float64)  # f32 add, as the kernel does
    v_chan = (x + b_chan[None, :, None, None]).astype(np.float64)
    np.testing.assert_allclose(y_last.get(), ref_activation(op, v_last), **F32_TOL)
    np.testing.assert_allclose(y_chan.get(), ref_activation(op, v_chan), **F32_TOL)


def test_vectorized_path_is_used_when_aligned_and_scalar_otherwise(rng):
    for n, vec in ((64, 4), (66, 2), (67, 1)):
        x = rng.standard_normal(n).astype(np.float32)
        with oxicuda.trace() as tr:
            y = dnn.silu(x)
        assert tr.launches[0].spec.vec == vec
        np.testing.assert_allclose(y.get(), ref_activation("silu", x.astype(np.float64)), **F32_TOL)


@pytest.mark.parametrize("op", OPS)
def test_special_values(op):
    x = np.array([0.0, -0.0, 1e-30, -1e-30, np.nan, np.inf, -np.inf, 30.0, -30.0, 90.0, -90.0],
                 np.float32)
    y = call(op, x).get()
    ref = ref_activation(op, x.astype(np.float64))
    assert np.isnan(y[4])
    np.testing.assert_allclose(y[~np.isnan(ref)], ref[~np.isnan(ref)], **F32_TOL)


@pytest.mark.parametrize("dtype,rtol", [("float16", 2.0 ** -10), ("bfloat16", 2.0 ** -7)])
@pytest.mark.parametrize("op", ["gelu", "silu", "tanh"])
def test_half_types_with_bias(rng, dtype, rtol, op):
    x = (rng.standard_normal((3, 34)) * 3).astype(np.float32)
    b = rng.standard_normal(34).astype(np.float32)
    xd, bd = oxicuda.asarray(host_astype(x, dtype)), oxicuda.asarray(host_astype(b, dtype))
    y = call(op, xd, bd)
    assert y.dtype == xd.dtype
    xr = host_astype(host_astype(x, dtype), "float32")
    br = host_astype(host_astype(b, dtype), "float32")
    ref = ref_activation(op, (xr + br).astype(np.float64))
    np.testing.assert_allclose(host_astype(y.get(), "float32"), ref, rtol=rtol, atol=1e-6)


def test_bad_input_raises_before_launch():
    x = oxicuda.asarray(np.zeros((2, 3), np.float32))
    with oxicuda.trace() as tr:
        with pytest.raises(TypeError, match="dtype"):
            dnn.relu(np.zeros(4, np.int32))
        with pytest.raises(ValueError, match=r"bias has shape \(4,\)"):
            dnn.relu(x, np.zeros(4, np.float32))
        with pytest.raises(ValueError, match=r"must have shape \(2,\)"):
            dnn.silu(x, np.zeros(3, np.float32), bias_axis=0)
        with pytest.raises(TypeError, match="must match"):
            dnn.tanh(x, oxicuda.asarray(np.zeros(3, np.float16)))
        with pytest.raises(ValueError, match="axis=2"):
            dnn.sigmoid(x, np.zeros(3, np.float32), bias_axis=2)
        with pytest.raises(ValueError, match="approximate"):
            dnn.gelu(x, approximate="erf")
    assert tr.launches == []


def test_configurations_cover_every_op():
    specs = registry.configurations("sm_90", "dnn_activation")
    # every op x dtype x vector width (1, 2, 4) x bias: what `vector_width` can pick
    assert {s.op for s in specs} == set(OPS) and len(specs) == len(OPS) * 3 * 3 * 2
