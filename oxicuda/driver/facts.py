"""The one owner of device facts: what dispatch, plans, benches and the emulator know of a GPU.

Two sources, one place:

- ``device_facts(ordinal)`` reads every attribute that dispatch and plans use from the live
  driver (real or emulated) once per ordinal and keeps it as a frozen ``DeviceFacts``;
- ``ARCH_RATES`` holds what no driver reports (FP32 lanes per SM, tensor-core and FP64 rates per
  SM per clock, memory bytes moved per SM clock), keyed by compute capability; ``BOARDS`` holds
  the attribute values of the boards we emulate or profile (RTX A4000, A100, H200), as their
  drivers report them, so that the emulator and the device profiles read one table.

Nobody else writes a device number: ``from oxicuda.driver.facts import device_facts`` and read
``facts.sm_count``, ``facts.smem_per_block_optin``, ``facts.fp32_lanes_per_sm``...
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field, replace

from .boards import ARCH_RATES, BOARDS, SHARED_OPTIN_BY_CC, ArchRates, Board, arch_rates, shared_optin_limit

__all__ = ["ARCH_RATES", "BOARDS", "PROFILE_ENV", "SHARED_OPTIN_BY_CC", "ArchRates", "Board", "DeviceFacts",
           "DeviceProfileError", "active_profile", "arch_rates", "board_facts", "clear_device_facts",
           "current_device_facts", "device_facts", "native_device_facts", "shared_optin_limit"]

#: ``OXICUDA_DEVICE_PROFILE=rtx-a4000`` (or ``a100``, ``h200``; ``native``, the default, is the
#: device itself): every decision that reads device facts sees that board instead (the arch and
#: PTX ISA of generated code, family eligibility, tiles, split-K, grids), while the kernels run on
#: the device present, whose driver JIT-compiles the profile's older-arch PTX.
PROFILE_ENV = "OXICUDA_DEVICE_PROFILE"


class DeviceProfileError(RuntimeError):
    """The requested device profile is unknown, or cannot run on the device present."""


@dataclass(frozen=True)
class DeviceFacts:
    """What the driver reports of one device, read once, plus its arch's ``ArchRates``."""

    ordinal: int
    name: str
    cc: tuple[int, int]
    sm_count: int
    max_threads_per_sm: int
    max_threads_per_block: int
    max_blocks_per_sm: int
    smem_per_sm: int
    smem_per_block: int
    smem_per_block_optin: int
    regs_per_sm: int
    regs_per_block: int
    l2_bytes: int
    total_memory: int
    clock_khz: int
    mem_clock_khz: int
    bus_width: int
    warp_size: int
    rates: ArchRates = field(repr=False)
    reserved_smem_per_block: int = 1024

    @property
    def arch(self) -> str:
        """The PTX target of this device without the ``a`` suffix: ``sm_86``, ``sm_90``."""
        return f"sm_{self.cc[0]}{self.cc[1]}"

    @property
    def fp32_lanes_per_sm(self) -> int:
        return self.rates.fp32_lanes

    @property
    def memory_bytes_per_clock(self) -> int:
        return self.rates.memory_bytes_per_clock

    @property
    def peak_fp32_flops(self) -> float:
        """FP32 FMA peak in FLOP/s at the reported SM clock."""
        return 2.0 * self.rates.fp32_lanes * self.sm_count * self.clock_khz * 1e3

    @property
    def peak_memory_bytes_per_s(self) -> float:
        """DRAM bytes per second (read + write) at the reference copy rate of this arch."""
        return float(self.rates.memory_bytes_per_clock) * self.clock_khz * 1e3


_lock = threading.RLock()
_facts: dict[int, DeviceFacts] = {}


def device_facts(ordinal: int | None = None) -> DeviceFacts:
    """The facts of device ``ordinal`` (None: the current context's device), read from the
    driver on the first call for that ordinal and cached; a dict lookup afterwards."""
    return _cached(_facts, ordinal, _read)


def _cached(table: dict[int, DeviceFacts], ordinal: int | None, read) -> DeviceFacts:
    """``table[ordinal]``, made by ``read(ordinal)`` once (None: the current context's device)."""
    if ordinal is None:
        from .context import current_device_ordinal

        ordinal = current_device_ordinal()
    facts = table.get(ordinal)
    if facts is not None:
        return facts
    with _lock:  # re-entrant: the profiled read takes the native facts under it
        facts = table.get(ordinal)
        if facts is None:
            facts = table[ordinal] = read(ordinal)
    return facts


def active_profile() -> str:
    """The device profile in force: ``native`` or a ``BOARDS`` key (from OXICUDA_DEVICE_PROFILE,
    read when a device's facts are first read). Unknown names raise DeviceProfileError."""
    name = os.environ.get(PROFILE_ENV, "").strip().lower() or "native"
    if name != "native" and name not in BOARDS:
        raise DeviceProfileError(f"{PROFILE_ENV}={name!r}; known profiles: native, {', '.join(sorted(BOARDS))}")
    return name


_native: dict[int, DeviceFacts] = {}


def native_device_facts(ordinal: int | None = None) -> DeviceFacts:
    """The facts the driver reports for device ``ordinal``, whatever profile is active."""
    return _cached(_native, ordinal, _read_native)


def _profiled(native: DeviceFacts) -> DeviceFacts:
    """``native`` seen through the active profile (itself when the profile is native)."""
    name = active_profile()
    if name == "native":
        return native
    prof = board_facts(name, native.ordinal)
    if prof.cc > native.cc:
        raise DeviceProfileError(
            f"{PROFILE_ENV}={name}: the profile's {prof.arch} code cannot run on this {native.arch} "
            f"device ({native.name}); a profile must be of the device's arch or older")
    over = [f for f in ("smem_per_block_optin", "smem_per_sm", "max_threads_per_sm", "max_blocks_per_sm",
                        "regs_per_sm", "regs_per_block", "max_threads_per_block")
            if getattr(prof, f) > getattr(native, f)]
    if over:
        raise DeviceProfileError(
            f"{PROFILE_ENV}={name}: the profile allows more than {native.name} has ({', '.join(over)}); "
            f"kernels sized for it would not launch here")
    return replace(prof, name=f"{prof.name} (profile on {native.name})")


def board_facts(board: Board | str, ordinal: int = 0) -> DeviceFacts:
    """The DeviceFacts that ``board`` (a Board or a BOARDS key) reports through its driver: what
    dispatch sees on that board (tests and replays of measured dispatch tables use it)."""
    b = BOARDS[board] if isinstance(board, str) else board
    return DeviceFacts(
        ordinal=ordinal, name=b.name, cc=b.cc, sm_count=b.sm_count,
        max_threads_per_sm=b.threads_per_sm, max_threads_per_block=b.max_threads_per_block,
        max_blocks_per_sm=b.max_blocks_per_sm, smem_per_sm=b.smem_per_sm,
        smem_per_block=b.smem_per_block, smem_per_block_optin=b.smem_per_block_optin,
        regs_per_sm=b.regs_per_sm, regs_per_block=b.regs_per_block, l2_bytes=b.l2_bytes,
        total_memory=b.total_memory, clock_khz=b.clock_khz, mem_clock_khz=b.mem_clock_khz,
        bus_width=b.bus_width, warp_size=b.warp_size, rates=arch_rates(b.cc),
        reserved_smem_per_block=b.reserved_smem_per_block,
    )


_by_context: dict[int, DeviceFacts] = {}


def current_device_facts() -> DeviceFacts:
    """The facts of the device of this thread's current context, found by the context handle
    (a dict lookup on the hot path of a cached library call; ``device_facts()`` asks the driver
    for the current device's ordinal)."""
    from . import context

    ctx = getattr(context._local, "ctx", None)
    facts = _by_context.get(ctx) if ctx is not None else None
    if facts is None:
        facts = device_facts()
        ctx = getattr(context._local, "ctx", None)
        if ctx is not None:
            _by_context[ctx] = facts
    return facts


def _read(ordinal: int) -> DeviceFacts:
    return _profiled(native_device_facts(ordinal))


def _read_native(ordinal: int) -> DeviceFacts:
    from .device import Device

    dev = Device(ordinal)
    a = dev.get_attribute
    cc = (a("COMPUTE_CAPABILITY_MAJOR"), a("COMPUTE_CAPABILITY_MINOR"))
    return DeviceFacts(
        ordinal=ordinal, name=dev.name, cc=cc,
        sm_count=a("MULTIPROCESSOR_COUNT"),
        max_threads_per_sm=a("MAX_THREADS_PER_MULTIPROCESSOR"),
        max_threads_per_block=a("MAX_THREADS_PER_BLOCK"),
        max_blocks_per_sm=a("MAX_BLOCKS_PER_MULTIPROCESSOR"),
        smem_per_sm=a("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
        smem_per_block=a("MAX_SHARED_MEMORY_PER_BLOCK"),
        smem_per_block_optin=a("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        regs_per_sm=a("MAX_REGISTERS_PER_MULTIPROCESSOR"),
        regs_per_block=a("MAX_REGISTERS_PER_BLOCK"),
        l2_bytes=a("L2_CACHE_SIZE"),
        total_memory=dev.total_memory,
        clock_khz=a("CLOCK_RATE"),
        mem_clock_khz=a("MEMORY_CLOCK_RATE"),
        bus_width=a("GLOBAL_MEMORY_BUS_WIDTH"),
        warp_size=a("WARP_SIZE"),
        rates=arch_rates(cc),
        reserved_smem_per_block=a("RESERVED_SHARED_MEMORY_PER_BLOCK"),
    )


def clear_device_facts() -> None:
    """Forget the cached facts (tests that switch the emulated device)."""
    with _lock:
        _facts.clear()
        _native.clear()
        _by_context.clear()
