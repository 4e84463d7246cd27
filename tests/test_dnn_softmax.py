"""oxicuda.dnn.softmax on the live backend: every variant against float64 numpy, every element."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import oxicuda
from oxicuda import dnn
from oxicuda.memory.dtypes import host_astype
from oxicuda.ptx import registry

sm = importlib.import_module("oxicuda.dnn.softmax")  # the module (oxicuda.dnn.softmax is the function)
EPS32 = 2.0 ** -24


def to_device(x: np.ndarray, dtype: str) -> oxicuda.DeviceArray:
    return oxicuda.asarray(host_astype(x, dtype))


def as_f64(a: oxicuda.DeviceArray) -> np.ndarray:
    return host_astype(a.get(), "float32").astype(np.float64)


def rounded_input(x: np.ndarray, dtype: str) -> np.ndarray:
    """The values the kernel sees: x rounded to dtype, as float64."""
    return host_astype(host_astype(x, dtype), "float32").astype(np.float64)


def reference(x64: np.ndarray, axis: int, log: bool) -> tuple[np.ndarray, np.ndarray]:
    """(result, shifted input x - max) in float64, PyTorch's NaN rules included."""
    with np.errstate(all="ignore"):
        d = x64 - np.max(x64, axis=axis, keepdims=True)
        s = np.sum(np.exp(d), axis=axis, keepdims=True)
        return (d - np.log(s) if log else np.exp(d) / s), d


def check(got: np.ndarray, x64: np.ndarray, axis: int, log: bool, dtype: str) -> None:
    ref, d = reference(x64, axis, log)
    big = np.abs(ref) > np.finfo(np.float32).max  # overflows in f32 (and in PyTorch) to +-inf
    ref = np.where(big, np.copysign(np.inf, ref), ref)
    assert got.shape == ref.shape
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(got), nan), "NaN pattern differs from the reference"
    got, ref, d = got[~nan], ref[~nan], d[~nan]
    if dtype == "float32":
        # f32 rounds x - max (|d| eps relative through exp) and a few operations more
        with np.errstate(invalid="ignore"):
            bound = (np.abs(d) + 8) * 2 * EPS32 * (1.0 if log else np.abs(ref))
            bound = np.where(np.isfinite(d), bound, 0)
        if log:
            bound = bound + 8 * EPS32 * np.abs(ref)
        same_inf = np.isinf(ref) & (got == ref)
        with np.errstate(invalid="ignore"):
            err = np.where(same_inf, 0.0, np.abs(got - ref))
        assert np.all((err <= bound + 1e-38) | same_inf), f"max excess {np.max(err - bound)}"
    else:
        rtol = 2.0 ** -10 if dtype == "float16" else 2.0 ** -7
        atol = 1e-7 if dtype == "float16" else 1e-38
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol if log else atol)


@pytest.mark.parametrize("algo", ["warp", "block", "online"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (33, 100), (3, 1025), (2, 3, 8)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_matches_float64_reference_for_every_row_variant(rng, algo, shape, log):
    x = (rng.standard_normal(shape) * 6).astype(np.float32)
    out = oxicuda.full(shape, np.nan, np.float32)
    with oxicuda.trace() as tr:
        y = dnn.softmax(x, log=log, algo=algo, out=out)
    assert y is out
    assert [r.spec.variant for r in tr.launches] == [algo]
    check(out.get().astype(np.float64), x.astype(np.float64), -1, log, "float32")


def test_softmax_rows_sum_to_one(rng):
    x = (rng.standard_normal((17, 333)) * 20).astype(np.float32)
    for algo in ("warp", "block", "online"):
        y = dnn.softmax(x, algo=algo).get().astype(np.float64)
        np.testing.assert_allclose(y.sum(axis=-1), 1.0, rtol=0, atol=1e-5)
        assert np.all(y >= 0)


@pytest.mark.parametrize("shape,axis", [((2, 5, 3), 1), ((4, 6), 0), ((3, 2, 33), 0), ((5, 2, 3), -2)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_on_a_non_last_axis_uses_the_strided_kernel(rng, shape, axis, log):
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    out = oxicuda.full(shape, np.nan, np.float32)
    with oxicuda.trace() as tr:
        dnn.softmax(x, axis=axis, log=log, out=out)
    assert [r.spec.variant for r in tr.launches] == ["strided"]
    check(out.get().astype(np.float64), x.astype(np.float64), axis, log, "float32")


def test_dispatch_picks_warp_block_online_by_row_length_and_vectorizes_when_aligned(rng):
    cases = [(100, "warp", 4), (7, "warp", 1), (sm.DISPATCH["WARP_MAX_COLS"] + 1, "block", 1),
             (sm.DISPATCH["BLOCK_MAX_COLS"] + 4, "online", 4)]
    for cols, variant, vec in cases:
        assert sm.choose_variant(cols) == variant
        x = rng.standard_normal((2, cols)).astype(np.float32)
        with oxicuda.trace() as tr:
            y = dnn.softmax(x)
        (launch,) = tr.launches
        assert (launch.spec.variant, launch.spec.vec) == (variant, vec)
        check(y.get().astype(np.float64), x.astype(np.float64), -1, False, "float32")


EXTREME_ROWS = np.array([
    [1e30, -1e30, 0.0, 1.0, -3e38, 3e38, 2.0, 5.0],
    [-np.inf, 1.0, 2.0, -np.inf, 0.5, -np.inf, -np.inf, 3.0],
    [-np.inf] * 8,                                   # all -inf: NaN, as in PyTorch
    [np.inf, 1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 0.0],     # +inf: NaN
    [1.0, np.nan, 2.0, 3.0, 0.0, 0.0, 0.0, 0.0],     # NaN: NaN
    [-1e30] * 8,
], dtype=np.float32)


@pytest.mark.parametrize("algo", ["warp", "block", "online"])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_is_stable_for_huge_magnitudes_and_infinities(algo, log):
    y = dnn.softmax(EXTREME_ROWS, log=log, algo=algo).get().astype(np.float64)
    check(y, EXTREME_ROWS.astype(np.float64), -1, log, "float32")
    assert np.all(np.isnan(y[2:5]))
    if not log:
        assert y[0, 5] == 1.0 and y[1, 0] == 0.0


@pytest.mark.parametrize("log", [False, True])
def test_strided_softmax_handles_infinities_like_the_row_kernels(log):
    x = np.ascontiguousarray(EXTREME_ROWS.T)
    y = dnn.softmax(x, axis=0, log=log).get().astype(np.float64)
    check(y, x.astype(np.float64), 0, log, "float32")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("algo,cols", [("warp", 37), ("warp", 64), ("online", 130)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_half_types_computed_in_f32_stored_in_the_input_dtype(rng, dtype, algo, cols, log):
    x = (rng.standard_normal((3, cols)) * 3).astype(np.float32)
    xd = to_device(x, dtype)
    y = dnn.softmax(xd, log=log, algo=algo)
    assert y.dtype == xd.dtype and y.shape == xd.shape
    check(as_f64(y), rounded_input(x, dtype), -1, log, dtype)


def test_half_strided_softmax(rng):
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    y = dnn.softmax(to_device(x, "bfloat16"), axis=1)
    check(as_f64(y), rounded_input(x, "bfloat16"), 1, False, "bfloat16")


def test_fast_math_softmax_stays_within_its_documented_error(rng):
    x = (rng.standard_normal((3, 50)) * 4).astype(np.float32)
    y = dnn.softmax(x, math="fast").get().astype(np.float64)
    ref, _ = reference(x.astype(np.float64), -1, False)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-7)


def test_log_softmax_alias_and_inputs_from_lists(rng):
    x = [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]
    y = dnn.log_softmax(x).get().astype(np.float64)
    check(y, np.asarray(x, np.float64), -1, True, "float32")


def test_bad_input_raises_before_launch():
    x = oxicuda.asarray(np.zeros((2, 3), np.float32))
    with oxicuda.trace() as tr:
        with pytest.raises(TypeError, match="dtype"):
            dnn.softmax(np.zeros((2, 3), np.int32))
        with pytest.raises(ValueError, match="axis=2"):
            dnn.softmax(x, axis=2)
        with pytest.raises(ValueError, match="axis=-3"):
            dnn.softmax(x, axis=-3)
        with pytest.raises(ValueError, match="algo='tiled'"):
            dnn.softmax(x, algo="tiled")
        with pytest.raises(ValueError, match="strided"):
            dnn.softmax(x, algo="strided")
        with pytest.raises(ValueError, match="out must be"):
            dnn.softmax(x, out=oxicuda.empty((3, 2), np.float32))
        with pytest.raises(ValueError, match="out must be"):
            dnn.softmax(x, out=oxicuda.empty((2, 3), np.float16))
        with pytest.raises(ValueError, match="0-d"):
            dnn.softmax(np.float32(1.0))
        with pytest.raises(ValueError, match="math"):
            dnn.softmax(x, math="sloppy")
        with pytest.raises(ValueError, match="1..1048576"):
            dnn.softmax(oxicuda.empty((1, (1 << 20) + 1), np.float32))
    assert tr.launches == []


def test_every_registered_configuration_generates_ascii_ptx():
    specs = registry.configurations("sm_86", "dnn_softmax")
    assert 30 <= len(specs) <= 100
    assert {s.variant for s in specs} == set(sm.VARIANTS)
    for spec in specs[:: max(1, len(specs) // 8)]:
        text = registry.generate_ptx(spec)
        assert spec.kernel_name() in text
        assert "ex2" not in text  # precise math: the accurate exp, no ex2.approx
