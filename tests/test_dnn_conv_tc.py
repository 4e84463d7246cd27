"""conv2d on tensor cores (conv_implicit_gemm_tc): float16/bfloat16 forward against float64
references on every load path and tile, and the routing between the tensor-core and SIMT kernels."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_dnn_conv_reference import as_float64, conv2d_ref, pair, to_dtype

import oxicuda
from oxicuda.dnn import conv as conv_mod
from oxicuda.dnn import conv_implicit_gemm_tc as tc
from oxicuda.dnn.conv import conv2d
from oxicuda.dnn.conv_dispatch import ConvProblem
from oxicuda.dnn.conv_epilogue import reference_activation
from oxicuda.driver.facts import board_facts, device_facts

H200_SMS = board_facts("h200").sm_count

#: round-to-nearest relative error of one stored element (2^-11 for float16, 2^-8 for bfloat16)
ROUNDING = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
#: f32 accumulation error, relative to max|y| (reductions here are a few hundred terms)
ACCUMULATION = 2e-6


def _poisoned(shape, dtype):
    a = oxicuda.empty(tuple(shape), dtype)
    a.set(to_dtype(np.full(tuple(shape), np.nan, np.float32), dtype))
    return a


def run_tc(rng, n, c, h, w, k, r, s, stride=1, padding=0, dilation=1, groups=1, layout="NHWC",
           dtype="float16", bias=False, activation=None, algo="implicit_gemm"):
    """conv2d on fresh random data into a NaN-poisoned output; returns (ours as float64 NCHW,
    the float64 reference, the specs launched)."""
    x = to_dtype(rng.standard_normal((n, c, h, w)).astype(np.float32), dtype)
    wt = to_dtype(rng.standard_normal((k, c // groups, r, s)).astype(np.float32), dtype)
    b = to_dtype(rng.standard_normal(k).astype(np.float32), dtype) if bias else None
    ref = conv2d_ref(as_float64(x), as_float64(wt), pair(stride), pair(padding), pair(dilation), groups)
    if b is not None:
        ref = ref + as_float64(b)[None, :, None, None]
    ref = reference_activation(ref, activation)
    nhwc = layout == "NHWC"
    xd = np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if nhwc else x
    wd = np.ascontiguousarray(wt.transpose(0, 2, 3, 1)) if nhwc else wt
    out = _poisoned(tuple(ref.shape[i] for i in (0, 2, 3, 1)) if nhwc else ref.shape, dtype)
    with oxicuda.trace() as t:
        y = conv2d(oxicuda.asarray(xd), oxicuda.asarray(wd), None if b is None else oxicuda.asarray(b),
                   stride=stride, padding=padding, dilation=dilation, groups=groups, layout=layout,
                   activation=activation, algo=algo, out=out)
    assert y is out
    got = as_float64(y.get())
    return (got.transpose(0, 3, 1, 2) if nhwc else got), ref, [rec.spec for rec in t.launches]


def assert_half_close(got, ref, dtype):
    """Every element within its own rounding to ``dtype`` plus the f32 accumulation error."""
    assert got.shape == ref.shape
    assert np.isfinite(got).all(), "NaN/inf in the output (an element was never written?)"
    bound = ROUNDING[dtype] * np.abs(ref) + ACCUMULATION * max(1.0, np.abs(ref).max())
    bad = np.abs(got - ref) > bound
    assert not bad.any(), (f"{bad.sum()} of {bad.size} elements off; worst {np.abs(got - ref).max():.3g} at "
                           f"{np.unravel_index(np.argmax(np.abs(got - ref) - bound), got.shape)}")


def _only_tc(specs, via_channels_last=False):
    """The tensor-core spec, checking it is the only launch (after the two NCHW -> NHWC
    transposes of x and w when ``via_channels_last``)."""
    expected = ["ChannelsLastSpec"] * 2 * via_channels_last + ["ConvTensorCoreSpec"]
    assert [type(s).__name__ for s in specs] == expected, specs
    return specs[-1]


# (n, c, h, w, k, r, s, stride, padding, dilation, groups, what it covers)
GEOMETRIES = [
    (1, 16, 7, 9, 12, 3, 3, 1, 1, 1, 1, "cp.async A and B, padding zero-fill, 5 k-tiles through 3 stages"),
    (2, 16, 9, 8, 10, 3, 3, 2, 1, 2, 2, "stride 2, dilation 2, two groups of 8 channels"),
    (1, 5, 8, 7, 6, 5, 3, (2, 1), (0, 2), (1, 2), 1, "C=5: scalar gather of A and B, 5x3 filter"),
    (1, 12, 6, 7, 9, 3, 3, 1, 2, 2, 3, "Cg=4 per group: scalar A, cp.async B (gk=36)"),
    (2, 6, 5, 5, 6, 3, 3, 1, 1, 1, 6, "depthwise (groups = C, Kg = 1)"),
    (1, 24, 10, 9, 70, 1, 1, 1, 0, 1, 1, "1x1, 90 pixels x 70 channels: 2x2 CTAs, tails in M and N"),
    (1, 8, 7, 9, 6, 3, 5, 1, (1, 2), 1, 1, "3x5 filter on the cp.async path: (c, r, s) carries with R != S"),
]


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("geom", GEOMETRIES, ids=[g[-1].split(":")[0].split(",")[0] for g in GEOMETRIES])
def test_tensor_core_conv_matches_float64_reference(rng, layout, geom):
    n, c, h, w, k, r, s, st, pad, dil, g, _ = geom
    dtype = ("float16", "bfloat16")[int(rng.integers(2))]
    got, ref, specs = run_tc(rng, n, c, h, w, k, r, s, st, pad, dil, g, layout=layout, dtype=dtype)
    # NCHW with channels per group a multiple of 8 is transposed to NHWC and takes cp.async
    via_cl = layout == "NCHW" and (c // g) % 8 == 0
    spec = _only_tc(specs, via_cl)
    assert spec.dtype == {"float16": "f16", "bfloat16": "bf16"}[dtype]
    assert spec.layout == ("NHWC" if via_cl else layout)
    assert spec.a_async == ((c // g) % 8 == 0)
    assert spec.y_pairs == (layout == "NHWC" and (k // g) % 2 == 0)
    assert spec.b_async == ((c // g) * r * s % 8 == 0)
    assert_half_close(got, ref, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_bias_and_relu_are_fused(rng, dtype, layout):
    got, ref, specs = run_tc(rng, 2, 8, 6, 5, 11, 3, 3, padding=1, layout=layout, dtype=dtype, bias=True,
                             activation="relu")
    spec = _only_tc(specs, layout == "NCHW")
    assert spec.bias and spec.activation == "relu"
    assert (got == 0).any() and (got > 0).any()
    assert_half_close(got, ref, dtype)


@pytest.mark.parametrize("activation", ["silu", "gelu"])
def test_smooth_activations_are_fused(rng, activation):
    got, ref, _ = run_tc(rng, 1, 8, 5, 5, 8, 3, 3, padding=1, bias=True, activation=activation)
    # the epilogue's erf/exp approximations add about 1e-6 of max|y| before rounding
    assert_half_close(got, ref, "float16")


@pytest.mark.parametrize("tile, k", [("wide", 40), ("large", 136)])
def test_large_tiles_match_reference(rng, monkeypatch, tile, k):
    monkeypatch.setattr(tc, "LARGE_MIN_CTAS_PER_SM", 0.0)
    got, ref, specs = run_tc(rng, 1, 8, 12, 11, k, 3, 3, padding=1, dtype="bfloat16")
    spec = _only_tc(specs)
    assert (spec.block_m, spec.block_n) == tc.TILES[tile][:2]
    assert_half_close(got, ref, "bfloat16")


def test_tensor_core_agrees_with_simt_kernel(rng):
    x = oxicuda.asarray(to_dtype(rng.standard_normal((1, 7, 7, 16)).astype(np.float32), "float16"))
    w = oxicuda.asarray(to_dtype(rng.standard_normal((8, 3, 3, 16)).astype(np.float32), "float16"))
    with oxicuda.trace() as t:
        a = conv2d(x, w, padding=1, layout="NHWC", algo="implicit_gemm_tc").get().astype(np.float64)
        b = conv2d(x, w, padding=1, layout="NHWC", algo="implicit_gemm_simt").get().astype(np.float64)
    assert [type(r.spec).__name__ for r in t.launches] == ["ConvTensorCoreSpec", "ConvImplicitGemmSpec"]
    # both accumulate in f32 and round once: at most one float16 ulp apart
    assert np.all(np.abs(a - b) <= 2.0 ** -10 * np.abs(b) + 1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_channels_last_transpose_moves_every_element(rng, dtype):
    from oxicuda.dnn.channels_last import channels_last_step
    from oxicuda.ptx.launch_plan import LaunchPlan

    n, c, p = 2, 37, 45  # neither a multiple of the 32 x 32 tile
    host = to_dtype(rng.standard_normal((n, c, p)).astype(np.float32), dtype)
    src, dst = oxicuda.asarray(host), _poisoned((n, p, c), dtype)
    step = channels_last_step("sm_86", lambda ptr, ws: ptr[0], lambda ptr, ws: ptr[1], n, c, p)
    LaunchPlan("channels_last", [step]).run((int(src.ptr), int(dst.ptr)))
    assert np.array_equal(dst.get().view(np.uint16), np.ascontiguousarray(host.transpose(0, 2, 1)).view(np.uint16))


def test_nchw_gather_path_still_runs_where_channels_are_odd(rng):
    got, ref, specs = run_tc(rng, 1, 12, 6, 5, 9, 3, 3, padding=1, groups=3, layout="NCHW", dtype="float16")
    spec = _only_tc(specs)  # Cg = 4: no transpose, the scalar gather of A
    assert spec.layout == "NCHW" and not spec.a_async and not spec.b_async
    assert_half_close(got, ref, "float16")


# -- routing ------------------------------------------------------------------------------------------
def _half_inputs(rng, dtype="float16"):
    # 4 channels: NCHW without the channels-last transpose, so each route is one launch
    x = oxicuda.asarray(to_dtype(rng.standard_normal((1, 4, 5, 5)).astype(np.float32), dtype))
    w = oxicuda.asarray(to_dtype(rng.standard_normal((4, 4, 3, 3)).astype(np.float32), dtype))
    return x, w


@pytest.mark.parametrize("algo, expected", [
    (None, "ConvTensorCoreSpec"),
    ("implicit_gemm", "ConvTensorCoreSpec"),
    ("implicit_gemm_tc", "ConvTensorCoreSpec"),
    ("implicit_gemm_simt", "ConvImplicitGemmSpec"),
])
def test_half_types_route_to_the_requested_kernel(rng, algo, expected):
    x, w = _half_inputs(rng, "bfloat16")
    with oxicuda.trace() as t:
        y = conv2d(x, w, padding=1, algo=algo)
    assert [type(r.spec).__name__ for r in t.launches] == [expected]
    ref = conv2d_ref(as_float64(x.get()), as_float64(w.get()), (1, 1), (1, 1))
    assert_half_close(as_float64(y.get()), ref, "bfloat16")


def test_float32_implicit_gemm_stays_simt_and_tc_refuses_it(rng):
    x = oxicuda.asarray(rng.standard_normal((1, 4, 5, 5)).astype(np.float32))
    w = oxicuda.asarray(rng.standard_normal((4, 4, 3, 3)).astype(np.float32))
    with oxicuda.trace() as t:
        conv2d(x, w, algo="implicit_gemm")
        with pytest.raises(ValueError, match="implicit_gemm_tc.*float16/bfloat16"):
            conv2d(x, w, algo="implicit_gemm_tc")
    # float32 keeps its own implicit-GEMM kernels (ConvImplicitGemmSpec, or the float32 family that
    # conv_implicit_gemm_f32 adds), never the tensor-core one
    names = [type(r.spec).__name__ for r in t.launches]
    assert len(names) == 1 and names[0] in ("ConvImplicitGemmSpec", "ConvFpropF32Spec"), names


def test_pre_ampere_devices_use_simt_and_refuse_tc(rng, monkeypatch):
    turing = dataclasses.replace(device_facts(), cc=(7, 5))
    monkeypatch.setattr(conv_mod, "device_facts", lambda ordinal=None: turing)
    x, w = _half_inputs(rng)
    with oxicuda.trace() as t:
        conv2d(x, w, algo="implicit_gemm")
        conv2d(x, w)
        with pytest.raises(ValueError, match="sm_80"):
            conv2d(x, w, algo="implicit_gemm_tc")
    assert [type(r.spec).__name__ for r in t.launches] == ["ConvImplicitGemmSpec"] * 2


def _problem(n=2, c=64, h=56, k=64, groups=1, r=3, dtype="f16"):
    return ConvProblem(n, c, h, h, k, r, r, h, h, (1, 1), (1, 1), (1, 1), groups, dtype)


def test_choose_spec_takes_cp_async_only_where_layout_channels_and_alignment_allow():
    spec = tc.choose_spec(_problem(32), "NHWC", "sm_90", True, True, sm_count=H200_SMS)
    assert (spec.a_async, spec.b_async, spec.block_n, spec.arch) == (True, True, 64, "sm_90")
    assert tc.choose_spec(_problem(32, 128, 28, 128), "NHWC", "sm_86", True, True, sm_count=H200_SMS).block_n == 128
    assert tc.choose_spec(_problem(8, 512, 7, 512), "NHWC", "sm_90", True, True, sm_count=H200_SMS).block_n == 64  # 16 large CTAs
    assert not tc.choose_spec(_problem(), "NCHW", "sm_90", True, True, sm_count=H200_SMS).a_async
    assert not tc.choose_spec(_problem(), "NHWC", "sm_90", False, True, sm_count=H200_SMS).a_async
    assert not tc.choose_spec(_problem(), "NHWC", "sm_90", True, False, sm_count=H200_SMS).b_async
    odd = tc.choose_spec(_problem(c=3), "NHWC", "sm_90", True, True, sm_count=H200_SMS)
    assert (odd.a_async, odd.b_async, odd.block_m) == (False, False, 64)  # gk = 27
    assert tc.choose_spec(_problem(1, 8, 4, 8), "NHWC", "sm_90", True, True, sm_count=H200_SMS).block_m == 64  # a small grid
    # 196 CTAs of the large tile: one wave on the H200's 132 SMs, not on a 264-SM device
    assert tc.choose_spec(_problem(32, 128, 28, 128), "NHWC", "sm_90", True, True, sm_count=264).block_m == 64
    assert tc.choose_spec(_problem(), "NHWC", "sm_90a", True, True, sm_count=H200_SMS).arch == "sm_90"


def test_spec_rejects_what_it_cannot_generate():
    with pytest.raises(ValueError, match="sm_80"):
        tc.ConvTensorCoreSpec(arch="sm_75")
    with pytest.raises(ValueError, match="NHWC"):
        tc.ConvTensorCoreSpec(layout="NCHW", a_async=True)
    with pytest.raises(ValueError, match="dtype"):
        tc.ConvTensorCoreSpec(dtype="f32")


def test_every_configuration_is_registered_and_in_choose_spec_range():
    from oxicuda.ptx import registry

    specs = registry.configurations("sm_90", family=tc.FAMILY)
    assert {(s.dtype, s.layout, s.a_async, s.b_async) for s in specs} >= {
        (d, lay, a, b) for d in tc.DTYPES for lay in tc.LAYOUTS for a in (False, True) for b in (False, True)
        if not (a and lay == "NCHW")}
    assert registry.family(tc.FAMILY).archs == ("sm_80", "sm_86", "sm_90")


# -- split-K --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout, dtype, activation", [("NHWC", "float16", "gelu"), ("NCHW", "bfloat16", "relu")])
def test_split_k_partials_and_reduce_match_reference(rng, monkeypatch, layout, dtype, activation):
    # C=64, 3x3: 18 k-tiles in one CTA; 4 k-tiles per split at least -> chunks of 5, 5, 5, 3
    monkeypatch.setattr(tc, "SPLIT_MIN_KTILES", 4)
    got, ref, specs = run_tc(rng, 1, 64, 5, 4, 8, 3, 3, padding=1, layout=layout, dtype=dtype, bias=True,
                             activation=activation)
    names = [type(s).__name__ for s in specs]
    assert names == ["ChannelsLastSpec"] * 2 * (layout == "NCHW") + ["ConvTensorCoreSpec", "ConvTcSplitKReduceSpec"]
    assert specs[-2].split_k and not specs[-2].bias and specs[-1].activation == activation
    assert_half_close(got, ref, dtype)


def test_choose_splits_only_for_short_grids_with_long_reductions():
    small = tc.choose_spec(_problem(8, 512, 7, 512), "NHWC", "sm_90", True, True, sm_count=H200_SMS)
    assert tc.choose_splits(_problem(8, 512, 7, 512), small, 132) == 5  # 56 CTAs, 144 k-tiles
    big = tc.choose_spec(_problem(32), "NHWC", "sm_90", True, True, sm_count=H200_SMS)
    assert tc.choose_splits(_problem(32), big, 132) == 1  # 784 CTAs
    short = tc.choose_spec(_problem(1, 16, 4, 8), "NHWC", "sm_90", True, True, sm_count=H200_SMS)
    assert tc.choose_splits(_problem(1, 16, 4, 8), short, 132) == 1  # 5 k-tiles
    with pytest.raises(ValueError, match="split"):
        tc.ConvTensorCoreSpec(split_k=True, bias=True)


@pytest.mark.parametrize("tile", sorted(tc.TILES))
def test_fast_path_kernels_assemble_without_spills(tile):
    from oxicuda.ptx import registry, validate

    try:
        validate.find_ptxas()
    except Exception as exc:
        pytest.skip(f"ptxas not available: {exc}")
    bm, bn, wm, wn, st = tc.TILES[tile]
    for arch in ("sm_86", "sm_90"):
        spec = tc.ConvTensorCoreSpec(arch=arch, y_pairs=True, block_m=bm, block_n=bn, warps_m=wm, warps_n=wn,
                                     stages=st)
        report = validate.assemble(registry.generate_ptx(spec), arch)
        assert report.ok and report.spill_stores == 0 and report.registers <= 255, (arch, report)
