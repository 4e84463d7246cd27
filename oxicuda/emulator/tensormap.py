"""The emulator's 128-byte CUtensorMap: what ``tensor_map_encode_tiled`` packs and the
interpreter's ``cp.async.bulk.tensor`` reads back with ``decode_tensor_map``.

Layout (little-endian): magic u32 "OXTM"; data_type, rank, interleave, swizzle, l2_promotion,
oob_fill as u8; 2 pad bytes; global_address u64 at 16; global_dim u32 x5 at 24; global_strides
(byte strides of dims 1..rank-1) u64 x4 at 48; box_dim u16 x5 at 80; element_strides u8 x5 at 90;
zero padding to 128.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..driver.errors import raise_for

TENSOR_MAP_MAGIC = 0x4D54584F  # b"OXTM"
_FMT = "<I6B2xQ5I4x4Q5H5B"
_SIZE = struct.calcsize(_FMT)
assert _SIZE <= 128

# CUtensorMapDataType -> element bytes
TENSOR_MAP_ELEMENT_BYTES = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2, 10: 4, 11: 4, 12: 4}


@dataclass(frozen=True)
class TensorMapInfo:
    """A decoded tensor map; tuples are innermost-first and have ``rank`` entries."""

    data_type: int
    rank: int
    global_address: int
    global_dim: tuple[int, ...]
    global_strides: tuple[int, ...]  # rank-1 byte strides of dims 1..rank-1
    box_dim: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: int
    swizzle: int
    l2_promotion: int
    oob_fill: int

    @property
    def element_bytes(self) -> int:
        return TENSOR_MAP_ELEMENT_BYTES[self.data_type]


def encode_tensor_map(info: TensorMapInfo) -> bytes:
    """Validate (as cuTensorMapEncodeTiled does) and pack into 128 bytes."""
    call = "cuTensorMapEncodeTiled"
    r = info.rank
    if not 1 <= r <= 5:
        raise_for(1, call, f"rank must be 1..5; got {r}")
    if info.data_type not in TENSOR_MAP_ELEMENT_BYTES:
        raise_for(1, call, f"data_type {info.data_type} is not a CUtensorMapDataType")
    for name, seq, want in (("global_dim", info.global_dim, r), ("box_dim", info.box_dim, r),
                            ("element_strides", info.element_strides, r),
                            ("global_strides", info.global_strides, r - 1)):
        if len(seq) != want:
            raise_for(1, call, f"{name} has {len(seq)} entries; rank {r} needs {want}")
    if info.global_address % 16:
        raise_for(1, call, f"global_address 0x{info.global_address:x} must be 16-byte aligned")
    if any(not 1 <= d <= 2**32 for d in info.global_dim):
        raise_for(1, call, f"global_dim {info.global_dim} entries must be in 1..2^32")
    if any(s % 16 or s <= 0 for s in info.global_strides):
        raise_for(1, call, f"global_strides {info.global_strides} must be positive multiples of 16")
    if any(not 1 <= b <= 256 for b in info.box_dim):
        raise_for(1, call, f"box_dim {info.box_dim} entries must be in 1..256")
    if any(not 1 <= e <= 8 for e in info.element_strides):
        raise_for(1, call, f"element_strides {info.element_strides} entries must be in 1..8")
    if info.interleave == 0 and (info.box_dim[0] * info.element_bytes) % 16:
        raise_for(1, call, f"box_dim[0]={info.box_dim[0]} elements of {info.element_bytes} bytes "
                           "is not a multiple of 16 bytes")
    pad = lambda seq, n, fill=0: tuple(seq) + (fill,) * (n - len(seq))
    raw = struct.pack(
        _FMT, TENSOR_MAP_MAGIC, info.data_type, r, info.interleave, info.swizzle,
        info.l2_promotion, info.oob_fill, info.global_address,
        *pad([d - 1 for d in info.global_dim], 5), *pad(info.global_strides, 4),
        *pad([b - 1 for b in info.box_dim], 5), *pad(info.element_strides, 5),
    )
    return raw + bytes(128 - len(raw))


def decode_tensor_map(raw: bytes) -> TensorMapInfo:
    """Unpack a tensor map made by ``encode_tensor_map``; raises ValueError on other bytes."""
    if len(raw) < 128:
        raise ValueError(f"a tensor map is 128 bytes; got {len(raw)}")
    v = struct.unpack_from(_FMT, bytes(raw[:_SIZE]))
    if v[0] != TENSOR_MAP_MAGIC:
        raise ValueError(f"not an emulator tensor map (magic 0x{v[0]:08x}, want 0x{TENSOR_MAP_MAGIC:08x})")
    dtype, r, inter, swz, l2, oob, addr = v[1:8]
    dims, strides, box, estr = v[8:13], v[13:17], v[17:22], v[22:27]
    return TensorMapInfo(
        data_type=dtype, rank=r, global_address=addr,
        global_dim=tuple(d + 1 for d in dims[:r]), global_strides=tuple(strides[: r - 1]),
        box_dim=tuple(b + 1 for b in box[:r]), element_strides=tuple(estr[:r]),
        interleave=inter, swizzle=swz, l2_promotion=l2, oob_fill=oob,
    )
