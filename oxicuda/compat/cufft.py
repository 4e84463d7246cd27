"""``cupy.cuda.cufft``'s shape over oxicuda.fft: ``Plan1d``, ``PlanNd``, the cufftType and
direction constants, and ``CuFFTError`` with cuFFT's status names. Also ``oxicuda.cuda.cufft``.
Every call goes to ``oxicuda.fft.many.ManyPlan``; nothing here computes."""

from __future__ import annotations

from oxicuda.fft.many import FFT_TYPES, FORWARD, INVERSE, LayoutError, ManyPlan

__all__ = [
    "CUFFT_C2C",
    "CUFFT_C2R",
    "CUFFT_D2Z",
    "CUFFT_FORWARD",
    "CUFFT_INVERSE",
    "CUFFT_R2C",
    "CUFFT_Z2D",
    "CUFFT_Z2Z",
    "STATUS",
    "CuFFTError",
    "Plan1d",
    "PlanNd",
    "getVersion",
]

CUFFT_C2C, CUFFT_R2C, CUFFT_C2R = 0x29, 0x2a, 0x2c
CUFFT_Z2Z, CUFFT_D2Z, CUFFT_Z2D = 0x69, 0x6a, 0x6c
CUFFT_FORWARD, CUFFT_INVERSE = FORWARD, INVERSE
assert {CUFFT_C2C, CUFFT_R2C, CUFFT_C2R, CUFFT_Z2Z, CUFFT_D2Z, CUFFT_Z2D} == set(FFT_TYPES)

#: cufftResult value -> name
STATUS = {0: "CUFFT_SUCCESS", 1: "CUFFT_INVALID_PLAN", 2: "CUFFT_ALLOC_FAILED", 3: "CUFFT_INVALID_TYPE",
          4: "CUFFT_INVALID_VALUE", 5: "CUFFT_INTERNAL_ERROR", 6: "CUFFT_EXEC_FAILED",
          7: "CUFFT_SETUP_FAILED", 8: "CUFFT_INVALID_SIZE", 9: "CUFFT_UNALIGNED_DATA",
          10: "CUFFT_INCOMPLETE_PARAMETER_LIST", 11: "CUFFT_INVALID_DEVICE", 12: "CUFFT_PARSE_ERROR",
          13: "CUFFT_NO_WORKSPACE", 14: "CUFFT_NOT_IMPLEMENTED", 15: "CUFFT_LICENSE_ERROR",
          16: "CUFFT_NOT_SUPPORTED"}
_CODES = {name: code for code, name in STATUS.items()}


class CuFFTError(RuntimeError):
    """cuFFT's error: ``status`` is the cufftResult code, the message starts with its name."""

    def __init__(self, status: int, detail: str = "") -> None:
        self.status = status
        super().__init__(STATUS.get(status, str(status)) + (f": {detail}" if detail else ""))


def _plan(*args, **kwargs) -> ManyPlan:
    try:
        return ManyPlan(*args, **kwargs)
    except LayoutError as exc:
        raise CuFFTError(_CODES[exc.status], exc.detail) from None


def _run(plan: ManyPlan, a, out, direction) -> None:
    try:
        plan.execute(a, out, direction)
    except LayoutError as exc:
        raise CuFFTError(_CODES[exc.status], exc.detail) from None


def getVersion() -> int:
    """The version the surface mirrors (cuFFT 11.0's numbering); the kernels are oxicuda's."""
    return 11000


class Plan1d:
    """``Plan1d(nx, fft_type, batch)``: batch transforms of nx points, compact layout."""

    def __init__(self, nx: int, fft_type: int, batch: int, devices=None, out=None) -> None:
        if devices is not None and len(devices) > 1:
            raise CuFFTError(16, "multi-GPU plans are not supported")
        self.nx, self.fft_type, self.batch = nx, fft_type, batch
        self._plan = _plan((nx,), fft_type, batch)

    def fft(self, a, out, direction: int) -> None:
        """out = transform of a (direction CUFFT_FORWARD or CUFFT_INVERSE, unnormalized)."""
        _run(self._plan, a, out, direction)

    def get_output_array(self, a, order: str = "C"):
        from oxicuda.memory.array import empty

        return empty(self._plan.out_shape, self._plan.out_dtype)


class PlanNd:
    """``PlanNd(shape, inembed, istride, idist, onembed, ostride, odist, fft_type, batch, order,
    last_axis, last_size)``: cufftPlanMany's advanced layouts (C order only)."""

    def __init__(self, shape, inembed, istride, idist, onembed, ostride, odist, fft_type, batch,
                 order="C", last_axis=-1, last_size=None) -> None:
        if order != "C":
            raise CuFFTError(16, f"order={order!r}; only 'C' layouts are supported")
        self.shape, self.fft_type, self.batch, self.order = tuple(shape), fft_type, batch, order
        self.last_axis, self.last_size = last_axis, last_size
        real = fft_type in (CUFFT_R2C, CUFFT_C2R, CUFFT_D2Z, CUFFT_Z2D)
        if real and last_size is not None and last_size != tuple(shape)[last_axis]:
            raise CuFFTError(8, f"last_size={last_size} but shape[{last_axis}]={tuple(shape)[last_axis]}; a real "
                             "transform's last size is the real length and must match (odd c2r lengths "
                             "cannot be told from the complex input)")
        self._plan = _plan(tuple(shape), fft_type, batch, inembed, istride, idist, onembed, ostride, odist)

    def fft(self, a, out, direction: int) -> None:
        """out = transform of a in the plan's layouts (unnormalized)."""
        _run(self._plan, a, out, direction)

    def get_output_array(self, a, order: str = "C"):
        from oxicuda.memory.array import empty

        return empty(self._plan.out_shape if self._plan.out_compact else (self._plan.out_span,),
                     self._plan.out_dtype)
