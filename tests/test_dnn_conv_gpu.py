"""conv2d on a real GPU: bigger shapes against PyTorch (float64 on the GPU as the reference)."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.dnn.conv import conv2d, conv2d_backward_data, conv2d_backward_filter

pytestmark = pytest.mark.gpu


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


@pytest.mark.parametrize("algo", ["implicit_gemm", "winograd_2x2", "winograd_4x4", "im2col", None])
@pytest.mark.parametrize("n, c, hw, k", [(4, 64, 28, 64), (2, 130, 15, 70)])
def test_conv3x3_matches_torch_float64(rng, algo, n, c, hw, k):
    torch = _torch()
    hx = rng.standard_normal((n, c, hw, hw), dtype=np.float32)
    hw_ = rng.standard_normal((k, c, 3, 3), dtype=np.float32)
    out = oxicuda.full((n, k, hw, hw), np.nan, "float32")
    conv2d(oxicuda.asarray(hx), oxicuda.asarray(hw_), padding=1, algo=algo, out=out)
    ref = torch.nn.functional.conv2d(torch.from_numpy(hx).cuda().double(), torch.from_numpy(hw_).cuda().double(),
                                     padding=1).cpu().numpy()
    err = np.abs(out.get() - ref).max() / np.abs(ref).max()
    assert err < 2e-5, f"{algo}: {err:.3g}"


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_strided_grouped_conv_and_gradients_match_torch(rng, layout):
    torch = _torch()
    n, c, h, w, k, g = 3, 32, 21, 19, 48, 4
    kw = {"stride": 2, "padding": (1, 2), "dilation": (2, 1), "groups": g}
    hx = rng.standard_normal((n, c, h, w), dtype=np.float32)
    hw_ = rng.standard_normal((k, c // g, 3, 5), dtype=np.float32)
    tx = torch.from_numpy(hx).cuda().double().requires_grad_()
    tw = torch.from_numpy(hw_).cuda().double().requires_grad_()
    ty = torch.nn.functional.conv2d(tx, tw, **kw)
    hdy = rng.standard_normal(tuple(ty.shape), dtype=np.float32)
    ty.backward(torch.from_numpy(hdy).cuda().double())
    to_l = (lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1))) if layout == "NHWC" else (lambda a: a)
    from_l = (lambda a: a.transpose(0, 3, 1, 2)) if layout == "NHWC" else (lambda a: a)
    y = conv2d(oxicuda.asarray(to_l(hx)), oxicuda.asarray(to_l(hw_)), layout=layout, **kw)
    dx = conv2d_backward_data(oxicuda.asarray(to_l(hdy)), oxicuda.asarray(to_l(hw_)), to_l(hx).shape,
                              layout=layout, **kw)
    dw = conv2d_backward_filter(oxicuda.asarray(to_l(hx)), oxicuda.asarray(to_l(hdy)), to_l(hw_).shape,
                                layout=layout, **kw)
    for got, ref in ((from_l(y.get()), ty.detach()), (from_l(dx.get()), tx.grad), (from_l(dw.get()), tw.grad)):
        ref = ref.cpu().numpy()
        assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-5


# -- the float32 implicit-GEMM kernel: every tile, split-K, layouts, vector paths --------------------
def _torch_ref(torch, hx, hw_, **kw):
    return torch.nn.functional.conv2d(torch.from_numpy(hx).cuda().double(), torch.from_numpy(hw_).cuda().double(),
                                      **kw).cpu().numpy()


def _forced(monkeypatch, geo_args, tile, splits):
    from oxicuda.dnn import conv_dispatch
    from oxicuda.dnn.conv import make_geometry

    geo = make_geometry(*geo_args)
    monkeypatch.setitem(conv_dispatch.MEASURED, conv_dispatch.shape_key(geo.problem), ("implicit_gemm", tile, splits))


@pytest.mark.parametrize("splits", [1, 3])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("tile", ["128x128", "128x64", "64x128", "64x64", "128x128k16"])
def test_f32_implicit_gemm_tiles_match_torch(rng, monkeypatch, tile, layout, splits):
    torch = _torch()
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    n, c, h, w, k = 3, 64, 17, 19, 96
    hx = rng.standard_normal((n, c, h, w), dtype=np.float32)
    hw_ = rng.standard_normal((k, c, 3, 3), dtype=np.float32)
    hb = rng.standard_normal(k, dtype=np.float32)
    to_l = (lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1))) if layout == "NHWC" else (lambda a: a)
    _forced(monkeypatch, (to_l(hx).shape, to_l(hw_).shape, 1, 1, 1, 1, layout, "f32", "t"), tile, splits)
    out_shape = (n, k, h, w) if layout == "NCHW" else (n, h, w, k)
    out = oxicuda.full(out_shape, np.nan, "float32")
    with oxicuda.trace() as t:
        conv2d(oxicuda.asarray(to_l(hx)), oxicuda.asarray(to_l(hw_)), oxicuda.asarray(hb), padding=1,
               layout=layout, activation="relu", algo="implicit_gemm", out=out)
    spec = t.launches[0].spec
    assert type(spec).__name__ == "ConvFpropF32Spec" and spec.split_k == (splits > 1)
    got = out.get() if layout == "NCHW" else out.get().transpose(0, 3, 1, 2)
    ref = np.maximum(_torch_ref(torch, hx, hw_, padding=1) + hb[None, :, None, None], 0.0)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    assert np.isfinite(got).all() and err < 2e-6, f"{tile} {layout} splits={splits}: {err:.3g}"
    tf32_off = torch.nn.functional.relu(torch.nn.functional.conv2d(
        torch.from_numpy(hx).cuda(), torch.from_numpy(hw_).cuda(), torch.from_numpy(hb).cuda(), padding=1)).cpu().numpy()
    assert np.abs(got - tf32_off).max() / np.abs(ref).max() < 4e-6


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_f32_implicit_gemm_unaligned_pointers_use_scalar_paths(rng, layout):
    torch = _torch()
    n, c, h, w, k = 2, 32, 9, 10, 40
    hx = rng.standard_normal((n, c, h, w), dtype=np.float32)
    hw_ = rng.standard_normal((k, c, 3, 3), dtype=np.float32)
    to_l = (lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1))) if layout == "NHWC" else (lambda a: a)
    xl, wl = to_l(hx), to_l(hw_)
    # one float past a 16-byte boundary: contiguous, but no 16-byte vector access is legal
    xbuf = oxicuda.asarray(np.concatenate([np.zeros(1, np.float32), xl.ravel()]))
    wbuf = oxicuda.asarray(np.concatenate([np.zeros(1, np.float32), wl.ravel()]))
    x, wt = xbuf[1:].reshape(xl.shape), wbuf[1:].reshape(wl.shape)
    with oxicuda.trace() as t:
        y = conv2d(x, wt, padding=1, layout=layout, algo="implicit_gemm")
    spec = t.launches[0].spec
    assert (spec.vec_a, spec.vec_b) == (1, 1)
    got = y.get() if layout == "NCHW" else y.get().transpose(0, 3, 1, 2)
    ref = _torch_ref(torch, hx, hw_, padding=1)
    assert np.abs(got - ref).max() / np.abs(ref).max() < 2e-6


@pytest.mark.parametrize("algo", [None, "implicit_gemm", "winograd_2x2", "winograd_4x4", "im2col"])
@pytest.mark.parametrize("n, c, hw, k", [(4, 64, 56, 64), (4, 128, 28, 128), (4, 256, 14, 256), (2, 512, 7, 512)])
def test_issue_shapes_every_algorithm_matches_torch(rng, algo, n, c, hw, k):
    torch = _torch()
    hx = rng.standard_normal((n, c, hw, hw), dtype=np.float32)
    hw_ = rng.standard_normal((k, c, 3, 3), dtype=np.float32)
    out = oxicuda.full((n, k, hw, hw), np.nan, "float32")
    conv2d(oxicuda.asarray(hx), oxicuda.asarray(hw_), padding=1, algo=algo, out=out)
    ref = _torch_ref(torch, hx, hw_, padding=1)
    err = np.abs(out.get() - ref).max() / np.abs(ref).max()
    assert err < 2e-5, f"{algo}: {err:.3g}"


@pytest.mark.parametrize("kw", [{"stride": 2, "padding": 1}, {"padding": 0}, {"dilation": 2, "padding": 2}],
                         ids=str)
@pytest.mark.parametrize("r", [1, 3])
def test_f32_implicit_gemm_strides_and_1x1_match_torch(rng, kw, r):
    torch = _torch()
    hx = rng.standard_normal((2, 48, 23, 21), dtype=np.float32)
    hw_ = rng.standard_normal((80, 48, r, r), dtype=np.float32)
    y = conv2d(oxicuda.asarray(hx), oxicuda.asarray(hw_), algo="implicit_gemm", **kw)
    ref = _torch_ref(torch, hx, hw_, **kw)
    assert np.abs(y.get() - ref).max() / np.abs(ref).max() < 2e-6


@pytest.mark.parametrize("algo", ["winograd_2x2", "winograd_4x4"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_winograd_groups_bias_activation_layouts_match_torch(rng, algo, layout):
    torch = _torch()
    n, c, h, w, k, g = 3, 96, 19, 22, 128, 2
    hx = rng.standard_normal((n, c, h, w), dtype=np.float32)
    hw_ = rng.standard_normal((k, c // g, 3, 3), dtype=np.float32)
    hb = rng.standard_normal(k, dtype=np.float32)
    to_l = (lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1))) if layout == "NHWC" else (lambda a: a)
    out_shape = (n, k, h, w) if layout == "NCHW" else (n, h, w, k)
    out = oxicuda.full(out_shape, np.nan, "float32")
    with oxicuda.trace() as t:
        conv2d(oxicuda.asarray(to_l(hx)), oxicuda.asarray(to_l(hw_)), oxicuda.asarray(hb), padding=1, groups=g,
               layout=layout, activation="silu", algo=algo, out=out)
    assert "WinogradSpec" in [type(r.spec).__name__ for r in t.launches]
    got = out.get() if layout == "NCHW" else out.get().transpose(0, 3, 1, 2)
    ref = _torch_ref(torch, hx, hw_, padding=1, groups=g) + hb[None, :, None, None]
    ref = ref / (1.0 + np.exp(-ref))
    err = np.abs(got - ref).max() / np.abs(ref).max()
    assert np.isfinite(got).all() and err < 2e-5, f"{algo} {layout}: {err:.3g}"
