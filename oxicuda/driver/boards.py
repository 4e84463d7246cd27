"""The tables of device facts that no driver call gives: ``ARCH_RATES`` (per compute capability:
FP32 lanes, tensor-core and FP64 rates per SM per clock, memory bytes per SM clock), the opt-in
shared memory per block, and ``BOARDS``, the attribute values of the boards we emulate or profile
(RTX A4000, A100, H200) as their drivers report them. Plain data with no imports: the emulator's
devices (``oxicuda.emulator.devices``) and ``facts`` (the one owner of device facts, which
re-exports these names) read the same table without either importing the other.
"""

from __future__ import annotations

from dataclasses import dataclass


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
