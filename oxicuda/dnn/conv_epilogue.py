"""The fused epilogue of the conv kernels: bias, then an activation, computed in f32 in PTX.

One table, ``ACTIVATIONS``, names what ``conv2d(activation=...)`` accepts; ``reference_activation``
is the float64 numpy definition the tests compare with (GELU is the exact erf form, like
``torch.nn.functional.gelu`` with its default ``approximate='none'``).
"""

from __future__ import annotations

import math

import numpy as np

from oxicuda.ptx.builder import LOG2_E, KernelBuilder, Value

ACTIVATIONS = ("none", "relu", "silu", "gelu")

# Abramowitz & Stegun 7.1.26: erf(z) = 1 - (a1 t + ... + a5 t^5) exp(-z^2), t = 1 / (1 + p z),
# |error| <= 1.5e-7 for z >= 0 (odd extension for z < 0).
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def emit_activation(kb: KernelBuilder, v: Value, activation: str) -> Value:
    """``activation(v)`` for an f32 register ``v``; exp is ex2(x * log2 e)."""
    if activation == "none":
        return v
    if activation == "relu":
        return kb.max(v, 0.0)
    if activation == "silu":
        e = kb.ex2(kb.mul(v, -LOG2_E))  # exp(-v)
        return kb.div(v, kb.add(e, 1.0))
    if activation == "gelu":
        z = kb.abs(kb.mul(v, 1.0 / math.sqrt(2.0)))
        t = kb.rcp(kb.fma(z, _ERF_P, 1.0))
        poly = kb.mov(_ERF_A[4], "f32")
        for a in reversed(_ERF_A[:4]):
            poly = kb.fma(poly, t, a)
        poly = kb.mul(poly, t)
        g = kb.ex2(kb.mul(kb.mul(z, z), -LOG2_E))  # exp(-z^2)
        erf_abs = kb.sub(1.0, kb.mul(poly, g), type_="f32")
        # 0.5 * v * (1 + sign(v) * erf|z|) == 0.5 * (v + |v| * erf|z|)
        return kb.mul(kb.fma(kb.abs(v), erf_abs, v), 0.5)
    raise ValueError(f"activation={activation!r}; allowed: {ACTIVATIONS}")


def check_activation(activation: object, op: str) -> str:
    """The activation's canonical name ('none' for None); ValueError naming the allowed ones."""
    name = "none" if activation is None else activation
    if name not in ACTIVATIONS:
        raise ValueError(f"{op}: activation={activation!r}; allowed: None, " + ", ".join(repr(a) for a in ACTIVATIONS[1:]))
    return name


def reference_activation(y: np.ndarray, activation: str | None) -> np.ndarray:
    """The float64 definition of each activation (for tests and benchmark checks)."""
    y = np.asarray(y, dtype=np.float64)
    if activation in (None, "none"):
        return y
    if activation == "relu":
        return np.maximum(y, 0.0)
    if activation == "silu":
        return y / (1.0 + np.exp(-y))
    if activation == "gelu":
        erf = np.vectorize(math.erf, otypes=[np.float64])
        return 0.5 * y * (1.0 + erf(y / math.sqrt(2.0)))
    raise ValueError(f"activation={activation!r}; allowed: {ACTIVATIONS}")
