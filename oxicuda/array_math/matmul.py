"""``a @ b`` for device arrays through oxicuda.blas (numpy's matmul shapes up to 3-D)."""

from __future__ import annotations

import numpy as np

from oxicuda.memory.array import DeviceArray, asarray
from oxicuda.memory.dtypes import BFLOAT16

from .operands import HostOperand, on_device, operand

#: dtypes oxicuda.blas.matmul multiplies (fp16/bf16 accumulate in float32)
MATMUL_DTYPES = frozenset(np.dtype(t) for t in ("float32", "float64", "complex64", "complex128",
                                                "float16")) | {BFLOAT16}


def matmul(a: object, b: object) -> DeviceArray:
    """numpy.matmul of two device arrays (host arrays are copied to the device): 1-D operands
    promoted and their axis removed as numpy's, 2-D @ 2-D, and 3-D batches (a 2-D operand
    broadcast over the batch). The dtype is numpy's result type of the two; dtypes outside
    MATMUL_DTYPES raise TypeError, scalars ValueError, mismatched core dimensions ValueError."""
    from oxicuda.blas import matmul as blas_matmul

    xa, xb = operand(a), operand(b)
    if not isinstance(xa, (DeviceArray, HostOperand)) or not isinstance(
            xb, (DeviceArray, HostOperand)):
        raise ValueError("matmul: Input operand does not have enough dimensions (scalars are "  # noqa: TRY004  (numpy raises ValueError)
                         "not allowed; use *)")
    dt = np.result_type(xa.dtype, xb.dtype)
    if dt not in MATMUL_DTYPES:
        allowed = ", ".join(sorted(str(d) for d in MATMUL_DTYPES))
        raise TypeError(f"matmul: operands of {xa.dtype} and {xb.dtype} ({dt}) are not supported "
                        f"by oxicuda.blas; allowed: {allowed}")
    if xa.ndim > 3 or xb.ndim > 3:
        raise NotImplementedError(f"matmul: operands of more than 3 dimensions ({xa.shape} @ "
                                  f"{xb.shape}) do not run on device arrays yet")
    k_a = xa.shape[-1]
    k_b = xb.shape[0] if xb.ndim == 1 else xb.shape[-2]
    if k_a != k_b:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
                         f"(size {k_b} is different from {k_a}); shapes {xa.shape} @ {xb.shape}")
    if xa.ndim == 3 and xb.ndim == 3 and xa.shape[0] != xb.shape[0] and 1 not in (
            xa.shape[0], xb.shape[0]):
        raise ValueError(f"matmul: batch dimensions {xa.shape[0]} and {xb.shape[0]} do not "
                         "broadcast")
    xa, xb = on_device(xa), on_device(xb)
    xa = xa if xa.dtype == dt else xa.astype(dt)
    xb = xb if xb.dtype == dt else xb.astype(dt)
    return blas_matmul(asarray(xa), asarray(xb))
