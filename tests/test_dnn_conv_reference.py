"""float64 numpy references for conv2d and its gradients (direct loops over filter taps), and the
tests that the references themselves agree with an independent definition."""

from __future__ import annotations

import numpy as np

from oxicuda.memory.dtypes import bfloat16_bits_to_float32, float32_to_bfloat16_bits


def _out_size(size: int, k: int, st: int, pad: int, dil: int) -> int:
    return (size + 2 * pad - dil * (k - 1) - 1) // st + 1


def conv2d_ref(x, w, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    """NCHW x (N,C,H,W), w (K,C/g,R,S) -> y (N,K,OH,OW) in float64."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n, _, h, wd = x.shape
    k, cg, r, s = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    oh, ow = _out_size(h, r, sh, ph, dh), _out_size(wd, s, sw, pw, dw)
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    y = np.zeros((n, k, oh, ow))
    kg = k // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(r):
            for j in range(s):
                patch = xs[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
                y[:, g * kg:(g + 1) * kg] += np.einsum("nchw,kc->nkhw", patch, w[g * kg:(g + 1) * kg, :, i, j])
    return y


def conv2d_backward_data_ref(dy, w, x_shape, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    """dx (N,C,H,W) of the NCHW conv, in float64 (the adjoint of conv2d_ref in x)."""
    dy, w = np.asarray(dy, np.float64), np.asarray(w, np.float64)
    n, c, h, wd = x_shape
    k, cg, r, s = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    oh, ow = dy.shape[2:]
    dxp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw))
    kg = k // groups
    for g in range(groups):
        for i in range(r):
            for j in range(s):
                contrib = np.einsum("nkhw,kc->nchw", dy[:, g * kg:(g + 1) * kg], w[g * kg:(g + 1) * kg, :, i, j])
                dxp[:, g * cg:(g + 1) * cg, i * dh: i * dh + sh * (oh - 1) + 1: sh,
                    j * dw: j * dw + sw * (ow - 1) + 1: sw] += contrib
    return dxp[:, :, ph:ph + h, pw:pw + wd]


def conv2d_backward_filter_ref(x, dy, w_shape, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    """dw (K,C/g,R,S) of the NCHW conv, in float64."""
    x, dy = np.asarray(x, np.float64), np.asarray(dy, np.float64)
    k, cg, r, s = w_shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    oh, ow = dy.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    out = np.zeros(w_shape)
    kg = k // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(r):
            for j in range(s):
                patch = xs[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
                out[g * kg:(g + 1) * kg, :, i, j] = np.einsum("nkhw,nchw->kc", dy[:, g * kg:(g + 1) * kg], patch)
    return out


def pair(v):
    """A conv argument as (h, w): a tuple as given, a scalar twice."""
    return tuple(v) if isinstance(v, tuple) else (v, v)


def to_dtype(host: np.ndarray, dtype: str) -> np.ndarray:
    """float32 host data rounded to ``dtype`` (float32, float16 or bfloat16 as numpy can hold it)."""
    if dtype == "float32":
        return host.astype(np.float32)
    if dtype == "float16":
        return host.astype(np.float16)
    from oxicuda.memory.dtypes import normalize_dtype

    bits = float32_to_bfloat16_bits(host.astype(np.float32))
    return bits.view(normalize_dtype("bfloat16"))


def as_float64(arr: np.ndarray) -> np.ndarray:
    """Host data of any supported dtype (bfloat16 included) as float64."""
    if arr.dtype.kind == "f":
        return arr.astype(np.float64)
    return bfloat16_bits_to_float32(arr.view(np.uint16)).astype(np.float64)


def test_reference_conv_matches_a_scalar_loop_definition():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((1, 4, 6, 5)), rng.standard_normal((4, 2, 2, 3))
    st, pad, dil, g = (2, 1), (1, 2), (2, 1), 2
    y = conv2d_ref(x, w, st, pad, dil, g)
    _, _, h, wd = x.shape
    for ko in range(4):
        for a in range(y.shape[2]):
            for b in range(y.shape[3]):
                acc = 0.0
                gi = ko // 2
                for cc in range(2):
                    for i in range(2):
                        for j in range(3):
                            ih, iw = a * st[0] - pad[0] + i * dil[0], b * st[1] - pad[1] + j * dil[1]
                            if 0 <= ih < h and 0 <= iw < wd:
                                acc += x[0, gi * 2 + cc, ih, iw] * w[ko, cc, i, j]
                assert abs(y[0, ko, a, b] - acc) < 1e-12


def test_reference_gradients_are_the_adjoints_of_the_reference_conv():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((2, 4, 7, 6)), rng.standard_normal((6, 2, 3, 2))
    args = ((2, 1), (1, 0), (1, 2), 2)
    y = conv2d_ref(x, w, *args)
    dy = rng.standard_normal(y.shape)
    dx = conv2d_backward_data_ref(dy, w, x.shape, *args)
    dw = conv2d_backward_filter_ref(x, dy, w.shape, *args)
    # <conv(x, w), dy> == <x, dx> == <w, dw> (bilinearity)
    assert np.isclose((y * dy).sum(), (x * dx).sum(), rtol=1e-12)
    assert np.isclose((y * dy).sum(), (w * dw).sum(), rtol=1e-12)
