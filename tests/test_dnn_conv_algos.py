"""conv2d by Winograd F(2x2,3x3)/F(4x4,3x3) and by im2col + GEMM against float64 references and
against implicit GEMM; dispatch reaches every algorithm (trace)."""

from __future__ import annotations

import numpy as np
import pytest
from test_dnn_conv import assert_close, run_conv
from test_dnn_conv_reference import conv2d_ref

import oxicuda
from oxicuda.dnn import conv_dispatch
from oxicuda.dnn.conv import conv2d
from oxicuda.dnn.conv_dispatch import ConvProblem, choose_algo
from oxicuda.dnn.conv_winograd import winograd_reference

WINOGRAD_F32_BOUND = 2e-5  # of max|y|, the bound for float32 Winograd


@pytest.mark.parametrize("m", [2, 4])
def test_winograd_transforms_compute_the_direct_convolution(rng, m):
    x, w = rng.standard_normal((2, 3, 9, 7)), rng.standard_normal((4, 3, 3, 3))
    err = np.abs(winograd_reference(x, w, m, (1, 2)) - conv2d_ref(x, w, (1, 1), (1, 2))).max()
    assert err < 1e-12


@pytest.mark.parametrize("algo", ["winograd_2x2", "winograd_4x4"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_winograd_float32_within_bound_and_agrees_with_implicit_gemm(rng, algo, layout):
    state = rng.bit_generator.state
    got, ref = run_conv(rng, 2, 8, 9, 11, 6, 3, 3, padding=1, layout=layout, algo=algo)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    assert np.isfinite(got).all() and err <= WINOGRAD_F32_BOUND, f"{algo} error {err:.3g}"
    rng.bit_generator.state = state
    igemm, _ = run_conv(rng, 2, 8, 9, 11, 6, 3, 3, padding=1, layout=layout, algo="implicit_gemm")
    assert np.abs(got - igemm).max() / np.abs(ref).max() <= WINOGRAD_F32_BOUND


@pytest.mark.parametrize("algo", ["winograd_2x2", "winograd_4x4"])
def test_winograd_groups_padding_bias_activation(rng, algo):
    got, ref = run_conv(rng, 1, 4, 7, 6, 6, 3, 3, padding=(0, 2), groups=2, bias=True, activation="silu", algo=algo)
    assert np.abs(got - ref).max() / max(1.0, np.abs(ref).max()) <= WINOGRAD_F32_BOUND


@pytest.mark.parametrize("layout", ["NHWC"])
def test_winograd_runs_big_problems_in_chunks_of_images(rng, monkeypatch, layout):
    from oxicuda.dnn import conv_winograd

    # room for one image's transforms only: 2 images in 2 chunks, each with its own GEMM
    per_image = 36 * (4 + 6) * 4 * 4
    monkeypatch.setattr(conv_winograd, "WORKSPACE_BYTES", per_image)
    with oxicuda.trace() as t:
        got, ref = run_conv(rng, 2, 4, 7, 8, 6, 3, 3, padding=1, layout=layout, bias=True, algo="winograd_4x4")
    assert sum(type(r.spec).__name__ == "WinogradSpec" for r in t.launches) == 2
    assert np.abs(got - ref).max() / np.abs(ref).max() <= WINOGRAD_F32_BOUND


@pytest.mark.parametrize("algo, dtype", [("winograd_2x2", "float16"), ("winograd_4x4", "float32")])
def test_winograd_stores_whole_tile_rows_as_vectors(rng, algo, dtype):
    # OW = 8 is a multiple of both tiles (row vectors); OH = 7 leaves a cropped last tile row
    with oxicuda.trace() as t:
        got, ref = run_conv(rng, 2, 4, 7, 8, 6, 3, 3, padding=1, dtype=dtype, bias=True, activation="gelu",
                            algo=algo)
    assert [r.spec.row_vectors for r in t.launches if type(r.spec).__name__ == "WinogradSpec"] == [True]
    if dtype == "float32":
        assert np.isfinite(got).all()
        assert np.abs(got - ref).max() / np.abs(ref).max() <= WINOGRAD_F32_BOUND
    else:
        assert_close(got, ref, dtype)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_winograd_half_types(rng, dtype):
    got, ref = run_conv(rng, 1, 4, 6, 6, 3, 3, 3, padding=1, dtype=dtype, bias=True, algo="winograd_4x4")
    assert_close(got, ref, dtype)


@pytest.mark.parametrize("kw", [
    {"layout": "NCHW"},
    {"layout": "NHWC"},
    {"layout": "NCHW", "groups": 2, "bias": True, "activation": "gelu"},
    {"layout": "NHWC", "groups": 2, "bias": True, "activation": "relu", "stride": 2, "dilation": 2, "padding": 2},
    {"dtype": "float16", "bias": True},
    {"dtype": "bfloat16", "layout": "NHWC", "activation": "silu"},
], ids=str)
def test_im2col_gemm_matches_float64_reference(rng, kw):
    got, ref = run_conv(rng, 2, 4, 7, 6, 6, 3, 3, **{"padding": 1, **kw}, algo="im2col")
    assert_close(got, ref, kw.get("dtype", "float32"))


# -- dispatch -------------------------------------------------------------------------------------
def _problem(n, c, h, k, r=3, stride=1, dilation=1, groups=1, dtype="f32"):
    oh = (h + 2 - dilation * (r - 1) - 1) // stride + 1
    return ConvProblem(n, c, h, h, k, r, r, oh, oh, (stride, stride), (1, 1), (dilation, dilation), groups, dtype)


def test_dispatch_table_on_the_benchmark_shapes():
    rules = dict(conv_dispatch.THRESHOLDS)
    assert choose_algo(_problem(32, 64, 56, 64), rules) == "implicit_gemm"  # Winograd off until measured
    wino = {**rules, "winograd_min_channels": 64}
    assert choose_algo(_problem(32, 64, 56, 64), wino) == "winograd_4x4"
    assert choose_algo(_problem(32, 256, 14, 256), wino) == "winograd_4x4"
    assert choose_algo(_problem(8, 512, 7, 512), wino) == "winograd_2x2"
    assert choose_algo(_problem(32, 64, 56, 64, stride=2), wino) == "implicit_gemm"
    assert choose_algo(_problem(32, 64, 56, 64, dtype="bf16"), wino) == "implicit_gemm"
    assert choose_algo(_problem(4, 1024, 7, 64, stride=2), rules) == "implicit_gemm"  # im2col off until measured
    assert choose_algo(_problem(4, 1024, 7, 64, stride=2), {**rules, "im2col_min_reduction": 4608}) == "im2col"
    assert choose_algo(_problem(1, 8, 9, 4), rules) == "implicit_gemm"


@pytest.mark.parametrize("thresholds, expected", [
    ({}, "ConvFpropF32Spec"),
    ({"winograd_min_channels": 4, "winograd_4x4_min_output": 100}, "WinogradSpec:2"),
    ({"winograd_min_channels": 4, "winograd_4x4_min_output": 4}, "WinogradSpec:4"),
    ({"im2col_min_reduction": 16}, "Im2colSpec"),
])
def test_dispatch_reaches_every_algorithm(rng, monkeypatch, thresholds, expected):
    for key, value in thresholds.items():
        monkeypatch.setitem(conv_dispatch.THRESHOLDS, key, value)
    x = oxicuda.asarray(rng.standard_normal((1, 4, 6, 6)).astype(np.float32))
    w = oxicuda.asarray(rng.standard_normal((4, 4, 3, 3)).astype(np.float32))
    with oxicuda.trace() as t:
        y = conv2d(x, w, padding=1)
    names = [type(r.spec).__name__ + (f":{r.spec.tile}" if hasattr(r.spec, "tile") and
                                      type(r.spec).__name__ == "WinogradSpec" else "") for r in t.launches]
    assert expected in names, names
    ref = conv2d_ref(x.get(), w.get(), (1, 1), (1, 1))
    assert np.abs(y.get() - ref).max() / np.abs(ref).max() < 2e-5


def test_algo_winograd_lets_dispatch_pick_the_tile(rng):
    x = oxicuda.asarray(rng.standard_normal((1, 2, 4, 4)).astype(np.float32))
    w = oxicuda.asarray(rng.standard_normal((2, 2, 3, 3)).astype(np.float32))
    with oxicuda.trace() as t:
        conv2d(x, w, padding=1, algo="winograd")
    assert [r.spec.tile for r in t.launches if type(r.spec).__name__ == "WinogradSpec"] == [2]
