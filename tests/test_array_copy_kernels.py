"""Every layout copy, cast and fill runs on the device through the ``array_copy`` kernel family:
any shape (more than 8 axes included), any strides (negative, zero), any pair of supported
dtypes, checked element by element against numpy, with ``oxicuda.trace()`` proving the kernel
ran and the host copies patched to fail proving nothing went through the host."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import oxicuda
from oxicuda.driver.backend import api
from oxicuda.memory import copy_kernels
from oxicuda.memory.dtypes import SUPPORTED_DTYPES
from oxicuda.ptx import registry

NAMES = list(SUPPORTED_DTYPES)


@pytest.fixture
def no_host_copies(monkeypatch):
    """Make every host<->device copy fail while the test body runs (enable with .on())."""
    drv = api()

    class Guard:
        def on(self):
            for name in ("memcpy_dtoh", "memcpy_htod"):
                monkeypatch.setattr(drv, name, lambda *a, _n=name, **k: pytest.fail(f"{_n} during a device copy"))

        def off(self):
            monkeypatch.undo()

    return Guard()


def _random(rng, shape, name):
    dt = SUPPORTED_DTYPES[name]
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(shape) * 50 + 1j * rng.standard_normal(shape) * 50).astype(dt)
    return (rng.standard_normal(shape) * 50).astype(dt)


def _kernels(trace):
    return [r.kernel for r in trace.launches]


def test_softmax_of_a_transpose_copies_on_the_device(rng, no_host_copies):
    from oxicuda.dnn import softmax

    host = rng.standard_normal((6, 9)).astype(np.float32)
    x = oxicuda.asarray(host)
    no_host_copies.on()
    with oxicuda.trace() as t:
        y = softmax(x.T)
    no_host_copies.off()
    names = _kernels(t)
    assert len(names) == 2 and names[0].startswith("oxi_array_copy_") and "softmax" in names[1]
    ref = np.exp(host.T.astype(np.float64) - host.T.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(y.get(), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("key", [
    (slice(None, None, -1), slice(None)),
    (slice(None), slice(None, None, -2)),
    (slice(1, None, 2), slice(None, None, -1)),
])
def test_copy_of_negative_and_step_views_runs_the_kernel(rng, no_host_copies, key):
    host = rng.standard_normal((7, 11))
    a = oxicuda.asarray(host)
    view = a[key]
    no_host_copies.on()
    with oxicuda.trace() as t:
        out = view.copy()
        fortran = view.copy("F")
    no_host_copies.off()
    assert all(k.startswith("oxi_array_copy_") for k in _kernels(t)) and len(t.launches) == 2
    assert out.is_c_contiguous and fortran.is_f_contiguous
    np.testing.assert_array_equal(out.get(), host[key])
    np.testing.assert_array_equal(fortran.get(), host[key])


def test_zero_strides_broadcast_a_row(rng):
    row = rng.standard_normal(5).astype(np.float32)
    src = oxicuda.asarray(row)
    broadcast = oxicuda.DeviceArray.from_pointer(src.ptr, (4, 5), np.float32, (0, 4), owner=src)
    np.testing.assert_array_equal(broadcast.copy().get(), np.broadcast_to(row, (4, 5)))


@pytest.mark.parametrize("ndim", [3, 5, 9, 10])
def test_copies_of_permuted_high_rank_views_match_numpy(rng, ndim):
    shape = tuple(int(n) for n in rng.integers(2, 4, ndim))
    host = rng.standard_normal(shape).astype(np.float32)
    perm = tuple(int(k) for k in rng.permutation(ndim))
    key = tuple(slice(None, None, -1) if k % 2 else slice(None) for k in range(ndim))
    view = oxicuda.asarray(host).transpose(perm)[key]
    out = oxicuda.asarray(np.full(view.shape, np.nan, np.float32))
    with oxicuda.trace() as t:
        out[...] = view
    assert t.launches and all(k.startswith("oxi_array_copy_") for k in _kernels(t))
    np.testing.assert_array_equal(out.get(), host.transpose(perm)[key])


@pytest.mark.parametrize("name", NAMES)
def test_strided_get_and_set_pack_on_the_device(rng, name):
    host = _random(rng, (5, 6), name)
    a = oxicuda.asarray(host)
    np.testing.assert_array_equal(a[::-2, 1::2].get(), host[::-2, 1::2])
    new = _random(rng, (3, 3), name)
    a[::-2, 1::2] = new
    expect = host.copy()
    expect[::-2, 1::2] = new
    np.testing.assert_array_equal(a.get(), expect)


@pytest.mark.parametrize("name", NAMES)
def test_fill_of_any_dtype_and_layout_matches_numpy(rng, name, no_host_copies):
    dt = SUPPORTED_DTYPES[name]
    value = {"b": True, "c": 1.5 - 2.25j, "f": 1.5}.get(dt.kind, 3)
    host = _random(rng, (4, 6), name)
    a = oxicuda.asarray(host)
    no_host_copies.on()
    a[:, ::-3].fill(value)  # strided: the fill kernel (no memset can express it)
    whole = oxicuda.empty((3, 5), dt)
    whole.fill(value)
    no_host_copies.off()
    expect = host.copy()
    expect[:, ::-3] = np.asarray(value).astype(dt)
    np.testing.assert_array_equal(a.get(), expect)
    np.testing.assert_array_equal(whole.get(), np.full((3, 5), value).astype(dt))


def test_float64_fill_runs_the_fill_kernel(no_host_copies):
    a = oxicuda.empty((3, 4), np.float64)
    no_host_copies.on()
    with oxicuda.trace() as t:
        a.fill(1.5)
    no_host_copies.off()
    assert [k for k in _kernels(t) if k.startswith("oxi_array_copy_")] == _kernels(t) and len(t.launches) == 1
    np.testing.assert_array_equal(a.get(), np.full((3, 4), 1.5))


def _cast_reference(host, dst):
    with np.errstate(all="ignore"):
        if host.dtype.kind == "c" and dst.kind != "c":
            host = host.real
        return host.astype(dst)


def test_astype_of_every_dtype_pair_matches_numpy_and_ml_dtypes(rng, no_host_copies):
    failures = []
    for s, d in itertools.permutations(NAMES, 2):
        host = _random(rng, (3, 5), s)
        if s == "bfloat16" and SUPPORTED_DTYPES[d].kind in "iu":
            # ml_dtypes gives 0 for values outside the integer target's range (negatives into
            # unsigned included) where numpy's float casts wrap; out-of-range float -> int is
            # undefined in C, so the reference is compared inside the range only
            info = np.iinfo(SUPPORTED_DTYPES[d])
            host = np.clip(abs(host) if info.min == 0 else host, info.min, info.max).astype(host.dtype)
        src = oxicuda.asarray(host)
        no_host_copies.on()
        out = src.astype(d)
        no_host_copies.off()
        got, ref = out.get(), _cast_reference(host, SUPPORTED_DTYPES[d])
        if got.dtype != ref.dtype or not np.array_equal(got, ref, equal_nan=ref.dtype.kind in "fc"):
            failures.append((s, d))
    assert failures == []


@pytest.mark.parametrize("s,d", [("float32", "bfloat16"), ("float64", "float16"), ("complex128", "float32"),
                                 ("float32", "uint8"), ("int64", "complex64"), ("float16", "bool")])
def test_astype_of_a_transposed_view_casts_on_the_device(rng, s, d, no_host_copies):
    host = _random(rng, (4, 7), s)
    view = oxicuda.asarray(host).T[::-1]
    no_host_copies.on()
    with oxicuda.trace() as t:
        c_out, f_out = view.astype(d, order="C"), view.astype(d, order="F")
    no_host_copies.off()
    assert t.launches and all(k.startswith("oxi_array_copy_") for k in _kernels(t))
    ref = _cast_reference(host.T[::-1], SUPPORTED_DTYPES[d])
    assert c_out.is_c_contiguous and f_out.is_f_contiguous
    np.testing.assert_array_equal(c_out.get(), ref)
    np.testing.assert_array_equal(f_out.get(), ref)


def _bf16_rounded_once(x):
    """float64 -> bfloat16 with one correct rounding, built without trusting ml_dtypes' float64
    path (some versions round through float32 first: 1 + 2**-8 + 2**-30 then gives 1.0): round to
    odd into float32 (exact information kept in the sticky last bit), then float32 -> bfloat16,
    which every version rounds once."""
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        t = x.astype(np.float32)
        over = np.isfinite(x) & (np.abs(t.astype(np.float64)) > np.abs(x))
        t = np.where(over, np.nextafter(t, np.float32(0)), t)
        inexact = np.isfinite(x) & (t.astype(np.float64) != x)
        bits = t.view(np.uint32) | inexact.astype(np.uint32)
    return bits.view(np.float32).astype(ml_dtypes.bfloat16)


def test_float_to_bfloat16_and_float16_round_once_like_ml_dtypes_and_numpy():
    ties = np.array([1 + 2**-8 + 2**-30, 1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8 + 2**-40), 3.0e38, np.nan,
                     np.inf, -0.0, 1 + 2**-11 + 2**-40, 65520.0])
    dev = oxicuda.asarray(ties)
    np.testing.assert_array_equal(dev.astype("bfloat16").get().astype(np.float64),
                                  _bf16_rounded_once(ties).astype(np.float64))
    assert float(dev.astype("bfloat16").get()[0]) == 1 + 2**-7  # just above the tie: rounds up
    np.testing.assert_array_equal(dev.astype(np.float16).get(), ties.astype(np.float16))


def test_float_to_int_truncates_and_wraps_like_numpy():
    vals = np.array([-1.7, 2.9, 300.5, -129.5, 0.5, -0.5], np.float32)
    dev = oxicuda.asarray(vals)
    for d in (np.uint8, np.int8, np.int16, np.int32, np.int64):
        np.testing.assert_array_equal(dev.astype(d).get(), vals.astype(d))
    nan = oxicuda.asarray(np.array([np.nan, 0.0, -0.0], np.float64))
    np.testing.assert_array_equal(nan.astype(bool).get(), [True, False, False])


def test_layouts_simplify_to_the_fewest_axes():
    assert copy_kernels.simplify((4, 5), (20, 4), (20, 4)) == ((20,), (4,), (4,))
    assert copy_kernels.simplify((4, 5), (20, 4), (4, 16)) == ((4, 5), (20, 4), (4, 16))
    assert copy_kernels.simplify((1, 3, 1), (12, 4, 4), (0, -4, 8)) == ((3,), (4,), (-4,))
    assert copy_kernels.simplify((), ) == ((1,),)


def test_every_configuration_is_registered_and_reachable():
    specs = registry.configurations("sm_86", family="array_copy")
    assert len(specs) == len(set(specs)) == 5 * 2 * (1 + 3 * 2) + 15 * 14
    casts = {(s.src, s.dst) for s in specs if s.dst not in copy_kernels.WIDTHS.values()}
    assert len(casts) == 210 and all(s.ndim == 1 for s in specs if (s.src, s.dst) in casts)
    # what a public call launches is among them: a cast, a fill, a 4-d copy
    a = oxicuda.zeros((2, 3, 4, 5), np.float32)
    with oxicuda.trace() as t:
        a.transpose(1, 3, 0, 2).copy()
        a[:, ::2].fill(2.5)
        a.astype(np.float16)
    ran = {r.spec for r in t.launches}
    assert ran and all(s in specs or s.arch != "sm_86" for s in ran)


@pytest.mark.gpu
def test_large_transpose_and_cast_match_numpy_on_the_gpu(rng):
    host = rng.standard_normal((4096, 3001)).astype(np.float32)
    a = oxicuda.asarray(host)
    np.testing.assert_array_equal(a.T.copy().get(), host.T)
    np.testing.assert_array_equal(a[::-1, ::3].astype("bfloat16").get(),
                                  host[::-1, ::3].astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(a.T.astype(np.float64, order="F").get(), host.T.astype(np.float64))


@pytest.mark.gpu
def test_copies_past_2_to_the_32_elements_use_64_bit_indexing():
    n0, n1 = 1 << 17, (1 << 15) + 1  # 2**32 + 2**17 uint8 elements
    src = oxicuda.zeros((n0, n1), np.uint8)
    src[:, -1].fill(3)
    src[-1].fill(5)
    with oxicuda.trace() as t:
        out = src.T.copy()
    assert any(r.spec.wide for r in t.launches if r.spec is not None)
    expect = np.full(n0, 3, np.uint8)
    expect[-1] = 5
    np.testing.assert_array_equal(out[-1].get(), expect)
    np.testing.assert_array_equal(out[:, -1].get(), np.full(n1, 5, np.uint8))
    np.testing.assert_array_equal(out[:-1, 0].get(), np.zeros(n1 - 1, np.uint8))
