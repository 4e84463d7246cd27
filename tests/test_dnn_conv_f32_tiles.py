"""The float32 forward implicit-GEMM kernel (conv_implicit_gemm_f32): every tile variant, both
layouts, the vector and scalar gathers, split-K with its reduce epilogue, the gather table, and
the dispatch rules that pick a tile."""

from __future__ import annotations

import numpy as np
import pytest
from test_dnn_conv import assert_close, run_conv

import oxicuda
from oxicuda.dnn import conv_dispatch
from oxicuda.dnn.conv import conv2d
from oxicuda.dnn.conv_dispatch import ConvProblem, choose_igemm_tile, shape_key
from oxicuda.dnn.conv_implicit_gemm_f32 import INVALID_TAP, TILES, gather_table


def _problem(n, c, h, w, k, r=3, s=3, stride=1, padding=1, dilation=1, groups=1):
    oh = (h + 2 * padding - dilation * (r - 1) - 1) // stride + 1
    ow = (w + 2 * padding - dilation * (s - 1) - 1) // stride + 1
    return ConvProblem(n, c, h, w, k, r, s, oh, ow, (stride, stride), (padding, padding), (dilation, dilation),
                       groups, "f32")


def _force(monkeypatch, problem, tile, splits):
    monkeypatch.setitem(conv_dispatch.MEASURED, shape_key(problem), ("implicit_gemm", tile, splits))


def _run_traced(rng, *args, **kwargs):
    with oxicuda.trace() as t:
        got, ref = run_conv(rng, *args, **kwargs)
    specs = [r.spec for r in t.launches]
    return got, ref, specs


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("tile", list(TILES))
def test_every_tile_matches_float64_reference(rng, monkeypatch, tile, layout):
    # odd sizes: 9*11 = 99 pixels and 6 channels are partial tiles in both directions
    _force(monkeypatch, _problem(1, 4, 9, 11, 6), tile, 1)
    got, ref, specs = _run_traced(rng, 1, 4, 9, 11, 6, 3, 3, padding=1, layout=layout)
    cfg = TILES[tile]
    assert [(s.bm, s.bn, s.bk, s.split_k) for s in specs] == [(cfg.bm, cfg.bn, cfg.bk, False)]
    # NHWC with 4 channels: 16-byte x loads; 36-long reduction: 16-byte w loads
    assert (specs[0].vec_a, specs[0].vec_b) == ((4, 4) if layout == "NHWC" else (1, 4))
    assert_close(got, ref)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_scalar_gathers_and_stores_for_odd_channel_counts(rng, monkeypatch, layout):
    # C = 3 (27-long reduction), K = 5, OH*OW = 35: no vector path applies
    _force(monkeypatch, _problem(1, 3, 7, 5, 5), "64x64", 1)
    got, ref, specs = _run_traced(rng, 1, 3, 7, 5, 5, 3, 3, padding=1, layout=layout)
    assert [(s.vec_a, s.vec_b, s.vec_y) for s in specs] == [(1, 1, 1)]
    assert_close(got, ref)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_split_k_with_groups_stride_dilation_bias_and_activation(rng, monkeypatch, layout, activation):
    # 2 groups of 8 channels: a 72-long reduction in 3 splits of 24
    problem = ConvProblem(2, 16, 9, 8, 8, 3, 3, 4, 3, (2, 2), (1, 0), (2, 2), 2, "f32")
    _force(monkeypatch, problem, "64x64", 3)
    got, ref, specs = _run_traced(rng, 2, 16, 9, 8, 8, 3, 3, stride=2, padding=(1, 0), dilation=2, groups=2,
                                  layout=layout, bias=True, activation=activation)
    names = [type(s).__name__ for s in specs]
    assert names == ["ConvFpropF32Spec", "ConvSplitKReduceSpec"] and specs[0].split_k
    assert specs[1].activation == activation and specs[1].bias
    assert_close(got, ref)


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_fused_bias_activation_with_vector_stores(rng, monkeypatch, layout):
    # OH*OW = 16 and K = 8: 16-byte stores along pixels (NCHW) or channels (NHWC)
    _force(monkeypatch, _problem(2, 4, 4, 4, 8), "64x128", 1)
    got, ref, specs = _run_traced(rng, 2, 4, 4, 4, 8, 3, 3, padding=1, layout=layout, bias=True,
                                  activation="silu")
    assert [(s.vec_y, s.bias, s.activation) for s in specs] == [(4, True, "silu")]
    assert_close(got, ref)


def test_one_by_one_and_stride_two_through_dispatch(rng):
    got, ref, specs = _run_traced(rng, 2, 8, 7, 6, 12, 1, 1, stride=2)
    assert [type(s).__name__ for s in specs] == ["ConvFpropF32Spec"]
    assert_close(got, ref)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_gather_table_matches_the_direct_index_definition(layout):
    c, cg, h, w, r, s, dil = 6, 3, 5, 7, 2, 3, (2, 1)
    rows = 24
    table = gather_table(layout, c, cg, h, w, r, s, dil, rows)
    assert table.shape == (rows, 4) and table.dtype == np.int32
    xs = {"NCHW": (h * w, w, 1), "NHWC": (1, w * c, c)}[layout]
    k = 0
    order = ([(ci, ri, si) for ci in range(cg) for ri in range(r) for si in range(s)] if layout == "NCHW"
             else [(ci, ri, si) for ri in range(r) for si in range(s) for ci in range(cg)])
    for ci, ri, si in order:
        dh, dw = ri * dil[0], si * dil[1]
        assert tuple(table[k, :3]) == (ci * xs[0] + dh * xs[1] + dw * xs[2], dh, dw)
        k += 1
    assert (table[k:, 1] == INVALID_TAP).all()


def test_tile_rules_on_the_benchmark_shapes():
    rules = dict(conv_dispatch.THRESHOLDS)
    sms = 132
    # 100352 pixels x 64 channels: 784 CTAs of 128x64 fill 3 waves of 2 per SM; 128-wide tiles
    # would waste half their columns
    assert choose_igemm_tile(_problem(32, 64, 56, 56, 64), sms, rules) == ("128x64", 1)
    # 196 CTAs of 128x128 are 1.5 waves; split in 2 they are 3 full ones
    assert choose_igemm_tile(_problem(32, 128, 28, 28, 128), sms, rules) == ("128x128", 2)
    assert choose_igemm_tile(_problem(32, 256, 14, 14, 256), sms, rules) == ("128x128", 4)
    # 16 CTAs of 128x128: split the 4608-long reduction into one full wave
    assert choose_igemm_tile(_problem(8, 512, 7, 7, 512), sms, rules) == ("128x128", 8)
    assert choose_igemm_tile(_problem(1, 8, 5, 5, 4), sms, rules) == ("64x64", 1)
    # a reduction too short to split
    assert choose_igemm_tile(_problem(1, 16, 7, 7, 16), sms, rules)[1] == 1


def test_measured_table_overrides_the_rules(monkeypatch):
    problem = _problem(32, 128, 28, 28, 128)
    monkeypatch.setitem(conv_dispatch.MEASURED, shape_key(problem), ("implicit_gemm", "64x128", 2))
    assert choose_igemm_tile(problem, 132) == ("64x128", 2)
    assert conv_dispatch.choose_algo(problem) == "implicit_gemm"


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_unaligned_pointers_fall_back_to_scalar_access(rng, layout):
    # x and w start one float past a 16-byte boundary: still contiguous, no vector access legal
    # (the emulator faults on a misaligned vector load)
    from test_dnn_conv_reference import conv2d_ref

    hx = rng.standard_normal((1, 8, 5, 6)).astype(np.float32)
    hw = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
    to_l = (lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1))) if layout == "NHWC" else (lambda a: a)
    xl, wl = to_l(hx), to_l(hw)
    xbuf = oxicuda.asarray(np.concatenate([np.zeros(1, np.float32), xl.ravel()]))
    wbuf = oxicuda.asarray(np.concatenate([np.zeros(1, np.float32), wl.ravel()]))
    x, w = xbuf[1:].reshape(xl.shape), wbuf[1:].reshape(wl.shape)
    with oxicuda.trace() as t:
        y = conv2d(x, w, padding=1, layout=layout, algo="implicit_gemm")
    assert [(r.spec.vec_a, r.spec.vec_b) for r in t.launches] == [(1, 1)]
    got = y.get() if layout == "NCHW" else y.get().transpose(0, 3, 1, 2)
    assert_close(got.astype(np.float64), conv2d_ref(hx, hw, (1, 1), (1, 1)))


@pytest.mark.slow
@pytest.mark.parametrize("tile, layout", [("128x128", "NCHW"), ("128x128k16", "NHWC")])  # the heaviest
def test_tile_kernels_assemble_without_spills(tile, layout):
    from oxicuda.dnn.conv_implicit_gemm_f32 import ConvFpropF32Spec
    from oxicuda.ptx import registry, validate

    try:
        validate.find_ptxas()
    except Exception as exc:
        pytest.skip(f"ptxas not available: {exc}")
    cfg = TILES[tile]
    for arch in ("sm_86", "sm_90"):
        spec = ConvFpropF32Spec(arch=arch, layout=layout, bm=cfg.bm, bn=cfg.bn, bk=cfg.bk, tm=cfg.tm, tn=cfg.tn,
                                vec_a=4 if layout == "NHWC" else 1, vec_b=4, vec_y=4)
        report = validate.assemble(registry.generate_ptx(spec), arch)
        # one CTA of 256 threads must fit the 64K-register file
        assert report.ok and report.spill_stores == 0 and report.registers * cfg.threads <= 65536, (arch, report)
