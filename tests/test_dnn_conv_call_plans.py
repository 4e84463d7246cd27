"""conv2d reuses the plan of a call signature it has checked and dispatched (Winograd and the
float32 implicit GEMM): a repeated call only packs pointers. Reuse must not change results or
checks: new arrays of the same signature (poisoned outputs, random inputs) come out right, the
same kernels launch as on the first call, and anything outside the signature (another shape,
dtype, alignment, parameter kind) is checked again and refused as before."""

from __future__ import annotations

import numpy as np
import pytest
from test_dnn_conv_reference import conv2d_ref

import oxicuda
from oxicuda.dnn import conv as conv_module
from oxicuda.dnn.conv import conv2d


def _rel(got, ref) -> float:
    return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))


def _arrays(rng, n, c, h, k, layout="NCHW"):
    x = rng.standard_normal((n, c, h, h)).astype(np.float32)
    w = rng.standard_normal((k, c, 3, 3)).astype(np.float32)
    if layout == "NHWC":
        return x, w, oxicuda.asarray(np.ascontiguousarray(x.transpose(0, 2, 3, 1))), \
            oxicuda.asarray(np.ascontiguousarray(w.transpose(0, 2, 3, 1)))
    return x, w, oxicuda.asarray(x), oxicuda.asarray(w)


@pytest.mark.parametrize("algo", [None, "winograd_4x4", "winograd_2x2", "implicit_gemm", "winograd"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_repeated_signatures_compute_each_call_right(rng, algo, layout):
    n, c, h, k = 2, 4, 8, 6
    bias_h = rng.standard_normal(k).astype(np.float32)
    bias = oxicuda.asarray(bias_h)
    kernels = None
    for call in range(3):
        x, w, dx, dw = _arrays(rng, n, c, h, k, layout)
        shape = (n, k, h, h) if layout == "NCHW" else (n, h, h, k)
        out = oxicuda.asarray(np.full(shape, np.nan, np.float32))
        with oxicuda.trace() as t:
            y = conv2d(dx, dw, bias, padding=1, layout=layout, activation="relu", algo=algo, out=out)
        assert y is out
        ref = np.maximum(conv2d_ref(x, w, (1, 1), (1, 1)) + bias_h[None, :, None, None], 0)
        got = y.get() if layout == "NCHW" else y.get().transpose(0, 3, 1, 2)
        assert _rel(got, ref) < 2e-5, (call, algo, layout)
        names = [r.kernel for r in t.launches]
        assert kernels is None or names == kernels  # the cached plan launches what the first call did
        kernels = names
    assert len(conv_module._CALL_PLANS) == 1


def test_a_new_output_array_per_call_and_the_stream_of_x(rng):
    stream = oxicuda.Stream()
    for _ in range(2):
        x, w, _, _ = _arrays(rng, 1, 3, 6, 5)
        dx, dw = oxicuda.asarray(x, stream=stream), oxicuda.asarray(w, stream=stream)
        y = conv2d(dx, dw, padding=1, algo="winograd_2x2")
        assert y.stream == stream.handle
        assert _rel(y.get(stream=stream), conv2d_ref(x, w, (1, 1), (1, 1))) < 2e-5


def test_checks_outside_the_signature_still_run(rng):
    x, w, dx, dw = _arrays(rng, 1, 4, 6, 4)
    conv2d(dx, dw, padding=1, algo="winograd_4x4")
    assert len(conv_module._CALL_PLANS) == 1
    with pytest.raises(TypeError, match="padding"):
        conv2d(dx, dw, padding=1.0, algo="winograd_4x4")  # 1.0 == 1 and hashes alike: never reused
    with pytest.raises(ValueError, match="out has shape"):
        conv2d(dx, dw, padding=1, algo="winograd_4x4", out=oxicuda.empty((1, 4, 6, 5), np.float32))
    with pytest.raises(TypeError, match="dtype"):
        conv2d(dx, oxicuda.asarray(w.astype(np.float16)), padding=1, algo="winograd_4x4")
    with pytest.raises(ValueError, match="algo"):
        conv2d(dx, dw, padding=1, algo="winograd_5x5")
    # an output 4 bytes off the 16-byte alignment the first call had: a new plan (no row vectors)
    big = oxicuda.asarray(np.full(1 + 4 * 36, np.nan, np.float32))
    out = big[1:].reshape(1, 4, 6, 6)
    y = conv2d(dx, dw, padding=1, algo="winograd_4x4", out=out)
    assert _rel(y.get(), conv2d_ref(x, w, (1, 1), (1, 1))) < 2e-5
    assert len(conv_module._CALL_PLANS) == 2


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_tensor_core_signatures_compute_each_call_right(rng, layout, dtype):
    n, c, h, k = 2, 16, 6, 16
    kernels = None
    for call in range(3):
        x, w, _, _ = _arrays(rng, n, c, h, k)
        dx = oxicuda.asarray(x if layout == "NCHW" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))).astype(dtype)
        dw = oxicuda.asarray(w if layout == "NCHW" else np.ascontiguousarray(w.transpose(0, 2, 3, 1))).astype(dtype)
        # the reference from the rounded inputs the kernel sees
        xr = dx.astype(np.float32).get()
        wr = dw.astype(np.float32).get()
        if layout == "NHWC":
            xr, wr = xr.transpose(0, 3, 1, 2), wr.transpose(0, 3, 1, 2)
        with oxicuda.trace() as t:
            y = conv2d(dx, dw, padding=1, layout=layout, algo="implicit_gemm")
        got = y.astype(np.float32).get()
        got = got if layout == "NCHW" else got.transpose(0, 3, 1, 2)
        assert _rel(got, conv2d_ref(xr.astype(np.float64), wr.astype(np.float64), (1, 1), (1, 1))) < 1e-2, call
        names = [r.kernel for r in t.launches]
        assert any("tc" in name or "tensor" in name for name in names), names
        assert kernels is None or names == kernels
        kernels = names
