"""Kernel parameter layouts read from a PTX ``.entry`` declaration.

Both driver implementations and the launch path use this one reading, so the bytes a launch
packs are the bytes the kernel (or the emulator) reads.
"""

from __future__ import annotations

import re

from .api import ParamLayout, ParamSlot

_TYPE_SIZES = {
    "b8": 1, "u8": 1, "s8": 1,
    "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
    "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4,
    "b64": 8, "u64": 8, "s64": 8, "f64": 8,
}

_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$%][\w$]*)\s*\(([^)]*)\)", re.S)
_PARAM = re.compile(
    r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+(?:\.ptr\s+(?:\.\w+\s+)*(?:\.align\s+\d+\s+)?)?"
    r"([A-Za-z_$%][\w$]*)\s*(?:\[(\d+)\])?"
)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def layout_from_params(params: list[tuple[str, str, int | None, int | None]]) -> ParamLayout:
    """Layout from (name, type, align, array_count) tuples, applying PTX natural alignment."""
    slots = []
    offset = 0
    for name, ptype, align, count in params:
        if ptype not in _TYPE_SIZES:
            raise ValueError(f"kernel parameter {name!r} has unsupported type .{ptype}")
        elem = _TYPE_SIZES[ptype]
        size = elem * (count if count is not None else 1)
        a = align or elem
        offset = (offset + a - 1) // a * a
        slots.append(ParamSlot(name, offset, size, a, "." + ptype))
        offset += size
    return ParamLayout(tuple(slots), offset)


def entry_layouts(ptx: str) -> dict[str, ParamLayout]:
    """Every ``.entry`` of a PTX text mapped to its parameter layout."""
    out = {}
    for m in _ENTRY.finditer(_strip_comments(ptx)):
        params = []
        for p in _PARAM.finditer(m.group(2)):
            align = int(p.group(1)) if p.group(1) else None
            count = int(p.group(4)) if p.group(4) else None
            params.append((p.group(3), p.group(2), align, count))
        out[m.group(1)] = layout_from_params(params)
    return out
