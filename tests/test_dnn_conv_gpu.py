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
