"""Argument checks of the numpy-shaped functions: every one raises before anything touches the
device, naming the function, the argument, the value seen and what is allowed."""

from __future__ import annotations

import numpy as np

from ..memory import capture as _capture
from ..memory.array import DeviceArray, asarray
from .errors import LinAlgError
from .kernels.common import DTYPES


def operand(a: object, who: str, what: str = "a") -> DeviceArray:
    """``a`` as a DeviceArray of a supported dtype (host arrays are copied to the device)."""
    if _capture.ACTIVE:
        _capture.check_uncapturable(f"oxicuda.solver.{who}", "solver calls run on the legacy "
                                    "default stream and check their results (info, pivots) on "
                                    "the host")
    if not isinstance(a, DeviceArray):
        dt = getattr(a, "dtype", None)
        if dt is None:
            dt = np.asarray(a).dtype
        _dtype(np.dtype(dt), who, what)
        a = asarray(a)
    _dtype(a.dtype, who, what)
    return a


def _dtype(dt: np.dtype, who: str, what: str) -> str:
    name = dt.name
    if name not in DTYPES:
        raise TypeError(f"{who}: {what} has dtype {name}; allowed {DTYPES} (convert integers with "
                        f".astype(float64) first)")
    return name


def square(a: DeviceArray, who: str, what: str = "a") -> int:
    """The order of the stacked square matrices of ``a`` (..., n, n); LinAlgError otherwise, as
    numpy.linalg raises."""
    if a.ndim < 2:
        raise LinAlgError(f"{who}: {what} is {a.ndim}-dimensional (shape {a.shape}); it must be at least "
                          "two-dimensional (..., n, n)")
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError(f"{who}: {what} has shape {a.shape}; the last two dimensions must be square")
    return a.shape[-1]


def same_dtype(a: DeviceArray, b: DeviceArray, who: str) -> None:
    if a.dtype != b.dtype:
        raise TypeError(f"{who}: a has dtype {a.dtype} and b has dtype {b.dtype}; they must match "
                        "(convert one with .astype)")


def rhs(a: DeviceArray, b: DeviceArray, n: int, who: str) -> tuple[bool, tuple[int, ...], int]:
    """(b is one vector per system, b's batch shape, right-hand sides per system), numpy 2's rule:
    b is (..., n) only when it is 1-D, else (..., n, k). Batch shapes must equal a's, or a is one
    matrix shared by every system of b."""
    vector = b.ndim == 1
    if b.ndim == 0:
        raise ValueError(f"{who}: b is 0-dimensional; it must be (n,) or (..., n, k)")
    rows = b.shape[0] if vector else b.shape[-2]
    if rows != n:
        raise ValueError(f"{who}: a has shape {a.shape} and b has shape {b.shape}; b's "
                         f"{'length' if vector else 'rows (axis -2)'} must equal a's order {n}")
    bbatch = () if vector else b.shape[:-2]
    if a.shape[:-2] not in ((), bbatch):
        raise ValueError(f"{who}: a's batch shape {a.shape[:-2]} and b's {bbatch} differ; they must be equal "
                         "(or a a single matrix)")
    return vector, bbatch, (1 if vector else b.shape[-1])


def trans_code(trans: object, who: str) -> str:
    table = {0: "N", 1: "T", 2: "C", "N": "N", "T": "T", "C": "C"}
    key = trans.upper() if isinstance(trans, str) else trans
    if isinstance(key, bool) or key not in table:
        raise ValueError(f"{who}: trans={trans!r}; allowed 0/'N', 1/'T', 2/'C'")
    return table[key]
