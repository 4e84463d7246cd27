"""PTX scalar types: their numpy dtypes, widths and classes; immediate literals."""

from __future__ import annotations

import struct

import numpy as np

#: storage/compute dtype per PTX type. f16 lives as float16; bf16 and the x2 packs as raw bits.
DTYPES: dict[str, np.dtype] = {
    "pred": np.dtype(np.bool_),
    "b8": np.dtype(np.uint8), "u8": np.dtype(np.uint8), "s8": np.dtype(np.int8),
    "b16": np.dtype(np.uint16), "u16": np.dtype(np.uint16), "s16": np.dtype(np.int16),
    "f16": np.dtype(np.float16), "bf16": np.dtype(np.uint16),
    "b32": np.dtype(np.uint32), "u32": np.dtype(np.uint32), "s32": np.dtype(np.int32),
    "f32": np.dtype(np.float32), "f16x2": np.dtype(np.uint32), "bf16x2": np.dtype(np.uint32),
    "tf32": np.dtype(np.uint32),
    "b64": np.dtype(np.uint64), "u64": np.dtype(np.uint64), "s64": np.dtype(np.int64),
    "f64": np.dtype(np.float64),
    "b128": np.dtype(np.uint64),  # only as the element of 16-byte moves; handled by ld/st
}

UNSIGNED = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}
SIGNED = {1: np.dtype(np.int8), 2: np.dtype(np.int16), 4: np.dtype(np.int32), 8: np.dtype(np.int64)}
FLOATS = {"f16", "f32", "f64"}


def width(ptype: str) -> int:
    """Bytes of a PTX type (pred: 1)."""
    if ptype == "b128":
        return 16
    return DTYPES[ptype].itemsize


def is_float(ptype: str) -> bool:
    return ptype in FLOATS or ptype.startswith("bf16") or ptype == "f16x2"


def immediate(text: str, ptype: str):
    """The numpy scalar of literal ``text`` as PTX type ``ptype``."""
    dt = DTYPES.get(ptype, np.dtype(np.uint32))
    t = text.strip()
    neg = t.startswith("-")
    body = t[1:] if neg else t
    if body[:2] in ("0f", "0F") and len(body) == 10:
        val = struct.unpack("<f", struct.pack("<I", int(body[2:], 16)))[0]
    elif body[:2] in ("0d", "0D") and len(body) == 18:
        val = struct.unpack("<d", struct.pack("<Q", int(body[2:], 16)))[0]
    elif body[:2] in ("0x", "0X"):
        val = int(body.rstrip("Uu"), 16)
    elif any(c in body for c in ".eE") and not body.startswith("0x"):
        val = float(body)
    else:
        val = int(body.rstrip("Uu"), 0 if not body.startswith("0") or body == "0" else 8)
    if neg:
        val = -val
    if dt.kind == "f":
        return dt.type(val)
    if ptype == "bf16":
        return np.uint16(f32_to_bf16_bits(np.float32(val))) if isinstance(val, float) else np.uint16(val & 0xFFFF)
    if dt.kind == "b":
        return np.bool_(bool(val))
    if isinstance(val, float):
        # a float literal in an integer-typed context (mov.b32 %r, 0f3F800000): its bits
        if body[:2] in ("0f", "0F"):
            val = int(body[2:], 16) if not neg else int(body[2:], 16) ^ 0x80000000
        elif body[:2] in ("0d", "0D"):
            val = int(body[2:], 16) if not neg else int(body[2:], 16) ^ (1 << 63)
        else:
            val = int(val)
    bits = dt.itemsize * 8
    val &= (1 << bits) - 1
    return np.array(val, dtype=UNSIGNED[dt.itemsize]).view(dt)[()]


def f32_to_bf16_bits(x) -> np.ndarray:
    """Round float32 values to bfloat16 (nearest even), as uint16 bits; NaN becomes the
    canonical 0x7FFF, as the hardware's conversions write it."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32)
    r = ((b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    if np.count_nonzero(nan):
        r = np.where(nan, np.uint16(0x7FFF), r)
    return r


def bf16_bits_to_f32(bits) -> np.ndarray:
    """bfloat16 bits (uint16) to float32 values (exact)."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)
