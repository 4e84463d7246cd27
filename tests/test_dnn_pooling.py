"""oxicuda.dnn max_pool2d / avg_pool2d on the live backend against a float64 numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda import dnn
from oxicuda.memory.dtypes import host_astype


def ref_pool(x, kind, k, s, p, count_include_pad=True):
    """NCHW float64 reference, PyTorch floor mode."""
    (kh, kw), (sh, sw), (ph, pw) = k, s, p
    n, c, h, w = x.shape
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    inside = np.pad(np.ones((h, w)), ((ph, ph), (pw, pw)))
    out = np.empty((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))  # np.max propagates NaN, as PyTorch does
            else:
                denom = kh * kw if count_include_pad else inside[i * sh:i * sh + kh, j * sw:j * sw + kw].sum()
                out[:, :, i, j] = win.sum(axis=(2, 3)) / denom
    return out


CASES = [  # shape (N, C, H, W), kernel, stride, padding
    ((1, 1, 1, 1), (1, 1), (1, 1), (0, 0)),
    ((2, 3, 7, 6), (3, 3), (2, 2), (1, 1)),
    ((1, 2, 9, 5), (2, 3), (1, 2), (1, 0)),
    ((2, 1, 5, 5), (5, 5), (1, 1), (2, 2)),
]


@pytest.mark.parametrize("shape,k,s,p", CASES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("kind,include", [("max", True), ("avg", True), ("avg", False)])
def test_pooling_matches_float64_reference(rng, shape, k, s, p, layout, kind, include):
    x = rng.standard_normal(shape).astype(np.float32)
    xin = x if layout == "NCHW" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    with oxicuda.trace() as tr:
        if kind == "max":
            y = dnn.max_pool2d(xin, k, s, p, layout=layout)
        else:
            y = dnn.avg_pool2d(xin, k, s, p, layout=layout, count_include_pad=include)
    assert tr.launches[0].spec.op == kind and tr.launches[0].spec.layout == layout
    got = y.get()
    if layout == "NHWC":
        got = got.transpose(0, 3, 1, 2)
    ref = ref_pool(x.astype(np.float64), kind, k, s, p, include)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


def test_stride_defaults_to_kernel_and_max_propagates_nan(rng):
    x = rng.standard_normal((1, 2, 4, 6)).astype(np.float32)
    x[0, 1, 2, 3] = np.nan
    y = dnn.max_pool2d(x, 2).get()
    ref = ref_pool(x.astype(np.float64), "max", (2, 2), (2, 2), (0, 0))
    assert y.shape == (1, 2, 2, 3)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
    np.testing.assert_allclose(y[~np.isnan(y)], ref[~np.isnan(ref)], rtol=0, atol=0)


@pytest.mark.parametrize("dtype,tol", [("float16", 2e-3), ("bfloat16", 1.6e-2)])
def test_pooling_half_types(rng, dtype, tol):
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    xd = oxicuda.asarray(host_astype(x, dtype))
    xr = host_astype(host_astype(x, dtype), "float32").astype(np.float64)
    for kind, fn in (("max", dnn.max_pool2d), ("avg", dnn.avg_pool2d)):
        y = fn(xd, 3, 1, 1)
        assert y.dtype == xd.dtype
        np.testing.assert_allclose(host_astype(y.get(), "float32"), ref_pool(xr, kind, (3, 3), (1, 1), (1, 1)),
                                   rtol=tol, atol=tol)


def test_bad_input_raises_before_launch():
    x = oxicuda.asarray(np.zeros((1, 1, 4, 4), np.float32))
    with oxicuda.trace() as tr:
        with pytest.raises(ValueError, match="larger than the padded input"):
            dnn.max_pool2d(x, 7, padding=1)
        with pytest.raises(ValueError, match="at most half"):
            dnn.avg_pool2d(x, 2, padding=2)
        with pytest.raises(ValueError, match="4-d"):
            dnn.max_pool2d(np.zeros((4, 4), np.float32), 2)
        with pytest.raises(TypeError, match="dtype"):
            dnn.max_pool2d(np.zeros((1, 1, 4, 4), np.int32), 2)
        with pytest.raises(ValueError, match="stride"):
            dnn.max_pool2d(x, 2, stride=0)
        with pytest.raises(TypeError, match="kernel_size"):
            dnn.max_pool2d(x, (2, 2, 2))
        with pytest.raises(ValueError, match="layout"):
            dnn.max_pool2d(x, 2, layout="CHWN")
    assert tr.launches == []
