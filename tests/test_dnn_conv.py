"""conv2d implicit GEMM (forward, backward data, backward filter) against float64 references,
bad input, and dispatch reachability."""

from __future__ import annotations

import numpy as np
import pytest
from test_dnn_conv_reference import (
    as_float64,
    conv2d_backward_data_ref,
    conv2d_backward_filter_ref,
    conv2d_ref,
    pair,
    to_dtype,
)

import oxicuda
from oxicuda.dnn import conv as conv_mod
from oxicuda.dnn.conv import conv2d, conv2d_backward_data, conv2d_backward_filter
from oxicuda.dnn.conv_epilogue import reference_activation

TOL = {"float32": 2e-6, "float16": 2e-3, "bfloat16": 1.6e-2}


def run_conv(rng, n, c, h, w, k, r, s, stride=1, padding=0, dilation=1, groups=1, layout="NCHW",
             dtype="float32", bias=False, activation=None, algo="implicit_gemm"):
    """Run conv2d on fresh random data and return (ours as float64 NCHW, reference)."""
    x = to_dtype(rng.standard_normal((n, c, h, w)).astype(np.float32), dtype)
    wt = to_dtype(rng.standard_normal((k, c // groups, r, s)).astype(np.float32), dtype)
    b = to_dtype(rng.standard_normal(k).astype(np.float32), dtype) if bias else None
    xd, wd = (x, wt) if layout == "NCHW" else (x.transpose(0, 2, 3, 1), wt.transpose(0, 2, 3, 1))
    ref = conv2d_ref(as_float64(x), as_float64(wt), pair(stride), pair(padding), pair(dilation), groups)
    xd, wd = oxicuda.asarray(np.ascontiguousarray(xd)), oxicuda.asarray(np.ascontiguousarray(wd))
    bd = None if b is None else oxicuda.asarray(b)
    y_shape = ref.shape if layout == "NCHW" else tuple(ref.shape[i] for i in (0, 2, 3, 1))
    out = poisoned(y_shape, dtype)
    y = conv2d(xd, wd, bd, stride=stride, padding=padding, dilation=dilation,
               groups=groups, layout=layout, activation=activation, algo=algo, out=out)
    assert y is out
    got = as_float64(y.get())
    if layout == "NHWC":
        got = got.transpose(0, 3, 1, 2)
    if b is not None:
        ref = ref + as_float64(b)[None, :, None, None]
    return got, reference_activation(ref, activation)


def poisoned(shape, dtype="float32"):
    """A device array of ``shape`` filled with NaN (unwritten elements show up as NaN)."""
    a = oxicuda.empty(tuple(shape), dtype)
    a.set(to_dtype(np.full(tuple(shape), np.nan, np.float32), dtype))  # fill(nan) fails for bf16 0-d scalars
    return a


def assert_close(got, ref, dtype="float32", scale=None):
    assert got.shape == ref.shape
    assert np.isfinite(got).all(), "output has NaN/inf (an element was never written?)"
    scale = scale if scale is not None else max(1.0, np.abs(ref).max())
    err = np.abs(got - ref).max() / scale
    assert err <= TOL[dtype], f"max error {err:.3g} relative to max|ref| exceeds {TOL[dtype]}"


GEOMETRIES = [
    # n, c, h, w, k, r, s, stride, padding, dilation, groups
    (2, 4, 7, 9, 6, 3, 3, 2, 1, 1, 2),
    (1, 3, 8, 6, 5, 5, 3, (2, 1), (0, 2), (1, 2), 1),
    (1, 4, 6, 7, 8, 3, 3, 1, 2, 2, 4),   # depthwise-like: groups = C, dilation 2
    (2, 5, 5, 5, 3, 1, 1, 1, 0, 1, 1),   # 1x1
    (1, 2, 9, 9, 4, 3, 3, 3, 0, 1, 1),
]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("geom", GEOMETRIES, ids=lambda g: "x".join(map(str, g[:7])))
def test_implicit_gemm_forward_matches_float64_reference(rng, layout, geom):
    got, ref = run_conv(rng, *geom[:7], stride=geom[7], padding=geom[8], dilation=geom[9], groups=geom[10],
                        layout=layout)
    assert_close(got, ref)


@pytest.mark.parametrize("activation", [None, "relu", "silu", "gelu"])
def test_implicit_gemm_fuses_bias_and_activation(rng, activation):
    got, ref = run_conv(rng, 1, 3, 6, 5, 5, 3, 3, padding=1, bias=True, activation=activation)
    assert_close(got, ref)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_implicit_gemm_half_types_accumulate_in_float32(rng, dtype, layout):
    got, ref = run_conv(rng, 1, 4, 5, 6, 3, 3, 3, padding=1, layout=layout, dtype=dtype, bias=True,
                        activation="relu")
    assert_close(got, ref, dtype, scale=max(1.0, np.abs(ref).max()))


def test_implicit_gemm_tiles_past_one_cta(rng):
    # M = 2*10*10 = 200 pixels and K = 70 output channels: several CTAs in both directions
    got, ref = run_conv(rng, 2, 3, 10, 10, 70, 3, 3, padding=1)
    assert_close(got, ref)


BACKWARD = [
    (2, 4, 7, 6, 6, 3, 2, (2, 1), (1, 0), (1, 2), 2),
    (1, 3, 6, 6, 4, 3, 3, 1, 1, 1, 1),
    (1, 4, 9, 8, 4, 3, 3, 2, 2, 2, 4),
]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("geom", BACKWARD, ids=lambda g: "x".join(map(str, g[:7])))
def test_backward_data_and_filter_match_float64_references(rng, layout, geom):
    n, c, h, w, k, r, s, st, pad, dil, g = geom
    st, pad, dil = pair(st), pair(pad), pair(dil)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((k, c // g, r, s)).astype(np.float32)
    y_shape = conv2d_ref(x, wt, st, pad, dil, g).shape
    dy = rng.standard_normal(y_shape).astype(np.float32)
    nhwc = layout == "NHWC"
    to_l = (lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1))) if nhwc else (lambda a: a)
    from_l = (lambda a: a.transpose(0, 3, 1, 2)) if nhwc else (lambda a: a)
    x_shape = to_l(x).shape
    w_shape = to_l(wt).shape
    dx = conv2d_backward_data(oxicuda.asarray(to_l(dy)), oxicuda.asarray(to_l(wt)), x_shape, st, pad, dil, g,
                              layout=layout, out=poisoned(x_shape))
    dw = conv2d_backward_filter(oxicuda.asarray(to_l(x)), oxicuda.asarray(to_l(dy)), w_shape, st, pad, dil, g,
                                layout=layout, out=poisoned(w_shape))
    assert_close(from_l(dx.get().astype(np.float64)), conv2d_backward_data_ref(dy, wt, x.shape, st, pad, dil, g))
    assert_close(from_l(dw.get().astype(np.float64)), conv2d_backward_filter_ref(x, dy, wt.shape, st, pad, dil, g))


# -- bad input ------------------------------------------------------------------------------------
def _arrays(xs=(1, 4, 6, 6), ws=(4, 4, 3, 3), dtype=np.float32, wdtype=None):
    return oxicuda.asarray(np.zeros(xs, dtype)), oxicuda.asarray(np.zeros(ws, wdtype or dtype))


@pytest.mark.parametrize("kwargs, exc, text", [
    ({"ws": (4, 3, 3, 3)}, ValueError, "input channels per group"),
    ({"xs": (1, 4, 6)}, ValueError, "4-D"),
    ({"ws": (4, 4, 9, 9)}, ValueError, "filter must fit"),
    ({"wdtype": np.float16}, TypeError, "must match"),
    ({"dtype": np.int32}, TypeError, "allowed dtypes"),
])
def test_bad_shapes_and_dtypes_raise_before_launch(kwargs, exc, text):
    x, w = _arrays(**kwargs)
    with oxicuda.trace() as t, pytest.raises(exc, match=text):
        conv2d(x, w)
    assert t.launches == []


@pytest.mark.parametrize("kwargs, exc, text", [
    ({"stride": 0}, ValueError, "stride"),
    ({"padding": -1}, ValueError, "padding"),
    ({"dilation": (1, 2, 3)}, TypeError, "dilation"),
    ({"groups": 3}, ValueError, "groups"),
    ({"layout": "CHWN"}, ValueError, "layout"),
    ({"activation": "tanh"}, ValueError, "activation"),
    ({"algo": "fft"}, ValueError, "algo"),
    ({"algo": "winograd", "stride": 2}, ValueError, "3x3 filter, stride 1"),
    ({"bias": np.zeros(3, np.float32)}, ValueError, "bias has shape"),
])
def test_bad_parameters_raise_before_launch(kwargs, exc, text):
    x, w = _arrays()
    with oxicuda.trace() as t, pytest.raises(exc, match=text):
        conv2d(x, w, **kwargs)
    assert t.launches == []


def test_backward_rejects_mismatched_dy_and_unknown_algo():
    w = oxicuda.asarray(np.zeros((4, 2, 3, 3), np.float32))
    dy = oxicuda.asarray(np.zeros((1, 4, 5, 5), np.float32))
    with pytest.raises(ValueError, match="dy has shape"):
        conv2d_backward_data(dy, w, (1, 4, 6, 6), groups=2)
    with pytest.raises(ValueError, match="algo"):
        conv2d_backward_data(dy, w, (1, 4, 7, 7), groups=2, algo="winograd")
    x = oxicuda.asarray(np.zeros((1, 4, 7, 7), np.float32))
    with pytest.raises(ValueError, match="dy has shape"):
        conv2d_backward_filter(x, oxicuda.asarray(np.zeros((1, 4, 4, 4), np.float32)), (4, 2, 3, 3), groups=2)


def test_kernel_specs_are_recorded_in_the_trace(rng):
    with oxicuda.trace() as t:
        run_conv(rng, 1, 2, 4, 4, 2, 3, 3, padding=1, algo="implicit_gemm")
    assert [type(r.spec).__name__ for r in t.launches] == ["ConvFpropF32Spec"]
    w = oxicuda.asarray(np.zeros((2, 2, 3, 3), np.float32))
    with oxicuda.trace() as t:
        conv2d_backward_data(oxicuda.asarray(np.zeros((1, 2, 4, 4), np.float32)), w, (1, 2, 4, 4), padding=1)
    assert [type(r.spec).__name__ for r in t.launches] == ["ConvImplicitGemmSpec"]
    assert t.launches[0].spec.mode == "bwd_data"


def test_out_must_match_the_result():
    x, w = _arrays()
    with pytest.raises(ValueError, match="out has shape"):
        conv2d(x, w, out=oxicuda.empty((1, 4, 4, 5), "float32"))
    with pytest.raises(ValueError, match="out has shape"):
        conv2d(x, w, out=oxicuda.empty((1, 4, 4, 4), "float16"))


def test_module_exports_public_names():
    assert callable(conv_mod.conv2d) and "conv2d" in conv_mod.__all__
