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
from .printing import array_text
from .staging import copy_device_to_host, copy_host_to_device
from .stream_handle import stream_handle

_ORDERS = ("C", "F", "A", "K")


class DevicePointer:
    """The memory of an array as CuPy (``a.data.ptr``) and PyCUDA (``int(a.gpudata)``) spell it:
    ``ptr``, ``int()`` and ``operator.index`` give the device address (checked not freed)."""

    __slots__ = ("_array",)

    def __init__(self, array: DeviceArray) -> None:
        self._array = array  # keeps the memory alive, as PyCUDA's gpudata does

    @property
    def ptr(self) -> int:
        return self._array.ptr

    @property
    def device_id(self) -> int:
        return self._array.device

    @property
    def mem(self) -> object:
        """The pool block (None for foreign memory)."""
        return self._array.memory

    def __int__(self) -> int:
        return self._array.ptr

    __index__ = __int__

    def __repr__(self) -> str:
        return f"DevicePointer(0x{self._array._ptr:x}, device={self._array.device})"


_math_module = None


def _math():
    """``oxicuda.array_math``, imported on the first operation (it imports this module)."""
    global _math_module
    if _math_module is None:
        from .. import array_math

        _math_module = array_math
    return _math_module


def _binary_op(ufunc_name: str):
    ufunc = getattr(np, ufunc_name)

    def op(self, other):
        return _math().binary(ufunc, self, other)

    op.__name__ = ufunc_name
    return op


def _operator_set(ufunc_name: str):
    """``x <op> y``, ``y <op> x`` (reflected) and ``x <op>= y`` for one ufunc."""
    ufunc = getattr(np, ufunc_name)

    def forward(self, other):
        return _math().binary(ufunc, self, other)

    def reflected(self, other):
        return _math().binary(ufunc, other, self)

    def inplace(self, other):
        return _math().inplace(ufunc, self, other)

    return forward, reflected, inplace


def _unary_op(ufunc_name: str):
    ufunc = getattr(np, ufunc_name)

    def op(self):
        return _math().unary(ufunc, self)

    op.__name__ = ufunc_name
    return op


class DeviceArray:
    """An array in device memory: ``shape``, ``dtype``, ``strides`` (bytes), ``ptr``.

    ``DeviceArray(shape, dtype=float32, order="C", stream=None)`` allocates from the pool.
    Views (indexing, ``reshape``, ``transpose``, ``.T``) share memory with their ``base``.
    """

    __slots__ = (
        "__weakref__",
        "_base",
        "_block",
        "_device",
        "_dtype",
        "_memory",
        "_owner",
        "_ptr",
        "_readonly",
        "_shape",
        "_stream",
        "_strides",
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
        self._block = block if block.size else None
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
        # an oxicuda array wrapped again (CAI) shares its owner's freed state
        self._block = owner._block if isinstance(owner, DeviceArray) else None
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
        view._block = self._block
        view._owner = None
        view._stream = self._stream
        view._device = self._device
        view._readonly = self._readonly
        return view

    # -- attributes ---------------------------------------------------------------------------
    shape = property(lambda self: self._shape, doc="Dimensions, a tuple of ints.")
    strides = property(lambda self: self._strides, doc="Byte steps per dimension (numpy's rule).")
    dtype = property(lambda self: self._dtype, doc="The numpy dtype of the elements.")

    @property
    def ptr(self) -> int:
        """Device address of element [0, ..., 0]. Raises RuntimeError once the memory was freed."""
        block = self._block
        if block is not None and block.released:
            self._raise_freed()
        return self._ptr

    @property
    def data(self) -> DevicePointer:
        """The memory as CuPy spells it: ``a.data.ptr`` is the device address."""
        return DevicePointer(self)

    @property
    def gpudata(self) -> DevicePointer:
        """The memory as PyCUDA spells it: ``int(a.gpudata)`` is the device address."""
        return DevicePointer(self)

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

    # -- Python scalars and comparisons (numpy's rules) ---------------------------------------
    def _one_value(self, what: str) -> np.ndarray:
        """The single element as a 0-d numpy array (one element read from the device); raises
        numpy's error for any other size."""
        if self.size != 1:
            if what == "bool":
                if self.size == 0:
                    raise ValueError("The truth value of an empty array is ambiguous. Use "
                                     "`array.size > 0` to check that an array is not empty.")
                raise ValueError("The truth value of an array with more than one element is "
                                 "ambiguous. Use a.any() or a.all()")
            if what == "item":
                raise ValueError("can only convert an array of size 1 to a Python scalar")
            raise TypeError(f"only size-1 arrays can be converted to Python scalars; this "
                            f"DeviceArray has shape {self._shape}")
        return self.get().reshape(())

    def __int__(self) -> int:
        return int(self._one_value("int"))

    def __float__(self) -> float:
        return float(self._one_value("float"))

    def __complex__(self) -> complex:
        return complex(self._one_value("complex"))

    def __bool__(self) -> bool:
        return bool(self._one_value("bool"))

    def __index__(self) -> int:
        if self._shape or self._dtype.kind not in "iu":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self.get())

    def item(self) -> object:
        """The one element as a Python scalar (read from the device); ValueError unless size 1."""
        return self._one_value("item").item()

    # -- arithmetic, comparisons, ufuncs, reductions (oxicuda.array_math) --------------------
    __eq__ = _binary_op("equal")
    __ne__ = _binary_op("not_equal")
    __lt__ = _binary_op("less")
    __le__ = _binary_op("less_equal")
    __gt__ = _binary_op("greater")
    __ge__ = _binary_op("greater_equal")
    __hash__ = object.__hash__  # identity (numpy's arrays are unhashable; ours stay dict keys)

    __add__, __radd__, __iadd__ = _operator_set("add")
    __sub__, __rsub__, __isub__ = _operator_set("subtract")
    __mul__, __rmul__, __imul__ = _operator_set("multiply")
    __truediv__, __rtruediv__, __itruediv__ = _operator_set("true_divide")
    __floordiv__, __rfloordiv__, __ifloordiv__ = _operator_set("floor_divide")
    __mod__, __rmod__, __imod__ = _operator_set("remainder")
    __and__, __rand__, __iand__ = _operator_set("bitwise_and")
    __or__, __ror__, __ior__ = _operator_set("bitwise_or")
    __xor__, __rxor__, __ixor__ = _operator_set("bitwise_xor")
    __lshift__, __rlshift__, __ilshift__ = _operator_set("left_shift")
    __rshift__, __rrshift__, __irshift__ = _operator_set("right_shift")
    __neg__ = _unary_op("negative")
    __pos__ = _unary_op("positive")
    __abs__ = _unary_op("absolute")
    __invert__ = _unary_op("invert")

    def __pow__(self, other: object, mod: object = None) -> object:
        if mod is not None:
            return NotImplemented
        return _math().power(self, other)

    def __rpow__(self, other: object) -> object:
        return _math().binary(np.power, other, self)

    def __ipow__(self, other: object) -> object:
        return _math().inplace(np.power, self, other)

    def __matmul__(self, other: object) -> object:
        return _math().matmul(self, other)

    def __rmatmul__(self, other: object) -> object:
        return _math().matmul(other, self)

    def __array_ufunc__(self, ufunc: object, method: str, *inputs: object, **kwargs: object):
        """numpy ufuncs on device arrays run on the device (oxicuda.array_math.protocol);
        NotImplemented (numpy's TypeError) for the ones that do not."""
        return _math().array_ufunc(ufunc, method, inputs, kwargs)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False) -> DeviceArray:
        """numpy's ``sum`` on the device (see oxicuda.array_math.reductions)."""
        return _math().sum(self, axis, dtype, out, keepdims)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False) -> DeviceArray:
        """numpy's ``prod`` on the device."""
        return _math().prod(self, axis, dtype, out, keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False) -> DeviceArray:
        """numpy's ``mean`` on the device."""
        return _math().mean(self, axis, dtype, out, keepdims)

    def max(self, axis=None, out=None, keepdims=False) -> DeviceArray:
        """numpy's ``max`` on the device (NaN propagates)."""
        return _math().max(self, axis, out, keepdims)

    def min(self, axis=None, out=None, keepdims=False) -> DeviceArray:
        """numpy's ``min`` on the device (NaN propagates)."""
        return _math().min(self, axis, out, keepdims)

    def argmax(self, axis=None, out=None, *, keepdims=False) -> DeviceArray:
        """numpy's ``argmax`` on the device."""
        return _math().argmax(self, axis, out, keepdims)

    def argmin(self, axis=None, out=None, *, keepdims=False) -> DeviceArray:
        """numpy's ``argmin`` on the device."""
        return _math().argmin(self, axis, out, keepdims)

    def any(self, axis=None, out=None, keepdims=False) -> DeviceArray:
        """numpy's ``any`` on the device."""
        return _math().any(self, axis, out, keepdims)

    def all(self, axis=None, out=None, keepdims=False) -> DeviceArray:
        """numpy's ``all`` on the device."""
        return _math().all(self, axis, out, keepdims)

    @property
    def real(self) -> DeviceArray:
        """The real parts: a float view of a complex array (shares memory), else the array."""
        return _math().real(self)

    @property
    def imag(self) -> DeviceArray:
        """The imaginary parts: a float view of a complex array, else a new array of zeros."""
        return _math().imag(self)

    def conj(self) -> DeviceArray:
        """The complex conjugate (numpy's ``conjugate``; a real array's copy of itself)."""
        return _math().unary(np.conjugate, self)

    def clip(self, min=None, max=None, out=None) -> DeviceArray:
        """numpy's ``clip`` on the device."""
        return _math().clip(self, min, max, out)

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self._shape[0]

    def __repr__(self) -> str:
        return array_text(self, np.array_repr, "DeviceArray(")

    def __str__(self) -> str:
        return array_text(self, np.array_str, "")

    def _raise_freed(self) -> None:
        raise RuntimeError(
            f"DeviceArray of shape {self._shape} and dtype {dtype_name(self._dtype)} at "
            f"0x{self._ptr:x}: its memory was freed (its MemoryBlock's free() was called); a freed "
            "array cannot be read, written, copied or passed to a kernel")

    @property
    def __cuda_array_interface__(self) -> dict:
        """CUDA Array Interface v3. ``stream`` is the array's stream (1 for the legacy default
        stream); consumers must order their work after it."""
        ts = typestr(self._dtype)
        return {
            "shape": self._shape,
            "typestr": ts,
            "descr": [("", ts)],
            "data": (self.ptr, self._readonly),
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
        """A new array with the same elements, laid out in ``order`` ("C", "F", "A" or "K"); a
        device copy (one memcpy when the layouts match, else the strided copy kernel)."""
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
        """``self[...] = src`` on the device (same shape; the dtypes may differ: a cast)."""
        self._check_writable("copy")
        dptr, sptr = self.ptr, src.ptr  # both checked not freed
        if self.size == 0:
            return
        if src._dtype == self._dtype and src._strides == self._strides and (
                self.is_c_contiguous or self.is_f_contiguous):
            api().memcpy_dtod(dptr, sptr, self.nbytes, self._stream or None)
            return
        _copy_kernels().copy_array(self, src)

    def astype(self, dtype: object, order: str = "K", copy: bool = True) -> DeviceArray:
        """The elements converted to ``dtype`` with numpy's rules (bfloat16 and float16 round
        to nearest even), on the device; the same dtype with ``copy=False`` returns ``self``."""
        dt = normalize_dtype(dtype)
        if dt == self._dtype and not copy:
            return self
        out = DeviceArray(self._shape, dt, self._pick_order(order), stream=self._stream)
        out._copy_from(self)
        return out

    def fill(self, value: object) -> None:
        """Set every element to the scalar ``value`` (converted to the dtype on the host, one
        scalar), on the device: cuMemsetD8/D32 for contiguous arrays whose value repeats a byte
        or 32-bit word, else the fill kernel (any layout, any dtype)."""
        if np.ndim(value) != 0:
            raise TypeError(f"fill value must be a scalar; got an array of shape {np.shape(value)}")
        self._check_writable("fill")
        ptr = self.ptr
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
            drv.memset_d8(ptr, pattern[0], self.nbytes, stream)
        elif contiguous and repeats_word and ptr % 4 == 0 and self.nbytes % 4 == 0:
            drv.memset_d32(ptr, int.from_bytes(word, "little"), self.nbytes // 4, stream)
        else:
            _copy_kernels().fill_array(self, pattern)

    def get(self, stream: object = None) -> np.ndarray:
        """A numpy copy (C order; F order for F-contiguous arrays), complete when returned.
        Strided views are packed on the device first, so only their elements cross the bus."""
        s = stream_handle(stream) if stream is not None else self._stream
        ptr = self.ptr
        c, f = self.is_c_contiguous, self.is_f_contiguous
        host = np.empty(self._shape, self._dtype, order="F" if f and not c else "C")
        if self.size == 0:
            return host
        if c or f:
            copy_device_to_host(host, ptr, s)
            return host
        packed = DeviceArray(self._shape, self._dtype, "C", stream=s)
        packed._copy_from(self)
        copy_device_to_host(host, packed._ptr, s)
        return host

    def set(self, host: object, stream: object = None) -> None:
        """Copy the host array ``host`` (same shape; converted to the dtype) into this array;
        strided views receive a packed upload scattered by the copy kernel."""
        h = np.asarray(host)
        if h.shape != self._shape:
            raise ValueError(f"set: host array has shape {h.shape}; this array has shape "
                             f"{self._shape} and they must be equal")
        self._check_writable("set")
        ptr = self.ptr
        if h.dtype != self._dtype:
            h = host_astype(h, self._dtype)
        s = stream_handle(stream) if stream is not None else self._stream
        if self.size == 0:
            return
        if self.is_c_contiguous:
            copy_host_to_device(ptr, np.asarray(h, order="C"), s)
        elif self.is_f_contiguous:
            copy_host_to_device(ptr, np.asarray(h, order="F"), s)
        else:
            packed = DeviceArray(self._shape, self._dtype, "C", stream=s)
            copy_host_to_device(packed._ptr, np.asarray(h, order="C"), s)
            self._copy_from(packed)

    def _check_writable(self, what: str) -> None:
        if self._readonly:
            raise ValueError(f"{what}: the array is read-only (imported as read-only memory)")

    async def get_async(self, stream: object = None) -> np.ndarray:
        """``await a.get_async()``: ``get()`` once the work queued on the stream is done, waiting
        without blocking the event loop (the copy itself then blocks only for its own time)."""
        from ..driver.stream import Event

        s = stream_handle(stream) if stream is not None else self._stream
        await Event(timing=False).record(s)
        return self.get(s)


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


_copy_kernel_module = None


def _copy_kernels():
    """``oxicuda.memory.copy_kernels``, imported on the first copy that needs a kernel (it
    loads the PTX builder, which ``import oxicuda.memory`` does not need)."""
    global _copy_kernel_module
    if _copy_kernel_module is None:
        from . import copy_kernels

        _copy_kernel_module = copy_kernels
    return _copy_kernel_module


from . import interop
