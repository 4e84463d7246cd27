"""The driver binding surface: the one seam between oxicuda and a driver.

Two classes implement it: ``oxicuda.driver.libcuda.LibCudaAPI`` (cffi over the real libcuda) and
``oxicuda.emulator.api.EmulatorAPI`` (host memory and the PTX interpreter). Everything above
``driver/`` talks to the live one through ``oxicuda.driver.backend.api()`` and never learns which
it is.

Conventions, shared by both implementations:

- Handles (devices, contexts, streams, events, modules, functions) are plain ``int``; 0 is the
  null handle (``stream=0`` is the legacy default stream).
- Device pointers and host pointers are ``int`` addresses. Host pointers come from
  ``numpy.ndarray.ctypes.data`` or from ``mem_alloc_host``.
- Every failure raises ``oxicuda.driver.errors.CudaError`` (or a subclass) built from the
  CUresult code with ``errors.raise_for(code, call_name)``; nothing returns ``(err, value)``.
- Enum arguments (device attributes, function attributes, pointer attributes) take the numeric
  values of ``cuda.h``; their names live in ``oxicuda.driver.enums``.
- Kernel parameters travel in a ``ParamBuffer`` made once per function by ``param_buffer``; a
  launch only packs values into ``ParamBuffer.data`` and passes ``ParamBuffer.handle``.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass


@dataclass(frozen=True)
class ParamSlot:
    """One kernel parameter: its byte offset and size in the packed parameter block."""

    name: str
    offset: int
    size: int
    align: int
    ptx_type: str  # ".u64", ".f32", ".b8" (arrays: by-value structs such as tensor maps)


@dataclass(frozen=True)
class ParamLayout:
    """The parameters of one kernel entry in declaration order, with PTX alignment applied."""

    slots: tuple[ParamSlot, ...]
    total_size: int


class ParamBuffer(abc.ABC):
    """Reusable storage for one function's packed parameters.

    ``data`` is a writable buffer (``memoryview``-compatible, ``layout.total_size`` bytes) that
    callers fill with ``struct.pack_into``; ``handle`` is what ``launch_kernel`` takes.
    """

    layout: ParamLayout
    data: memoryview
    handle: object


class DriverAPI(abc.ABC):
    """The calls oxicuda makes of a CUDA driver. Names follow the driver's ``cuXxx`` calls."""

    #: "cuda" for the real driver, "emulator" for the emulated one.
    name: str

    # -- init, version, devices -------------------------------------------------------------
    @abc.abstractmethod
    def init(self) -> None:
        """cuInit(0). Idempotent."""

    @abc.abstractmethod
    def driver_get_version(self) -> int:
        """cuDriverGetVersion: 1000*major + 10*minor, e.g. 13000."""

    @abc.abstractmethod
    def device_get_count(self) -> int: ...

    @abc.abstractmethod
    def device_get(self, ordinal: int) -> int: ...

    @abc.abstractmethod
    def device_get_name(self, dev: int) -> str: ...

    @abc.abstractmethod
    def device_get_attribute(self, attrib: int, dev: int) -> int:
        """cuDeviceGetAttribute with a ``CUdevice_attribute`` value from ``enums``."""

    @abc.abstractmethod
    def device_total_mem(self, dev: int) -> int: ...

    @abc.abstractmethod
    def device_get_uuid(self, dev: int) -> bytes: ...

    # -- contexts -----------------------------------------------------------------------------
    @abc.abstractmethod
    def device_primary_ctx_retain(self, dev: int) -> int: ...

    @abc.abstractmethod
    def device_primary_ctx_release(self, dev: int) -> None: ...

    @abc.abstractmethod
    def ctx_set_current(self, ctx: int) -> None: ...

    @abc.abstractmethod
    def ctx_get_current(self) -> int:
        """The current context, 0 if none."""

    @abc.abstractmethod
    def ctx_get_device(self) -> int: ...

    @abc.abstractmethod
    def ctx_synchronize(self) -> None: ...

    # -- memory -------------------------------------------------------------------------------
    @abc.abstractmethod
    def mem_alloc(self, nbytes: int) -> int:
        """cuMemAlloc_v2. Raises OutOfMemoryError (CUDA_ERROR_OUT_OF_MEMORY) when it cannot."""

    @abc.abstractmethod
    def mem_free(self, dptr: int) -> None: ...

    @abc.abstractmethod
    def mem_get_info(self) -> tuple[int, int]:
        """(free, total) bytes of the current context's device."""

    @abc.abstractmethod
    def mem_alloc_host(self, nbytes: int) -> tuple[int, memoryview]:
        """Page-locked host memory: (host pointer, writable memoryview of nbytes)."""

    @abc.abstractmethod
    def mem_free_host(self, hptr: int) -> None: ...

    @abc.abstractmethod
    def mem_get_address_range(self, dptr: int) -> tuple[int, int]:
        """(base, size) of the allocation holding dptr; raises CudaError if none does."""

    def mem_set_extent(self, dptr: int, nbytes: int) -> None:
        """Not a driver call: the caching pool says that only the first ``nbytes`` of the
        allocation starting at ``dptr`` are in use (0: the block is cached, freed). A checking
        driver (the emulator) faults on any access past them; the real driver ignores it."""

    @abc.abstractmethod
    def pointer_get_attribute(self, attrib: int, ptr: int) -> int:
        """cuPointerGetAttribute for integer-valued attributes (context, memory type, ordinal)."""

    @abc.abstractmethod
    def memcpy_htod(self, dst: int, src_host: int, nbytes: int, stream: int | None = None) -> None:
        """Host to device. ``stream=None``: synchronous cuMemcpyHtoD_v2; else cuMemcpyHtoDAsync_v2."""

    @abc.abstractmethod
    def memcpy_dtoh(self, dst_host: int, src: int, nbytes: int, stream: int | None = None) -> None: ...

    @abc.abstractmethod
    def memcpy_dtod(self, dst: int, src: int, nbytes: int, stream: int | None = None) -> None: ...

    @abc.abstractmethod
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
        """Device-to-device 2D copy (cuMemcpy2D(Async)_v2), for strided views."""

    @abc.abstractmethod
    def memset_d8(self, dst: int, value: int, count: int, stream: int | None = None) -> None: ...

    @abc.abstractmethod
    def memset_d32(self, dst: int, value: int, count: int, stream: int | None = None) -> None: ...

    # -- streams and events -------------------------------------------------------------------
    @abc.abstractmethod
    def stream_create(self, flags: int = 0) -> int: ...

    @abc.abstractmethod
    def stream_destroy(self, stream: int) -> None: ...

    @abc.abstractmethod
    def stream_synchronize(self, stream: int) -> None: ...

    @abc.abstractmethod
    def stream_query(self, stream: int) -> bool:
        """True when all work on the stream is done."""

    @abc.abstractmethod
    def stream_wait_event(self, stream: int, event: int) -> None: ...

    @abc.abstractmethod
    def event_create(self, flags: int = 0) -> int: ...

    @abc.abstractmethod
    def event_destroy(self, event: int) -> None: ...

    @abc.abstractmethod
    def event_record(self, event: int, stream: int) -> None: ...

    @abc.abstractmethod
    def event_synchronize(self, event: int) -> None: ...

    @abc.abstractmethod
    def event_query(self, event: int) -> bool: ...

    @abc.abstractmethod
    def event_elapsed_time(self, start: int, end: int) -> float:
        """Milliseconds between two recorded events."""

    # -- stream capture and graphs (not abstract: drivers without them raise) ---------------
    def stream_begin_capture(self, stream: int, mode: int = 0) -> None:
        """cuStreamBeginCapture_v2 with a ``CUstreamCaptureMode`` (0 global, 1 thread-local,
        2 relaxed): later work on ``stream`` is recorded into a graph instead of running."""
        raise NotImplementedError(f"{type(self).__name__} has no stream capture")

    def stream_end_capture(self, stream: int) -> int:
        """cuStreamEndCapture: the captured CUgraph. Raises the capture's error (for example
        CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) after taking the stream out of capture mode."""
        raise NotImplementedError(f"{type(self).__name__} has no stream capture")

    def stream_is_capturing(self, stream: int) -> int:
        """cuStreamIsCapturing: a ``CUstreamCaptureStatus`` (0 none, 1 active, 2 invalidated)."""
        raise NotImplementedError(f"{type(self).__name__} has no stream capture")

    def stream_get_capture_info(self, stream: int) -> tuple[int, int]:
        """cuStreamGetCaptureInfo: (status, capture sequence id; 0 when not capturing)."""
        raise NotImplementedError(f"{type(self).__name__} has no stream capture")

    def thread_exchange_stream_capture_mode(self, mode: int) -> int:
        """cuThreadExchangeStreamCaptureMode: set this thread's mode, return the previous one."""
        raise NotImplementedError(f"{type(self).__name__} has no stream capture")

    def graph_instantiate(self, graph: int, flags: int = 0) -> int:
        """cuGraphInstantiateWithFlags: an executable graph (CUgraphExec) of ``graph``."""
        raise NotImplementedError(f"{type(self).__name__} has no graphs")

    def graph_launch(self, graph_exec: int, stream: int) -> None:
        """cuGraphLaunch of an executable graph on ``stream``."""
        raise NotImplementedError(f"{type(self).__name__} has no graphs")

    def graph_exec_update(self, graph_exec: int, graph: int) -> int:
        """cuGraphExecUpdate_v2: give ``graph_exec`` the node parameters of ``graph`` (same
        topology). Returns the ``CUgraphExecUpdateResult``: 0 on success, else the reason the
        driver refused (the exec is then unchanged)."""
        raise NotImplementedError(f"{type(self).__name__} has no graphs")

    def graph_node_count(self, graph: int) -> int:
        """cuGraphGetNodes(graph, NULL, &count): how many nodes ``graph`` has."""
        raise NotImplementedError(f"{type(self).__name__} has no graphs")

    def mem_alloc_async(self, nbytes: int, stream: int) -> int:
        """cuMemAllocAsync: ``nbytes`` from the device's default memory pool, in stream order
        (inside a capture: the graph's allocation node)."""
        raise NotImplementedError(f"{type(self).__name__} has no stream-ordered allocator")

    def mem_free_async(self, dptr: int, stream: int) -> None:
        """cuMemFreeAsync: free a cuMemAllocAsync allocation in stream order."""
        raise NotImplementedError(f"{type(self).__name__} has no stream-ordered allocator")

    def graph_destroy(self, graph: int) -> None:
        """cuGraphDestroy."""
        raise NotImplementedError(f"{type(self).__name__} has no graphs")

    def graph_exec_destroy(self, graph_exec: int) -> None:
        """cuGraphExecDestroy."""
        raise NotImplementedError(f"{type(self).__name__} has no graphs")

    # -- modules, functions, launch -----------------------------------------------------------
    @abc.abstractmethod
    def module_load_data(self, ptx: bytes) -> int:
        """Load a PTX image (NUL-terminated or not). Raises ModuleLoadError with the JIT log."""

    @abc.abstractmethod
    def link_ptx(self, ptx: bytes) -> bytes:
        """The binary image the driver builds from ``ptx`` for the current context's device.

        On the real driver this is the cubin of cuLinkCreate/cuLinkAddData(PTX)/cuLinkComplete;
        on the emulator, whose loaded image is the PTX itself, it is the PTX bytes, validated as
        ``module_load_data`` would validate them. Either way ``module_load_data(image)`` loads
        the result, skipping the PTX JIT. Raises ModuleLoadError with the JIT log when the driver
        rejects the PTX. (Real-driver path verified by unit tests only until a GPU run.)
        """

    @abc.abstractmethod
    def module_unload(self, module: int) -> None: ...

    @abc.abstractmethod
    def module_get_function(self, module: int, name: str) -> int: ...

    @abc.abstractmethod
    def func_get_attribute(self, attrib: int, func: int) -> int:
        """cuFuncGetAttribute with a ``CUfunction_attribute`` value from ``enums``."""

    @abc.abstractmethod
    def func_set_attribute(self, func: int, attrib: int, value: int) -> None: ...

    @abc.abstractmethod
    def occupancy_max_active_blocks_per_multiprocessor(
        self, func: int, block_size: int, dynamic_smem: int
    ) -> int: ...

    @abc.abstractmethod
    def param_buffer(self, layout: ParamLayout) -> ParamBuffer:
        """Storage for one function's parameters, made once and reused by every launch."""

    @abc.abstractmethod
    def launch_kernel(
        self,
        func: int,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_mem: int,
        stream: int,
        params: ParamBuffer,
    ) -> None:
        """cuLaunchKernel with the packed parameters of ``params``."""

    # -- tensor maps (TMA, sm_90) -------------------------------------------------------------
    @abc.abstractmethod
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
        """cuTensorMapEncodeTiled: the 128-byte CUtensorMap, passed to kernels by value.

        ``global_dim`` and ``box_dim`` are innermost-first, ``global_strides`` are the rank-1
        byte strides of the outer dimensions, as in the driver call.
        """
