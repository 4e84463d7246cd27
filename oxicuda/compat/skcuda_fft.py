"""``skcuda.fft``'s shape over oxicuda.fft: ``Plan(shape, in_dtype, out_dtype, batch, stream,
...)``, ``fft(x_gpu, y_gpu, plan)``, ``ifft(y_gpu, x_gpu, plan, scale=False)``. Also
``oxicuda.skcuda.fft``. Layout arguments are cufftPlanMany's (``oxicuda.fft.many``)."""

from __future__ import annotations

import numpy as np

from oxicuda.fft.many import FFT_TYPES, FORWARD, INVERSE, ManyPlan

__all__ = ["Plan", "fft", "ifft"]

_BY_DTYPES = {(np.dtype(i), np.dtype(o)): code for code, (_, _, i, o) in FFT_TYPES.items()}


class Plan:
    """A cuFFT plan for ``batch`` transforms of ``shape`` from ``in_dtype`` to ``out_dtype``
    (float32->complex64 is R2C, complex64->float32 C2R, complex64->complex64 C2C; double alike)."""

    def __init__(self, shape, in_dtype, out_dtype, batch: int = 1, stream=None, mode: int = 0x01,
                 inembed=None, istride: int = 1, idist: int = 0, onembed=None, ostride: int = 1,
                 odist: int = 0, auto_allocate: bool = True) -> None:
        key = (np.dtype(in_dtype), np.dtype(out_dtype))
        if key not in _BY_DTYPES:
            raise ValueError(f"Plan: in_dtype {key[0]} and out_dtype {key[1]} name no cuFFT transform; "
                             "allowed float32->complex64, complex64->float32, complex64->complex64 and "
                             "their double forms")
        self.shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        self.in_dtype, self.out_dtype = key
        self.fft_type = _BY_DTYPES[key]
        self.batch, self.stream, self.mode = batch, stream, mode
        self.many = ManyPlan(self.shape, self.fft_type, batch, inembed, istride, idist or None,
                             onembed, ostride, odist or None)


def fft(x_gpu, y_gpu, plan: Plan) -> None:
    """y_gpu = the forward transform of x_gpu (unnormalized)."""
    plan.many.execute(x_gpu, y_gpu, FORWARD, stream=plan.stream)


def ifft(y_gpu, x_gpu, plan: Plan, scale: bool = False) -> None:
    """x_gpu = the inverse transform of y_gpu, divided by prod(plan.shape) when ``scale``."""
    plan.many.execute(y_gpu, x_gpu, INVERSE, scale=scale, stream=plan.stream)
