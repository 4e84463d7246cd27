"""``LibCudaAPI``: the ``DriverAPI`` over the real NVIDIA driver, through cffi in ABI mode.

The library (``libcuda.so.1`` on Linux, ``nvcuda.dll`` on Windows, or ``$OXICUDA_LIBCUDA``) is
opened in ``LibCudaAPI.__init__``, never at import. Every call checks its CUresult and raises
through ``errors.raise_for``.

Handle types (CUcontext, CUstream, CUfunction, ...) and host pointers are declared as
``uintptr_t`` rather than opaque pointers: on every 64-bit ABI the driver supports (x86-64 SysV,
AArch64, Windows x64) a pointer and a ``uintptr_t`` travel identically, and this lets Python ints
(the ``DriverAPI`` convention) pass straight through with no ``ffi.cast`` on the hot path.
"""

from __future__ import annotations

import os
import sys
import threading

from .api import DriverAPI, ParamBuffer, ParamLayout
from .errors import CUDA_RESULTS, DriverNotFoundError, ModuleLoadError, raise_for
from .libcuda_decls import (  # re-exported: the binding's declarations live there
    CDEF,
    CU_JIT_ERROR_LOG_BUFFER,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    CU_JIT_INFO_LOG_BUFFER,
    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
    CU_JIT_INPUT_PTX,
    FFI_TYPES,
    FUNCTION_NAMES,
)

CUDA_ERROR_NOT_READY = 600
CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE = 910
_MEMORYTYPE_DEVICE = 2
_JIT_LOG_BYTES = 16384
_TENSOR_MAP_BYTES = 128
_TENSOR_MAP_ALIGN = 64
_PARAM_ALIGN = 64  # by-value tensor maps are the most-aligned kernel parameters


def library_candidates() -> list[str]:
    """The driver library names tried, in order ($OXICUDA_LIBCUDA alone when it is set)."""
    override = os.environ.get("OXICUDA_LIBCUDA", "").strip()
    if override:
        return [override]
    if sys.platform.startswith("win"):
        return ["nvcuda.dll"]
    if sys.platform == "darwin":
        return []
    return ["libcuda.so.1", "libcuda.so"]


def _make_ffi():
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    for ctype in FFI_TYPES:
        ffi.typeof(ctype)
    return ffi


def _open_library(ffi):
    tried = []
    for name in library_candidates():
        try:
            return ffi.dlopen(name), name
        except OSError as exc:
            reason = str(exc).split("  Additionally,")[0].strip()  # drop cffi's find_library note
            tried.append(f"{name} ({reason})")
    tried_text = "; ".join(tried) if tried else f"no driver library exists on {sys.platform}"
    raise DriverNotFoundError(
        f"could not load the NVIDIA driver library; tried: {tried_text}. "
        "Install an NVIDIA driver, or set OXICUDA_LIBCUDA to the full path of libcuda.so.1 "
        "(nvcuda.dll on Windows); OXICUDA_BACKEND=emulator runs without a GPU."
    )


class LibCudaParamBuffer(ParamBuffer):
    """One ``char[]`` storage and one ``void*[]`` of pointers into it, made once per function."""

    def __init__(self, ffi, layout: ParamLayout) -> None:
        self.layout = layout
        self._storage = ffi.new("char[]", layout.total_size + _PARAM_ALIGN)
        base = int(ffi.cast("uintptr_t", self._storage))
        skip = (-base) % _PARAM_ALIGN
        start = self._storage + skip
        self.data = ffi.buffer(start, layout.total_size)
        n = len(layout.slots)
        self._pointers = ffi.new("void*[]", max(n, 1))
        for i, slot in enumerate(layout.slots):
            self._pointers[i] = ffi.cast("void*", start + slot.offset)
        self.handle = self._pointers


class LibCudaLaunchPlan:
    """A function's launch prepared once for ``cuLaunchKernelEx``.

    One storage holds a ``CUlaunchConfig`` (``header_format``, ``header_size`` bytes) and then the
    parameters, at a 64-byte aligned offset, so a launch writes geometry, stream and arguments
    with one ``struct.pack_into`` into ``buffer`` and calls ``call(*call_args)``: the config,
    the function and the parameter pointers are cdata made here, so cffi converts no Python int
    per launch. ``build_launch`` (driver/params.py) generates that per-launch code.
    """

    #: gridDim x/y/z, blockDim x/y/z, sharedMemBytes, padding, hStream; then zeros up to
    #: ``header_size`` (attrs = NULL, numAttrs = 0, and the gap before the parameters)
    header_format = "7I4xQ24x"
    header_size = 64

    def __init__(self, api: LibCudaAPI, func: int, layout: ParamLayout) -> None:
        ffi = api.ffi
        if (ffi.offsetof("CUlaunchConfig", "hStream") != 32
                or ffi.sizeof("CUlaunchConfig") > self.header_size):
            raise AssertionError("CUlaunchConfig does not have the layout header_format assumes")
        size = self.header_size + layout.total_size
        self._storage = ffi.new("char[]", size + _PARAM_ALIGN)
        start = self._storage + (-int(ffi.cast("uintptr_t", self._storage))) % _PARAM_ALIGN
        self.buffer = ffi.buffer(start, size)
        params = start + self.header_size
        self._pointers = ffi.new("void*[]", max(len(layout.slots), 1))
        for i, slot in enumerate(layout.slots):
            self._pointers[i] = params + slot.offset
        self.call = api._launch_ex
        self.call_args = (ffi.cast("CUlaunchConfig *", start), ffi.cast("void *", func),
                          self._pointers, ffi.NULL)
        self._check = api._check

    def fail(self, code: int, grid: tuple, block: tuple, shared_mem: int) -> None:
        """Raise the error of a launch that returned ``code``."""
        self._check(code, "cuLaunchKernelEx", f"grid={grid} block={block} shared_mem={shared_mem}")


class LibCudaAPI(DriverAPI):
    """The real driver. Construction opens the library (raising DriverNotFoundError)."""

    name = "cuda"

    def __init__(self) -> None:
        self.ffi = ffi = _make_ffi()
        self.lib, self.library_name = _open_library(ffi)
        lib = self.lib
        # every declared function the library exports, looked up now (see FUNCTION_NAMES)
        self.exported = frozenset(n for n in FUNCTION_NAMES if self._resolve(n) is not None)
        self._uuid_fn = self._resolve("cuDeviceGetUuid_v2", "cuDeviceGetUuid")
        self._elapsed_fn = self._resolve("cuEventElapsedTime", "cuEventElapsedTime_v2")
        self._launch = lib.cuLaunchKernel
        self._launch_ex = self._resolve("cuLaunchKernelEx")  # drivers from CUDA 11.8 on
        self._null = ffi.NULL
        self._range_fn = self._resolve("cuMemGetAddressRange_v2")
        self._local = threading.local()
        self._initialized = False

    # -- plumbing ---------------------------------------------------------------------------
    def _resolve(self, *names: str):
        for name in names:
            try:
                return getattr(self.lib, name)
            except (AttributeError, NotImplementedError):
                continue
        return None

    def _check(self, code: int, call: str, detail: str = "") -> None:
        if code:
            if code not in CUDA_RESULTS:
                detail = (self._error_text(code) + ("\n" + detail if detail else "")).strip()
            raise_for(code, call, detail)

    def _error_text(self, code: int) -> str:
        """The driver's own name and description of a CUresult oxicuda's table lacks."""
        ffi = self.ffi
        name = ffi.new("const char **")
        desc = ffi.new("const char **")
        parts = []
        if self.lib.cuGetErrorName(code, name) == 0 and name[0] != ffi.NULL:
            parts.append(ffi.string(name[0]).decode(errors="replace"))
        if self.lib.cuGetErrorString(code, desc) == 0 and desc[0] != ffi.NULL:
            parts.append(ffi.string(desc[0]).decode(errors="replace"))
        return ": ".join(parts)

    def _int_out(self, fn, call: str, *args) -> int:
        out = self.ffi.new("int *")
        self._check(fn(out, *args), call)
        return int(out[0])

    def _handle_out(self, fn, call: str, *args) -> int:
        out = self.ffi.new("uintptr_t *")
        self._check(fn(out, *args), call)
        return int(out[0])

    # -- init, version, devices -------------------------------------------------------------
    def init(self) -> None:
        if not self._initialized:
            self._check(self.lib.cuInit(0), "cuInit")
            self._initialized = True

    def driver_get_version(self) -> int:
        return self._int_out(self.lib.cuDriverGetVersion, "cuDriverGetVersion")

    def device_get_count(self) -> int:
        return self._int_out(self.lib.cuDeviceGetCount, "cuDeviceGetCount")

    def device_get(self, ordinal: int) -> int:
        return self._int_out(self.lib.cuDeviceGet, "cuDeviceGet", ordinal)

    def device_get_name(self, dev: int) -> str:
        buf = self.ffi.new("char[]", 256)
        self._check(self.lib.cuDeviceGetName(buf, 256, dev), "cuDeviceGetName")
        return self.ffi.string(buf).decode(errors="replace")

    def device_get_attribute(self, attrib: int, dev: int) -> int:
        return self._int_out(self.lib.cuDeviceGetAttribute, "cuDeviceGetAttribute", attrib, dev)

    def device_total_mem(self, dev: int) -> int:
        out = self.ffi.new("size_t *")
        self._check(self.lib.cuDeviceTotalMem_v2(out, dev), "cuDeviceTotalMem_v2")
        return int(out[0])

    def device_get_uuid(self, dev: int) -> bytes:
        if self._uuid_fn is None:
            raise NotImplementedError("this driver exports neither cuDeviceGetUuid_v2 nor cuDeviceGetUuid")
        out = self.ffi.new("CUuuid *")
        self._check(self._uuid_fn(out, dev), "cuDeviceGetUuid")
        return bytes(self.ffi.buffer(out.bytes, 16))

    # -- contexts -----------------------------------------------------------------------------
    def device_primary_ctx_retain(self, dev: int) -> int:
        return self._handle_out(self.lib.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", dev)

    def device_primary_ctx_release(self, dev: int) -> None:
        self._check(self.lib.cuDevicePrimaryCtxRelease_v2(dev), "cuDevicePrimaryCtxRelease_v2")

    def ctx_set_current(self, ctx: int) -> None:
        self._check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    def ctx_get_current(self) -> int:
        return self._handle_out(self.lib.cuCtxGetCurrent, "cuCtxGetCurrent")

    def ctx_get_device(self) -> int:
        return self._int_out(self.lib.cuCtxGetDevice, "cuCtxGetDevice")

    def ctx_synchronize(self) -> None:
        self._check(self.lib.cuCtxSynchronize(), "cuCtxSynchronize")

    # -- memory -------------------------------------------------------------------------------
    def mem_alloc(self, nbytes: int) -> int:
        out = self.ffi.new("CUdeviceptr *")
        code = self.lib.cuMemAlloc_v2(out, nbytes)
        self._check(code, "cuMemAlloc_v2", f"requested {nbytes} bytes" if code else "")
        return int(out[0])

    def mem_free(self, dptr: int) -> None:
        self._check(self.lib.cuMemFree_v2(dptr), "cuMemFree_v2")

    def mem_get_info(self) -> tuple[int, int]:
        free = self.ffi.new("size_t *")
        total = self.ffi.new("size_t *")
        self._check(self.lib.cuMemGetInfo_v2(free, total), "cuMemGetInfo_v2")
        return int(free[0]), int(total[0])

    def mem_alloc_host(self, nbytes: int) -> tuple[int, memoryview]:
        out = self.ffi.new("void **")
        self._check(self.lib.cuMemAllocHost_v2(out, nbytes), "cuMemAllocHost_v2")
        ptr = out[0]
        return int(self.ffi.cast("uintptr_t", ptr)), memoryview(self.ffi.buffer(ptr, nbytes))

    def mem_free_host(self, hptr: int) -> None:
        self._check(self.lib.cuMemFreeHost(hptr), "cuMemFreeHost")

    def mem_get_address_range(self, dptr: int) -> tuple[int, int]:
        # per-thread out-parameters made once: the BLAS pointer checks call this per operand
        try:
            base, size = self._local.range_out
        except AttributeError:
            base, size = self._local.range_out = (self.ffi.new("CUdeviceptr *"), self.ffi.new("size_t *"))
        if self._range_fn is None:
            raise DriverNotFoundError(f"{self.library_name} does not export cuMemGetAddressRange_v2")
        code = self._range_fn(base, size, dptr)
        if code:
            self._check(code, "cuMemGetAddressRange_v2", f"0x{dptr:x}")
        return base[0], size[0]

    def pointer_get_attribute(self, attrib: int, ptr: int) -> int:
        # Zeroed 8 bytes: attributes of 4 bytes (memory type, ordinal) leave the high half 0
        # on the little-endian hosts the driver runs on.
        out = self.ffi.new("unsigned long long *")
        self._check(self.lib.cuPointerGetAttribute(out, attrib, ptr), "cuPointerGetAttribute")
        return int(out[0])

    def memcpy_htod(self, dst: int, src_host: int, nbytes: int, stream: int | None = None) -> None:
        if stream is None:
            self._check(self.lib.cuMemcpyHtoD_v2(dst, src_host, nbytes), "cuMemcpyHtoD_v2")
        else:
            code = self.lib.cuMemcpyHtoDAsync_v2(dst, src_host, nbytes, stream)
            self._check(code, "cuMemcpyHtoDAsync_v2")

    def memcpy_dtoh(self, dst_host: int, src: int, nbytes: int, stream: int | None = None) -> None:
        if stream is None:
            self._check(self.lib.cuMemcpyDtoH_v2(dst_host, src, nbytes), "cuMemcpyDtoH_v2")
        else:
            code = self.lib.cuMemcpyDtoHAsync_v2(dst_host, src, nbytes, stream)
            self._check(code, "cuMemcpyDtoHAsync_v2")

    def memcpy_dtod(self, dst: int, src: int, nbytes: int, stream: int | None = None) -> None:
        if stream is None:
            self._check(self.lib.cuMemcpyDtoD_v2(dst, src, nbytes), "cuMemcpyDtoD_v2")
        else:
            self._check(self.lib.cuMemcpyDtoDAsync_v2(dst, src, nbytes, stream), "cuMemcpyDtoDAsync_v2")

    def memcpy_2d(
        self,
        dst: int,
        dst_pitch: int,
        src: int,
        src_pitch: int,
        width_bytes: int,
        height: int,
        stream: int | None = None,
    ) -> None:
        p = self.ffi.new("CUDA_MEMCPY2D *")
        p.srcMemoryType = _MEMORYTYPE_DEVICE
        p.srcDevice = src
        p.srcPitch = src_pitch
        p.dstMemoryType = _MEMORYTYPE_DEVICE
        p.dstDevice = dst
        p.dstPitch = dst_pitch
        p.WidthInBytes = width_bytes
        p.Height = height
        if stream is None:
            self._check(self.lib.cuMemcpy2D_v2(p), "cuMemcpy2D_v2")
        else:
            self._check(self.lib.cuMemcpy2DAsync_v2(p, stream), "cuMemcpy2DAsync_v2")

    def memset_d8(self, dst: int, value: int, count: int, stream: int | None = None) -> None:
        if stream is None:
            self._check(self.lib.cuMemsetD8_v2(dst, value & 0xFF, count), "cuMemsetD8_v2")
        else:
            self._check(self.lib.cuMemsetD8Async(dst, value & 0xFF, count, stream), "cuMemsetD8Async")

    def memset_d32(self, dst: int, value: int, count: int, stream: int | None = None) -> None:
        v = value & 0xFFFFFFFF
        if stream is None:
            self._check(self.lib.cuMemsetD32_v2(dst, v, count), "cuMemsetD32_v2")
        else:
            self._check(self.lib.cuMemsetD32Async(dst, v, count, stream), "cuMemsetD32Async")

    # -- streams and events -------------------------------------------------------------------
    def stream_create(self, flags: int = 0) -> int:
        return self._handle_out(self.lib.cuStreamCreate, "cuStreamCreate", flags)

    def stream_destroy(self, stream: int) -> None:
        self._check(self.lib.cuStreamDestroy_v2(stream), "cuStreamDestroy_v2")

    def stream_synchronize(self, stream: int) -> None:
        self._check(self.lib.cuStreamSynchronize(stream), "cuStreamSynchronize")

    def stream_query(self, stream: int) -> bool:
        code = self.lib.cuStreamQuery(stream)
        if code == CUDA_ERROR_NOT_READY:
            return False
        self._check(code, "cuStreamQuery")
        return True

    def stream_wait_event(self, stream: int, event: int) -> None:
        self._check(self.lib.cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent")

    def event_create(self, flags: int = 0) -> int:
        return self._handle_out(self.lib.cuEventCreate, "cuEventCreate", flags)

    def event_destroy(self, event: int) -> None:
        self._check(self.lib.cuEventDestroy_v2(event), "cuEventDestroy_v2")

    def event_record(self, event: int, stream: int) -> None:
        self._check(self.lib.cuEventRecord(event, stream), "cuEventRecord")

    def event_synchronize(self, event: int) -> None:
        self._check(self.lib.cuEventSynchronize(event), "cuEventSynchronize")

    def event_query(self, event: int) -> bool:
        code = self.lib.cuEventQuery(event)
        if code == CUDA_ERROR_NOT_READY:
            return False
        self._check(code, "cuEventQuery")
        return True

    def event_elapsed_time(self, start: int, end: int) -> float:
        if self._elapsed_fn is None:
            raise NotImplementedError("this driver exports no cuEventElapsedTime(_v2)")
        out = self.ffi.new("float *")
        self._check(self._elapsed_fn(out, start, end), "cuEventElapsedTime")
        return float(out[0])

    # -- stream capture and graphs ------------------------------------------------------------
    def stream_begin_capture(self, stream: int, mode: int = 0) -> None:
        self._check(self.lib.cuStreamBeginCapture_v2(stream, mode), "cuStreamBeginCapture_v2")

    def stream_end_capture(self, stream: int) -> int:
        return self._handle_out(lambda out: self.lib.cuStreamEndCapture(stream, out),
                                "cuStreamEndCapture")

    def stream_is_capturing(self, stream: int) -> int:
        out = self.ffi.new("int *")
        self._check(self.lib.cuStreamIsCapturing(stream, out), "cuStreamIsCapturing")
        return int(out[0])

    def stream_get_capture_info(self, stream: int) -> tuple[int, int]:
        ffi = self.ffi
        status, ident = ffi.new("int *"), ffi.new("uint64_t *")
        code = self.lib.cuStreamGetCaptureInfo_v2(stream, status, ident, ffi.NULL, ffi.NULL, ffi.NULL)
        self._check(code, "cuStreamGetCaptureInfo_v2")
        return int(status[0]), int(ident[0]) if status[0] else 0

    def thread_exchange_stream_capture_mode(self, mode: int) -> int:
        box = self.ffi.new("int *", mode)
        self._check(self.lib.cuThreadExchangeStreamCaptureMode(box), "cuThreadExchangeStreamCaptureMode")
        return int(box[0])

    def graph_instantiate(self, graph: int, flags: int = 0) -> int:
        return self._handle_out(lambda out: self.lib.cuGraphInstantiateWithFlags(out, graph, flags),
                                "cuGraphInstantiateWithFlags")

    def graph_launch(self, graph_exec: int, stream: int) -> None:
        self._check(self.lib.cuGraphLaunch(graph_exec, stream), "cuGraphLaunch")

    def graph_exec_update(self, graph_exec: int, graph: int) -> int:
        info = self.ffi.new("CUgraphExecUpdateResultInfo *")
        code = self.lib.cuGraphExecUpdate_v2(graph_exec, graph, info)
        if code == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE:
            return int(info.result) or 1
        self._check(code, "cuGraphExecUpdate_v2")
        return 0

    def graph_node_count(self, graph: int) -> int:
        count = self.ffi.new("size_t *")
        self._check(self.lib.cuGraphGetNodes(graph, self.ffi.NULL, count), "cuGraphGetNodes")
        return int(count[0])

    def mem_alloc_async(self, nbytes: int, stream: int) -> int:
        out = self.ffi.new("CUdeviceptr *")
        code = self.lib.cuMemAllocAsync(out, nbytes, stream)
        self._check(code, "cuMemAllocAsync", f"requested {nbytes} bytes" if code else "")
        return int(out[0])

    def mem_free_async(self, dptr: int, stream: int) -> None:
        self._check(self.lib.cuMemFreeAsync(dptr, stream), "cuMemFreeAsync")

    def graph_destroy(self, graph: int) -> None:
        self._check(self.lib.cuGraphDestroy(graph), "cuGraphDestroy")

    def graph_exec_destroy(self, graph_exec: int) -> None:
        self._check(self.lib.cuGraphExecDestroy(graph_exec), "cuGraphExecDestroy")

    # -- modules, functions, launch -----------------------------------------------------------
    def module_load_data(self, ptx: bytes) -> int:
        ffi = self.ffi
        if isinstance(ptx, str):
            ptx = ptx.encode("ascii")
        if not ptx.endswith(b"\0"):
            ptx = ptx + b"\0"
        image = ffi.new("char[]", ptx)
        options, values, error_log, info_log = self._jit_log_options()
        out = ffi.new("CUmodule *")
        code = self.lib.cuModuleLoadDataEx(out, image, 4, options, values)
        if code:
            self._check(code, "cuModuleLoadDataEx", self._jit_log_text(error_log, info_log))
        return int(out[0])

    def _jit_log_options(self):
        """(options, values, error_log, info_log): the JIT option arrays that route the error and
        info logs into two buffers, for cuModuleLoadDataEx and cuLinkCreate_v2 alike."""
        ffi = self.ffi
        error_log = ffi.new("char[]", _JIT_LOG_BYTES)
        info_log = ffi.new("char[]", _JIT_LOG_BYTES)
        options = ffi.new(
            "int[4]",
            [
                CU_JIT_ERROR_LOG_BUFFER,
                CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                CU_JIT_INFO_LOG_BUFFER,
                CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            ],
        )
        values = ffi.new("void *[4]")
        values[0] = ffi.cast("void *", error_log)
        values[1] = ffi.cast("void *", _JIT_LOG_BYTES)
        values[2] = ffi.cast("void *", info_log)
        values[3] = ffi.cast("void *", _JIT_LOG_BYTES)
        return options, values, error_log, info_log

    def _jit_log_text(self, error_log, info_log) -> str:
        texts = (self.ffi.string(error_log), self.ffi.string(info_log))
        return "\n".join(t.decode(errors="replace").strip() for t in texts if t.strip())

    def link_ptx(self, ptx: bytes) -> bytes:
        """The cubin of ``ptx`` for the current context's device (cuLink*).

        Verified by unit tests without a driver only, until a GPU run: the cubin disk cache that
        uses it stays off unless OXICUDA_CUBIN_CACHE=1.
        """
        ffi, lib = self.ffi, self.lib
        if isinstance(ptx, str):
            ptx = ptx.encode("ascii")
        if not ptx.endswith(b"\0"):
            ptx = ptx + b"\0"
        data = ffi.new("char[]", ptx)  # ffi adds one more NUL; size counts the PTX's own
        options, values, error_log, info_log = self._jit_log_options()
        state = ffi.new("CUlinkState *")
        self._check(lib.cuLinkCreate_v2(4, options, values, state), "cuLinkCreate_v2")

        def fail(code: int, call: str) -> None:
            # every linker failure is a failure to build the module: ModuleLoadError with the log
            detail = self._jit_log_text(error_log, info_log)
            if code not in CUDA_RESULTS:
                detail = (self._error_text(code) + "\n" + detail).strip()
            raise ModuleLoadError(code, call, detail)

        try:
            code = lib.cuLinkAddData_v2(
                state[0], CU_JIT_INPUT_PTX, data, len(ptx), b"oxicuda.ptx", 0, ffi.NULL, ffi.NULL
            )
            if code:
                fail(code, "cuLinkAddData_v2")
            cubin = ffi.new("void **")
            size = ffi.new("size_t *")
            code = lib.cuLinkComplete(state[0], cubin, size)
            if code:
                fail(code, "cuLinkComplete")
            if cubin[0] == ffi.NULL or size[0] == 0:
                raise ModuleLoadError(218, "cuLinkComplete", "the linker returned an empty image")
            # the image belongs to the link state: copy it out before cuLinkDestroy frees it
            return bytes(ffi.buffer(cubin[0], size[0]))
        finally:
            lib.cuLinkDestroy(state[0])

    def module_unload(self, module: int) -> None:
        self._check(self.lib.cuModuleUnload(module), "cuModuleUnload")

    def module_get_function(self, module: int, name: str) -> int:
        out = self.ffi.new("CUfunction *")
        code = self.lib.cuModuleGetFunction(out, module, name.encode("ascii"))
        self._check(code, "cuModuleGetFunction", f"kernel {name!r}" if code else "")
        return int(out[0])

    def func_get_attribute(self, attrib: int, func: int) -> int:
        return self._int_out(self.lib.cuFuncGetAttribute, "cuFuncGetAttribute", attrib, func)

    def func_set_attribute(self, func: int, attrib: int, value: int) -> None:
        self._check(self.lib.cuFuncSetAttribute(func, attrib, value), "cuFuncSetAttribute")

    def occupancy_max_active_blocks_per_multiprocessor(
        self, func: int, block_size: int, dynamic_smem: int
    ) -> int:
        return self._int_out(
            self.lib.cuOccupancyMaxActiveBlocksPerMultiprocessor,
            "cuOccupancyMaxActiveBlocksPerMultiprocessor",
            func,
            block_size,
            dynamic_smem,
        )

    def param_buffer(self, layout: ParamLayout) -> ParamBuffer:
        return LibCudaParamBuffer(self.ffi, layout)

    def launch_plan(self, func: int, layout: ParamLayout) -> LibCudaLaunchPlan | None:
        """The prepared ``cuLaunchKernelEx`` launch of ``func`` that ``Function`` uses instead of
        ``launch_kernel``; None when the driver lacks cuLaunchKernelEx, or when ``launch_kernel``
        was replaced on this instance (tests record launches that way), so that replacement
        still sees every launch."""
        if self._launch_ex is None:
            return None
        replaced = vars(self).get("launch_kernel")  # (monkeypatch's undo leaves the bound original)
        if replaced is not None and getattr(replaced, "__func__", None) is not LibCudaAPI.launch_kernel:
            return None
        return LibCudaLaunchPlan(self, func, layout)

    def launch_kernel(
        self,
        func: int,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_mem: int,
        stream: int,
        params: ParamBuffer,
    ) -> None:
        code = self._launch(
            func, grid[0], grid[1], grid[2], block[0], block[1], block[2],
            shared_mem, stream, params.handle, self._null,
        )
        if code:
            self._check(code, "cuLaunchKernel", f"grid={grid} block={block} shared_mem={shared_mem}")

    # -- tensor maps --------------------------------------------------------------------------
    def tensor_map_encode_tiled(
        self,
        data_type: int,
        rank: int,
        global_address: int,
        global_dim: tuple[int, ...],
        global_strides: tuple[int, ...],
        box_dim: tuple[int, ...],
        element_strides: tuple[int, ...],
        interleave: int,
        swizzle: int,
        l2_promotion: int,
        oob_fill: int,
    ) -> bytes:
        ffi = self.ffi
        if not (len(global_dim) == len(box_dim) == len(element_strides) == rank):
            raise ValueError(
                f"tensor map of rank {rank}: global_dim {global_dim}, box_dim {box_dim} and "
                f"element_strides {element_strides} must each have {rank} entries"
            )
        if len(global_strides) != rank - 1:
            raise ValueError(
                f"tensor map of rank {rank}: global_strides {global_strides} must have "
                f"{rank - 1} entries (byte strides of the outer dimensions)"
            )
        raw = ffi.new("char[]", _TENSOR_MAP_BYTES + _TENSOR_MAP_ALIGN)
        skip = (-int(ffi.cast("uintptr_t", raw))) % _TENSOR_MAP_ALIGN
        tmap = raw + skip
        code = self.lib.cuTensorMapEncodeTiled(
            tmap, data_type, rank, global_address,
            ffi.new("uint64_t[]", list(global_dim)),
            ffi.new("uint64_t[]", list(global_strides) or [0]),
            ffi.new("uint32_t[]", list(box_dim)),
            ffi.new("uint32_t[]", list(element_strides)),
            interleave, swizzle, l2_promotion, oob_fill,
        )
        self._check(code, "cuTensorMapEncodeTiled")
        return bytes(ffi.buffer(tmap, _TENSOR_MAP_BYTES))
