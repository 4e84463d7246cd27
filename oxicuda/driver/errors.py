"""Exceptions raised by every driver call, built from CUresult codes.

``CUDA_RESULTS`` maps each CUresult value of ``cuda.h`` to its name and description, so that the
emulator raises exactly what the real driver would.
"""

from __future__ import annotations

# value: (name, description). Values are those of cuda.h (CUDA 12/13).
CUDA_RESULTS: dict[int, tuple[str, str]] = {
    0: ("CUDA_SUCCESS", "no error"),
    1: ("CUDA_ERROR_INVALID_VALUE", "invalid argument"),
    2: ("CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
    3: ("CUDA_ERROR_NOT_INITIALIZED", "initialization error"),
    4: ("CUDA_ERROR_DEINITIALIZED", "driver shutting down"),
    34: ("CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"),
    46: ("CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"),
    100: ("CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
    101: ("CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"),
    200: ("CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"),
    201: ("CUDA_ERROR_INVALID_CONTEXT", "invalid device context"),
    205: ("CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"),
    209: ("CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"),
    218: ("CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"),
    222: ("CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."),
    300: ("CUDA_ERROR_INVALID_SOURCE", "device kernel image is invalid"),
    400: ("CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"),
    500: ("CUDA_ERROR_NOT_FOUND", "named symbol not found"),
    600: ("CUDA_ERROR_NOT_READY", "device not ready"),
    700: ("CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"),
    701: ("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"),
    702: ("CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"),
    710: ("CUDA_ERROR_ASSERT", "device-side assert triggered"),
    714: ("CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"),
    715: ("CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"),
    716: ("CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"),
    717: ("CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on global/shared address space"),
    718: ("CUDA_ERROR_INVALID_PC", "invalid program counter"),
    719: ("CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"),
    720: ("CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"),
    401: ("CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"),
    801: ("CUDA_ERROR_NOT_SUPPORTED", "operation not supported"),
    900: ("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"),
    901: ("CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
          "operation failed due to a previous error during capture"),
    902: ("CUDA_ERROR_STREAM_CAPTURE_MERGE",
          "operation would result in a merge of separate capture sequences"),
    903: ("CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", "capture was not ended in the same stream as it began"),
    904: ("CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "capturing stream has unjoined work"),
    905: ("CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
          "dependency created on uncaptured work in another stream"),
    906: ("CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
          "operation would make the legacy stream depend on a capturing blocking stream"),
    907: ("CUDA_ERROR_CAPTURED_EVENT",
          "operation not permitted on an event last recorded in a capturing stream"),
    908: ("CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
          "attempt to terminate a thread-local capture sequence from another thread"),
    910: ("CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
          ("the graph update was not performed because it included changes which violated "
           "constraints specific to instantiated graph update")),
    999: ("CUDA_ERROR_UNKNOWN", "unknown error"),
}

_LAUNCH_CODES = frozenset({700, 701, 702, 710, 714, 715, 716, 717, 718, 719, 720})


class CudaError(RuntimeError):
    """A driver call failed. ``code``, ``name`` and ``description`` come from the CUresult."""

    def __init__(self, code: int, call: str = "", detail: str = "") -> None:
        self.code = int(code)
        self.name, self.description = CUDA_RESULTS.get(self.code, (f"CUresult {code}", "unknown"))
        self.call = call
        self.detail = detail
        where = f"{call}: " if call else ""
        extra = f"\n{detail}" if detail else ""
        super().__init__(f"{where}{self.name} ({self.code}): {self.description}{extra}")

    def __reduce__(self):
        # rebuilt from the constructor's arguments (the default would pass the message as code)
        return type(self), (self.code, self.call, self.detail)


class OutOfMemoryError(CudaError, MemoryError):
    """The device has no room for the allocation, even after the pool released its cache."""


class LaunchError(CudaError):
    """A kernel faulted or could not be launched (illegal address, out of resources, ...)."""


class ModuleLoadError(CudaError):
    """PTX failed to load; ``detail`` carries the JIT error log."""


class DriverNotFoundError(RuntimeError):
    """No usable NVIDIA driver library could be loaded."""


def error_class(code: int) -> type[CudaError]:
    if code == 2:
        return OutOfMemoryError
    if code in _LAUNCH_CODES:
        return LaunchError
    if code in (200, 209, 218, 222, 300):
        return ModuleLoadError
    return CudaError


def raise_for(code: int, call: str = "", detail: str = "") -> None:
    """Raise the exception for a non-zero CUresult; return for CUDA_SUCCESS."""
    if code:
        raise error_class(code)(code, call, detail)
