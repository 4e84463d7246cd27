"""dnn element-wise and reduction ops on a real GPU: bigger sizes, every dispatch branch, and
agreement with PyTorch where it is importable. Skipped off a GPU (see conftest's gpu marker)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import oxicuda
from oxicuda import dnn
from oxicuda.memory.dtypes import host_astype

pytestmark = pytest.mark.gpu


def _torch():
    try:
        import torch

        return torch if torch.cuda.is_available() else None
    except Exception:
        return None


def softmax_ref(x: np.ndarray, log: bool = False) -> np.ndarray:
    x = x.astype(np.float64)
    d = x - x.max(axis=-1, keepdims=True)
    s = np.exp(d).sum(axis=-1, keepdims=True)
    return d - np.log(s) if log else np.exp(d) / s


@pytest.mark.parametrize("rows,cols,variant", [(4096, 1000, "warp"), (512, 4099, "block"),
                                               (8, 1 << 20, "online"), (3, 100003, "online")])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_large_rows_every_variant(rng, rows, cols, variant, log):
    x = (rng.standard_normal((rows, cols)) * 8).astype(np.float32)
    out = oxicuda.full((rows, cols), np.nan, np.float32)
    with oxicuda.trace() as tr:
        dnn.softmax(x, log=log, out=out)
    assert tr.launches[0].spec.variant == variant
    ref = softmax_ref(x, log)
    got = out.get()
    # the rounding of x - max (|x - max| up to ~80 here) dominates: 80 * 2^-24 ~ 5e-6
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 if log else 1e-35)


def test_softmax_fast_math_on_hardware_ex2(rng):
    x = (rng.standard_normal((256, 2048)) * 4).astype(np.float32)
    y = dnn.softmax(x, math="fast").get()
    np.testing.assert_allclose(y, softmax_ref(x), rtol=2e-5, atol=1e-35)


def test_softmax_non_last_axis_large(rng):
    x = rng.standard_normal((16, 300, 129)).astype(np.float32)
    y = dnn.softmax(x, axis=1).get()
    xt = np.moveaxis(x, 1, -1)
    np.testing.assert_allclose(y, np.moveaxis(softmax_ref(xt), -1, 1), rtol=1e-5, atol=1e-35)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_softmax_and_layer_norm_agree_with_torch_in_half_types(rng, dtype):
    torch = _torch()
    if torch is None:
        pytest.skip("PyTorch with CUDA is not importable")
    tdt = {"float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    tx = torch.randn(1024, 3000, device="cuda", dtype=tdt)
    x = oxicuda.asarray(tx)
    ours = torch.from_dlpack(dnn.softmax(x)).float()
    np.testing.assert_allclose(ours.cpu().numpy(), torch.softmax(tx.float(), -1).cpu().numpy(),
                               rtol=1e-2, atol=1e-4)
    ln = torch.from_dlpack(dnn.layer_norm(x)).float()
    ref = torch.nn.functional.layer_norm(tx.float(), (3000,))
    np.testing.assert_allclose(ln.cpu().numpy(), ref.cpu().numpy(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("cols,variant", [(768, "warp"), (8192, "block")])
def test_layer_norm_and_rms_norm_large(rng, cols, variant):
    x = (rng.standard_normal((2048, cols)) + 3).astype(np.float32)
    w = rng.standard_normal(cols).astype(np.float32)
    b = rng.standard_normal(cols).astype(np.float32)
    with oxicuda.trace() as tr:
        y = dnn.layer_norm(x, weight=w, bias=b)
    assert tr.launches[0].spec.variant == variant
    x64 = x.astype(np.float64)
    m = x64.mean(-1, keepdims=True)
    ref = (x64 - m) / np.sqrt(((x64 - m) ** 2).mean(-1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(y.get(), ref, rtol=1e-4, atol=1e-4)
    y = dnn.rms_norm(x, w)
    ref = x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(y.get(), ref, rtol=1e-4, atol=1e-5)


def test_activations_large_with_channel_bias(rng):
    x = (rng.standard_normal((8, 64, 32, 32)) * 3).astype(np.float32)
    bias = rng.standard_normal(64).astype(np.float32)
    v = (x + bias[None, :, None, None]).astype(np.float64)
    erfc = np.vectorize(math.erfc, otypes=[np.float64])
    refs = {
        "relu": lambda: dnn.relu(x, bias, bias_axis=1), "silu": lambda: dnn.silu(x, bias, bias_axis=1),
        "gelu": lambda: dnn.gelu(x, bias, bias_axis=1), "tanh": lambda: dnn.tanh(x, bias, bias_axis=1),
    }
    expected = {"relu": np.maximum(v, 0), "silu": v / (1 + np.exp(-v)), "tanh": np.tanh(v),
                "gelu": 0.5 * v * erfc(-v / math.sqrt(2))}
    for name, call in refs.items():
        np.testing.assert_allclose(call().get(), expected[name], rtol=4e-6, atol=1e-7, err_msg=name)


def test_pooling_agrees_with_torch(rng):
    torch = _torch()
    if torch is None:
        pytest.skip("PyTorch with CUDA is not importable")
    tx = torch.randn(8, 32, 57, 61, device="cuda")
    x = oxicuda.asarray(tx)
    mine = dnn.max_pool2d(x, 3, 2, 1).get()
    ref = torch.nn.functional.max_pool2d(tx, 3, 2, 1).cpu().numpy()
    np.testing.assert_array_equal(mine, ref)
    mine = dnn.avg_pool2d(x, (3, 2), (2, 1), (1, 1), count_include_pad=False).get()
    ref = torch.nn.functional.avg_pool2d(tx, (3, 2), (2, 1), (1, 1), count_include_pad=False).cpu().numpy()
    np.testing.assert_allclose(mine, ref, rtol=1e-6, atol=1e-6)
    nhwc = oxicuda.asarray(tx.permute(0, 2, 3, 1).contiguous())
    mine = dnn.avg_pool2d(nhwc, 2, layout="NHWC").get().transpose(0, 3, 1, 2)
    ref = torch.nn.functional.avg_pool2d(tx, 2).cpu().numpy()
    np.testing.assert_allclose(mine, ref, rtol=1e-6, atol=1e-6)


def test_batch_norm_bf16_large(rng):
    x = rng.standard_normal((16, 64, 28, 28)).astype(np.float32)
    mean = rng.standard_normal(64).astype(np.float32)
    var = (rng.random(64) + 0.5).astype(np.float32)
    args = [oxicuda.asarray(host_astype(a, "bfloat16")) for a in (x, mean, var)]
    y = host_astype(dnn.batch_norm(*args).get(), "float32")
    r = [host_astype(host_astype(a, "bfloat16"), "float32").astype(np.float64) for a in (x, mean, var)]
    ref = (r[0] - r[1][None, :, None, None]) / np.sqrt(r[2][None, :, None, None] + 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1.6e-2, atol=1.6e-2)
