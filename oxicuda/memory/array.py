"""``DeviceArray``: an n-dimensional view of device memory, and the functions that make one.

Strides are in bytes (numpy's convention). Memory comes from the device's caching pool
(``oxicuda.memory.pool``) and is kept alive by every view (``base``); arrays wrapping foreign
memory (``__cuda_array_interface__``, DLPack) keep their producer alive instead.

Each array has a ``stream`` (a driver handle; 0 is the legacy default stream): the stream its
memory was allocated for and on which copies run when no stream is given. Host copies
(``get``, ``set``, ``asarray``) return only once the data landed.
"""

from __future__ import annotations

import numpy as np

from ..driver.backend import api
from ..driver.context import current_device_ordinal
from . import layout
from .dtypes import dtype_name, host_astype, normalize_dtype, typestr
from .pool import get_pool
from .staging import copy_device_to_host, copy_host_to_device
from .stream_handle import stream_handle

_ORDERS = ("C", "F", "A", "K")


class DeviceArray:
    """An array in device memory: ``shape``, ``dtype``, ``strides`` (bytes), ``ptr``.

    ``DeviceArray(shape, dtype=float32, order="C", stream=None)`` allocates from the pool.
    Views (indexing, ``reshape``, ``transpose``, ``.T``) share memory with their ``base``.
    """

    __slots__ = (
        "_shape", "_strides", "_dtype", "_ptr", "_base", "_memory", "_owner", "_stream",
        "_device", "_readonly", "__weakref__",
    )

    def __init__(
        self,
        shape: int | tuple[int, ...],
        dtype: object = np.float32,
        order: str = "C",
        *,
        stream: object = None,
    ) -> None:
        shape = layout.normalize_shape(shape)
        dt = normalize_dtype(dtype)
        if order not in ("C", "F"):
            raise ValueError(f"order {order!r} is not allowed; allowed orders: 'C', 'F'")
        handle = stream_handle(stream)
        # a stream object (ours or another package's) stays alive while the block is in use
        keep = stream if stream is not None and type(stream) is not int else None
        block = get_pool().malloc(layout.size_of(shape) * dt.itemsize, handle, keep)
        self._shape = shape
        self._strides = layout.contiguous_strides(shape, dt.itemsize, order)
        self._dtype = dt
        self._ptr = block.ptr
        self._base = None
        self._memory = block
        self._owner = None
        self._stream = handle
        self._device = block.device
        self._readonly = False

    @classmethod
    def from_pointer(
        cls,
        ptr: int,
        shape: tuple[int, ...],
        dtype: object,
        strides: tuple[int, ...] | None = None,
        *,
        owner: object = None,
        stream: object = None,
        readonly: bool = False,
        device: int | None = None,
    ) -> DeviceArray:
        """A zero-copy array over foreign device memory at ``ptr``; ``owner`` is kept alive.

        ``strides`` are in bytes; None means C-contiguous.
        """
        shape = layout.normalize_shape(shape)
        dt = normalize_dtype(dtype)
        if strides is None:
            strides = layout.contiguous_strides(shape, dt.itemsize, "C")
        elif len(strides) != len(shape):
            raise ValueError(f"strides {strides} do not match shape {shape}")
        self = cls.__new__(cls)
        self._shape = shape
        self._strides = tuple(int(s) for s in strides)
        self._dtype = dt
        self._ptr = int(ptr)
        self._base = None
        self._memory = None
        self._owner = owner
        self._stream = stream_handle(stream)
        self._device = current_device_ordinal() if device is None else device
        self._readonly = bool(readonly)
        return self

    def _view(self, shape: tuple[int, ...], strides: tuple[int, ...], ptr: int) -> DeviceArray:
        view = DeviceArray.__new__(DeviceArray)
        view._shape = shape
        view._strides = strides
        view._dtype = self._dtype
        view._ptr = ptr
        view._base = self._base if self._base is not None else self
        view._memory = None
        view._owner = None
        view._stream = self._stream
        view._device = self._device
        view._readonly = self._readonly
        return view

    # -- attributes ---------------------------------------------------------------------------
    shape = property(lambda self: self._shape, doc="Dimensions, a tuple of ints.")
    strides = property(lambda self: self._strides, doc="Byte steps per dimension (numpy's rule).")
    dtype = property(lambda self: self._dtype, doc="The numpy dtype of the elements.")
    ptr = property(lambda self: self._ptr, doc="Device address of element [0, ..., 0].")
    base = property(lambda self: self._base, doc="The array owning the memory of a view, or None.")
    device = property(lambda self: self._device, doc="Device ordinal.")
    stream = property(lambda self: self._stream, doc="Stream handle the array is used on.")
    readonly = property(lambda self: self._readonly, doc="True for read-only imported memory.")
    memory = property(
        lambda self: (self._base if self._base is not None else self)._memory,
        doc="The pool block holding the memory (None for foreign memory).",
    )
    ndim = property(lambda self: len(self._shape))
    itemsize = property(lambda self: self._dtype.itemsize)
    size = property(lambda self: layout.size_of(self._shape))
    nbytes = property(lambda self: layout.size_of(self._shape) * self._dtype.itemsize)

    @property
    def is_c_contiguous(self) -> bool:
        """True when the elements are packed in C (row-major) order."""
        return layout.is_contiguous(self._shape, self._strides, self.itemsize, "C")

    @property
    def is_f_contiguous(self) -> bool:
        """True when the elements are packed in Fortran (column-major) order."""
        return layout.is_contiguous(self._shape, self._strides, self.itemsize, "F")

    @property
    def T(self) -> DeviceArray:
        """The transposed view (axes reversed)."""
        return self.transpose()

    def __int__(self) -> int:
        return self._ptr

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self._shape[0]

    def __repr__(self) -> str:
        return (
            f"DeviceArray(shape={self._shape}, dtype={dtype_name(self._dtype)}, "
            f"strides={self._strides}, ptr=0x{self._ptr:x}, device={self._device})"
        )

    @property
    def __cuda_array_interface__(self) -> dict:
        """CUDA Array Interface v3. ``stream`` is the array's stream (1 for the legacy default
        stream); consumers must order their work after it."""
        ts = typestr(self._dtype)
        return {
            "shape": self._shape,
            "typestr": ts,
            "descr": [("", ts)],
            "data": (self._ptr, self._readonly),
            "strides": None if self.is_c_contiguous else self._strides,
            "version": 3,
            "stream": self._stream if self._stream else 1,
        }

    def __dlpack__(
        self,
        stream: int | None = None,
        *,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> object:
        """A DLPack capsule over this array's memory (zero copy unless ``copy=True``)."""
        return interop.to_dlpack(self, stream=stream, max_version=max_version,
                                 dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """(kDLCUDA = 2, device ordinal)."""
        return interop.KDL_CUDA, self._device

    def __array__(self, dtype: object = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError("a DeviceArray cannot become a numpy array without a copy; "
                             "use copy=None or True, or .get()")
        host = self.get()
        return host if dtype is None else host.astype(dtype)

    # -- views --------------------------------------------------------------------------------
    def __getitem__(self, key: object) -> DeviceArray:
        """A view by basic indexing (ints, slices with any step, Ellipsis, None); indexing
        every axis with an int gives a 0-d array, not a scalar."""
        shape, strides, offset = layout.basic_index(self._shape, self._strides, key)
        return self._view(shape, strides, self._ptr + offset)

    def __setitem__(self, key: object, value: object) -> None:
        """Write ``value`` (a scalar, a host array or a DeviceArray of the view's shape) into
        the view ``self[key]``."""
        target = self[key]
        if isinstance(value, DeviceArray):
            if value.shape != target.shape:
                raise ValueError(f"cannot assign an array of shape {value.shape} to a view of "
                                 f"shape {target.shape}; shapes must be equal")
            if value.dtype != target.dtype:
                value = value.astype(target.dtype)
            target._copy_from(value)
        elif np.ndim(value) == 0:
            target.fill(value)
        else:
            target.set(np.broadcast_to(np.asarray(value), target.shape))

    def transpose(self, *axes: object) -> DeviceArray:
        """A view with the axes permuted (reversed when ``axes`` is empty)."""
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0] or ()
        perm = tuple(int(a) % self.ndim if self.ndim else int(a) for a in axes) or tuple(
            range(self.ndim - 1, -1, -1))
        if sorted(perm) != list(range(self.ndim)):
            raise ValueError(f"axes {axes} are not a permutation of 0..{self.ndim - 1}")
        return self._view(tuple(self._shape[a] for a in perm),
                          tuple(self._strides[a] for a in perm), self._ptr)

    def reshape(self, *shape: object, order: str = "C") -> DeviceArray:
        """The same elements in ``shape`` (one -1 allowed): a view when the strides allow, else a
        copy (as numpy does)."""
        if order not in ("C", "F"):
            raise ValueError(f"order {order!r} is not allowed; allowed orders: 'C', 'F'")
        target = shape[0] if len(shape) == 1 else shape
        newshape = layout.resolve_reshape(self.size, target)
        strides = layout.reshape_strides(self._shape, self._strides, newshape, order)
        if strides is None:
            if self.size == 0:
                strides = layout.contiguous_strides(newshape, self.itemsize, order)
                return self._view(newshape, strides, self._ptr)
            return self.copy(order).reshape(newshape, order=order)
        return self._view(newshape, strides, self._ptr)

    def ravel(self, order: str = "C") -> DeviceArray:
        """A 1-D view (or a copy when the layout needs one)."""
        return self.reshape(-1, order=order)

    # -- copies -------------------------------------------------------------------------------
    def copy(self, order: str = "C") -> DeviceArray:
        """A new array with the same elements, laid out in ``order`` ("C", "F", "A" or "K")."""
        out = DeviceArray(self._shape, self._dtype, self._pick_order(order), stream=self._stream)
        out._copy_from(self)
        return out

    def _pick_order(self, order: str) -> str:
        if order not in _ORDERS:
            raise ValueError(f"order {order!r} is not allowed; allowed orders: {_ORDERS}")
        if order in ("A", "K"):
            return "F" if self.is_f_contiguous and not self.is_c_contiguous else "C"
        return order

    def _copy_from(self, src: DeviceArray) -> None:
        """Device-to-device copy of ``src`` (same shape and dtype) into this array's elements;
        strided layouts that no few 2D copies can express go through the host."""
        plan = layout.copy_plan(self._shape, self._strides, src._strides, self.itemsize)
        if plan is None:
            self.set(src.get())
            return
        drv = api()
        stream = self._stream or None
        for doff, soff, width, height, dpitch, spitch in plan:
            if height == 1:
                drv.memcpy_dtod(self._ptr + doff, src._ptr + soff, width, stream)
            else:
                drv.memcpy_2d(self._ptr + doff, dpitch, src._ptr + soff, spitch, width, height,
                              stream)

    def astype(self, dtype: object, order: str = "K", copy: bool = True) -> DeviceArray:
        """The elements converted to ``dtype`` (bfloat16 rounds to nearest even).

        The conversion runs on the host for now (a copy down, a cast, a copy up); the same
        dtype with ``copy=False`` returns ``self``.
        """
        dt = normalize_dtype(dtype)
        if dt == self._dtype:
            return self.copy(order) if copy else self
        host = host_astype(self.get(), dt)
        return asarray(host, stream=self._stream, order=self._pick_order(order))

    def fill(self, value: object) -> None:
        """Set every element to the scalar ``value`` (converted to the dtype).

        Contiguous arrays whose value is a repeated byte or 32-bit word use cuMemsetD8/D32;
        other cases write from the host.
        """
        if np.ndim(value) != 0:
            raise TypeError(f"fill value must be a scalar; got an array of shape {np.shape(value)}")
        self._check_writable("fill")
        scalar = host_astype(np.asarray(value), self._dtype)
        if self.size == 0:
            return
        pattern = scalar.tobytes()
        contiguous = self.is_c_contiguous or self.is_f_contiguous
        word = (pattern * 4)[:4]
        repeats_word = (4 % len(pattern) == 0) if len(pattern) < 4 else (
            len(pattern) % 4 == 0 and pattern == word * (len(pattern) // 4))
        drv = api()
        stream = self._stream or None
        if contiguous and pattern == bytes([pattern[0]]) * len(pattern):
            drv.memset_d8(self._ptr, pattern[0], self.nbytes, stream)
        elif contiguous and repeats_word and self._ptr % 4 == 0 and self.nbytes % 4 == 0:
            drv.memset_d32(self._ptr, int.from_bytes(word, "little"), self.nbytes // 4, stream)
        else:
            self.set(np.full(self._shape, scalar, dtype=self._dtype))

    def get(self, stream: object = None) -> np.ndarray:
        """A numpy copy (C order; F order for F-contiguous arrays), complete when returned."""
        s = stream_handle(stream) if stream is not None else self._stream
        c, f = self.is_c_contiguous, self.is_f_contiguous
        host = np.empty(self._shape, self._dtype, order="F" if f and not c else "C")
        if self.size == 0:
            return host
        if c or f:
            copy_device_to_host(host, self._ptr, s)
            return host
        packed_strides = layout.contiguous_strides(self._shape, self.itemsize, "C")
        if layout.copy_plan(self._shape, packed_strides, self._strides, self.itemsize) is not None:
            packed = DeviceArray(self._shape, self._dtype, "C", stream=s)
            packed._copy_from(self)
            copy_device_to_host(host, packed._ptr, s)
            return host
        lo, hi = layout.byte_span(self._shape, self._strides, self.itemsize)
        span = np.empty(hi - lo, np.uint8)  # every byte the view touches, then pick on the host
        copy_device_to_host(span, self._ptr + lo, s)
        host[...] = np.ndarray(self._shape, self._dtype, span, -lo, self._strides)
        return host

    def set(self, host: object, stream: object = None) -> None:
        """Copy the host array ``host`` (same shape; converted to the dtype) into this array."""
        h = np.asarray(host)
        if h.shape != self._shape:
            raise ValueError(f"set: host array has shape {h.shape}; this array has shape "
                             f"{self._shape} and they must be equal")
        self._check_writable("set")
        if h.dtype != self._dtype:
            h = host_astype(h, self._dtype)
        s = stream_handle(stream) if stream is not None else self._stream
        if self.size == 0:
            return
        if self.is_c_contiguous:
            copy_host_to_device(self._ptr, np.asarray(h, order="C"), s)
        elif self.is_f_contiguous:
            copy_host_to_device(self._ptr, np.asarray(h, order="F"), s)
        elif layout.copy_plan(self._shape, self._strides,
                              layout.contiguous_strides(self._shape, self.itemsize, "C"),
                              self.itemsize) is not None:
            packed = DeviceArray(self._shape, self._dtype, "C", stream=s)
            copy_host_to_device(packed._ptr, np.asarray(h, order="C"), s)
            self._copy_from(packed)
        else:  # read the covering span, patch the view's elements, write the span back
            lo, hi = layout.byte_span(self._shape, self._strides, self.itemsize)
            span = np.empty(hi - lo, np.uint8)
            copy_device_to_host(span, self._ptr + lo, s)
            np.ndarray(self._shape, self._dtype, span, -lo, self._strides)[...] = h
            copy_host_to_device(self._ptr + lo, span, s)

    def _check_writable(self, what: str) -> None:
        if self._readonly:
            raise ValueError(f"{what}: the array is read-only (imported as read-only memory)")


# -- module functions ---------------------------------------------------------------------------
def empty(shape: int | tuple[int, ...], dtype: object = np.float32, order: str = "C",
          stream: object = None) -> DeviceArray:
    """An uninitialized array of ``shape`` and ``dtype`` in ``order`` ("C" or "F")."""
    return DeviceArray(shape, dtype, order, stream=stream)


def zeros(shape: int | tuple[int, ...], dtype: object = np.float32, order: str = "C",
          stream: object = None) -> DeviceArray:
    """An array of zeros (every byte 0: cuMemsetD8)."""
    out = DeviceArray(shape, dtype, order, stream=stream)
    if out.nbytes:
        api().memset_d8(out.ptr, 0, out.nbytes, out.stream or None)
    return out


def full(shape: int | tuple[int, ...], fill_value: object, dtype: object = None,
         order: str = "C", stream: object = None) -> DeviceArray:
    """An array with every element ``fill_value``; ``dtype=None`` takes numpy's dtype of
    ``fill_value`` (float64 for a Python float)."""
    dt = normalize_dtype(np.asarray(fill_value).dtype if dtype is None else dtype)
    out = DeviceArray(shape, dt, order, stream=stream)
    out.fill(fill_value)
    return out


def empty_like(a: DeviceArray | np.ndarray, dtype: object = None, order: str = "K",
               stream: object = None) -> DeviceArray:
    """An uninitialized array with the shape (and by default dtype and layout) of ``a``."""
    dt = a.dtype if dtype is None else dtype
    if order in ("A", "K"):
        f = a.is_f_contiguous and not a.is_c_contiguous if isinstance(a, DeviceArray) else (
            a.flags.f_contiguous and not a.flags.c_contiguous)
        order = "F" if f else "C"
    if stream is None and isinstance(a, DeviceArray):
        stream = a.stream
    return DeviceArray(a.shape, dt, order, stream=stream)


def zeros_like(a: DeviceArray | np.ndarray, dtype: object = None, order: str = "K",
               stream: object = None) -> DeviceArray:
    """An array of zeros with the shape (and by default dtype and layout) of ``a``."""
    out = empty_like(a, dtype, order, stream)
    if out.nbytes:
        api().memset_d8(out.ptr, 0, out.nbytes, out.stream or None)
    return out


def full_like(a: DeviceArray | np.ndarray, fill_value: object, dtype: object = None,
              order: str = "K", stream: object = None) -> DeviceArray:
    """An array like ``a`` with every element ``fill_value``."""
    out = empty_like(a, dtype, order, stream)
    out.fill(fill_value)
    return out


def asarray(obj: object, dtype: object = None, stream: object = None,
            order: str = "K") -> DeviceArray:
    """``obj`` as a DeviceArray.

    - a DeviceArray: itself (or ``astype(dtype)`` when the dtype differs);
    - a DLPack producer on a CUDA device, or else an object with ``__cuda_array_interface__``:
      a zero-copy view that keeps the producer alive (then converted when ``dtype`` differs);
    - anything numpy accepts: copied to the device (C order, or F order for F-contiguous input
      with ``order="K"``/``"A"``).
    Raises TypeError for unsupported dtypes (object, strings, ...) before touching the device.
    """
    if isinstance(obj, DeviceArray):
        return obj if dtype is None or normalize_dtype(dtype) == obj.dtype else obj.astype(dtype)
    if interop.is_cuda_dlpack_producer(obj):  # first: PyTorch's CAI refuses bfloat16
        arr = interop.from_dlpack(obj)
        return arr if dtype is None or normalize_dtype(dtype) == arr.dtype else arr.astype(dtype)
    if hasattr(obj, "__cuda_array_interface__"):
        arr = interop.from_cuda_array_interface(obj)
        return arr if dtype is None or normalize_dtype(dtype) == arr.dtype else arr.astype(dtype)
    if order not in _ORDERS:
        raise ValueError(f"order {order!r} is not allowed; allowed orders: {_ORDERS}")
    h = np.asarray(obj)
    dt = normalize_dtype(h.dtype if dtype is None else dtype)
    if h.dtype != dt:
        h = host_astype(h, dt)
    f = h.flags.f_contiguous and not h.flags.c_contiguous
    use_f = order == "F" or (order in ("A", "K") and f)
    h = np.asarray(h, order="F") if use_f else np.asarray(h, order="C")
    out = DeviceArray(h.shape, dt, "F" if use_f else "C", stream=stream)
    copy_host_to_device(out.ptr, h, out.stream)
    return out


def asnumpy(a: object, stream: object = None) -> np.ndarray:
    """A numpy array of ``a``: ``a.get()`` for device arrays (and CAI/DLPack device objects),
    ``numpy.asarray(a)`` for anything else."""
    if isinstance(a, DeviceArray):
        return a.get(stream)
    if interop.is_cuda_dlpack_producer(a) or hasattr(a, "__cuda_array_interface__"):
        return asarray(a).get(stream)
    return np.asarray(a)


from . import interop  # noqa: E402  (interop needs DeviceArray defined)
