"""Loaded PTX modules and their kernels: ``Module(ptx).get_function(name)(grid, block, args)``.

A ``Function`` prepares its launch once: the parameter layout read from the ``.entry``
declaration, one ``ParamBuffer`` from the driver, one ``struct.Struct`` covering the whole
layout (padding included) and one converter per parameter. A launch converts the arguments,
does one ``pack_into`` and one driver call; bad arguments and bad geometry raise before the
driver is touched.
"""

from __future__ import annotations

import operator
import struct
import threading
import weakref
from collections.abc import Callable, Sequence

import numpy as np

from . import enums
from .api import ParamLayout, ParamSlot
from .backend import api
from .context import _local as _context_local
from .context import current_device_ordinal, ensure_context
from .params import entry_layouts
from .stream import as_stream_handle
from .trace import ACTIVE as _ACTIVE_TRACES
from .trace import LaunchRecord
from .trace import record as _record_launch

# struct codes for scalar parameter types (little-endian, as the driver copies raw bytes)
_INT_CODES = {
    ".u8": "B", ".s8": "b", ".b8": "B",
    ".u16": "H", ".s16": "h", ".b16": "H",
    ".u32": "I", ".s32": "i", ".b32": "I",
    ".u64": "Q", ".s64": "q", ".b64": "Q",
}
_FLOAT_CODES = {".f32": "f", ".f64": "d", ".f16": "e"}
_FUNC_ATTR = enums.FUNCTION_ATTRIBUTES


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
        self.fast_pack_into = self._build_fast_pack()

    def _build_fast_pack(self) -> Callable[[object, Sequence[object]], None]:
        """A packer specialised to this entry: unpacks ``args`` into locals, converts each with
        an inline fast path for plain ints/floats, and does one ``pack_into``. Anything unusual
        (wrong count, wrong type, out of range) falls back to ``pack_into``, which raises the
        precise error."""
        n = self._count
        if n == 0:
            def fast_empty(buffer, args, _slow=self.pack_into):
                if args:
                    _slow(buffer, args)
            return fast_empty
        namespace: dict[str, object] = {
            "_pack": self.struct.pack_into, "_slow": self.pack_into,
            "_ptr_of": operator.attrgetter("ptr"), "_index": operator.index,
        }
        exprs = []
        for i, conv in enumerate(self._converters):
            namespace[f"c{i}"] = conv
            if conv is _to_pointer_or_int:  # objects without an int .ptr take the slow path
                exprs.append(f"a{i} if type(a{i}) is int else _ptr_of(a{i})")
            elif conv is _to_int:
                exprs.append(f"a{i} if type(a{i}) is int else _index(a{i})")
            elif conv is _to_float:
                exprs.append(f"a{i} if type(a{i}) is float else c{i}(a{i})")
            else:
                exprs.append(f"c{i}(a{i})")
        names = ", ".join(f"a{i}" for i in range(n)) + ("," if n == 1 else "")
        source = (
            "def fast_pack_into(buffer, args):\n"
            "    try:\n"
            f"        {names} = args\n"
            f"        _pack(buffer, 0, {', '.join(exprs)})\n"
            "    except Exception:\n"
            "        _slow(buffer, args)\n"
        )
        exec(compile(source, f"<oxicuda launch packer {self.kernel}>", "exec"), namespace)
        return namespace["fast_pack_into"]  # type: ignore[return-value]

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


def _dim3(value: object, what: str) -> tuple[int, int, int]:
    if type(value) is int:
        dims = (value, 1, 1)
    elif type(value) is tuple and len(value) == 3 and type(value[0]) is type(value[1]) is type(value[2]) is int:
        dims = value  # the common launch shapes, without the general conversions
    elif type(value) is tuple and len(value) == 1 and type(value[0]) is int:
        dims = (value[0], 1, 1)
    else:
        try:
            items = tuple(operator.index(v) for v in value)  # type: ignore[union-attr]
        except TypeError:
            try:
                items = (operator.index(value),)
            except TypeError:
                raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}") from None
        if not 1 <= len(items) <= 3:
            raise ValueError(f"{what} must have 1 to 3 dimensions, got {value!r}")
        dims = items + (1,) * (3 - len(items))
    if dims[0] < 1 or dims[1] < 1 or dims[2] < 1:
        raise ValueError(f"{what} dimensions must all be >= 1, got {dims}")
    return dims


class Function:
    """One kernel entry of a loaded ``Module``; calling it launches the kernel."""

    def __init__(self, module: Module, name: str, layout: ParamLayout) -> None:
        self.module = module
        self.name = name
        self.spec: object = None  # set by the kernel cache; reported by trace()
        self.handle = api().module_get_function(module.handle, name)
        self.layout = layout
        self.packer = ArgPacker(name, layout)
        self._params = api().param_buffer(layout)
        self._limits: tuple | None = None
        self._launch_kernel = api().launch_kernel
        self._launch_lock = threading.Lock()
        self._pack = self.packer.fast_pack_into
        # 1-D fast-path bounds (threads per block, grid.x, dynamic shared bytes), set on first use
        self._max_block_1d = 0
        self._max_grid_1d = 0
        self._max_dyn = -1

    # -- attributes ---------------------------------------------------------------------------
    def get_attribute(self, name: str) -> int:
        """A ``CUfunction_attribute`` by its ``enums.FUNCTION_ATTRIBUTES`` name."""
        key = name.upper()
        if key not in _FUNC_ATTR:
            raise KeyError(f"unknown function attribute {name!r}; known: {sorted(_FUNC_ATTR)}")
        return api().func_get_attribute(_FUNC_ATTR[key], self.handle)

    @property
    def attributes(self) -> dict[str, int]:
        """Registers, static shared/local/constant bytes, thread limit, PTX and binary versions."""
        names = ("num_regs", "shared_size_bytes", "local_size_bytes", "const_size_bytes",
                 "max_threads_per_block", "ptx_version", "binary_version")
        return {n: self.get_attribute(n) for n in names}

    def set_max_dynamic_shared_memory(self, nbytes: int) -> None:
        """Allow launches with up to ``nbytes`` of dynamic shared memory (the opt-in).

        Raises ValueError when static plus dynamic shared memory exceeds the device's opt-in limit.
        """
        from .device import Device

        nbytes = operator.index(nbytes)
        optin = Device(self.module.device_ordinal).max_shared_memory_per_block_optin
        static = self.get_attribute("SHARED_SIZE_BYTES")
        if nbytes < 0 or nbytes + static > optin:
            raise ValueError(
                f"{self.name}: {nbytes} bytes of dynamic shared memory plus {static} static "
                f"exceeds the device's opt-in limit of {optin} bytes per block"
            )
        api().func_set_attribute(self.handle, _FUNC_ATTR["MAX_DYNAMIC_SHARED_SIZE_BYTES"], nbytes)
        self._limits = None

    def max_active_blocks_per_sm(self, block_size: int, dynamic_smem: int = 0) -> int:
        """Occupancy: resident blocks per SM at this block size and dynamic shared memory."""
        return api().occupancy_max_active_blocks_per_multiprocessor(
            self.handle, operator.index(block_size), operator.index(dynamic_smem)
        )

    # -- launch -------------------------------------------------------------------------------
    def _launch_limits(self) -> tuple:
        from .device import Device

        dev = Device(self.module.device_ordinal)
        limits = (
            min(self.get_attribute("MAX_THREADS_PER_BLOCK"), dev.max_threads_per_block),
            dev.max_block_dims,
            dev.max_grid_dims,
            self.get_attribute("MAX_DYNAMIC_SHARED_SIZE_BYTES"),
            self.get_attribute("SHARED_SIZE_BYTES"),
            dev.max_shared_memory_per_block_optin,
        )
        self._limits = limits
        self._max_block_1d = min(limits[0], limits[1][0])
        self._max_grid_1d = limits[2][0]
        self._max_dyn = limits[3]
        return limits

    def _check_geometry(self, grid: tuple, block: tuple, shared_mem: int) -> None:
        limits = self._limits or self._launch_limits()
        max_threads, (mbx, mby, mbz), (mgx, mgy, mgz), max_dyn = limits[:4]
        bx, by, bz = block
        gx, gy, gz = grid
        if (
            bx * by * bz > max_threads or bx > mbx or by > mby or bz > mbz
            or gx > mgx or gy > mgy or gz > mgz or not 0 <= shared_mem <= max_dyn
        ):
            self._raise_geometry(grid, block, shared_mem, limits)

    def _raise_geometry(self, grid: tuple, block: tuple, shared_mem: int, limits: tuple) -> None:
        max_threads, max_block, max_grid, max_dyn, static, optin = limits
        threads = block[0] * block[1] * block[2]
        if threads > max_threads:
            raise ValueError(
                f"{self.name}: block {block} has {threads} threads; this kernel allows at most "
                f"{max_threads} per block"
            )
        for axis, b, g, mb, mg in zip("xyz", block, grid, max_block, max_grid):
            if b > mb:
                raise ValueError(f"{self.name}: block.{axis} = {b} exceeds the device limit {mb}")
            if g > mg:
                raise ValueError(f"{self.name}: grid.{axis} = {g} exceeds the device limit {mg}")
        hint = (
            f"; call set_max_dynamic_shared_memory({shared_mem}) first"
            if 0 <= shared_mem and shared_mem + static <= optin
            else f"; the device allows {optin} bytes per block in all ({static} static here)"
        )
        raise ValueError(
            f"{self.name}: shared_mem = {shared_mem} bytes of dynamic shared memory; this "
            f"kernel currently allows 0..{max_dyn}{hint}"
        )

    def __call__(
        self,
        grid: int | tuple[int, ...],
        block: int | tuple[int, ...],
        args: Sequence[object],
        shared_mem: int = 0,
        stream: object = None,
    ) -> None:
        """Launch on ``stream`` (None: the default stream). Asynchronous like cuLaunchKernel.

        Raises TypeError (wrong argument count or type, naming the parameter) or ValueError
        (grid, block or shared memory over the limits) before anything reaches the driver.
        """
        if (
            type(grid) is int and type(block) is int and 0 < grid <= self._max_grid_1d
            and 0 < block <= self._max_block_1d and 0 <= shared_mem <= self._max_dyn
        ):
            grid3 = (grid, 1, 1)
            block3 = (block, 1, 1)
        else:
            grid3 = (grid, 1, 1) if type(grid) is int and grid > 0 else _dim3(grid, "grid")
            block3 = (block, 1, 1) if type(block) is int and block > 0 else _dim3(block, "block")
            self._check_geometry(grid3, block3, shared_mem)
        if stream is None:
            stream_handle = 0
        elif type(stream) is int and stream >= 0:
            stream_handle = stream
        else:
            stream_handle = as_stream_handle(stream)
        params = self._params
        if getattr(_context_local, "ctx", None) is None:
            ensure_context()
        with self._launch_lock:  # one parameter buffer per function: pack and launch as one step
            self._pack(params.data, args)
            self._launch_kernel(self.handle, grid3, block3, shared_mem, stream_handle, params)
        if _ACTIVE_TRACES:
            _record_launch(
                LaunchRecord(self.name, self.spec, grid3, block3, shared_mem, stream_handle)
            )

    def prepared_launch(
        self, grid: int | tuple[int, ...], block: int | tuple[int, ...], shared_mem: int = 0
    ) -> Callable[[Sequence[object], object], None]:
        """Check ``grid``, ``block`` and ``shared_mem`` against the limits once and return
        ``launch(args, stream)`` for that geometry: it converts the stream, packs ``args``
        (the same checks and errors as a call) and launches, without re-checking the geometry.
        For library plan caches that launch one geometry many times.

        Raises ValueError/TypeError for bad geometry now, as a call would.
        """
        grid3 = _dim3(grid, "grid")
        block3 = _dim3(block, "block")
        shared_mem = operator.index(shared_mem)
        self._check_geometry(grid3, block3, shared_mem)
        handle, params, pack, launch_kernel = self.handle, self._params, self._pack, self._launch_kernel
        lock = self._launch_lock
        data = params.data

        def launch(args: Sequence[object], stream: object = None) -> None:
            if stream is None:
                stream_handle = 0
            elif type(stream) is int and stream >= 0:
                stream_handle = stream
            else:
                stream_handle = as_stream_handle(stream)
            if getattr(_context_local, "ctx", None) is None:
                ensure_context()
            with lock:
                pack(data, args)
                launch_kernel(handle, grid3, block3, shared_mem, stream_handle, params)
            if _ACTIVE_TRACES:
                _record_launch(LaunchRecord(self.name, self.spec, grid3, block3, shared_mem, stream_handle))

        return launch

    def __repr__(self) -> str:
        return f"<oxicuda.driver.Function {self.name}>"


def _unload_quietly(unload, handle: int) -> None:
    try:
        unload(handle)
    except Exception:  # the driver may be shutting down
        pass


class Module:
    """PTX loaded into the current context (device 0's primary context if none is current).

    Raises ModuleLoadError carrying the JIT error log when the driver rejects the PTX.
    """

    def __init__(self, ptx_text: str | bytes, image: bytes | None = None) -> None:
        """Load ``ptx_text``, or, when ``image`` is given, that prebuilt binary of it (from
        ``DriverAPI.link_ptx``; a cubin on the real driver), skipping the PTX JIT. Parameter
        layouts are read from ``ptx_text`` either way, so it must be the image's source."""
        text = ptx_text.decode("ascii") if isinstance(ptx_text, (bytes, bytearray)) else ptx_text
        if not isinstance(text, str):
            raise TypeError(f"Module: ptx_text must be str or bytes, got {type(ptx_text).__name__}")
        try:
            ptx_image = text.encode("ascii")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"Module: PTX must be ASCII; found {text[exc.start]!r} at offset {exc.start}"
            ) from None
        self.context = ensure_context()
        self.device_ordinal = current_device_ordinal()
        self.ptx = text
        self.layouts = entry_layouts(text)
        drv = api()
        if image is not None:
            if not isinstance(image, (bytes, bytearray)) or not image:
                raise TypeError(
                    f"Module: image must be non-empty bytes from link_ptx, got {type(image).__name__}"
                    f" of length {len(image) if hasattr(image, '__len__') else '?'}"
                )
            self.handle = drv.module_load_data(bytes(image))
        else:
            self.handle = drv.module_load_data(ptx_image)
        self._functions: dict[str, Function] = {}
        self._finalizer = weakref.finalize(self, _unload_quietly, drv.module_unload, self.handle)

    @property
    def entries(self) -> list[str]:
        """The ``.entry`` names declared in the PTX."""
        return list(self.layouts)

    def get_function(self, name: str) -> Function:
        """The kernel ``name`` (cached); KeyError listing the entries when there is none."""
        fn = self._functions.get(name)
        if fn is None:
            if name not in self.layouts:
                raise KeyError(f"no .entry {name!r} in this module; entries: {self.entries}")
            fn = Function(self, name, self.layouts[name])
            self._functions[name] = fn
        return fn

    def __repr__(self) -> str:
        return f"<oxicuda.driver.Module entries={self.entries}>"
