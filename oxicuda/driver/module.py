"""Loaded PTX modules and their kernels: ``Module(ptx).get_function(name)(grid, block, args)``.

A ``Function`` prepares its launch once: the parameter layout read from the ``.entry``
declaration, an ``ArgPacker`` (one ``struct.Struct`` over the whole layout, one converter per
parameter) and a launch function generated for the entry (``params.build_launch``). On the real
driver that function packs geometry, stream and arguments with one ``pack_into`` into a buffer
that holds a ``CUlaunchConfig`` and the parameters, and calls ``cuLaunchKernelEx`` with four
prebuilt values. Bad arguments and bad geometry raise before the driver is touched.
"""

from __future__ import annotations

import contextlib
import operator
import weakref
from collections.abc import Callable, Sequence

from . import context, enums
from .api import ParamLayout
from .backend import api
from .context import current_device_ordinal, ensure_context
from .params import ArgPacker, build_launch, entry_layouts
from .stream import Stream, as_stream_handle
from .trace import ACTIVE as _ACTIVE_TRACES
from .trace import LaunchRecord
from .trace import record as _record_launch

__all__ = ["ArgPacker", "Function", "Module"]

_FUNC_ATTR = enums.FUNCTION_ATTRIBUTES


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


def _make_context_current() -> None:
    """Before a launch through the DriverAPI seam: a context current in this thread."""
    if getattr(context._local, "ctx", None) is None:
        ensure_context()


def _shared_bytes(value: object) -> int:
    if type(value) is int:
        return value
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"shared_mem must be an int number of bytes, got {value!r}") from None


class Function:
    """One kernel entry of a loaded ``Module``; calling it launches the kernel."""

    def __init__(self, module: Module, name: str, layout: ParamLayout) -> None:
        self.module = module
        self.name = name
        self.spec: object = None  # set by the kernel cache; reported by trace()
        self.handle = api().module_get_function(module.handle, name)
        self.layout = layout
        self.packer = ArgPacker(name, layout)
        self._limits: tuple | None = None
        self.dynamic_optin = 0  # the largest dynamic shared memory opted in so far
        drv, handle = api(), self.handle
        plan_for = getattr(drv, "launch_plan", None)  # only drivers with a native plan have it
        plan = plan_for(handle, layout) if plan_for is not None else None
        if plan is not None:
            self._launch = build_launch(self.packer, new_native=lambda: plan_for(handle, layout),
                                        first_native=plan, refused=self._refused)
            self._plan_fail = plan.fail
        else:
            self._launch = build_launch(self.packer, launch_kernel=drv.launch_kernel, handle=handle,
                                        new_params=lambda: drv.param_buffer(layout),
                                        before=_make_context_current)
        # 1-D fast-path bounds (threads per block, grid.x, dynamic shared bytes), set on first use
        self._max_block_1d = 0
        self._max_grid_1d = 0
        self._max_dyn = -1
        # the same limits flat, for tuple geometry: threads, block x/y/z, grid x/y/z, dynamic
        self._flat_limits: tuple | None = None

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
        A request at or below what this function already allows returns at once.
        """
        from .device import Device

        nbytes = operator.index(nbytes)
        if 0 <= nbytes <= self.dynamic_optin:
            return
        optin = Device(self.module.device_ordinal).max_shared_memory_per_block_optin
        static = self.get_attribute("SHARED_SIZE_BYTES")
        if nbytes < 0 or nbytes + static > optin:
            raise ValueError(
                f"{self.name}: {nbytes} bytes of dynamic shared memory plus {static} static "
                f"exceeds the device's opt-in limit of {optin} bytes per block"
            )
        api().func_set_attribute(self.handle, _FUNC_ATTR["MAX_DYNAMIC_SHARED_SIZE_BYTES"], nbytes)
        self._limits = self._flat_limits = None
        self._max_dyn = -1  # the fast paths re-read the limits on the next launch
        self.dynamic_optin = nbytes

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
        self._flat_limits = (limits[0], *limits[1], *limits[2], limits[3])
        return limits

    def _geometry(self, grid: object, block: object, shared_mem: object) -> tuple:
        """``(gx, gy, gz, bx, by, bz, shared_mem)``, checked against the limits. Tuples of 1 to
        3 plain ints within the limits take a short path without calls; anything else is
        converted by ``_dim3`` and checked by ``_check_geometry``, which raise the precise error."""
        flat = self._flat_limits
        if (type(grid) is tuple and type(block) is tuple and type(shared_mem) is int and flat
                and 0 < len(grid) <= 3 and 0 < len(block) <= 3):
            gx, gy, gz = (grid + (1, 1))[:3]  # missing trailing dimensions are 1
            bx, by, bz = (block + (1, 1))[:3]
            if type(gx) is int and type(gy) is int and type(gz) is int and type(bx) is int \
                    and type(by) is int and type(bz) is int:
                threads, mbx, mby, mbz, mgx, mgy, mgz, max_dyn = flat
                if (0 < gx <= mgx and 0 < gy <= mgy and 0 < gz <= mgz and 0 < bx <= mbx
                        and 0 < by <= mby and 0 < bz <= mbz and bx * by * bz <= threads
                        and 0 <= shared_mem <= max_dyn):
                    return (gx, gy, gz, bx, by, bz, shared_mem)
        grid3 = _dim3(grid, "grid")
        block3 = _dim3(block, "block")
        shared_mem = _shared_bytes(shared_mem)
        self._check_geometry(grid3, block3, shared_mem)
        return (*grid3, *block3, shared_mem)

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

        ``grid`` and ``block`` are ints or tuples of 1 to 3 ints; ``args`` holds one value per
        kernel parameter (device arrays or pointers as ints, ints, floats, numpy scalars).
        Raises TypeError (wrong argument count or type, naming the parameter) or ValueError
        (grid, block or shared memory over the limits) before anything reaches the driver.
        """
        if stream is None:
            stream_handle = 0
        elif type(stream) is int and stream >= 0:
            stream_handle = stream
        elif type(stream) is Stream:
            stream_handle = stream._handle
        else:
            stream_handle = as_stream_handle(stream)
        if type(grid) is tuple and type(block) is tuple and len(grid) == 1 and len(block) == 1:
            g, b = grid[0], block[0]  # CuPy's spelling, (n,), takes the 1-D path too
        else:
            g, b = grid, block
        if (
            type(g) is int and type(b) is int and type(shared_mem) is int
            and 0 < g <= self._max_grid_1d and 0 < b <= self._max_block_1d
            and 0 <= shared_mem <= self._max_dyn
        ):
            self._launch(g, 1, 1, b, 1, 1, shared_mem, stream_handle, args)
            if _ACTIVE_TRACES:
                _record_launch(LaunchRecord(self.name, self.spec, (g, 1, 1), (b, 1, 1),
                                            shared_mem, stream_handle))
            return
        gx, gy, gz, bx, by, bz, shared_mem = self._geometry(grid, block, shared_mem)
        self._launch(gx, gy, gz, bx, by, bz, shared_mem, stream_handle, args)
        if _ACTIVE_TRACES:
            _record_launch(LaunchRecord(self.name, self.spec, (gx, gy, gz), (bx, by, bz), shared_mem,
                                        stream_handle))

    def _refused(self, code: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, smem: int,
                 stream: int, args: Sequence[object]) -> None:
        """A launch the driver refused. The launch path does not look up this thread's context
        before calling the driver (a thread-local lookup on every launch); the driver refuses a
        launch in a thread with no current context (CUDA_ERROR_INVALID_CONTEXT), so in a thread
        where oxicuda has not made a context current yet, make one current and launch again.
        Otherwise raise the driver's error."""
        if getattr(context._local, "ctx", None) is None:
            ensure_context()
            self._launch(gx, gy, gz, bx, by, bz, smem, stream, args)
            return
        self._plan_fail(code, (gx, gy, gz), (bx, by, bz), smem)

    def prepared_launch(
        self, grid: int | tuple[int, ...], block: int | tuple[int, ...], shared_mem: int = 0
    ) -> Callable[[Sequence[object], object], None]:
        """Check ``grid``, ``block`` and ``shared_mem`` against the limits once and return
        ``launch(args, stream)`` for that geometry: it converts the stream, packs ``args``
        (the same checks and errors as a call) and launches, without re-checking the geometry.
        For library plan caches that launch one geometry many times.

        Raises ValueError/TypeError for bad geometry now, as a call would.
        """
        gx, gy, gz, bx, by, bz, shared_mem = self._geometry(grid, block, shared_mem)
        grid3, block3 = (gx, gy, gz), (bx, by, bz)
        run = self._launch

        def launch(args: Sequence[object], stream: object = None) -> None:
            if stream is None:
                stream_handle = 0
            elif type(stream) is int and stream >= 0:
                stream_handle = stream
            elif type(stream) is Stream:
                stream_handle = stream._handle
            else:
                stream_handle = as_stream_handle(stream)
            run(gx, gy, gz, bx, by, bz, shared_mem, stream_handle, args)
            if _ACTIVE_TRACES:
                _record_launch(LaunchRecord(self.name, self.spec, grid3, block3, shared_mem, stream_handle))

        return launch

    def __repr__(self) -> str:
        return f"<oxicuda.driver.Function {self.name}>"


def _unload_quietly(unload, handle: int) -> None:
    with contextlib.suppress(Exception):  # the driver may be shutting down
        unload(handle)


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
