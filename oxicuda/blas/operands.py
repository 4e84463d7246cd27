"""Operands of the pointer-level BLAS calls (levels 1-3 beyond GEMM): dtype names, size and
increment checks, device-pointer span checks, scalars read from host addresses, and the kernel
loader. Every check raises ValueError/TypeError naming the value seen and what is allowed,
before anything touches the device.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from ..driver.backend import api
from ..driver.context import ensure_context
from ..driver.errors import CudaError
from ..memory import capture as _capture
from ..memory.pool import block_extent, freed_block, live_block_size
from ..memory.stream_handle import stream_handle

BLAS_DTYPES = {
    np.dtype(np.float32): "float32",
    np.dtype(np.float64): "float64",
    np.dtype(np.complex64): "complex64",
    np.dtype(np.complex128): "complex128",
}
INT32_MAX = 2**31 - 1
_CTYPES = {"float32": ctypes.c_float, "float64": ctypes.c_double}

#: Held by every routine that runs several launches through a cached workspace (reductions,
#: trsm/syrk/symm/trmm): workspaces are shared per (stream, dtype, size), so two threads
#: interleaving their launches on one stream would read each other's partial results.
workspace_sequence = threading.RLock()


def dtype_name(dtype: object, what: str) -> str:
    """'float32' | 'float64' | 'complex64' | 'complex128' for anything numpy takes as a dtype."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{what}: dtype={dtype!r} is not a dtype; allowed: {sorted(BLAS_DTYPES.values())}") from None
    name = BLAS_DTYPES.get(dt)
    if name is None:
        raise TypeError(f"{what}: dtype {dt} is not supported; allowed: {sorted(BLAS_DTYPES.values())}")
    return name


def itemsize(dtype: str) -> int:
    return np.dtype(dtype).itemsize


def real_dtype(dtype: str) -> str:
    return {"complex64": "float32", "complex128": "float64"}.get(dtype, dtype)


def check_int(value: object, what: str, *, minimum: int | None = None) -> int:
    """``value`` as an int in int32 range (cuBLAS's ``int`` arguments), at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what}={value!r} ({type(value).__name__}); an int is required")
    v = int(value)
    if not -INT32_MAX - 1 <= v <= INT32_MAX:
        raise ValueError(f"{what}={v} does not fit a 32-bit int")
    if minimum is not None and v < minimum:
        raise ValueError(f"{what}={v}; it must be >= {minimum}")
    return v


def check_pointer(value: object, what: str) -> int:
    """An address: an int, or an object with ``__int__`` (gpudata), ``.ptr`` or a CUDA array
    interface."""
    if isinstance(value, bool):
        raise TypeError(f"{what}={value!r}; a pointer (int) is required")
    if isinstance(value, (int, np.integer)):
        v = int(value)
    elif hasattr(value, "__cuda_array_interface__"):
        v = int(value.__cuda_array_interface__["data"][0])
    elif getattr(value, "ptr", None) is not None:
        v = int(value.ptr)
    elif hasattr(value, "__int__") and not isinstance(value, (float, np.floating, complex)):
        v = int(value)
    else:
        raise TypeError(f"{what}={value!r} ({type(value).__name__}); a pointer (int or object with __int__) is required")
    if v < 0 or v >= 2**64:
        raise ValueError(f"{what}=0x{v:x} is not a 64-bit address")
    return v


def check_span(ptr: int, nbytes: int, what: str) -> None:
    """``[ptr, ptr + nbytes)`` must lie inside one live array: the bytes requested of an
    oxicuda pool block (not the rounded block), or else one device allocation."""
    if nbytes <= 0:
        return
    if ptr == 0:
        raise ValueError(f"{what}: the pointer is NULL but {nbytes} bytes are accessed")
    size = live_block_size(ptr)  # the start of a live block of oxicuda's pool (an array's .ptr): no driver call
    if size is not None:
        if nbytes <= size:
            return
        raise ValueError(f"{what}: {nbytes} bytes from 0x{ptr:x} run {nbytes - size} bytes past the end "
                         f"of its array (0x{ptr:x}, {size} bytes)")
    if freed_block(ptr):
        raise ValueError(f"{what}: 0x{ptr:x} is a freed block (its array is gone; oxicuda's pool keeps "
                         f"the memory for reuse)")
    ensure_context()  # cuMemGetAddressRange works in the calling thread's context (a new thread has none)
    try:
        base, size = api().mem_get_address_range(ptr)
    except CudaError as exc:
        raise ValueError(f"{what}: 0x{ptr:x} is not device memory of the current context ({exc})") from None
    extent = block_extent(base)  # inside a pool block: its array's bytes, not the block's
    if extent == 0:
        raise ValueError(f"{what}: 0x{ptr:x} lies in a freed block (0x{base:x}; its array is gone and "
                         f"oxicuda's pool keeps the memory for reuse)")
    kind = "allocation" if extent is None else "array"
    if extent is not None:
        size = extent
    if ptr + nbytes > base + size:
        raise ValueError(
            f"{what}: {nbytes} bytes from 0x{ptr:x} run {ptr + nbytes - base - size} bytes past the end "
            f"of its {kind} (0x{base:x}, {size} bytes)")


def vector_span(n: int, inc: int, esize: int) -> int:
    """Bytes covered by n elements with increment ``inc`` (from the lowest address)."""
    if n <= 0:
        return 0
    return ((n - 1) * abs(inc) + 1) * esize


def vector_start(ptr: int, n: int, inc: int, esize: int) -> int:
    """The address of element 0 in the kernels' ``base + i*inc*esize`` form: BLAS puts element 0
    of a negative-increment vector at the highest address."""
    return ptr + (n - 1) * (-inc) * esize if inc < 0 and n > 0 else ptr


def matrix_span(rows: int, cols: int, ld: int, esize: int) -> int:
    """Bytes covered by a column-major rows x cols matrix with leading dimension ld."""
    if rows <= 0 or cols <= 0:
        return 0
    return ((cols - 1) * ld + rows) * esize


def host_scalar(address: int, dtype: str, what: str) -> complex | float:
    """The scalar of ``dtype`` stored at host ``address`` (cuBLAS host pointer mode)."""
    if address == 0:
        raise ValueError(f"{what}: the host scalar pointer is NULL")
    rd = real_dtype(dtype)
    ctype = _CTYPES[rd]
    re = ctype.from_address(address).value
    if dtype == rd:
        return re
    return complex(re, ctype.from_address(address + ctypes.sizeof(ctype)).value)


def scalar_parts(value: object, what: str) -> tuple[float, float]:
    """(re, im) of a Python/numpy number."""
    if isinstance(value, (bool, str, bytes)) or not isinstance(value, (int, float, complex, np.number)):
        raise TypeError(f"{what}={value!r} ({type(value).__name__}); a number is required")
    c = complex(value)
    return c.real, c.imag


def stream_of(stream: object) -> int:
    return stream_handle(stream)


def copy_to_host(host_address: int, device_ptr: int, nbytes: int, stream: int) -> None:
    """Copy a small device result to a raw host address; returns once it landed."""
    if _capture.ACTIVE:
        _capture.check_host_copy(stream, f"a device-to-host read-back of {nbytes} bytes")
    drv = api()
    if stream:
        drv.memcpy_dtoh(host_address, device_ptr, nbytes, stream)
        drv.stream_synchronize(stream)
    else:
        drv.memcpy_dtoh(host_address, device_ptr, nbytes)


def zero_result(address: int, nbytes: int, on_host: bool, stream: int) -> None:
    """Write ``nbytes`` zero bytes to a result (host address or device pointer)."""
    if on_host:
        ctypes.memset(address, 0, nbytes)
    else:
        api().memset_d8(address, 0, nbytes, stream or None)
