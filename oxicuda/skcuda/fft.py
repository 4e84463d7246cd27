"""``oxicuda.skcuda.fft``: shaped like scikit-cuda's ``skcuda.fft`` (see ``oxicuda.compat.skcuda_fft``)."""

from oxicuda.compat.skcuda_fft import Plan, fft, ifft

__all__ = ["Plan", "fft", "ifft"]
