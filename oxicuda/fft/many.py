"""cufftPlanMany's data layouts over oxicuda.fft: ``ManyPlan(n, fft_type, batch, inembed,
istride, idist, onembed, ostride, odist)``.

As cuFFT documents for the advanced layout, element ``idx`` of batch ``b`` of the input lives at
``b*idist + (sum_i idx_i * prod(inembed[i+1:])) * istride`` (inembed[0] is not used); likewise
for the output. ``inembed=None`` is the basic layout (compact, ``idist = prod(n)``, for c2r
inputs and r2c outputs ``prod(n[:-1]) * (n[-1]//2 + 1)``). Transforms are unnormalized, as
cuFFT's are. A non-compact output is written through a plan-owned scratch and a strided device
copy. Errors are ``LayoutError`` (a ValueError) carrying the cuFFT status name.
"""

from __future__ import annotations

import math

import numpy as np

from oxicuda.memory.array import DeviceArray, asarray, empty

from . import api
from .helpers import copy_into

__all__ = ["FFT_TYPES", "LayoutError", "ManyPlan"]

#: cufftType value -> (name, kind, input dtype, output dtype)
FFT_TYPES = {
    0x29: ("CUFFT_C2C", "c2c", np.complex64, np.complex64),
    0x2a: ("CUFFT_R2C", "r2c", np.float32, np.complex64),
    0x2c: ("CUFFT_C2R", "c2r", np.complex64, np.float32),
    0x69: ("CUFFT_Z2Z", "c2c", np.complex128, np.complex128),
    0x6a: ("CUFFT_D2Z", "r2c", np.float64, np.complex128),
    0x6c: ("CUFFT_Z2D", "c2r", np.complex128, np.float64),
}
FORWARD, INVERSE = -1, 1


class LayoutError(ValueError):
    """A plan or execution argument cuFFT would reject; ``status`` is cuFFT's status name."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.detail = message

    def __reduce__(self):
        # rebuilt from the constructor's arguments (the default would pass only the message)
        return (type(self), (self.status, self.detail))


def _layout(logical: tuple[int, ...], embed, stride: int, dist, batch: int, what: str):
    rank = len(logical)
    if embed is None:
        strides = api._c_strides(logical)
        dist = math.prod(logical) if dist is None or dist == 0 else dist
        stride = 1
    else:
        embed = tuple(int(e) for e in embed)
        if len(embed) != rank:
            raise LayoutError("CUFFT_INVALID_VALUE", f"{what}embed={embed} has {len(embed)} entries for a "
                              f"rank-{rank} transform")
        for i in range(1, rank):
            if embed[i] < logical[i]:
                raise LayoutError("CUFFT_INVALID_VALUE", f"{what}embed[{i}]={embed[i]} is smaller than the "
                                  f"transform's {logical[i]} entries on that dimension")
        if stride < 1:
            raise LayoutError("CUFFT_INVALID_VALUE", f"{what}stride={stride}; it must be >= 1")
        strides = tuple(stride * math.prod(embed[i + 1:]) for i in range(rank))
        if dist is None or dist == 0:
            dist = stride * math.prod(embed)
    if dist < 0:
        raise LayoutError("CUFFT_INVALID_VALUE", f"{what}dist={dist}; it must be >= 0")
    span = (batch - 1) * dist + sum((n - 1) * s for n, s in zip(logical, strides)) + 1
    return (batch,) + logical, (int(dist),) + strides, span


class ManyPlan:
    """A batch of ``batch`` rank-len(n) transforms of type ``fft_type`` in cufftPlanMany layouts."""

    def __init__(self, n, fft_type: int, batch: int = 1, inembed=None, istride: int = 1, idist=None,
                 onembed=None, ostride: int = 1, odist=None) -> None:
        n = (n,) if isinstance(n, (int, np.integer)) else tuple(n)
        if not n or any(not isinstance(v, (int, np.integer)) or v < 1 for v in n):
            raise LayoutError("CUFFT_INVALID_SIZE", f"n={n}; every transform size must be an int >= 1")
        if len(n) > 3:
            raise LayoutError("CUFFT_INVALID_SIZE", f"n={n}; cuFFT plans have rank 1, 2 or 3")
        if fft_type not in FFT_TYPES:
            raise LayoutError("CUFFT_INVALID_TYPE", f"fft_type={fft_type!r}; allowed "
                              + ", ".join(f"{v[0]} ({k:#x})" for k, v in FFT_TYPES.items()))
        if not isinstance(batch, (int, np.integer)) or batch < 1:
            raise LayoutError("CUFFT_INVALID_VALUE", f"batch={batch!r}; it must be an int >= 1")
        self.n, self.fft_type, self.batch = tuple(int(v) for v in n), fft_type, int(batch)
        self.name, self.kind, self.in_dtype, self.out_dtype = FFT_TYPES[fft_type]
        half = self.n[:-1] + (self.n[-1] // 2 + 1,)
        in_logical = half if self.kind == "c2r" else self.n
        out_logical = half if self.kind == "r2c" else self.n
        self.in_shape, self.in_strides, self.in_span = _layout(in_logical, inembed, istride, idist, batch, "i")
        self.out_shape, self.out_strides, self.out_span = _layout(out_logical, onembed, ostride, odist, batch, "o")
        self.out_compact = self.out_strides == api._c_strides(self.out_shape)
        self._scratch: DeviceArray | None = None
        self.device = api._ordinal()

    def _view(self, a: object, dtype, shape, strides, span: int, what: str) -> DeviceArray:
        arr = a if isinstance(a, DeviceArray) else asarray(a)
        if arr.dtype != np.dtype(dtype):
            raise LayoutError("CUFFT_INVALID_TYPE", f"{what} has dtype {arr.dtype}; a {self.name} plan "
                              f"takes {np.dtype(dtype)}")
        if not arr.is_c_contiguous:
            raise LayoutError("CUFFT_INVALID_VALUE", f"{what} must be a contiguous buffer; got strides {arr.strides}")
        if arr.size < span:
            raise LayoutError("CUFFT_INVALID_VALUE", f"{what} holds {arr.size} elements; the plan's layout "
                              f"reaches {span}")
        if api._ordinal() != self.device:
            raise LayoutError("CUFFT_INVALID_DEVICE", f"the plan was made on device {self.device}; "
                              f"the current device is {api._ordinal()}")
        size = np.dtype(dtype).itemsize
        return DeviceArray.from_pointer(arr.ptr, shape, dtype, tuple(s * size for s in strides),
                                        owner=arr, stream=arr.stream or None)

    def execute(self, a: object, out: object, direction: int, scale: bool = False,
                stream: object = None) -> None:
        """out = the transform of a (``direction`` -1 forward, +1 inverse; ``scale`` divides an
        inverse by prod(n)). Checks everything before any launch."""
        if direction not in (FORWARD, INVERSE):
            raise LayoutError("CUFFT_INVALID_VALUE", f"direction={direction!r}; allowed -1 (forward), 1 (inverse)")
        if (self.kind == "r2c" and direction != FORWARD) or (self.kind == "c2r" and direction != INVERSE):
            raise LayoutError("CUFFT_INVALID_VALUE", f"a {self.name} plan runs only "
                              f"{'forward (-1)' if self.kind == 'r2c' else 'inverse (1)'}; got {direction}")
        src = self._view(a, self.in_dtype, self.in_shape, self.in_strides, self.in_span, "the input")
        dst = self._view(out, self.out_dtype, self.out_shape, self.out_strides, self.out_span, "the output")
        inverse = direction == INVERSE
        norm = ("backward" if scale else "forward") if inverse else "backward"
        axes = tuple(range(1, len(self.n) + 1))
        if self.out_compact:
            api.execute(self.kind, src, self.n, axes, norm, inverse, dst, self.name, stream=stream)
            return
        if self._scratch is None:
            self._scratch = empty(self.out_shape, self.out_dtype)
        api.execute(self.kind, src, self.n, axes, norm, inverse, self._scratch, self.name, stream=stream)
        copy_into(self._scratch, dst, stream)

    def output_array(self, a: object = None) -> DeviceArray:
        """A new compact output buffer for this plan."""
        return empty((self.out_span,), self.out_dtype)
