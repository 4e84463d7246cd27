"""oxicuda.fft on a real GPU: the issue's large sizes against numpy's float64 FFT and against
cuFFT (through CuPy) on the same input, every smooth single-pass length, and the multi-pass and
Bluestein paths at sizes the emulator cannot reach. Skips off a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from fft_checks import bound, poisoned, random, rel_err

import oxicuda
import oxicuda.fft as F
from oxicuda.fft.kernels import stockham

pytestmark = pytest.mark.gpu


def _cupy():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:
        return None


LARGE = [
    ("fft", (64, 1 << 20), np.complex64, (-1,)),
    ("fft", (1, 1 << 26), np.complex64, (-1,)),
    ("fft2", (4096, 4096), np.complex64, (-2, -1)),
    ("fft", (16384, 1024), np.complex64, (-1,)),
    ("fft", (1024, 4099), np.complex64, (-1,)),
    ("fft", (1, 1 << 24), np.complex128, (-1,)),
    ("rfft2", (4096, 4096), np.float32, (-2, -1)),
    ("rfft", (256, 1 << 16), np.float32, (-1,)),
    ("ifft", (8, 3 << 20), np.complex64, (-1,)),
    ("irfft", (64, 1 << 15), np.complex64, (-1,)),
]


@pytest.mark.parametrize("func,shape,dtype,axes", LARGE, ids=[f"{f}-{'x'.join(map(str, s))}-{np.dtype(d).name}"
                                                              for f, s, d, _ in LARGE])
def test_large_sizes_against_numpy_and_cufft(func, shape, dtype, axes, rng):
    x = random(rng, shape, dtype)
    kw = {"axes": axes} if func.endswith("2") else {"axis": axes[0]}
    got = getattr(F, func)(oxicuda.asarray(x), **kw).get()
    rows = slice(None) if func.endswith("2") else slice(0, 2)
    host = x[rows].astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    ref = getattr(np.fft, func)(host, **kw)
    lengths = [shape[a] for a in axes] if func != "irfft" else [2 * (shape[-1] - 1)]
    err = rel_err(got[rows], ref)
    assert err <= bound(lengths, dtype), f"relative L2 error {err:.3e} > {bound(lengths, dtype):.3e}"
    cupy = _cupy()
    if cupy is not None:
        theirs = cupy.asnumpy(getattr(cupy.fft, func)(cupy.asarray(x), **kw))
        vendor_err = rel_err(theirs[rows], ref)
        print(f"{func} {shape}: ours {err:.3e}, cuFFT {vendor_err:.3e}")
        assert err <= 2 * vendor_err + 1e-300 or err <= bound(lengths, dtype) / 4, \
            f"error {err:.3e} is more than twice cuFFT's {vendor_err:.3e}"


def _code_path(n: int, dtype: str) -> tuple:
    """What the generated kernel of length ``n`` depends on beyond n itself: the radices used and
    the first and last (global-memory) passes' radix, whether a CTA holds several transforms
    (the staged column path), whether some pass leaves threads idle (guarded butterfly groups),
    whether the staged copy is guarded, and whether the thread count is capped."""
    radices = stockham.radix_plan(n)
    tpt = stockham.threads_per_transform(n, dtype)
    per = stockham.default_per_cta(n, dtype)
    return (frozenset(radices), radices[:1], radices[-1:], per > 1, any((n // r) % tpt for r in radices),
            per > 1 and n % tpt != 0, tpt == stockham.MAX_TPT)


def _single_pass_representatives(dtype: str) -> list[int]:
    """The shortest length of every code path (``_code_path``) up to the largest single-pass
    length of any device, each power of two, and the longest lengths: every kernel variant the
    generator can emit is run, with far fewer driver JITs than all 400 lengths."""
    top = stockham.MAX_SINGLE[dtype]
    first: dict[tuple, int] = {}
    for n in range(1, top + 1):
        if stockham.is_smooth(n):
            first.setdefault(_code_path(n, dtype), n)
    picks = set(first.values()) | {1 << k for k in range(top.bit_length())}
    picks |= {max(n for n in range(top // 2 + 1, top + 1) if stockham.is_smooth(n) and n % 3 == 0)}
    return sorted(picks)


#: the representatives in chunks of about 12 lengths, so that xdist spreads the driver JITs
CHUNK = 12
SINGLE_PASS = [(dt, chunk) for dt in ("c64", "c128")
               for reps in [_single_pass_representatives(dt)]
               for chunk in [tuple(reps[i::-(-len(reps) // CHUNK)]) for i in range(-(-len(reps) // CHUNK))]]


@pytest.mark.parametrize("dtype,lengths", SINGLE_PASS,
                         ids=[f"{dt}-{min(ls)}-{max(ls)}-{len(ls)}" for dt, ls in SINGLE_PASS])
def test_every_single_pass_code_path_against_numpy(dtype, lengths, rng):
    from oxicuda.driver.facts import device_facts

    top = stockham.max_single(dtype, device_facts().smem_per_block_optin)
    npdt = np.complex64 if dtype == "c64" else np.complex128
    ran = []
    for n in [n for n in lengths if n <= top]:
        x = random(rng, (3, n), npdt)
        out = poisoned((3, n), npdt)
        with oxicuda.trace() as t:
            F.fft(oxicuda.asarray(x), out=out)
        assert [(r.spec.family, r.spec.n) for r in t.launches] == [("fft_stockham", n)], n
        got = out.get()
        ref = np.fft.fft(x.astype(np.complex128))
        assert not np.isnan(got).any(), n
        assert rel_err(got, ref) <= bound([n], npdt), n
        ran.append(n)
    if not ran:
        pytest.skip(f"every length of this chunk is above the device's single-pass limit {top}")


@pytest.mark.parametrize("n", [4099, 10007, 65537, 1 << 21, 3 ** 13, 5 ** 9, 2 * 7 ** 7])
def test_long_and_prime_axes(n, rng):
    x = random(rng, (2, n), np.complex64)
    got = F.fft(x).get()
    assert rel_err(got, np.fft.fft(x.astype(np.complex128))) <= bound([n], np.complex64)
    back = F.ifft(got).get()
    assert rel_err(back, x.astype(np.complex128)) <= 2 * bound([n], np.complex64)


def test_nd_real_and_strided_at_size(rng):
    x = random(rng, (8, 512, 600), np.float32)
    d = oxicuda.asarray(x)
    got = F.rfftn(d[:, ::2, :], axes=(0, 1, 2)).get()
    ref = np.fft.rfftn(x[:, ::2, :].astype(np.float64))
    assert rel_err(got, ref) <= bound([8, 256, 600], np.float32)
    back = F.irfftn(oxicuda.asarray(ref.astype(np.complex64)), s=(8, 256, 600)).get()
    assert rel_err(back, x[:, ::2, :].astype(np.float64)) <= 2 * bound([8, 256, 600], np.float32)


def test_transforms_run_on_the_arrays_stream_and_reuse_the_plan(rng):
    s = oxicuda.Stream()
    host = random(rng, (64, 4096), np.complex64)
    x = oxicuda.asarray(host, stream=s)
    out = oxicuda.empty((64, 4096), np.complex64, stream=s)
    with oxicuda.trace() as t:
        for _ in range(3):
            F.fft(x, out=out)
    s.synchronize()
    assert [r.stream for r in t.launches] == [s.handle] * 3
    assert rel_err(out.get(), np.fft.fft(host.astype(np.complex128))) <= bound([4096], np.complex64)
