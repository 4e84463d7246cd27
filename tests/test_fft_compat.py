"""The cuFFT-shaped surfaces: oxicuda.cuda.cufft (cupy.cuda.cufft's Plan1d, PlanNd, constants,
CuFFTError) with cufftPlanMany's advanced layouts, oxicuda.skcuda.fft (Plan, fft, ifft), and a
CuPy and a scikit-cuda script run with only their import blocks swapped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fft_checks import poisoned, random
from test_compat_cupy_cublas import run_script

import oxicuda
from oxicuda.cuda import cufft
from oxicuda.skcuda import fft as skfft

SCRIPTS = Path(__file__).parent / "data" / "scripts"
CUPY_IMPORTS = """import numpy as np
import oxicuda as cp
import oxicuda.fft as cpfft
from oxicuda.cuda import cufft
"""
SKCUDA_IMPORTS = """import numpy as np
import oxicuda
import oxicuda.skcuda.fft as cu_fft


class gpuarray:
    to_gpu = staticmethod(oxicuda.asarray)
    empty = staticmethod(oxicuda.empty)
    empty_like = staticmethod(lambda a: oxicuda.empty(a.shape, a.dtype))
"""


def test_constants_match_the_cufft_header():
    assert (cufft.CUFFT_C2C, cufft.CUFFT_R2C, cufft.CUFFT_C2R) == (0x29, 0x2a, 0x2c)
    assert (cufft.CUFFT_Z2Z, cufft.CUFFT_D2Z, cufft.CUFFT_Z2D) == (0x69, 0x6a, 0x6c)
    assert (cufft.CUFFT_FORWARD, cufft.CUFFT_INVERSE) == (-1, 1)
    assert cufft.STATUS[8] == "CUFFT_INVALID_SIZE"


def test_plan1d_every_type_unnormalized(rng):
    for ftype, idt, odt, ref in (
            (cufft.CUFFT_C2C, np.complex64, np.complex64, lambda x: np.fft.fft(x)),
            (cufft.CUFFT_Z2Z, np.complex128, np.complex128, lambda x: np.fft.fft(x)),
            (cufft.CUFFT_R2C, np.float32, np.complex64, lambda x: np.fft.rfft(x)),
            (cufft.CUFFT_D2Z, np.float64, np.complex128, lambda x: np.fft.rfft(x))):
        x = random(rng, (3, 20), idt)
        out = poisoned(ref(x).shape, odt)
        cufft.Plan1d(20, ftype, 3).fft(oxicuda.asarray(x), out, cufft.CUFFT_FORWARD)
        np.testing.assert_allclose(out.get(), ref(x.astype(np.complex128 if idt in (np.complex64, np.complex128)
                                                          else np.float64)), rtol=0, atol=2e-5 * 20)
    spec = random(rng, (3, 11), np.complex128)
    out = poisoned((3, 20), np.float64)
    cufft.Plan1d(20, cufft.CUFFT_Z2D, 3).fft(oxicuda.asarray(spec), out, cufft.CUFFT_INVERSE)
    np.testing.assert_allclose(out.get(), np.fft.irfft(spec, 20) * 20, rtol=1e-12, atol=1e-12)


def test_plannd_advanced_layouts_as_cufftplanmany_documents(rng):
    n, inembed, istride, idist, batch = (4, 5), (6, 7), 2, 90, 2
    onembed, ostride, odist = (5, 6), 1, 31
    buf = random(rng, (batch * idist,), np.complex128)
    out = poisoned((batch * odist,), np.complex128)
    plan = cufft.PlanNd(n, inembed, istride, idist, onembed, ostride, odist, cufft.CUFFT_Z2Z, batch, "C", -1, None)
    plan.fft(oxicuda.asarray(buf), out, cufft.CUFFT_FORWARD)
    got = out.get()
    for b in range(batch):
        block = np.array([[buf[b * idist + (i * 7 + j) * istride] for j in range(5)] for i in range(4)])
        res = np.array([[got[b * odist + (i * 6 + j) * ostride] for j in range(5)] for i in range(4)])
        np.testing.assert_allclose(res, np.fft.fft2(block), rtol=0, atol=1e-12)
    untouched = np.ones(batch * odist, bool)
    for b in range(batch):
        for i in range(4):
            untouched[b * odist + i * 6: b * odist + i * 6 + 5] = False
    assert np.isnan(got[untouched]).all()  # gaps of the output layout stay as they were


def test_cufft_errors_carry_status_names(rng):
    with pytest.raises(cufft.CuFFTError, match="CUFFT_INVALID_SIZE") as info:
        cufft.Plan1d(0, cufft.CUFFT_C2C, 1)
    assert info.value.status == 8
    with pytest.raises(cufft.CuFFTError, match="CUFFT_INVALID_TYPE"):
        cufft.Plan1d(8, 0x12, 1)
    plan = cufft.Plan1d(8, cufft.CUFFT_C2C, 2)
    a, out = oxicuda.asarray(random(rng, (2, 8), np.complex64)), poisoned((2, 8), np.complex64)
    with oxicuda.trace() as t:
        with pytest.raises(cufft.CuFFTError, match="CUFFT_INVALID_TYPE"):
            plan.fft(oxicuda.asarray(random(rng, (2, 8), np.complex128)), out, cufft.CUFFT_FORWARD)
        with pytest.raises(cufft.CuFFTError, match="reaches"):
            plan.fft(oxicuda.asarray(random(rng, (1, 8), np.complex64)), out, cufft.CUFFT_FORWARD)
        with pytest.raises(cufft.CuFFTError, match="direction"):
            plan.fft(a, out, 0)
        with pytest.raises(cufft.CuFFTError, match="only inverse"):
            cufft.Plan1d(8, cufft.CUFFT_C2R, 2).fft(a, poisoned((2, 8), np.float32), cufft.CUFFT_FORWARD)
    assert not t.launches
    assert np.isnan(out.get()).all()


def test_plannd_refuses_a_real_last_size_that_does_not_match():
    with pytest.raises(cufft.CuFFTError, match="last_size=8"):
        cufft.PlanNd((4, 7), None, 1, 0, None, 1, 0, cufft.CUFFT_C2R, 2, "C", -1, 8)


def test_skcuda_plan_and_scale(rng):
    x = random(rng, (2, 12), np.complex64)
    y = poisoned((2, 12), np.complex64)
    plan = skfft.Plan(12, np.complex64, np.complex64, batch=2)
    skfft.fft(oxicuda.asarray(x), y, plan)
    back = poisoned((2, 12), np.complex64)
    skfft.ifft(y, back, plan, scale=True)
    np.testing.assert_allclose(back.get(), x, rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match="name no cuFFT transform"):
        skfft.Plan(12, np.float32, np.float64)


def test_cupy_script_runs_with_swapped_imports():
    assert run_script(SCRIPTS / "cupy_fft_spectrum.py", CUPY_IMPORTS) < 1e-6


def test_skcuda_script_runs_with_swapped_imports():
    assert run_script(SCRIPTS / "skcuda_fft_roundtrip.py", SKCUDA_IMPORTS) < 1e-6
