"""The element types a DeviceArray may hold, and the bfloat16 story.

Supported: bool, int8..int64, uint8..uint64, float16, bfloat16, float32, float64, complex64,
complex128, always in native byte order.

bfloat16. numpy has no bfloat16; ``BFLOAT16`` is ``ml_dtypes.bfloat16`` (a runtime dependency:
the bfloat16 numpy dtype JAX, PyTorch interop and TensorFlow use), so bfloat16 arrays come back
from the device as real bfloat16 arrays on which numpy computes and casts.
``float32_to_bfloat16_bits`` / ``bfloat16_bits_to_float32`` convert to and from bit patterns
(``uint16``).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

BFLOAT16: np.dtype = np.dtype(ml_dtypes.bfloat16)

#: name -> dtype, for every supported element type.
SUPPORTED_DTYPES: dict[str, np.dtype] = {
    "bool": np.dtype(np.bool_),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "float16": np.dtype(np.float16),
    "bfloat16": BFLOAT16,
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "complex64": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128),
}

_ALIASES = {"bf16": "bfloat16", "half": "float16"}
_BY_DTYPE: dict[np.dtype, str] = {dt: name for name, dt in SUPPORTED_DTYPES.items()}
_ALLOWED_TEXT = ", ".join(SUPPORTED_DTYPES)

# DLPack type codes (dlpack.h DLDataTypeCode)
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT, DL_COMPLEX, DL_BOOL = 0, 1, 2, 4, 5, 6
_DL_CODE_BY_KIND = {"i": DL_INT, "u": DL_UINT, "f": DL_FLOAT, "c": DL_COMPLEX, "b": DL_BOOL}


def is_bfloat16(dt: np.dtype) -> bool:
    """True when ``dt`` is bfloat16 (``ml_dtypes.bfloat16``)."""
    return dt == BFLOAT16


def normalize_dtype(x: object) -> np.dtype:
    """The supported numpy dtype named by ``x`` (a dtype, a type object such as ``np.float32``
    or ``float``, or a string such as ``"float32"``, ``"f4"``, ``"bfloat16"``).

    Non-native byte orders map to the native dtype of the same kind and size. Raises TypeError
    naming the value and the allowed dtypes when ``x`` names no supported dtype.
    """
    if isinstance(x, np.dtype) and x in _BY_DTYPE:
        return x
    if isinstance(x, str):
        key = _ALIASES.get(x.strip().lower(), x.strip().lower())
        if key in SUPPORTED_DTYPES:
            return SUPPORTED_DTYPES[key]
    if x is None:
        raise TypeError(f"dtype None is not a dtype; allowed dtypes: {_ALLOWED_TEXT}")
    try:
        dt = np.dtype(x)
    except TypeError as exc:
        raise TypeError(f"dtype {x!r} is not understood; allowed dtypes: {_ALLOWED_TEXT}") from exc
    if not dt.isnative:
        dt = dt.newbyteorder("=")
    if dt in _BY_DTYPE:
        return SUPPORTED_DTYPES[_BY_DTYPE[dt]]
    raise TypeError(f"dtype {x!r} ({dt}) is not supported; allowed dtypes: {_ALLOWED_TEXT}")



def dtype_name(dt: object) -> str:
    """The oxicuda name of a supported dtype: "float32", "bfloat16", "complex64", ..."""
    return _BY_DTYPE[normalize_dtype(dt)]


def typestr(dt: np.dtype) -> str:
    """The CAI type string: "<f4", "|b1", ... ("<V2" for bfloat16, as no standard one exists)."""
    dt = normalize_dtype(dt)
    if is_bfloat16(dt):
        return "<V2"
    return dt.str


def dtype_from_typestr(text: str) -> np.dtype:
    """The supported dtype of a CAI ``typestr``; "<V2"/"|V2" (how bfloat16 travels) is bfloat16."""
    if text in ("<V2", "|V2"):
        return BFLOAT16
    return normalize_dtype(text)


def dlpack_dtype(dt: np.dtype) -> tuple[int, int, int]:
    """DLPack (code, bits, lanes) of a supported dtype."""
    dt = normalize_dtype(dt)
    if is_bfloat16(dt):
        return DL_BFLOAT, 16, 1
    return _DL_CODE_BY_KIND[dt.kind], dt.itemsize * 8, 1


def dtype_from_dlpack(code: int, bits: int, lanes: int) -> np.dtype:
    """The supported dtype for DLPack (code, bits, lanes); TypeError for anything else."""
    if lanes != 1:
        raise TypeError(f"DLPack dtype with lanes={lanes} is not supported; allowed lanes: 1")
    if code == DL_BFLOAT and bits == 16:
        return BFLOAT16
    if code == DL_BOOL and bits == 8:
        return SUPPORTED_DTYPES["bool"]
    kinds = {DL_INT: "i", DL_UINT: "u", DL_FLOAT: "f", DL_COMPLEX: "c"}
    if code in kinds and bits % 8 == 0:
        try:
            return normalize_dtype(f"{kinds[code]}{bits // 8}")
        except TypeError:
            pass
    raise TypeError(
        f"DLPack dtype (code={code}, bits={bits}) is not supported; allowed dtypes: {_ALLOWED_TEXT}"
    )


def float32_to_bfloat16_bits(arr: object) -> np.ndarray:
    """bfloat16 bit patterns (``uint16``, same shape) of ``arr`` cast to float32 first.

    Rounds to nearest, ties to even; infinities stay infinities; every NaN stays a NaN (quiet,
    sign and top payload bits kept) instead of rounding into an infinity.
    """
    x = np.asarray(np.asarray(arr, dtype=np.float32), order="C")
    bits = x.view(np.uint32)
    rounded = (bits.astype(np.uint64) + 0x7FFF + ((bits >> 16) & 1)) >> 16
    out = rounded.astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        out[nan] = ((bits[nan] >> 16) | 0x0040).astype(np.uint16)
    return out


def bfloat16_bits_to_float32(bits: object) -> np.ndarray:
    """float32 values (exact) of bfloat16 bit patterns given as ``uint16`` (or the bf16 dtype)."""
    b = np.asarray(bits)
    if b.dtype == BFLOAT16 or b.dtype.itemsize == 2 and b.dtype.kind in "uV":
        b = np.asarray(b, order="C").view(np.uint16)
    else:
        raise TypeError(f"bfloat16 bits must be uint16 or bfloat16; got dtype {b.dtype}")
    return (b.astype(np.uint32) << 16).view(np.float32)


def host_astype(arr: np.ndarray, dtype: object) -> np.ndarray:
    """``arr`` cast to ``dtype`` on the host (numpy's and ml_dtypes' casts).

    Complex to real drops the imaginary part, as numpy does. Returns a new contiguous array
    (C order unless ``arr`` is only F-contiguous).
    """
    dst = normalize_dtype(dtype)
    a = np.asarray(arr)
    order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    with np.errstate(all="ignore"):
        if a.dtype.kind == "c" and dst.kind != "c":
            a = a.real
        return np.array(a, dtype=dst, order=order, copy=True)
