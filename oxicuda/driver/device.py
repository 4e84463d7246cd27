"""``Device``: one GPU (real or emulated), its name and the attributes kernels depend on.

Every value is read from the live driver through ``backend.api()`` on first use and cached per
device, so the same class describes an H200 and the emulator's device.
"""

from __future__ import annotations

import threading

from . import enums
from .backend import api

_cache_lock = threading.Lock()
_devices: dict[int, Device] = {}


def _attribute_property(attr_name: str, doc: str) -> property:
    def getter(self: Device) -> int:
        return self.get_attribute(attr_name)

    getter.__doc__ = doc
    return property(getter)


class Device:
    """A device by ordinal. ``Device(i)`` returns the same object for the same ordinal.

    Raises ``ValueError`` for an ordinal outside ``range(Device.count())``.
    """

    _ordinal: int
    _handle: int
    _attrs: dict[str, int]

    def __new__(cls, ordinal: int = 0) -> Device:  # noqa: PYI034 - one cached Device per ordinal
        try:
            ordinal = int(ordinal)
        except (TypeError, ValueError):
            raise TypeError(f"Device ordinal must be an int, got {ordinal!r}") from None
        dev = _devices.get(ordinal)
        if dev is not None:
            return dev
        with _cache_lock:
            dev = _devices.get(ordinal)
            if dev is None:
                count = cls.count()
                if not 0 <= ordinal < count:
                    raise ValueError(
                        f"device ordinal {ordinal} is out of range; this machine has {count} "
                        f"device(s), ordinals 0..{count - 1}"
                    )
                dev = super().__new__(cls)
                dev._ordinal = ordinal
                dev._handle = api().device_get(ordinal)
                dev._attrs = {}
                dev._name = None
                dev._total_memory = None
                dev._uuid = None
                _devices[ordinal] = dev
        return dev

    @staticmethod
    def count() -> int:
        """How many devices the live driver reports."""
        return api().device_get_count()

    @property
    def ordinal(self) -> int:
        return self._ordinal

    @property
    def handle(self) -> int:
        """The driver's CUdevice value."""
        return self._handle

    @property
    def name(self) -> str:
        if self._name is None:
            self._name = api().device_get_name(self._handle)
        return self._name

    @property
    def total_memory(self) -> int:
        """Device memory in bytes (cuDeviceTotalMem)."""
        if self._total_memory is None:
            self._total_memory = api().device_total_mem(self._handle)
        return self._total_memory

    @property
    def uuid(self) -> bytes:
        """The 16-byte device UUID."""
        if self._uuid is None:
            self._uuid = bytes(api().device_get_uuid(self._handle))
        return self._uuid

    def get_attribute(self, name: str) -> int:
        """A ``CUdevice_attribute`` by its ``enums.DEVICE_ATTRIBUTES`` name (cached).

        Raises ``KeyError`` naming the known attributes when ``name`` is not one of them.
        """
        value = self._attrs.get(name)
        if value is None:
            key = name.upper()
            if key not in enums.DEVICE_ATTRIBUTES:
                raise KeyError(
                    f"unknown device attribute {name!r}; known: {sorted(enums.DEVICE_ATTRIBUTES)}"
                )
            value = api().device_get_attribute(enums.DEVICE_ATTRIBUTES[key], self._handle)
            self._attrs[name] = value
        return value

    @property
    def attributes(self) -> dict[str, int]:
        """Every attribute of ``enums.DEVICE_ATTRIBUTES`` by name (read once each)."""
        return {name: self.get_attribute(name) for name in enums.DEVICE_ATTRIBUTES}

    @property
    def compute_capability(self) -> tuple[int, int]:
        """(major, minor), e.g. (9, 0) for an H200."""
        return (
            self.get_attribute("COMPUTE_CAPABILITY_MAJOR"),
            self.get_attribute("COMPUTE_CAPABILITY_MINOR"),
        )

    @property
    def arch(self) -> str:
        """The PTX target of this device: ``sm_86``, ``sm_90`` (never ``sm_90a``)."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    multiprocessor_count = _attribute_property("MULTIPROCESSOR_COUNT", "Number of SMs.")
    max_threads_per_block = _attribute_property("MAX_THREADS_PER_BLOCK", "Threads per block limit.")
    max_threads_per_multiprocessor = _attribute_property(
        "MAX_THREADS_PER_MULTIPROCESSOR", "Resident threads per SM."
    )
    max_shared_memory_per_block = _attribute_property(
        "MAX_SHARED_MEMORY_PER_BLOCK", "Shared memory per block without opt-in (bytes)."
    )
    max_shared_memory_per_block_optin = _attribute_property(
        "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", "Shared memory per block with opt-in (bytes)."
    )
    max_shared_memory_per_multiprocessor = _attribute_property(
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", "Shared memory per SM (bytes)."
    )
    max_registers_per_block = _attribute_property("MAX_REGISTERS_PER_BLOCK", "32-bit registers per block.")
    max_registers_per_multiprocessor = _attribute_property(
        "MAX_REGISTERS_PER_MULTIPROCESSOR", "32-bit registers per SM."
    )
    l2_cache_size = _attribute_property("L2_CACHE_SIZE", "L2 cache size (bytes).")
    warp_size = _attribute_property("WARP_SIZE", "Threads per warp.")
    max_blocks_per_multiprocessor = _attribute_property(
        "MAX_BLOCKS_PER_MULTIPROCESSOR", "Resident blocks per SM."
    )
    clock_rate = _attribute_property("CLOCK_RATE", "Peak SM clock (kHz).")
    memory_clock_rate = _attribute_property("MEMORY_CLOCK_RATE", "Peak memory clock (kHz).")
    global_memory_bus_width = _attribute_property("GLOBAL_MEMORY_BUS_WIDTH", "Memory bus width (bits).")

    @property
    def max_block_dims(self) -> tuple[int, int, int]:
        """Largest block extent in x, y, z."""
        return (
            self.get_attribute("MAX_BLOCK_DIM_X"),
            self.get_attribute("MAX_BLOCK_DIM_Y"),
            self.get_attribute("MAX_BLOCK_DIM_Z"),
        )

    @property
    def max_grid_dims(self) -> tuple[int, int, int]:
        """Largest grid extent in x, y, z."""
        return (
            self.get_attribute("MAX_GRID_DIM_X"),
            self.get_attribute("MAX_GRID_DIM_Y"),
            self.get_attribute("MAX_GRID_DIM_Z"),
        )

    def mem_info(self) -> tuple[int, int]:
        """(free, total) bytes of device memory, as the driver reports them now
        (cuMemGetInfo in this device's primary context; the thread's current context stays)."""
        return self._in_own_context(api().mem_get_info)

    def synchronize(self) -> None:
        """Wait until all work queued on this device has finished (cuCtxSynchronize)."""
        self._in_own_context(api().ctx_synchronize)

    def _in_own_context(self, call):
        from .context import primary_context

        drv = api()
        ctx = primary_context(self._ordinal)
        previous = drv.ctx_get_current()
        if previous == ctx:
            return call()
        drv.ctx_set_current(ctx)
        try:
            return call()
        finally:
            drv.ctx_set_current(previous)

    def use(self) -> int:
        """Make this device's primary context current in this thread; returns the context."""
        from .context import ensure_context

        return ensure_context(self._ordinal)

    def __int__(self) -> int:
        return self._ordinal

    def __repr__(self) -> str:
        return f"<oxicuda.Device {self._ordinal}: {self.name} ({self.arch})>"


def synchronize() -> None:
    """Wait until all work queued on the current device has finished (cuCtxSynchronize), as
    ``cupy.cuda.Device().synchronize()`` / ``torch.cuda.synchronize()``."""
    from .context import ensure_context

    ensure_context()
    api().ctx_synchronize()
