"""oxicuda.fft plans: which kernels each plan kind launches (oxicuda.trace), that a planned call
computes nothing on the host and allocates nothing, the plan cache (size, memory limit, clear,
show_info, threads), Plan/get_fft_plan, the registry both ways, and every bad input raising
before any launch with nothing written."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from fft_checks import check, poisoned, random

import oxicuda
import oxicuda.fft as F
from oxicuda.driver.backend import api
from oxicuda.driver.facts import device_facts
from oxicuda.fft import config, dispatch
from oxicuda.fft.kernels import elementwise, stockham
from oxicuda.ptx import registry


def launched(fn, *args, **kw):
    with oxicuda.trace() as t:
        fn(*args, **kw)
    return [(r.spec.family, getattr(r.spec, "n", getattr(r.spec, "op", None))) for r in t.launches]


def test_each_plan_kind_launches_its_kernels(rng):
    c = oxicuda.asarray(random(rng, (2, 64), np.complex64))
    assert launched(F.fft, c) == [("fft_stockham", 64)]
    assert launched(F.fft, c, n=11) == [("fft_stockham", 32), ("fft_stockham", 32)]  # Bluestein, m = 32
    # the single-pass limit is the longest power-of-two length whose transform fits one CTA's
    # shared memory (at most 8192 complex128 points): 5000 complex128 points take one pass on
    # sm_80/sm_90 (the H200's 227 KB hold 8192 points) and the four-step 50 x 100 on sm_86
    # (99 KB hold 4096)
    z = oxicuda.asarray(random(rng, (1, 5000), np.complex128))
    smem = device_facts().smem_per_block_optin
    top = dispatch.single_limit("c128", smem)
    assert top & (top - 1) == 0 and top * 16 <= smem and (top == 8192 or 2 * top * 16 > smem)
    if 5000 <= top:
        assert dispatch.axis_strategy(5000, "c128", smem) == ("single",)
        assert launched(F.fft, z) == [("fft_stockham", 5000)]
    else:
        assert dispatch.axis_strategy(5000, "c128", smem) == ("four_step", 50, 100)
        assert launched(F.fft, z) == [("fft_stockham", 50), ("fft_stockham", 100)]
    # a four-step plan on every device: 2^15 complex128 points (512 KB) never fit one CTA
    big = oxicuda.asarray(random(rng, (1, 1 << 15), np.complex128))
    n1, n2 = dispatch.axis_strategy(1 << 15, "c128", smem)[1:]
    assert n1 * n2 == 1 << 15 and max(n1, n2) * 16 <= smem
    assert launched(F.fft, big) == [("fft_stockham", n1), ("fft_stockham", n2)]
    r = oxicuda.asarray(random(rng, (2, 64), np.float32))
    assert launched(F.rfft, r) == [("fft_stockham", 32), ("fft_aux", "r2c_post")]
    assert launched(F.rfft, r, n=9) == [("fft_aux", "gather_real"), ("fft_stockham", 9)]
    assert launched(F.irfft, c) == [("fft_aux", "c2r_pre"), ("fft_stockham", 63), ("fft_aux", "scatter_real")] \
        or launched(F.irfft, c, n=64) == [("fft_aux", "c2r_pre"), ("fft_stockham", 32)]
    assert launched(F.irfft, c, n=64) == [("fft_aux", "c2r_pre"), ("fft_stockham", 32)]
    assert launched(F.irfft, c, n=9) == [("fft_aux", "hermitian"), ("fft_stockham", 9), ("fft_aux", "scatter_real")]
    three = oxicuda.asarray(random(rng, (4, 6, 8), np.complex64))
    assert launched(F.fftn, three) == [("fft_stockham", 8), ("fft_stockham", 6), ("fft_stockham", 4)]
    assert launched(F.fftshift, three) == [("fft_aux", "nd_copy")]


def test_a_planned_call_makes_no_host_transfer_and_no_allocation(rng, monkeypatch):
    cases = [(F.fft, random(rng, (3, 40), np.complex64), {}),
             (F.fft, random(rng, (2, 13), np.complex128), {}),
             (F.ifft, random(rng, (1, 5000), np.complex128), {}),
             (F.rfft, random(rng, (3, 30), np.float32), {}),
             (F.irfft, random(rng, (3, 9), np.complex64), {"n": 17}),
             (F.fftn, random(rng, (3, 4, 5), np.complex64), {})]
    prepared = []
    for fn, x, kw in cases:
        d = oxicuda.asarray(x)
        out = fn(d, **kw)  # plans, tables and workspace made here
        prepared.append((fn, d, kw, poisoned(out.shape, out.dtype), out.get()))
    drv = api()

    def refuse(*a, **k):
        raise AssertionError("a host transfer or allocation during a planned transform")

    for name in ("memcpy_htod", "memcpy_dtoh", "memcpy_dtod", "memcpy_2d", "mem_alloc"):
        monkeypatch.setattr(drv, name, refuse)
    for fn, d, kw, out, _ in prepared:
        fn(d, out=out, **kw)
    monkeypatch.undo()
    for fn, d, kw, out, first in prepared:
        assert np.array_equal(out.get(), first)


def test_plan_cache_hits_evicts_and_reports(rng, capsys):
    cache = F.get_plan_cache()
    assert cache is config.get_plan_cache()
    size, memsize = cache.get_size(), cache.get_memsize()
    try:
        cache.clear()
        x = oxicuda.asarray(random(rng, (2, 16), np.complex64))
        F.fft(x)
        F.fft(x)
        assert (cache.get_curr_size(), cache.hits, cache.misses) == (1, 1, 1)
        cache.set_size(2)
        for n in (8, 9, 10):
            F.fft(x, n=n)
        assert cache.get_curr_size() == 2
        cache.set_memsize(0)
        assert cache.get_curr_size() <= 1
        cache.show_info()
        assert "plan cache" in capsys.readouterr().out
        cache.clear()
        assert cache.get_curr_size() == 0
        with pytest.raises(ValueError, match="size"):
            cache.set_size(-5)
    finally:
        cache.set_size(size)
        cache.set_memsize(memsize)


def test_threads_share_the_cache_and_get_right_answers(rng):
    xs = [random(rng, (2, 20 + i), np.complex64) for i in range(4)]
    results: dict[int, np.ndarray] = {}

    def work(i):
        results[i] = F.fft(xs[i]).get()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, x in enumerate(xs):
        check(results[i], np.fft.fft(x.astype(np.complex128)), [x.shape[1]], np.complex64)


def test_get_fft_plan_runs_and_refuses_other_arrays(rng):
    x = oxicuda.asarray(random(rng, (3, 12), np.complex64))
    plan = F.get_fft_plan(x, axes=(-1,))
    assert isinstance(plan, F.Plan)
    with plan:
        y = F.fft(x)
    check(y.get(), np.fft.fft(x.get().astype(np.complex128)), [12], np.complex64)
    check(plan.execute(x, forward=False).get(), np.fft.ifft(x.get().astype(np.complex128)), [12], np.complex64)
    for other in (oxicuda.asarray(np.zeros((3, 10), np.complex64)),
                  oxicuda.asarray(np.zeros((3, 12), np.complex128)),
                  oxicuda.asarray(np.zeros((3, 24), np.complex64))[:, ::2]):
        with pytest.raises(ValueError, match="does not match the plan"), oxicuda.trace() as t, plan:
            F.fft(other)
        assert not t.launches
    r = oxicuda.asarray(random(rng, (2, 10), np.float32))
    rp = F.get_fft_plan(r, axes=(-1,), value_type="R2C")
    check(rp.execute(r).get(), np.fft.rfft(r.get().astype(np.float64)), [10], np.float32)


def test_every_registered_configuration_is_reachable_and_generates():
    specs = registry.configurations("sm_86", family="fft_stockham")
    assert len({s.n for s in specs if s.dtype == "c64"}) == len([n for n in range(1, 8193) if stockham.is_smooth(n)])
    on_sm90 = registry.configurations("sm_90", family="fft_stockham")
    assert max(s.n for s in on_sm90 if s.dtype == "c64") == 16384  # 128 KB transforms where they fit
    for s in specs:  # what the plans launch: the staged default, or the unstaged (wide) variant
        if s.tpt_hint:
            assert s == stockham.wide_spec("sm_86", s.n, s.dtype)
        else:
            assert s.per_cta == stockham.default_per_cta(s.n, s.dtype)
    assert len({(s.n, s.dtype) for s in specs}) == len([s for s in specs if not s.tpt_hint])
    aux = registry.configurations("sm_86", family="fft_aux")
    assert {s.op for s in aux} == set(elementwise.OPS)
    for s in (specs[0], specs[-1], *aux):
        assert ".entry" in registry.generate_ptx(s)


BAD = [
    (lambda: F.fft(np.arange(8)), TypeError, "int64"),
    (lambda: F.fft(np.ones(8, bool)), TypeError, "bool"),
    (lambda: F.fft(np.ones(8, np.complex64), n=0), ValueError, "n=0"),
    (lambda: F.fftn(np.ones((4, 4), np.complex64), s=(4, -1)), ValueError, "-1"),
    (lambda: F.fft(np.ones(8, np.complex64), axis=1), ValueError, "out of range"),
    (lambda: F.fftn(np.ones((4, 4), np.complex64), axes=(0, 0)), ValueError, "repeat"),
    (lambda: F.fftn(np.ones((4, 4), np.complex64), s=(4,), axes=(0, 1)), ValueError, "must match"),
    (lambda: F.fft(np.ones(8, np.complex64), norm="sideways"), ValueError, "norm"),
    (lambda: F.rfft(np.ones(8, np.complex64)), TypeError, "real transform"),
    (lambda: F.irfft(np.ones(1, np.complex64)), ValueError, "length along axis"),
    (lambda: F.fft(np.ones((3, 0), np.complex64)), ValueError, "length along axis 1 is 0"),
    (lambda: F.fft(np.ones((3, 0), np.complex64), n=4), ValueError, "no entries"),
    (lambda: F.irfft(np.ones((2, 5), np.complex64), out=oxicuda.empty((2, 9), np.float32)), ValueError, "shape"),
]


def test_empty_batches_give_empty_results_without_launches():
    with oxicuda.trace() as t:
        assert F.fft(np.zeros((0, 8), np.complex64)).shape == (0, 8)
        assert F.rfft(np.zeros((3, 0, 8), np.float32)).shape == (3, 0, 5)
    assert not t.launches


@pytest.mark.parametrize("call,exc,words", BAD)
def test_bad_input_raises_before_any_launch(call, exc, words):
    with oxicuda.trace() as t, pytest.raises(exc, match=words):
        call()
    assert not t.launches


def test_bad_out_raises_and_writes_nothing(rng):
    x = oxicuda.asarray(random(rng, (3, 8), np.complex64))
    for out, words in ((poisoned((3, 9), np.complex64), "shape"), (poisoned((3, 8), np.complex128), "dtype"),
                       (poisoned((8, 3), np.complex64).T, "C-contiguous")):
        with oxicuda.trace() as t, pytest.raises(ValueError, match=words):
            F.fft(x, out=out)
        assert not t.launches
        assert np.isnan(out.get()).all()
    base = oxicuda.asarray(np.zeros(32, np.complex64))
    with oxicuda.trace() as t, pytest.raises(ValueError, match="overlaps"):
        F.fft(base[:16], out=base[8:24])
    assert not t.launches


def test_contiguous_rows_take_the_wide_variant_and_strided_axes_the_staged_one(rng):
    """Rows that need no staging run the variant with more threads per transform (wide_spec:
    1024 points on 128 threads of 8 values); an axis read by columns keeps the staged default."""
    for shape, axis, wide in (((3, 1024), -1, True), ((5, 1000), -1, True), ((1024, 8), 0, False)):
        x = random(rng, shape, np.complex64)
        out = poisoned(shape, np.complex64)
        with oxicuda.trace() as t:
            F.fft(oxicuda.asarray(x), axis=axis, out=out)
        (rec,) = t.launches
        n = shape[axis]
        if wide:
            assert rec.spec == stockham.wide_spec(rec.spec.arch, n, "c64") and rec.spec.tpt_hint > 0
        else:
            assert rec.spec.tpt_hint == 0 and rec.spec.per_cta == stockham.default_per_cta(n, "c64")
        assert rec.block[0] == rec.spec.threads
        check(out.get(), np.fft.fft(x.astype(np.complex128), axis=axis), [n], np.complex64)
