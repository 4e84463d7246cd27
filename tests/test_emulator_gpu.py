"""Differential test: the nvcc kernels of tests/data/nvcc on the real driver and on the emulator
must agree (bitwise for integer work, to rounding for float work). Needs a GPU."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from oxicuda.emulator.api import EmulatorAPI
from oxicuda.emulator.interp.harness import run_ptx

DATA = Path(__file__).parent / "data" / "nvcc"
pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def both():
    from oxicuda.driver.backend import api
    from oxicuda.driver.context import ensure_context

    ensure_context()
    return api(), EmulatorAPI()


def _run_both(both, name, grid, block, args):
    text = (DATA / f"{name}.ptx").read_text()
    real = run_ptx(both[0], text, name, grid, block, [a.copy() if isinstance(a, np.ndarray) else a for a in args])
    emu = run_ptx(both[1], text, name, grid, block, [a.copy() if isinstance(a, np.ndarray) else a for a in args])
    return real, emu


def test_vector_add_agrees_bitwise(both, rng):
    n = 5000
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    real, emu = _run_both(both, "vector_add", (20, 1, 1), (256, 1, 1), [a, b, np.full(n, np.nan, np.float32), n])
    np.testing.assert_array_equal(real[2], emu[2])


def test_histogram_agrees_bitwise(both, rng):
    n = 100000
    d = rng.integers(0, 256, n).astype(np.uint8)
    real, emu = _run_both(both, "histogram", (8, 1, 1), (256, 1, 1), [d, np.zeros(64, np.uint32), n])
    np.testing.assert_array_equal(real[1], emu[1])


def test_half_convert_agrees_bitwise(both, rng):
    n = 4096
    x = (rng.standard_normal(n) * 30).astype(np.float32)
    real, emu = _run_both(both, "half_convert", (16, 1, 1), (256, 1, 1),
                          [x, np.zeros(n, np.uint16), np.zeros(n, np.uint16), np.zeros(n, np.float32), n])
    np.testing.assert_array_equal(real[1], emu[1])
    np.testing.assert_array_equal(real[2], emu[2])
    np.testing.assert_array_equal(real[3], emu[3])


def test_index64_agrees_bitwise(both, rng):
    n, s = 1000, 3
    x = rng.standard_normal(n * s)
    real, emu = _run_both(both, "index64", (8, 1, 1), (128, 1, 1), [x, np.zeros(n * s), n, s])
    np.testing.assert_array_equal(real[1], emu[1])


def test_reduce_sum_agrees_to_rounding(both, rng):
    n = 4096
    x = rng.standard_normal(n).astype(np.float32)
    real, emu = _run_both(both, "reduce_sum", (16, 1, 1), (256, 1, 1), [x, np.zeros(1, np.float32), n])
    np.testing.assert_allclose(real[1], emu[1], rtol=1e-5, atol=1e-4)


def test_sgemm_tiled_agrees_bitwise(both, rng):
    m, n, k = 70, 50, 90
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    real, emu = _run_both(both, "sgemm_tiled", ((n + 15) // 16, (m + 15) // 16, 1), (16, 16, 1),
                          [a, b, np.full((m, n), np.nan, np.float32), m, n, k])
    np.testing.assert_array_equal(real[2], emu[2])  # same fma order per thread: identical bits
