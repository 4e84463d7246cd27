"""conv2d on tensor cores on a real GPU: float16/bfloat16 forward against a float64 convolution of
the same rounded inputs (torch on the GPU) and against torch's own half-precision conv2d (cuDNN),
on every load path and tile the tensor-core family dispatches to."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.dnn import conv_implicit_gemm_tc as tc
from oxicuda.dnn.conv import conv2d
from oxicuda.memory.dtypes import (
    bfloat16_bits_to_float32,
    float32_to_bfloat16_bits,
    normalize_dtype,
)

pytestmark = pytest.mark.gpu

ROUNDING = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


def _rounded(host, dtype):
    if dtype == "float16":
        return host.astype(np.float16).astype(np.float32)
    return bfloat16_bits_to_float32(float32_to_bfloat16_bits(host))


def _device(host32, dtype):
    if dtype == "float16":
        return oxicuda.asarray(host32.astype(np.float16))
    return oxicuda.asarray(float32_to_bfloat16_bits(host32).view(normalize_dtype(dtype)))


def _host(arr, dtype):
    got = arr.get()
    return got.astype(np.float64) if dtype == "float16" else bfloat16_bits_to_float32(got.view(np.uint16)).astype(np.float64)


def _run(rng, n, c, h, w, k, r, s, layout, dtype, bias=False, activation=None, **kw):
    """(ours as float64 NCHW, float64 reference, torch's own half result as float64, spec launched)."""
    torch = _torch()
    g = kw.get("groups", 1)
    hx = _rounded(rng.standard_normal((n, c, h, w), dtype=np.float32), dtype)
    hw_ = _rounded(rng.standard_normal((k, c // g, r, s), dtype=np.float32), dtype)
    hb = _rounded(rng.standard_normal(k, dtype=np.float32), dtype) if bias else None
    nhwc = layout == "NHWC"
    to_l = (lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1))) if nhwc else (lambda a: a)
    tb64 = None if hb is None else torch.from_numpy(hb).cuda().double()
    ref = torch.nn.functional.conv2d(torch.from_numpy(hx).cuda().double(), torch.from_numpy(hw_).cuda().double(),
                                     tb64, **kw)
    if activation == "relu":
        ref = torch.relu(ref)
    ref = ref.cpu().numpy()
    oshape = tuple(ref.shape[i] for i in (0, 2, 3, 1)) if nhwc else ref.shape
    out = _device(np.full(oshape, np.nan, np.float32), dtype)
    with oxicuda.trace() as t:
        conv2d(_device(to_l(hx), dtype), _device(to_l(hw_), dtype), None if hb is None else _device(hb, dtype),
               layout=layout, activation=activation, out=out, **kw)
    got = _host(out, dtype)
    if nhwc:
        got = got.transpose(0, 3, 1, 2)
    tdt = getattr(torch, dtype)
    fmt = torch.channels_last if nhwc else torch.contiguous_format
    theirs = torch.nn.functional.conv2d(torch.from_numpy(hx).cuda().to(tdt).contiguous(memory_format=fmt),
                                        torch.from_numpy(hw_).cuda().to(tdt).contiguous(memory_format=fmt),
                                        None if hb is None else torch.from_numpy(hb).cuda().to(tdt), **kw)
    if activation == "relu":
        theirs = torch.relu(theirs)
    theirs = theirs.double().cpu().numpy()
    specs = [rec.spec for rec in t.launches]
    names = [type(sp).__name__ for sp in specs]
    core = [n for n in names if n != "ConvTcSplitKReduceSpec"]  # split-K adds one reduction launch
    assert core in (["ConvTensorCoreSpec"], ["ChannelsLastSpec"] * 2 + ["ConvTensorCoreSpec"]), names
    assert names.count("ConvTcSplitKReduceSpec") <= 1, names
    _LAST_SPECS[:] = specs
    return got, ref, theirs, next(sp for sp in specs if type(sp).__name__ == "ConvTensorCoreSpec")


_LAST_SPECS: list = []  # every spec the last _run launched


def _check(got, ref, theirs, dtype):
    assert np.isfinite(got).all(), "NaN left in the output: an element was never written"
    scale = max(1.0, np.abs(ref).max())
    # f32 accumulation over up to a few thousand terms: 1e-5 of max|y| covers it on both sides
    bound = ROUNDING[dtype] * np.abs(ref) + 1e-5 * scale
    bad = np.abs(got - ref) > bound
    assert not bad.any(), f"{bad.sum()} elements off; worst {np.abs(got - ref).max() / scale:.3g} of max|y|"
    # and no further from the float64 result than cuDNN's own half-precision conv is (plus one rounding)
    assert np.abs(got - ref).max() <= np.abs(theirs - ref).max() + ROUNDING[dtype] * scale


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("n, c, hw, k", [(4, 64, 28, 64), (2, 130, 15, 70), (8, 128, 14, 128), (2, 3, 33, 16)])
def test_conv3x3_half_matches_float64_and_cudnn(rng, dtype, layout, n, c, hw, k):
    got, ref, theirs, spec = _run(rng, n, c, hw, hw, k, 3, 3, layout, dtype, padding=1)
    assert spec.a_async == (c % 8 == 0)  # NCHW with c % 8 == 0 is transposed to NHWC first
    _check(got, ref, theirs, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("tile, k", [("large", 192), ("wide", 64)])
def test_large_tiles_on_big_problems(rng, dtype, tile, k):
    # 16 x 48 x 48 pixels = 288 CTAs of 128 rows: at least one per SM on the H200, so the big tiles run
    got, ref, theirs, spec = _run(rng, 16, 64, 48, 48, k, 3, 3, "NHWC", dtype, padding=1)
    assert (spec.block_m, spec.block_n) == tc.TILES[tile][:2]
    _check(got, ref, theirs, dtype)


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("kw", [
    {"stride": 2, "padding": (1, 2), "dilation": (2, 1), "groups": 4},
    {"stride": 1, "padding": 2, "dilation": 2, "groups": 2},
    {"stride": (2, 1), "padding": 0, "dilation": 1, "groups": 32},
])
def test_strided_dilated_grouped_conv(rng, layout, kw):
    got, ref, theirs, _ = _run(rng, 3, 32, 21, 19, 48 if kw["groups"] != 32 else 64, 3, 5, layout, "bfloat16", **kw)
    _check(got, ref, theirs, "bfloat16")


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_bias_and_relu_epilogue(rng, layout):
    got, ref, theirs, _spec = _run(rng, 4, 64, 17, 17, 96, 3, 3, layout, "float16", bias=True, activation="relu",
                                  padding=1)
    epilogue = _LAST_SPECS[-1]  # the conv kernel, or split-K's reduction, applies bias and relu
    assert epilogue.bias and epilogue.activation == "relu"
    _check(got, ref, theirs, "float16")


def test_issue_shape_nhwc_fp16_matches_cudnn(rng):
    # one of the benchmark shapes at full size: the large-grid path the bench times
    got, ref, theirs, spec = _run(rng, 32, 128, 28, 28, 128, 3, 3, "NHWC", "float16", padding=1)
    assert spec.a_async and spec.b_async
    _check(got, ref, theirs, "float16")
