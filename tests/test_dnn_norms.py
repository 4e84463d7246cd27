"""oxicuda.dnn layer_norm, rms_norm, batch_norm on the live backend against float64 numpy."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda import dnn
from oxicuda.memory.dtypes import host_astype
from oxicuda.ptx import registry


def ref_layer_norm(x, shape, w, b, eps):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    m = x.mean(axis=axes, keepdims=True)
    v = ((x - m) ** 2).mean(axis=axes, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def ref_rms_norm(x, w, eps):
    y = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
    return y * (1 if w is None else w)


def f64(a):
    return None if a is None else host_astype(np.asarray(a), "float32").astype(np.float64)


@pytest.mark.parametrize("algo", ["warp", "block"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (33, 100), (3, 1025)])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_matches_float64(rng, algo, shape, affine):
    # an offset mean: the two-pass variance must not cancel
    x = (rng.standard_normal(shape) * 2 + 50).astype(np.float32)
    w = rng.standard_normal(shape[-1]).astype(np.float32) if affine else None
    b = rng.standard_normal(shape[-1]).astype(np.float32) if affine else None
    with oxicuda.trace() as tr:
        y = dnn.layer_norm(x, weight=w, bias=b, algo=algo)
    assert [r.spec.variant for r in tr.launches] == [algo]
    ref = ref_layer_norm(f64(x), (shape[-1],), f64(w), f64(b), 1e-5)
    np.testing.assert_allclose(y.get(), ref, rtol=2e-5, atol=2e-5)


def test_layer_norm_over_several_trailing_dims_and_dispatch(rng):
    x = rng.standard_normal((3, 4, 9)).astype(np.float32)
    w = rng.standard_normal((4, 9)).astype(np.float32)
    b = rng.standard_normal((4, 9)).astype(np.float32)
    y = dnn.layer_norm(x, (4, 9), w, b, eps=1e-3)
    np.testing.assert_allclose(y.get(), ref_layer_norm(f64(x), (4, 9), f64(w), f64(b), 1e-3), rtol=1e-5, atol=1e-5)
    for cols, variant in ((1024, "warp"), (1025, "block")):
        with oxicuda.trace() as tr:
            dnn.layer_norm(rng.standard_normal((1, cols)).astype(np.float32))
        assert tr.launches[0].spec.variant == variant


@pytest.mark.parametrize("algo", ["warp", "block"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (5, 100)])
def test_rms_norm_matches_float64(rng, algo, shape):
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    w = rng.standard_normal(shape[-1]).astype(np.float32)
    y = dnn.rms_norm(x, w, algo=algo)
    np.testing.assert_allclose(y.get(), ref_rms_norm(f64(x), f64(w), 1e-6), rtol=1e-5, atol=1e-6)
    y = dnn.rms_norm(x, algo=algo)
    np.testing.assert_allclose(y.get(), ref_rms_norm(f64(x), None, 1e-6), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype,tol", [("float16", 2e-3), ("bfloat16", 1.6e-2)])
def test_norms_in_half_types(rng, dtype, tol):
    x = rng.standard_normal((3, 40)).astype(np.float32)
    w = rng.standard_normal(40).astype(np.float32)
    b = rng.standard_normal(40).astype(np.float32)
    xd, wd, bd = (oxicuda.asarray(host_astype(a, dtype)) for a in (x, w, b))
    y = dnn.layer_norm(xd, weight=wd, bias=bd)
    assert y.dtype == xd.dtype
    ref = ref_layer_norm(f64(host_astype(x, dtype)), (40,), f64(host_astype(w, dtype)), f64(host_astype(b, dtype)), 1e-5)
    np.testing.assert_allclose(host_astype(y.get(), "float32"), ref, rtol=tol, atol=tol)
    y = dnn.rms_norm(xd, wd)
    ref = ref_rms_norm(f64(host_astype(x, dtype)), f64(host_astype(w, dtype)), 1e-6)
    np.testing.assert_allclose(host_astype(y.get(), "float32"), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("affine", [False, True])
def test_batch_norm_inference_matches_float64(rng, layout, affine):
    n, c, h, w = 2, 3, 4, 5
    x = rng.standard_normal((n, c, h, w) if layout == "NCHW" else (n, h, w, c)).astype(np.float32)
    mean = rng.standard_normal(c).astype(np.float32)
    var = (rng.random(c) + 0.1).astype(np.float32)
    g = rng.standard_normal(c).astype(np.float32) if affine else None
    b = rng.standard_normal(c).astype(np.float32) if affine else None
    y = dnn.batch_norm(x, mean, var, g, b, eps=1e-3, layout=layout)
    shape = (1, c, 1, 1) if layout == "NCHW" else (1, 1, 1, c)
    ref = (f64(x) - f64(mean).reshape(shape)) / np.sqrt(f64(var).reshape(shape) + 1e-3)
    if affine:
        ref = ref * f64(g).reshape(shape) + f64(b).reshape(shape)
    np.testing.assert_allclose(y.get(), ref, rtol=1e-5, atol=1e-6)


def test_batch_norm_on_2d_input_bf16(rng):
    x = rng.standard_normal((5, 6)).astype(np.float32)
    mean, var = rng.standard_normal(6).astype(np.float32), (rng.random(6) + 0.5).astype(np.float32)
    args = [oxicuda.asarray(host_astype(a, "bfloat16")) for a in (x, mean, var)]
    y = dnn.batch_norm(*args)
    ref = (f64(host_astype(x, "bfloat16")) - f64(host_astype(mean, "bfloat16"))) / np.sqrt(
        f64(host_astype(var, "bfloat16")) + 1e-5)
    np.testing.assert_allclose(host_astype(y.get(), "float32"), ref, rtol=1.6e-2, atol=1.6e-2)


def test_bad_input_raises_before_launch():
    x = oxicuda.asarray(np.zeros((2, 3, 4, 4), np.float32))
    z3 = np.zeros(3, np.float32)
    with oxicuda.trace() as tr:
        with pytest.raises(TypeError, match="dtype"):
            dnn.layer_norm(np.zeros((2, 3), np.int64))
        with pytest.raises(ValueError, match="normalized_shape"):
            dnn.layer_norm(x, (3, 4))
        for bad in (4.0, (4.0,), (True,), oxicuda.asarray(np.array([4], np.int64)), "4"):
            with pytest.raises(TypeError, match="normalized_shape"):
                dnn.layer_norm(x, bad)
        with pytest.raises(ValueError, match=r"weight has shape \(3,\)"):
            dnn.layer_norm(x, weight=z3)
        with pytest.raises(ValueError, match="bias has shape"):
            dnn.layer_norm(x, bias=np.zeros(5, np.float32))
        with pytest.raises(ValueError, match="eps"):
            dnn.rms_norm(x, eps=-1.0)
        with pytest.raises(ValueError, match="weight has shape"):
            dnn.rms_norm(x, z3)
        with pytest.raises(ValueError, match="running_var has shape"):
            dnn.batch_norm(x, z3, np.zeros(4, np.float32))
        with pytest.raises(ValueError, match="layout"):
            dnn.batch_norm(x, z3, z3, layout="CHWN")
        with pytest.raises(TypeError, match="must match"):
            dnn.batch_norm(x, oxicuda.asarray(z3.astype(np.float16)), z3)
        with pytest.raises(ValueError, match="algo"):
            dnn.layer_norm(x, algo="online")
    assert tr.launches == []


def test_configurations():
    kinds = {(s.kind, s.variant) for s in registry.configurations("sm_86", "dnn_norm")}
    assert kinds == {("layer", "warp"), ("layer", "block"), ("rms", "warp"), ("rms", "block")}
    assert len(registry.configurations("sm_86", "dnn_batchnorm")) == 6
