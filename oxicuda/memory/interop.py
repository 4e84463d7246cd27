"""Zero-copy exchange of device arrays with other libraries: DLPack and the CUDA Array Interface.

DLPack (https://dmlc.github.io/dlpack/latest/): ``to_dlpack`` makes the capsule behind
``DeviceArray.__dlpack__`` ("dltensor_versioned" for consumers that ask for version 1, else the
legacy "dltensor"); ``from_dlpack`` consumes either kind, renames the capsule "used_..." as the
protocol requires, and calls the producer's deleter when the last view of the memory dies.

CUDA Array Interface v3: ``from_cuda_array_interface`` wraps the memory of any object exposing
``__cuda_array_interface__`` (CuPy, PyTorch, Numba, ...) and keeps that object alive.

Streams: oxicuda consumes on the legacy default stream (handle 0). Work pending on a producer's
stream is ordered before ours with an event (no host blocking).
"""

from __future__ import annotations

import ctypes
import sys
import weakref

from ..driver.backend import api
from ..driver.context import current_device_ordinal, ensure_context
from ..driver.enums import EVENT_DISABLE_TIMING, POINTER_ATTRIBUTES
from .array import DeviceArray
from .dtypes import dlpack_dtype, dtype_from_dlpack, dtype_from_typestr

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
_CUDA_DEVICE_TYPES = (KDL_CUDA, KDL_CUDA_MANAGED)
DLPACK_VERSION = (1, 0)
FLAG_READ_ONLY, FLAG_IS_COPIED = 1, 2


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


# -- the PyCapsule C API through ctypes ---------------------------------------------------------
_NAME_LEGACY = b"dltensor"
_NAME_VERSIONED = b"dltensor_versioned"
_USED_LEGACY = ctypes.c_char_p(b"used_dltensor")  # kept alive: capsules keep the name pointer
_USED_VERSIONED = ctypes.c_char_p(b"used_dltensor_versioned")
_NEW_LEGACY = ctypes.c_char_p(_NAME_LEGACY)
_NEW_VERSIONED = ctypes.c_char_p(_NAME_VERSIONED)

_capi = ctypes.pythonapi
_capsule_new = _capi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_is_valid = _capi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_get_pointer = _capi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_set_name = _capi.PyCapsule_SetName
_capsule_set_name.restype = ctypes.c_int
_capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
# Exported capsules have no destructor. A capsule destructor may run while an exception is
# being raised (numpy.from_dlpack drops a device capsule with its error set), and Python code
# (a ctypes callback) cannot run then: any call fails and the consumer's error is lost
# (SystemError). So each export is kept here, with its capsule, until either the consumer calls
# the tensor's deleter (``_export_deleter``) or a sweep finds the capsule dropped unconsumed.
# address of an exported DLManagedTensor(Versioned) -> [managed, shape, strides, arr, capsule]
_exported: dict[int, list] = {}
#: references to a pending capsule when only ``_exported`` holds it (its list, the sweep's local
#: variable and getrefcount's argument)
_ONLY_OURS = 3


@_DELETER
def _export_deleter(address: int) -> None:
    _exported.pop(address, None)


def sweep_exports() -> int:
    """Release exports whose capsule was dropped without being consumed; forget the capsule of
    consumed ones (their consumer calls the deleter). Runs on every export; returns how many
    exports are still held."""
    for address, entry in list(_exported.items()):
        capsule = entry[4]
        if capsule is None or sys.getrefcount(capsule) > _ONLY_OURS:
            continue
        if _capsule_is_valid(capsule, _NAME_VERSIONED) or _capsule_is_valid(capsule, _NAME_LEGACY):
            _exported.pop(address, None)  # dropped unconsumed: nobody can reach the tensor
        else:
            entry[4] = None  # consumed ("used_..."): the consumer owns it until its deleter runs
    return len(_exported)


# -- producer -------------------------------------------------------------------------------------
def _consumer_stream(stream: int | None) -> int | None:
    """The driver handle for a DLPack/CAI ``stream`` value; None means "do not synchronize"."""
    if stream is None or stream == 1:
        return 0
    if stream == -1:
        return None
    if stream == 0:
        raise ValueError("stream=0 is ambiguous in DLPack/CAI; pass 1 (legacy default stream), "
                         "2 (per-thread default stream), a stream handle, or -1")
    if stream == 2 and api().name != "cuda":
        return 0  # the emulator has one default stream
    return int(stream)


def _order_after(producer: int, consumer: int) -> None:
    """Make work later queued on ``consumer`` wait for what is queued on ``producer`` now."""
    if producer == consumer:
        return
    drv = api()
    event = drv.event_create(EVENT_DISABLE_TIMING)
    try:
        drv.event_record(event, producer)
        drv.stream_wait_event(consumer, event)
    finally:
        drv.event_destroy(event)


def to_dlpack(
    arr: DeviceArray,
    *,
    stream: int | None = None,
    max_version: tuple[int, int] | None = None,
    dl_device: tuple[int, int] | None = None,
    copy: bool | None = None,
) -> object:
    """A DLPack capsule over ``arr`` (a copy of it when ``copy=True``).

    ``stream``: the consumer's stream (None or 1: legacy default, 2: per-thread default, a
    handle, or -1 for no ordering); the consumer's later work is ordered after ``arr``'s
    stream. ``max_version >= (1, 0)`` gets a "dltensor_versioned" capsule, else "dltensor".
    ``dl_device=(kDLCPU, 0)`` (``numpy.from_dlpack(a, device="cpu")``) exports a host copy, as
    the array API standard allows; with ``copy=False`` that raises BufferError. Any other device
    that is not this array's raises BufferError.
    """
    if dl_device is not None and tuple(dl_device) == (KDL_CPU, 0):
        if copy is False:
            raise BufferError("__dlpack__: a host (kDLCPU) export of a device array needs a copy; "
                              "copy=False cannot be honoured")
        host = arr.get()
        return host.__dlpack__() if max_version is None else host.__dlpack__(max_version=max_version)
    if dl_device is not None and tuple(dl_device) != (KDL_CUDA, arr.device):
        raise BufferError(f"__dlpack__: dl_device={tuple(dl_device)}; this array lives on "
                          f"{(KDL_CUDA, arr.device)} and cannot be exported elsewhere")
    flags = 0
    if copy:
        arr = arr.copy("K")
        flags |= FLAG_IS_COPIED
    if arr.readonly:
        flags |= FLAG_READ_ONLY
    consumer = _consumer_stream(stream)
    if consumer is not None:
        _order_after(arr.stream, consumer)
    ndim = arr.ndim
    shape = (ctypes.c_int64 * max(ndim, 1))(*arr.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*(s // arr.itemsize for s in arr.strides))
    code, bits, lanes = dlpack_dtype(arr.dtype)
    versioned = max_version is not None and next(iter(max_version)) >= 1
    managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    t = managed.dl_tensor
    t.data = arr.ptr
    t.device = DLDevice(KDL_CUDA, arr.device)
    t.ndim = ndim
    t.dtype = DLDataType(code, bits, lanes)
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    managed.deleter = _export_deleter
    if versioned:
        managed.version = DLPackVersion(*DLPACK_VERSION)
        managed.flags = flags
    address = ctypes.addressof(managed)
    sweep_exports()
    name = _NEW_VERSIONED if versioned else _NEW_LEGACY
    capsule = _capsule_new(address, name, None)
    _exported[address] = [managed, shape, strides, arr, capsule]
    return capsule


# -- consumer -------------------------------------------------------------------------------------
class _DLPackOwner:
    """Calls the producer's deleter once the last array over the imported memory is gone."""

    def __init__(self, address: int, deleter: int) -> None:
        self.address = address
        if deleter:
            weakref.finalize(self, _DELETER(deleter), address)


def is_cuda_dlpack_producer(obj: object) -> bool:
    """True for objects whose ``__dlpack_device__`` is a CUDA device (kDLCUDA or managed)."""
    probe = getattr(obj, "__dlpack_device__", None)
    if probe is None or not hasattr(obj, "__dlpack__"):
        return False
    try:
        return int(probe()[0]) in _CUDA_DEVICE_TYPES
    except Exception:
        return False


def _signed64(byte_stride: int) -> int:
    """A byte stride as the signed 64-bit address step it is. CuPy 14 exports a negative element
    stride divided as an unsigned number (``c[:, ::-1]`` of float32 gives 2**62 - 1 for -1, seen
    on the GPU machine); times the item size it wraps to the true step modulo 2**64."""
    byte_stride %= 1 << 64
    return byte_stride - (1 << 64) if byte_stride >= 1 << 63 else byte_stride


def from_dlpack(obj: object) -> DeviceArray:
    """A zero-copy DeviceArray over a DLPack producer on a CUDA device (or a raw capsule).

    Asks for a versioned capsule and falls back to the legacy protocol. Raises BufferError for
    producers on other devices (copy those with ``oxicuda.asarray(numpy.asarray(x))``),
    TypeError for unsupported dtypes, ValueError for spent capsules.
    """
    if type(obj).__name__ == "PyCapsule":
        capsule = obj
    else:
        if not hasattr(obj, "__dlpack__"):
            raise TypeError(f"from_dlpack: {type(obj).__name__} has no __dlpack__ method")
        device_type = int(obj.__dlpack_device__()[0])
        if device_type not in _CUDA_DEVICE_TYPES:
            raise BufferError(f"from_dlpack: the producer is on DLPack device type {device_type};"
                              f" allowed: {_CUDA_DEVICE_TYPES} (CUDA). Copy host arrays with "
                              "oxicuda.asarray(numpy.asarray(x))")
        try:
            capsule = obj.__dlpack__(stream=1, max_version=DLPACK_VERSION)
        except TypeError:  # a producer of the pre-1.0 protocol
            capsule = obj.__dlpack__(stream=1)
    if _capsule_is_valid(capsule, _NAME_VERSIONED):
        address = _capsule_get_pointer(capsule, _NAME_VERSIONED)
        managed = DLManagedTensorVersioned.from_address(address)
        if managed.version.major > DLPACK_VERSION[0]:
            raise BufferError(f"from_dlpack: DLPack version {managed.version.major}."
                              f"{managed.version.minor}; supported major version: 1")
        readonly = bool(managed.flags & FLAG_READ_ONLY)
        used = _USED_VERSIONED
    elif _capsule_is_valid(capsule, _NAME_LEGACY):
        address = _capsule_get_pointer(capsule, _NAME_LEGACY)
        managed = DLManagedTensor.from_address(address)
        readonly = False
        used = _USED_LEGACY
    else:
        raise ValueError("from_dlpack: the capsule is not an unconsumed 'dltensor' or "
                         "'dltensor_versioned' capsule (each capsule may be consumed once)")
    t = managed.dl_tensor
    # checks before taking ownership: on failure the capsule's destructor frees the tensor
    dtype = dtype_from_dlpack(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    if t.device.device_type not in _CUDA_DEVICE_TYPES:
        raise BufferError(f"from_dlpack: tensor on DLPack device type {t.device.device_type}; "
                          f"allowed: {_CUDA_DEVICE_TYPES}")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = None
    if t.strides:
        strides = tuple(_signed64(t.strides[i] * dtype.itemsize) for i in range(t.ndim))
    _capsule_set_name(capsule, used)  # ownership moves to us
    deleter = ctypes.cast(managed.deleter, ctypes.c_void_p).value or 0
    owner = _DLPackOwner(address, deleter)
    return DeviceArray.from_pointer(
        (t.data or 0) + t.byte_offset, shape, dtype, strides,
        owner=owner, readonly=readonly, device=int(t.device.device_id),
    )


def from_cuda_array_interface(obj: object) -> DeviceArray:
    """A zero-copy DeviceArray over ``obj.__cuda_array_interface__`` (versions 0 to 3).

    Keeps ``obj`` alive; orders our legacy default stream after the interface's ``stream``.
    Raises TypeError/ValueError for unsupported dtypes, masks and malformed dictionaries.
    """
    cai = obj.__cuda_array_interface__
    try:
        shape = tuple(int(n) for n in cai["shape"])
        text = cai["typestr"]
        ptr, readonly = cai["data"]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"__cuda_array_interface__ of {type(obj).__name__} lacks shape, typestr "
                         f"or data=(ptr, readonly): {cai!r}") from exc
    if cai.get("mask") is not None:
        raise ValueError("__cuda_array_interface__ with a mask is not supported; "
                         "allowed: mask None")
    if text[:1] == ">" and text[2:] != "1":
        raise TypeError(f"typestr {text!r} is big-endian; device data must be little-endian")
    dtype = dtype_from_typestr(text)
    strides = cai.get("strides")
    stream = cai.get("stream")
    if stream is not None:
        producer = _consumer_stream(int(stream))
        if producer is not None:
            _order_after(producer, 0)
    device = None
    if ptr:
        ensure_context()
        try:
            device = api().pointer_get_attribute(POINTER_ATTRIBUTES["DEVICE_ORDINAL"], int(ptr))
        except Exception:
            device = current_device_ordinal()
    return DeviceArray.from_pointer(
        int(ptr or 0), shape, dtype, None if strides is None else tuple(strides),
        owner=obj, readonly=bool(readonly), device=device,
    )

