"""Kernel parameters: layouts read from a PTX ``.entry`` declaration, the ``ArgPacker`` that
converts launch arguments into those bytes, and ``build_launch``, which generates the per-entry
function every launch of a kernel runs.

Both driver implementations and the launch path use this one reading, so the bytes a launch
packs are the bytes the kernel (or the emulator) reads.
"""

from __future__ import annotations

import operator
import re
import struct
from collections.abc import Callable, Sequence

import numpy as np

from .api import ParamLayout, ParamSlot

_TYPE_SIZES = {
    "b8": 1, "u8": 1, "s8": 1,
    "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
    "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4,
    "b64": 8, "u64": 8, "s64": 8, "f64": 8,
}

_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$%][\w$]*)\s*\(([^)]*)\)", re.DOTALL)
_PARAM = re.compile(
    r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+(?:\.ptr\s+(?:\.\w+\s+)*(?:\.align\s+\d+\s+)?)?"
    r"([A-Za-z_$%][\w$]*)\s*(?:\[(\d+)\])?"
)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
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


# struct codes for scalar parameter types (little-endian, as the driver copies raw bytes)
_INT_CODES = {
    ".u8": "B", ".s8": "b", ".b8": "B",
    ".u16": "H", ".s16": "h", ".b16": "H",
    ".u32": "I", ".s32": "i", ".b32": "I",
    ".u64": "Q", ".s64": "q", ".b64": "Q",
}
_FLOAT_CODES = {".f32": "f", ".f64": "d", ".f16": "e"}


def _to_pointer_or_int(value: object) -> int:
    """A 64-bit parameter: a device array (``.ptr``), a CUDA array interface, or an int."""
    if type(value) is int:
        return value
    ptr = getattr(value, "ptr", None)
    if ptr is not None:
        return int(ptr)
    cai = getattr(value, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    if isinstance(value, (float, np.floating, str, bytes)):
        raise TypeError(type(value).__name__)
    if hasattr(value, "__int__"):
        return int(value)
    return operator.index(value)


def _to_int(value: object) -> int:
    if type(value) is int:
        return value
    return operator.index(value)  # ints, numpy integers, bools; floats raise TypeError


def _to_float(value: object) -> float:
    if type(value) is float or type(value) is int:
        return value
    if isinstance(value, (str, bytes)) or not isinstance(value, (int, float, np.number)):
        raise TypeError(type(value).__name__)
    return float(value)


def _to_bf16_bits(value: object) -> int:
    bits = int(np.array(_to_float(value), dtype=np.float32).view(np.uint32))
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:
        return (bits >> 16) | 0x40  # keep NaN a NaN
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF  # round to nearest even


def _expected_text(slot: ParamSlot) -> str:
    t = slot.ptx_type
    if slot.size != _scalar_size(t):
        return f"bytes of length {slot.size}"
    if t in (".u64", ".s64", ".b64"):
        return "a device pointer (DeviceArray, __cuda_array_interface__) or an int"
    if t in _FLOAT_CODES or t in (".bf16",):
        return "a float"
    return "an int"


def _scalar_size(ptx_type: str) -> int:
    return struct.calcsize(_INT_CODES.get(ptx_type) or _FLOAT_CODES.get(ptx_type) or "H")


def _slot_plan(slot: ParamSlot) -> tuple[str, Callable[[object], object]]:
    """The struct code and converter of one parameter."""
    t = slot.ptx_type
    if slot.size != _scalar_size(t):  # an array parameter: raw bytes of exactly that size
        size = slot.size

        def to_bytes(value: object) -> bytes:
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise TypeError(type(value).__name__)
            data = bytes(value)
            if len(data) != size:
                raise TypeError(f"{len(data)} bytes")
            return data

        return f"{size}s", to_bytes
    if t in (".u64", ".s64", ".b64"):
        return _INT_CODES[t], _to_pointer_or_int
    if t in _INT_CODES:
        return _INT_CODES[t], _to_int
    if t in _FLOAT_CODES:
        return _FLOAT_CODES[t], _to_float
    if t == ".bf16":
        return "H", _to_bf16_bits
    raise ValueError(f"kernel parameter {slot.name!r} has type {t}, which launches cannot pass")


class ArgPacker:
    """Converts launch arguments and packs them into a parameter buffer, for one kernel entry."""

    def __init__(self, kernel: str, layout: ParamLayout) -> None:
        self.kernel = kernel
        self.layout = layout
        fmt = ["<"]
        converters = []
        pos = 0
        for slot in layout.slots:
            code, conv = _slot_plan(slot)
            if slot.offset > pos:
                fmt.append(f"{slot.offset - pos}x")
            fmt.append(code)
            converters.append(conv)
            pos = slot.offset + slot.size
        if layout.total_size > pos:
            fmt.append(f"{layout.total_size - pos}x")
        self.struct = struct.Struct("".join(fmt))
        if self.struct.size != layout.total_size:
            raise AssertionError(
                f"{kernel}: packed size {self.struct.size} != layout size {layout.total_size}"
            )
        self._converters = tuple(converters)
        self._count = len(converters)

    def convert(self, args: Sequence[object]) -> list[object]:
        """The packable values of ``args``; TypeError names the first bad parameter."""
        if len(args) != self._count:
            names = ", ".join(f"{s.name} ({s.ptx_type})" for s in self.layout.slots)
            raise TypeError(
                f"{self.kernel}: got {len(args)} argument(s), the kernel takes {self._count}: "
                f"{names or 'none'}"
            )
        try:
            return [conv(a) for conv, a in zip(self._converters, args)]
        except (TypeError, ValueError, KeyError, IndexError, OverflowError):
            self._raise_for_bad_argument(args)
            raise

    def pack_into(self, buffer, args: Sequence[object]) -> None:
        """Convert ``args`` and write them into ``buffer`` at offset 0."""
        values = self.convert(args)
        try:
            self.struct.pack_into(buffer, 0, *values)
        except struct.error:
            self._raise_for_bad_argument(args)
            raise

    def pack(self, args: Sequence[object]) -> bytes:
        """The packed parameter bytes of ``args`` (for tests and tools; launches use pack_into)."""
        buf = bytearray(self.layout.total_size)
        self.pack_into(buf, args)
        return bytes(buf)

    def _raise_for_bad_argument(self, args: Sequence[object]) -> None:
        for i, (slot, conv, value) in enumerate(zip(self.layout.slots, self._converters, args)):
            code, _ = _slot_plan(slot)
            try:
                struct.pack("<" + code, conv(value))
            except (TypeError, ValueError, KeyError, IndexError, OverflowError, struct.error) as exc:
                seen = f"{type(value).__name__} {value!r}"
                if len(seen) > 80:
                    seen = seen[:77] + "..."
                raise TypeError(
                    f"{self.kernel}: argument {i} ({slot.name}, {slot.ptx_type}) expects "
                    f"{_expected_text(slot)} in range for {slot.ptx_type}; got {seen}"
                ) from exc


# -- the generated launch ---------------------------------------------------------------------
#: the argument list every generated launch takes: geometry, dynamic shared bytes, stream handle
_GEOMETRY = "gx, gy, gz, bx, by, bz, smem, stream"


def _fast_expressions(packer: ArgPacker, namespace: dict[str, object]) -> list[str]:
    """One inline conversion per parameter, for the common types: an int passes as it is, a
    pointer parameter takes an array's ``.ptr``, an integer parameter is left to
    ``struct.pack_into`` (which takes exactly what ``operator.index`` takes, as ``_to_int`` does),
    a float parameter takes floats and ints as they are. Anything else calls the parameter's
    converter; a conversion or a pack that fails sends the launch to the checked path, which
    raises the precise error or packs what only the converters accept."""
    exprs = []
    for i, conv in enumerate(packer._converters):
        namespace[f"_c{i}"] = conv
        if conv is _to_pointer_or_int:
            exprs.append(f"a{i} if type(a{i}) is int else a{i}.ptr")
        elif conv is _to_int:
            exprs.append(f"a{i}")
        elif conv is _to_float:
            exprs.append(f"a{i} if type(a{i}) is float or type(a{i}) is int else _c{i}(a{i})")
        else:
            exprs.append(f"_c{i}(a{i})")
    return exprs


def build_launch(
    packer: ArgPacker,
    *,
    new_native: Callable[[], object] | None = None,
    first_native: object = None,
    refused: Callable[..., None] | None = None,
    launch_kernel: Callable[..., None] | None = None,
    handle: int = 0,
    new_params: Callable[[], object] | None = None,
    before: Callable[[], None] | None = None,
) -> Callable[..., None]:
    """The launch of one kernel entry: ``launch(gx, gy, gz, bx, by, bz, smem, stream, args)``.

    The geometry, ``smem`` and ``stream`` must already be checked (ints within the limits);
    ``args`` are checked here, and a bad one raises TypeError naming the parameter before the
    driver is called. A launch converts ``args``, packs them with one ``struct.pack_into`` and
    calls the driver once.

    ``new_native`` makes a driver launch plan (``LibCudaAPI.launch_plan``): its ``buffer`` holds a
    launch configuration (``header_format``) followed by the parameters, so the single
    ``pack_into`` writes geometry, stream and arguments, and ``call(*call_args)`` launches
    (``first_native``: a plan already made, used as the first buffer). When the driver returns
    an error, ``refused(code, gx, gy, gz, bx, by, bz, smem, stream, args)`` decides (it may
    launch again or raise; without it the plan's ``fail`` raises).

    Without a plan, ``new_params`` makes a ``ParamBuffer`` and the launch calls
    ``launch_kernel(handle, grid, block, smem, stream, params)`` (the ``DriverAPI`` seam: the
    emulator, test drivers), after calling ``before()`` when given.

    Buffers come from a free list: a launch pops one (``list.pop`` is atomic), packs, calls the
    driver and pushes it back, so threads launching the same kernel at once each pack their own
    buffer (a new one is made when the list is empty) and no lock is taken.
    """
    kernel = packer.kernel
    namespace: dict[str, object] = {}
    exprs = _fast_expressions(packer, namespace)
    n = packer._count
    unpack = "() = args" if n == 0 else ", ".join(f"a{i}" for i in range(n)) + ", = args"
    keep: list[object] = []  # the owners of every buffer's storage, alive as long as the launch
    if new_native is not None:
        first = first_native or new_native()
        pack = struct.Struct("<" + first.header_format + packer.struct.format.lstrip("<@=!>"))
        if pack.size != first.header_size + packer.layout.total_size:
            raise AssertionError(f"{kernel}: launch buffer layout mismatch ({pack.size} bytes)")

        def new_item(plan=None) -> tuple:
            plan = plan or new_native()
            keep.append(plan)
            return (plan.buffer, *plan.call_args)

        def pack_checked(buffer, gx, gy, gz, bx, by, bz, smem, stream, args):
            values = packer.convert(args)  # TypeError naming the first bad parameter
            try:
                pack.pack_into(buffer, 0, gx, gy, gz, bx, by, bz, smem, stream, *values)
            except struct.error:
                packer._raise_for_bad_argument(args)
                raise ValueError(
                    f"{kernel}: grid ({gx}, {gy}, {gz}), block ({bx}, {by}, {bz}), shared_mem "
                    f"{smem} and stream {stream} must be unsigned 32-bit (stream: 64-bit) ints"
                ) from None

        free = [new_item(first)]
        names = [f"_p{i}" for i in range(len(first.call_args))]
        if refused is None:
            def refused(code, gx, gy, gz, bx, by, bz, smem, stream, args):
                first.fail(code, (gx, gy, gz), (bx, by, bz), smem)

        namespace.update(_pack=pack.pack_into, _checked=pack_checked, _call=first.call,
                         _refused=refused)
        item = ", ".join(["buf", *names])
        fast = f"_pack(buf, 0, {_GEOMETRY}, {', '.join(exprs)})"
        checked = f"_checked(buf, {_GEOMETRY}, args)"
        driver = f"code = _call({', '.join(names)})"
        after = ["    if code:", f"        _refused(code, {_GEOMETRY}, args)"]
        prologue = []
    else:
        if launch_kernel is None or new_params is None:
            raise ValueError("build_launch needs new_native, or launch_kernel and new_params")

        def new_item() -> tuple:
            params = new_params()
            return (params.data, params)

        free = [new_item()]
        namespace.update(_pack=packer.struct.pack_into, _checked=packer.pack_into,
                         _launch_kernel=launch_kernel, _handle=handle)
        item = "buf, params"
        fast = f"_pack(buf, 0, {', '.join(exprs)})"
        checked = "_checked(buf, args)"
        driver = "_launch_kernel(_handle, (gx, gy, gz), (bx, by, bz), smem, stream, params)"
        after = []
        prologue = ["    _before()"] if before is not None else []
        namespace["_before"] = before
    namespace.update(_pop=free.pop, _push=free.append, _grow=new_item, _keep=keep)
    lines = [
        f"def launch({_GEOMETRY}, args):",
        *prologue,
        "    try:",
        "        item = _pop()",
        "    except IndexError:",
        "        item = _grow()",
        "    try:",
        f"        {item} = item",
        "        try:",
        f"            {unpack}",
        f"            {fast}",
        "        except Exception:",
        f"            {checked}",
        f"        {driver}",
        "    finally:",
        "        _push(item)",
        *after,
    ]
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<oxicuda launch {kernel}>", "exec"), namespace)  # noqa: S102 - our own generated packer
    return namespace["launch"]  # type: ignore[return-value]
