"""Argument checks shared by the primitives' public calls: what a device vector must be, and the
output arrays they write. Everything here runs before any launch."""

from __future__ import annotations

import numpy as np

from oxicuda.driver.facts import device_facts
from oxicuda.memory.array import DeviceArray, asarray, empty

#: the kernels index with 32-bit counters
MAX_LENGTH = (1 << 32) - 4096


def dtype_name(dt: np.dtype) -> str:
    return "bool" if dt == np.bool_ else np.dtype(dt).name


def vector(obj: object, what: str, allowed: tuple[str, ...], stream: object = None) -> DeviceArray:
    """``obj`` as a C-contiguous 1-D DeviceArray of an ``allowed`` dtype (host data is copied to
    the device; a strided device array is copied); TypeError/ValueError naming ``what``."""
    if not isinstance(obj, DeviceArray):
        host = getattr(obj, "dtype", None)
        if host is not None and dtype_name(np.dtype(host)) not in allowed:
            raise TypeError(f"{what} has dtype {np.dtype(host)}; allowed: {', '.join(allowed)}")
        obj = asarray(obj, stream=stream)
    name = dtype_name(obj.dtype)
    if name not in allowed:
        raise TypeError(f"{what} has dtype {name}; allowed: {', '.join(allowed)}")
    if obj.ndim != 1:
        raise ValueError(f"{what} has shape {obj.shape}; a 1-D array is required (ravel it)")
    if obj.size > MAX_LENGTH:
        raise ValueError(f"{what} has {obj.size} elements; at most {MAX_LENGTH} per call")
    return obj if obj.is_c_contiguous else obj.copy()


def output(out: DeviceArray | None, shape: tuple[int, ...], dtype: object, what: str,
           stream: object) -> DeviceArray:
    """``out`` checked (a C-contiguous DeviceArray of ``shape`` and ``dtype``), or a new array."""
    dt = np.dtype(dtype)
    if out is None:
        return empty(shape, dt, stream=stream)
    if not isinstance(out, DeviceArray) or tuple(out.shape) != tuple(shape) or out.dtype != dt \
            or not out.is_c_contiguous:
        got = f"{type(out).__name__} {getattr(out, 'shape', '?')} {getattr(out, 'dtype', '?')}"
        raise ValueError(f"{what}: out must be a C-contiguous DeviceArray of shape {tuple(shape)} and "
                         f"dtype {dt}; got {got}")
    if out.readonly:
        raise ValueError(f"{what}: out is read-only")
    return out


def check_choice(value: object, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"{what}={value!r}; allowed: {', '.join(map(repr, allowed))}")
    return value


def stream_for(stream: object, *arrays: DeviceArray) -> object:
    """The stream to run on: the given one, else the first array's allocation stream."""
    if stream is not None:
        return stream
    for a in arrays:
        if isinstance(a, DeviceArray) and a.stream:
            return a.stream
    return None


def ordinal() -> int:
    return device_facts().ordinal


def read_u32(ptr: int, stream: object) -> int:
    """One u32 from the device (a size the host needs: a count of selected elements or runs)."""
    return int(DeviceArray.from_pointer(ptr, (1,), np.uint32, stream=stream).get()[0])
