"""fftfreq, rfftfreq, fftshift and ifftshift, computed on the device (kernels of ``fft_aux``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oxicuda.memory.array import DeviceArray, asarray, empty

from .config import get_plan_cache
from .plan import Buf, PlanBuilder

__all__ = ["copy_into", "fftfreq", "fftshift", "ifftshift", "rfftfreq"]


@dataclass(frozen=True)
class ShiftProblem:
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    itemsize: int
    shifts: tuple[int, ...]
    ordinal: int
    dst_strides: tuple[int, ...] = ()
    dtype: str = "c64"

    def compose(self, pb: PlanBuilder):
        src = Buf(0, 0, self.shape, self.strides, self.itemsize)
        pb.nd_copy(src, Buf(1, 0, self.shape, self.dst_strides, self.itemsize), self.shifts)
        return pb.finish(f"fftshift{self.shape}")


@dataclass(frozen=True)
class FreqProblem:
    length: int
    n: int
    split: int
    scale: float
    ordinal: int
    dtype: str = "c128"

    def compose(self, pb: PlanBuilder):
        pb.freq(Buf(1, 0, (self.length,), (1,), 8), self.n, self.split, self.scale)
        return pb.finish(f"fftfreq{self.length}")


def _run(problem, pointers, stream=None) -> None:
    from oxicuda.driver.facts import device_facts

    from .plan import build_launch_plan

    plan = get_plan_cache().get_or_build(problem, lambda: build_launch_plan(problem, device_facts(problem.ordinal)))
    plan.run(pointers, (), stream)


def _ordinal() -> int:
    from oxicuda.driver.context import current_device_ordinal

    return current_device_ordinal()


def _shift(x, axes, inverse: bool, op: str) -> DeviceArray:
    xa = x if isinstance(x, DeviceArray) else asarray(x)
    if xa.dtype.itemsize not in (4, 8, 16):
        raise TypeError(f"{op}: dtype {xa.dtype} ({xa.dtype.itemsize} bytes) is not supported; "
                        "elements of 4, 8 or 16 bytes are")
    if axes is None:
        axes = tuple(range(xa.ndim))
    elif isinstance(axes, (int, np.integer)):
        axes = (axes,)
    shifts = [0] * xa.ndim
    for a in axes:
        if not isinstance(a, (int, np.integer)) or not -xa.ndim <= a < xa.ndim:
            raise ValueError(f"{op}: axis {a!r} is out of range for an array of {xa.ndim} dimension(s)")
        n = xa.shape[a]
        shifts[int(a) % xa.ndim] += n // 2 if inverse else n - n // 2
    out = empty(xa.shape, xa.dtype, stream=xa.stream)
    if xa.size:
        strides = tuple(s // xa.dtype.itemsize for s in xa.strides)
        _run(ShiftProblem(tuple(xa.shape), strides, xa.dtype.itemsize, tuple(shifts), _ordinal()),
             (xa.ptr, out.ptr), xa.stream or None)
    return out


def copy_into(src: DeviceArray, dst: DeviceArray, stream: object = None) -> None:
    """dst[...] = src for device arrays of one shape and itemsize, any strides, on the device."""
    size = src.dtype.itemsize
    problem = ShiftProblem(tuple(src.shape), tuple(s // size for s in src.strides), size,
                           (0,) * src.ndim, _ordinal(), tuple(s // size for s in dst.strides))
    if src.size:
        _run(problem, (src.ptr, dst.ptr), stream)


def fftshift(x, axes=None) -> DeviceArray:
    """``x`` with the zero frequency moved to the centre of ``axes`` (default all): numpy's
    fftshift, as a device gather."""
    return _shift(x, axes, False, "fftshift")


def ifftshift(x, axes=None) -> DeviceArray:
    """The inverse of fftshift."""
    return _shift(x, axes, True, "ifftshift")


def _freq(n, d, length: int, split: int, op: str) -> DeviceArray:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"{op}: n={n!r}; a positive int")
    out = empty((length,), np.float64)
    _run(FreqProblem(length, int(n), split, 1.0 / (int(n) * float(d)), _ordinal()), (out.ptr, out.ptr))
    return out


def fftfreq(n: int, d: float = 1.0) -> DeviceArray:
    """The sample frequencies of an n-point fft: [0, 1, ..., -(n//2), ..., -1] / (d n), float64."""
    return _freq(n, d, int(n) if isinstance(n, (int, np.integer)) else 0, (int(n) + 1) // 2 if isinstance(n, (int, np.integer)) else 0, "fftfreq")


def rfftfreq(n: int, d: float = 1.0) -> DeviceArray:
    """The sample frequencies of an n-point rfft: [0, 1, ..., n//2] / (d n), float64."""
    length = int(n) // 2 + 1 if isinstance(n, (int, np.integer)) else 0
    return _freq(n, d, length, length, "rfftfreq")
