"""Shared checks of the oxicuda.fft tests: random inputs, NaN-poisoned outputs, the issue's
accuracy bounds against numpy's float64 FFT."""

from __future__ import annotations

import math

import numpy as np

import oxicuda
from oxicuda.fft.dispatch import axis_strategy

SMEM = 101376  # the smallest opt-in limit we target (sm_86); strategies only get simpler above


def random(rng, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def poisoned(shape, dtype) -> oxicuda.DeviceArray:
    return oxicuda.asarray(np.full(shape, np.nan, dtype))


def bound(lengths, dtype) -> float:
    """The issue's relative-L2 bound for transforms of ``lengths`` (Bluestein axes 4x)."""
    single = np.dtype(dtype) in (np.dtype(np.complex64), np.dtype(np.float32))
    per = 3e-7 if single else 1e-15
    total = 0.0
    for n in lengths:
        factor = 4.0 if axis_strategy(n, "c64" if single else "c128", SMEM)[0] == "bluestein" else 1.0
        total += per * factor * max(1.0, math.log2(max(n, 2)))
    return total


def rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    scale = np.linalg.norm(ref)
    return float(np.linalg.norm(got - ref) / scale) if scale else float(np.linalg.norm(got))


def check(got: np.ndarray, ref: np.ndarray, lengths, dtype) -> None:
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert not np.isnan(got).any(), "an output element was not written"
    err = rel_err(got, ref)
    assert err <= bound(lengths, dtype), f"relative L2 error {err:.3e} > {bound(lengths, dtype):.3e}"
