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
class ArchRates:
    """Per-SM, per-clock rates of one compute capability (none of them a driver attribute).

    ``*_flops_per_clock`` count multiply and add as two FLOPs, dense (no sparsity).
    ``memory_bytes_per_clock`` is DRAM bytes (read + write) per SM clock at the measured copy rate
    of the reference board of that arch (``source`` says which).
    """

    fp32_lanes: int
    fp64_lanes: int
    tf32_flops_per_clock: int
    fp16_flops_per_clock: int
    fp64_tensor_flops_per_clock: int
    memory_bytes_per_clock: int
    source: str


#: compute capability -> rates. FP32/FP64 lanes from the CUDA programming guide's arithmetic
#: instruction throughput table; tensor rates from the architecture whitepapers (A100: 312 dense
#: FP16 TFLOP/s at 1.41 GHz on 108 SMs; GA10x pro boards: half of that per SM; H100/H200 SXM:
#: 989 TFLOP/s at 1.83 GHz on 132 SMs); bytes per clock = copy bandwidth / SM clock.
ARCH_RATES: dict[tuple[int, int], ArchRates] = {
    (8, 0): ArchRates(64, 32, 1024, 2048, 128, 1103,
                      "A100-40GB: 1555 GB/s datasheet over 1.41 GHz"),
    (8, 6): ArchRates(128, 2, 512, 1024, 0, 287,
                      "RTX A4000: 448 GB/s datasheet over 1.56 GHz"),
    (8, 9): ArchRates(128, 2, 512, 1024, 0, 400,
                      "sm_89 estimate: about 1 TB/s over 2.5 GHz"),
    (9, 0): ArchRates(128, 64, 2048, 4096, 256, 2150,
                      "H200: 4257 GB/s measured copy (DESIGN.md) over 1.98 GHz"),
}


def arch_rates(cc: tuple[int, int]) -> ArchRates:
    """The rates of compute capability ``cc``; the nearest lower known one of the same major
    version when ``cc`` is not in the table (KeyError when the major version is unknown)."""
    rates = ARCH_RATES.get(cc)
    if rates is not None:
        return rates
    same_major = sorted(k for k in ARCH_RATES if k[0] == cc[0] and k <= cc)
    if not same_major:
        raise KeyError(f"no rates for compute capability {cc[0]}.{cc[1]}; known: "
                       f"{sorted(ARCH_RATES)}")
    return ARCH_RATES[same_major[-1]]


#: compute capability -> dynamic (opt-in) shared memory per block in bytes, as the driver reports
#: MAX_SHARED_MEMORY_PER_BLOCK_OPTIN for that arch (the PTX builder checks a kernel against its
#: target arch's limit before any device is known).
SHARED_OPTIN_BY_CC: dict[tuple[int, int], int] = {
    (7, 0): 98304, (7, 5): 65536, (8, 0): 166912, (8, 6): 101376, (8, 7): 166912, (8, 9): 101376,
    (9, 0): 232448, (10, 0): 232448, (12, 0): 101376,
}


def shared_optin_limit(cc: tuple[int, int]) -> int:
    """SHARED_OPTIN_BY_CC of ``cc``, or of the nearest lower known compute capability."""
    known = sorted(k for k in SHARED_OPTIN_BY_CC if k <= cc)
    if not known:
        raise KeyError(f"no shared-memory limit for compute capability {cc[0]}.{cc[1]}; known: "
                       f"{sorted(SHARED_OPTIN_BY_CC)}")
    return SHARED_OPTIN_BY_CC[known[-1]]


@dataclass(frozen=True)
class Board:
    """One board's facts as its driver reports them (the emulator and the device profiles)."""

    name: str
    cc: tuple[int, int]
    sm_count: int
    threads_per_sm: int
    max_blocks_per_sm: int
    smem_per_block_optin: int
    smem_per_sm: int
    l2_bytes: int
    persisting_l2_bytes: int
    total_memory: int
    clock_khz: int
    mem_clock_khz: int
    bus_width: int
    ecc: bool
    copy_engines: int
    smem_per_block: int = 48 * 1024
    reserved_smem_per_block: int = 1024
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    max_threads_per_block: int = 1024
    warp_size: int = 32

    @property
    def arch(self) -> str:
        return f"sm_{self.cc[0]}{self.cc[1]}"

    @property
    def max_threads_per_sm(self) -> int:
        return self.threads_per_sm


#: profile name -> board. H200 values are what its driver (580) reported on our test machine;
#: A4000 and A100 values are those boards' published driver attributes.
BOARDS: dict[str, Board] = {
    "rtx-a4000": Board(
        name="NVIDIA RTX A4000", cc=(8, 6), sm_count=48, threads_per_sm=1536,
        max_blocks_per_sm=16, smem_per_block_optin=101376, smem_per_sm=102400,
        l2_bytes=4 * 1024 * 1024, persisting_l2_bytes=3 * 1024 * 1024,
        total_memory=17_170_956_288, clock_khz=1560000, mem_clock_khz=7001000, bus_width=256,
        ecc=False, copy_engines=2,
    ),
    "a100": Board(
        name="NVIDIA A100-SXM4-40GB", cc=(8, 0), sm_count=108, threads_per_sm=2048,
        max_blocks_per_sm=32, smem_per_block_optin=166912, smem_per_sm=167936,
        l2_bytes=40 * 1024 * 1024, persisting_l2_bytes=30 * 1024 * 1024,
        total_memory=42_505_273_344, clock_khz=1410000, mem_clock_khz=1215000, bus_width=5120,
        ecc=True, copy_engines=3,
    ),
    "h200": Board(
        name="NVIDIA H200", cc=(9, 0), sm_count=132, threads_per_sm=2048,
        max_blocks_per_sm=32, smem_per_block_optin=232448, smem_per_sm=233472,
        l2_bytes=62914560, persisting_l2_bytes=39321600, total_memory=150_109_880_320,
        clock_khz=1980000, mem_clock_khz=3201000, bus_width=6016, ecc=True, copy_engines=3,
    ),
}


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
