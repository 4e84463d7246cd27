"""``EmulatorAPI``: the driver API over host memory; launches run the PTX interpreter.

One emulated device (see ``emulator_devices``), its primary context, one fake device address
space (``emulator_memory``), and streams and events that execute eagerly and in order: every
call has finished when it returns, so synchronizing is a no-op and queries report done. Event
times are host wall-clock times of the eager execution (nominal: they measure the emulator,
not a GPU). Modules are parsed and decoded at load, so an unsupported instruction is reported
by name there; ``launch_kernel`` runs the grid one CTA at a time (``oxicuda.emulator.interp``).
Stream capture records the work of capturing streams into graphs instead (``emulator_graph``).
"""

from __future__ import annotations

import ctypes
import threading
import time
import uuid

import numpy as np

from ..driver.api import DriverAPI, ParamBuffer, ParamLayout
from ..driver.enums import FUNCTION_ATTRIBUTES as FA
from ..driver.enums import MEMORY_TYPES
from ..driver.enums import POINTER_ATTRIBUTES as PA
from ..driver.errors import CudaError, raise_for
from .devices import EmulatedDevice, device_attributes, emulated_device_from_env
from .graph import _ACTIVE as _ACTIVE_CAPTURE
from .graph import GraphCalls
from .memory import DeviceHeap, host_view
from .tensormap import TensorMapInfo, encode_tensor_map

PRIMARY_CONTEXT = 0xC0DE01
_DRIVER_VERSION = 13000


class EmulatorParamBuffer(ParamBuffer):
    """A bytearray-backed parameter block; ``handle`` is the bytearray itself."""

    def __init__(self, layout: ParamLayout) -> None:
        self.layout = layout
        self._bytes = bytearray(max(layout.total_size, 0))
        self.data = memoryview(self._bytes)
        self.handle = self._bytes


class _Function:
    __slots__ = ("carveout", "kernel", "max_dynamic_smem", "module", "name")

    def __init__(self, module: int, name: str, kernel, max_dynamic_smem: int) -> None:
        self.module = module
        self.name = name
        self.kernel = kernel  # oxicuda.emulator.interp.program.KernelProgram
        self.max_dynamic_smem = max_dynamic_smem
        self.carveout = -1


class EmulatorAPI(GraphCalls, DriverAPI):
    """The driver calls of ``DriverAPI`` implemented over host memory and the PTX interpreter."""

    name = "emulator"

    def __init__(self, device: EmulatedDevice | None = None, require_context: bool = False) -> None:
        #: like the real driver, fail context-bound calls in threads with no current context (the
        #: process backend turns it on; standalone instances used as test harnesses leave it off)
        self.require_context = require_context
        self.device = device or emulated_device_from_env()
        self._attrs = device_attributes(self.device)
        self.heap = DeviceHeap(self.device.total_memory)
        self._lock = threading.RLock()
        self._local = threading.local()
        self._primary_refs = 0
        self._host: dict[int, np.ndarray] = {}
        self._streams: set[int] = {0}
        self._events: dict[int, float | None] = {}
        self._modules: dict[int, object] = {}
        self._functions: dict[int, _Function] = {}
        self._module_functions: dict[int, dict[str, int]] = {}
        self._next_handle = 0x1000
        self._uuid = uuid.uuid5(uuid.NAMESPACE_URL, "oxicuda-emulator/" + self.device.arch).bytes
        self._init_graphs()

    def _handle(self) -> int:
        self._next_handle += 1
        return self._next_handle

    # -- init, version, devices ----------------------------------------------------------
    def init(self) -> None:
        """cuInit(0): nothing to do for the emulator."""

    def driver_get_version(self) -> int:
        return _DRIVER_VERSION

    def device_get_count(self) -> int:
        return 1

    def _check_dev(self, dev: int, call: str) -> None:
        if dev != 0:
            raise_for(101, call, f"device {dev}; the emulator has one device, 0")

    def device_get(self, ordinal: int) -> int:
        self._check_dev(ordinal, "cuDeviceGet")
        return 0

    def device_get_name(self, dev: int) -> str:
        self._check_dev(dev, "cuDeviceGetName")
        return self.device.name

    def device_get_attribute(self, attrib: int, dev: int) -> int:
        self._check_dev(dev, "cuDeviceGetAttribute")
        try:
            return self._attrs[attrib]
        except KeyError:
            raise_for(1, "cuDeviceGetAttribute", f"attribute {attrib} is not known to the emulator")

    def device_total_mem(self, dev: int) -> int:
        self._check_dev(dev, "cuDeviceTotalMem_v2")
        return self.heap.total

    def device_get_uuid(self, dev: int) -> bytes:
        self._check_dev(dev, "cuDeviceGetUuid")
        return self._uuid

    # -- contexts -------------------------------------------------------------------------
    def device_primary_ctx_retain(self, dev: int) -> int:
        self._check_dev(dev, "cuDevicePrimaryCtxRetain")
        with self._lock:
            self._primary_refs += 1
        return PRIMARY_CONTEXT

    def device_primary_ctx_release(self, dev: int) -> None:
        self._check_dev(dev, "cuDevicePrimaryCtxRelease_v2")
        with self._lock:
            if self._primary_refs <= 0:
                raise_for(201, "cuDevicePrimaryCtxRelease_v2", "primary context was not retained")
            self._primary_refs -= 1

    def ctx_set_current(self, ctx: int) -> None:
        if ctx not in (0, PRIMARY_CONTEXT):
            raise_for(201, "cuCtxSetCurrent", f"context 0x{ctx:x} is not the emulator's primary context")
        self._local.ctx = ctx

    def ctx_get_current(self) -> int:
        return getattr(self._local, "ctx", 0)

    def ctx_get_device(self) -> int:
        return 0

    def ctx_synchronize(self) -> None:
        """Work is eager: nothing is ever pending (refused while a stream captures)."""
        self._ctx_sync_check("cuCtxSynchronize")

    # -- memory ---------------------------------------------------------------------------
    def mem_alloc(self, nbytes: int) -> int:
        self._unsafe("cuMemAlloc_v2")
        with self._lock:
            return self.heap.alloc(nbytes)

    def mem_free(self, dptr: int) -> None:
        self._unsafe("cuMemFree_v2")
        with self._lock:
            self.heap.free(dptr)

    def mem_set_extent(self, dptr: int, nbytes: int) -> None:
        with self._lock:
            self.heap.set_extent(dptr, nbytes)

    def mem_get_info(self) -> tuple[int, int]:
        return self.heap.total - self.heap.used, self.heap.total

    def mem_alloc_host(self, nbytes: int) -> tuple[int, memoryview]:
        if nbytes <= 0:
            raise_for(1, "cuMemAllocHost_v2", f"size must be positive; got {nbytes}")
        self._unsafe("cuMemAllocHost_v2")
        buf = np.zeros(int(nbytes) + 64, dtype=np.uint8)
        addr = buf.ctypes.data
        start = (-addr) % 64  # page-locked memory is well aligned on a GPU; keep 64 here
        view = buf[start: start + int(nbytes)]
        self._host[addr + start] = buf
        return addr + start, memoryview(view)

    def mem_free_host(self, hptr: int) -> None:
        self._unsafe("cuMemFreeHost")
        if self._host.pop(hptr, None) is None:
            raise_for(1, "cuMemFreeHost", f"0x{hptr:x} was not returned by mem_alloc_host")

    def mem_get_address_range(self, dptr: int) -> tuple[int, int]:
        hit = self.heap.allocation(dptr)  # the whole allocation, as the driver sees it
        if hit is None:
            raise_for(1, "cuMemGetAddressRange_v2", f"0x{dptr:x} is {self.heap.describe(dptr)}")
        return hit

    def _host_block(self, ptr: int) -> int | None:
        for base, buf in self._host.items():
            if base <= ptr < base + buf.size:
                return base
        return None

    def pointer_get_attribute(self, attrib: int, ptr: int) -> int:
        call = "cuPointerGetAttribute"
        on_device = self.heap.allocation(ptr) is not None
        if not on_device and self._host_block(ptr) is None:
            raise_for(1, call, f"0x{ptr:x} is not device memory ({self.heap.describe(ptr)}) "
                               "nor host memory from mem_alloc_host")
        if attrib == PA["CONTEXT"]:
            return PRIMARY_CONTEXT
        if attrib == PA["MEMORY_TYPE"]:
            return MEMORY_TYPES["DEVICE"] if on_device else MEMORY_TYPES["HOST"]
        if attrib in (PA["DEVICE_POINTER"], PA["HOST_POINTER"]):
            return ptr
        if attrib == PA["IS_MANAGED"]:
            return 0
        if attrib == PA["DEVICE_ORDINAL"]:
            return 0
        raise_for(1, call, f"pointer attribute {attrib} is not supported by the emulator; "
                           f"supported: {sorted(PA.values())}")

    def _check_stream(self, stream: int | None, call: str) -> None:
        if stream is not None and stream not in self._streams:
            raise_for(400, call, f"stream 0x{stream:x} does not exist")

    def memcpy_htod(self, dst: int, src_host: int, nbytes: int, stream: int | None = None) -> None:
        self._check_stream(stream, "cuMemcpyHtoD_v2")
        cap = self._host_copy_capture(stream, src_host, nbytes, "cuMemcpyHtoDAsync_v2")
        if cap is not None:
            self._record(cap, stream, "htod", (dst, src_host, nbytes))
        else:
            self._exec_htod(dst, src_host, nbytes)

    def _exec_htod(self, dst: int, src_host: int, nbytes: int) -> None:
        if nbytes:
            view = self.heap.view(dst, nbytes, "cuMemcpyHtoD_v2")
            ctypes.memmove(view.ctypes.data, src_host, nbytes)

    def memcpy_dtoh(self, dst_host: int, src: int, nbytes: int, stream: int | None = None) -> None:
        self._check_stream(stream, "cuMemcpyDtoH_v2")
        cap = self._host_copy_capture(stream, dst_host, nbytes, "cuMemcpyDtoHAsync_v2")
        if cap is not None:
            self._record(cap, stream, "dtoh", (dst_host, src, nbytes))
        else:
            self._exec_dtoh(dst_host, src, nbytes)

    def _exec_dtoh(self, dst_host: int, src: int, nbytes: int) -> None:
        if nbytes:
            view = self.heap.view(src, nbytes, "cuMemcpyDtoH_v2")
            ctypes.memmove(dst_host, view.ctypes.data, nbytes)

    def memcpy_dtod(self, dst: int, src: int, nbytes: int, stream: int | None = None) -> None:
        self._check_stream(stream, "cuMemcpyDtoD_v2")
        cap = self._capture_of(stream, "cuMemcpyDtoDAsync_v2")
        if cap is not None:
            self._record(cap, stream, "dtod", (dst, src, nbytes))
        else:
            self._exec_dtod(dst, src, nbytes)

    def _exec_dtod(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            d = self.heap.view(dst, nbytes, "cuMemcpyDtoD_v2")
            s = self.heap.view(src, nbytes, "cuMemcpyDtoD_v2")
            ctypes.memmove(d.ctypes.data, s.ctypes.data, nbytes)  # memmove: overlap-safe

    def memcpy_2d(self, dst: int, dst_pitch: int, src: int, src_pitch: int, width_bytes: int,
                  height: int, stream: int | None = None) -> None:
        call = "cuMemcpy2D_v2"
        self._check_stream(stream, call)
        if width_bytes > dst_pitch or width_bytes > src_pitch:
            raise_for(1, call, f"width {width_bytes} bytes exceeds a pitch "
                               f"(dst {dst_pitch}, src {src_pitch})")
        cap = self._capture_of(stream, "cuMemcpy2DAsync_v2")
        if cap is not None:
            self._record(cap, stream, "2d", (dst, dst_pitch, src, src_pitch, width_bytes, height))
        else:
            self._exec_2d(dst, dst_pitch, src, src_pitch, width_bytes, height)

    def _exec_2d(self, dst: int, dst_pitch: int, src: int, src_pitch: int, width_bytes: int,
                 height: int) -> None:
        call = "cuMemcpy2D_v2"
        if width_bytes <= 0 or height <= 0:
            return
        span = lambda pitch: (height - 1) * pitch + width_bytes
        d = self.heap.view(dst, span(dst_pitch), call)
        s = self.heap.view(src, span(src_pitch), call).copy()
        for row in range(height):
            d[row * dst_pitch: row * dst_pitch + width_bytes] = s[row * src_pitch: row * src_pitch + width_bytes]

    def memset_d8(self, dst: int, value: int, count: int, stream: int | None = None) -> None:
        self._check_stream(stream, "cuMemsetD8_v2")
        cap = self._capture_of(stream, "cuMemsetD8Async")
        if cap is not None:
            self._record(cap, stream, "memset8", (dst, value, count))
        else:
            self._exec_memset8(dst, value, count)

    def _exec_memset8(self, dst: int, value: int, count: int) -> None:
        if count:
            self.heap.view(dst, count, "cuMemsetD8_v2")[:] = value & 0xFF

    def memset_d32(self, dst: int, value: int, count: int, stream: int | None = None) -> None:
        call = "cuMemsetD32_v2"
        self._check_stream(stream, call)
        if dst % 4:
            raise_for(1, call, f"destination 0x{dst:x} is not 4-byte aligned")
        cap = self._capture_of(stream, "cuMemsetD32Async")
        if cap is not None:
            self._record(cap, stream, "memset32", (dst, value, count))
        else:
            self._exec_memset32(dst, value, count)

    def _exec_memset32(self, dst: int, value: int, count: int) -> None:
        call = "cuMemsetD32_v2"
        if count:
            self.heap.view(dst, 4 * count, call).view(np.uint32)[:] = value & 0xFFFFFFFF

    # -- streams and events -----------------------------------------------------------------
    def stream_create(self, flags: int = 0) -> int:
        with self._lock:
            h = self._handle()
            self._streams.add(h)
            self._stream_flags[h] = int(flags)
        return h

    def stream_destroy(self, stream: int) -> None:
        if stream == 0 or stream not in self._streams:
            raise_for(400, "cuStreamDestroy_v2", f"stream 0x{stream:x} does not exist")
        cap = self._captures.pop(stream, None)
        if cap is not None:  # the driver invalidates a capture whose stream goes away
            self._invalidate(cap, f"stream 0x{stream:x} was destroyed during the capture")
        self._streams.discard(stream)
        self._stream_flags.pop(stream, None)

    def stream_synchronize(self, stream: int) -> None:
        self._check_stream(stream, "cuStreamSynchronize")
        self._sync_check(stream, "cuStreamSynchronize")

    def stream_query(self, stream: int) -> bool:
        self._check_stream(stream, "cuStreamQuery")
        self._sync_check(stream, "cuStreamQuery")
        return True

    def stream_wait_event(self, stream: int, event: int) -> None:
        call = "cuStreamWaitEvent"
        self._check_stream(stream, call)
        self._check_event(event, call)
        hit = self._event_captures.get(event)
        mine = self._capture_of(stream, call)
        if hit is None:
            if mine is not None:
                self._fail_captures([mine], 905, call, f"event 0x{event:x} was recorded outside "
                                    "the capture of the waiting stream")
            return
        theirs, deps = hit
        if theirs.status != _ACTIVE_CAPTURE:
            raise_for(907, call, f"event 0x{event:x} was recorded in a capture that has ended")
        if mine is None:  # the stream joins the capture (a fork)
            with self._lock:
                self._captures[stream] = theirs
                theirs.tails[stream] = deps
        elif mine is theirs:
            mine.tails[stream] = mine.tails[stream] | deps
        else:
            self._fail_captures([mine, theirs], 902, call, "the event belongs to another capture")

    def _check_event(self, event: int, call: str) -> None:
        if event not in self._events:
            raise_for(400, call, f"event 0x{event:x} does not exist")

    def event_create(self, flags: int = 0) -> int:
        with self._lock:
            h = self._handle()
            self._events[h] = None
        return h

    def event_destroy(self, event: int) -> None:
        self._check_event(event, "cuEventDestroy_v2")
        del self._events[event]
        self._event_captures.pop(event, None)

    def event_record(self, event: int, stream: int) -> None:
        self._check_event(event, "cuEventRecord")
        self._check_stream(stream, "cuEventRecord")
        cap = self._capture_of(stream, "cuEventRecord")
        if cap is not None:  # no node: the event carries the stream's place in the capture
            self._event_captures[event] = (cap, cap.tails[stream])
            return
        self._event_captures.pop(event, None)
        self._events[event] = time.perf_counter()

    def event_synchronize(self, event: int) -> None:
        self._check_event(event, "cuEventSynchronize")
        self._event_check(event, "cuEventSynchronize")

    def event_query(self, event: int) -> bool:
        self._check_event(event, "cuEventQuery")
        self._event_check(event, "cuEventQuery")
        return True

    def event_elapsed_time(self, start: int, end: int) -> float:
        call = "cuEventElapsedTime"
        self._check_event(start, call)
        self._check_event(end, call)
        self._event_check(start, call)
        self._event_check(end, call)
        t0, t1 = self._events[start], self._events[end]
        if t0 is None or t1 is None:
            raise_for(400, call, "both events must have been recorded")
        return (t1 - t0) * 1000.0

    # -- modules, functions, launch ---------------------------------------------------------
    def module_load_data(self, ptx: bytes) -> int:
        from .interp.program import load_program  # on first load: importing the interpreter costs time

        text = ptx.decode("ascii", errors="replace") if isinstance(ptx, (bytes, bytearray)) else str(ptx)
        text = text.split("\x00", 1)[0]
        with self._lock:
            program = load_program(text, self.heap, self.device)
            h = self._handle()
            self._modules[h] = program
            self._module_functions[h] = {}
        return h

    def link_ptx(self, ptx: bytes) -> bytes:
        """The emulator's "binary": the PTX bytes, after the same parse and decode that
        ``module_load_data`` runs (so a PTX it would reject fails here the same way)."""
        from .interp.program import load_program

        text = ptx.decode("ascii", errors="replace") if isinstance(ptx, (bytes, bytearray)) else str(ptx)
        text = text.split("\x00", 1)[0]
        with self._lock:
            program = load_program(text, self.heap, self.device)
            program.release(self.heap)
        return text.encode("ascii", errors="replace")

    def module_unload(self, module: int) -> None:
        with self._lock:
            program = self._modules.pop(module, None)
            if program is None:
                raise_for(400, "cuModuleUnload", f"module 0x{module:x} is not loaded")
            for fh in self._module_functions.pop(module).values():
                self._functions.pop(fh, None)
            program.release(self.heap)

    def module_get_function(self, module: int, name: str) -> int:
        call = "cuModuleGetFunction"
        program = self._modules.get(module)
        if program is None:
            raise_for(400, call, f"module 0x{module:x} is not loaded")
        known = self._module_functions[module]
        if name in known:
            return known[name]
        kernel = program.kernels.get(name)
        if kernel is None:
            raise_for(500, call, f"no .entry named {name!r}; the module has {sorted(program.kernels)}")
        with self._lock:
            h = self._handle()
            default_dyn = max(0, self.device.smem_per_block - kernel.static_smem)
            self._functions[h] = _Function(module, name, kernel, default_dyn)
            known[name] = h
        return h

    def _function(self, func: int, call: str) -> _Function:
        f = self._functions.get(func)
        if f is None:
            raise_for(400, call, f"function 0x{func:x} does not exist (module unloaded?)")
        return f

    def _regs_per_thread(self, kernel) -> int:
        return max(1, kernel.num_regs)

    def _max_threads(self, kernel) -> int:
        regs = (self._regs_per_thread(kernel) + 7) // 8 * 8
        by_regs = self.device.regs_per_block // regs // 32 * 32
        return max(0, min(self.device.max_threads_per_block, kernel.max_threads_directive, by_regs))

    def func_get_attribute(self, attrib: int, func: int) -> int:
        f = self._function(func, "cuFuncGetAttribute")
        k = f.kernel
        values = {
            FA["MAX_THREADS_PER_BLOCK"]: self._max_threads(k),
            FA["SHARED_SIZE_BYTES"]: k.static_smem,
            FA["CONST_SIZE_BYTES"]: k.const_bytes,
            FA["LOCAL_SIZE_BYTES"]: k.local_bytes,
            FA["NUM_REGS"]: self._regs_per_thread(k),
            FA["PTX_VERSION"]: k.ptx_version,
            FA["BINARY_VERSION"]: self.device.cc[0] * 10 + self.device.cc[1],
            FA["CACHE_MODE_CA"]: 0,
            FA["MAX_DYNAMIC_SHARED_SIZE_BYTES"]: f.max_dynamic_smem,
            FA["PREFERRED_SHARED_MEMORY_CARVEOUT"]: f.carveout,
        }
        if attrib not in values:
            raise_for(1, "cuFuncGetAttribute", f"function attribute {attrib} is not known")
        return values[attrib]

    def func_set_attribute(self, func: int, attrib: int, value: int) -> None:
        call = "cuFuncSetAttribute"
        f = self._function(func, call)
        if attrib == FA["MAX_DYNAMIC_SHARED_SIZE_BYTES"]:
            limit = self.device.smem_per_block_optin - f.kernel.static_smem
            if not 0 <= value <= limit:
                raise_for(1, call, f"dynamic shared memory {value} bytes; allowed 0..{limit} "
                                   f"(opt-in {self.device.smem_per_block_optin} minus "
                                   f"{f.kernel.static_smem} static)")
            f.max_dynamic_smem = int(value)
        elif attrib == FA["PREFERRED_SHARED_MEMORY_CARVEOUT"]:
            if not -1 <= value <= 100:
                raise_for(1, call, f"carveout {value}; allowed -1..100")
            f.carveout = int(value)
        else:
            raise_for(1, call, f"function attribute {attrib} cannot be set; settable: "
                               f"{FA['MAX_DYNAMIC_SHARED_SIZE_BYTES']}, "
                               f"{FA['PREFERRED_SHARED_MEMORY_CARVEOUT']}")

    def occupancy_max_active_blocks_per_multiprocessor(self, func: int, block_size: int,
                                                       dynamic_smem: int) -> int:
        call = "cuOccupancyMaxActiveBlocksPerMultiprocessor"
        f = self._function(func, call)
        dev = self.device
        if block_size <= 0:
            raise_for(1, call, f"block_size must be positive; got {block_size}")
        if block_size > self._max_threads(f.kernel):
            return 0
        warps = (block_size + 31) // 32
        limit = min(dev.max_blocks_per_sm, dev.threads_per_sm // (warps * 32))
        regs = (self._regs_per_thread(f.kernel) + 7) // 8 * 8
        regs_per_block = (regs * 32 + 255) // 256 * 256 * warps
        limit = min(limit, dev.regs_per_sm // regs_per_block)
        smem = f.kernel.static_smem + int(dynamic_smem)
        if smem > dev.smem_per_block_optin:
            return 0
        if smem:
            per_block = (smem + dev.reserved_smem_per_block + 127) // 128 * 128
            limit = min(limit, dev.smem_per_sm // per_block)
        return max(0, limit)

    def param_buffer(self, layout: ParamLayout) -> ParamBuffer:
        return EmulatorParamBuffer(layout)

    def launch_kernel(self, func: int, grid: tuple[int, int, int], block: tuple[int, int, int],
                      shared_mem: int, stream: int, params: ParamBuffer) -> None:
        call = "cuLaunchKernel"
        f = self._function(func, call)
        self._check_stream(stream, call)
        grid = tuple(int(g) for g in grid)
        block = tuple(int(b) for b in block)
        if len(grid) != 3 or len(block) != 3 or min(grid) < 1 or min(block) < 1:
            raise_for(1, call, f"grid {grid} and block {block} must be three positive ints")
        a = self._attrs
        if grid[0] > a[5] or grid[1] > a[6] or grid[2] > a[7]:
            raise_for(1, call, f"grid {grid} exceeds the maximum ({a[5]}, {a[6]}, {a[7]})")
        if block[0] > 1024 or block[1] > 1024 or block[2] > 64:
            raise_for(1, call, f"block {block} exceeds the maximum (1024, 1024, 64)")
        threads = block[0] * block[1] * block[2]
        max_threads = self._max_threads(f.kernel)
        if threads > max_threads:
            code = 1 if threads > self.device.max_threads_per_block else 701
            raise_for(code, call, f"{f.name}: block {block} has {threads} threads; this kernel "
                                  f"allows at most {max_threads}")
        if shared_mem > f.max_dynamic_smem:
            raise_for(1, call, f"{f.name}: {shared_mem} bytes of dynamic shared memory; the limit "
                               f"is {f.max_dynamic_smem} (raise it with func_set_attribute "
                               "MAX_DYNAMIC_SHARED_SIZE_BYTES)")
        raw = params.handle if isinstance(params, EmulatorParamBuffer) else bytes(params.data)
        cap = self._capture_of(stream, call)
        if cap is not None:  # the parameters as they are now: the buffer is reused
            self._record(cap, stream, "kernel", (func, grid, block, int(shared_mem), bytes(raw)))
            return
        with self._lock:
            f.kernel.launch(grid, block, int(shared_mem), bytes(raw), self.heap)

    def _exec_kernel(self, func: int, grid: tuple, block: tuple, shared_mem: int,
                     raw: bytes) -> None:
        f = self._function(func, "cuGraphLaunch")
        with self._lock:
            f.kernel.launch(grid, block, shared_mem, raw, self.heap)

    # -- tensor maps --------------------------------------------------------------------------
    def tensor_map_encode_tiled(self, data_type: int, rank: int, global_address: int,
                                global_dim: tuple[int, ...], global_strides: tuple[int, ...],
                                box_dim: tuple[int, ...], element_strides: tuple[int, ...],
                                interleave: int, swizzle: int, l2_promotion: int,
                                oob_fill: int) -> bytes:
        info = TensorMapInfo(int(data_type), int(rank), int(global_address),
                             tuple(int(x) for x in global_dim), tuple(int(x) for x in global_strides),
                             tuple(int(x) for x in box_dim), tuple(int(x) for x in element_strides),
                             int(interleave), int(swizzle), int(l2_promotion), int(oob_fill))
        return encode_tensor_map(info)


__all__ = ["CudaError", "EmulatorAPI", "EmulatorParamBuffer", "host_view"]


# Like the real driver, every call that works in a context fails with CUDA_ERROR_INVALID_CONTEXT
# (201) in a thread where none is current, so a code path that forgets ensure_context() fails
# here (in CI) instead of only on a GPU.
_CONTEXT_CALLS = (  # calls that act in "the current context" (handle-based ones do not need one)
    "ctx_get_device", "ctx_synchronize", "mem_alloc", "mem_get_info", "mem_alloc_host", "mem_get_address_range",
    "memcpy_htod", "memcpy_dtoh", "memcpy_dtod", "memcpy_2d", "memset_d8", "memset_d32",
    "stream_create", "event_create", "module_load_data", "link_ptx",
)


def _in_context(name: str, method):
    def call(self, *args, **kwargs):
        if self.require_context and not getattr(self._local, "ctx", 0):
            raise_for(201, name, "no context is current in this thread (call ensure_context() first)")
        return method(self, *args, **kwargs)

    call.__name__, call.__qualname__, call.__doc__ = method.__name__, method.__qualname__, method.__doc__
    return call


for _name in _CONTEXT_CALLS:
    if _name in EmulatorAPI.__dict__:
        setattr(EmulatorAPI, _name, _in_context(_name, EmulatorAPI.__dict__[_name]))
