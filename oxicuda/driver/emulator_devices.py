"""Device facts of the emulated GPU: one table per emulated architecture.

``OXICUDA_EMULATOR_ARCH=sm_80|sm_86|sm_90`` picks A100-, RTX A4000- or H200-like values
(default sm_86, the reference user's card). Values follow DESIGN.md's reference table and what
the real driver reports for those boards.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .enums import DEVICE_ATTRIBUTES as A


@dataclass(frozen=True)
class EmulatedDevice:
    """The facts the emulator reports for its one device."""

    name: str
    arch: str
    cc: tuple[int, int]
    sm_count: int
    threads_per_sm: int
    max_blocks_per_sm: int
    smem_per_block_optin: int
    smem_per_sm: int
    l2_bytes: int
    total_mem: int
    clock_khz: int
    mem_clock_khz: int
    bus_width: int

    smem_per_block: int = 48 * 1024
    reserved_smem_per_block: int = 1024
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    max_threads_per_block: int = 1024
    warp_size: int = 32

    def attributes(self) -> dict[int, int]:
        """CUdevice_attribute value -> integer, for every attribute the emulator knows."""
        hopper = self.cc[0] >= 9
        return {
            A["MAX_THREADS_PER_BLOCK"]: self.max_threads_per_block,
            A["MAX_BLOCK_DIM_X"]: 1024,
            A["MAX_BLOCK_DIM_Y"]: 1024,
            A["MAX_BLOCK_DIM_Z"]: 64,
            A["MAX_GRID_DIM_X"]: 2**31 - 1,
            A["MAX_GRID_DIM_Y"]: 65535,
            A["MAX_GRID_DIM_Z"]: 65535,
            A["MAX_SHARED_MEMORY_PER_BLOCK"]: self.smem_per_block,
            A["TOTAL_CONSTANT_MEMORY"]: 65536,
            A["WARP_SIZE"]: self.warp_size,
            A["MAX_PITCH"]: 2**31 - 1,
            A["MAX_REGISTERS_PER_BLOCK"]: self.regs_per_block,
            A["CLOCK_RATE"]: self.clock_khz,
            A["TEXTURE_ALIGNMENT"]: 512,
            A["MULTIPROCESSOR_COUNT"]: self.sm_count,
            A["KERNEL_EXEC_TIMEOUT"]: 0,
            A["INTEGRATED"]: 0,
            A["CAN_MAP_HOST_MEMORY"]: 1,
            A["COMPUTE_MODE"]: 0,
            A["CONCURRENT_KERNELS"]: 1,
            A["ECC_ENABLED"]: 0,
            A["PCI_BUS_ID"]: 0,
            A["PCI_DEVICE_ID"]: 0,
            A["MEMORY_CLOCK_RATE"]: self.mem_clock_khz,
            A["GLOBAL_MEMORY_BUS_WIDTH"]: self.bus_width,
            A["L2_CACHE_SIZE"]: self.l2_bytes,
            A["MAX_THREADS_PER_MULTIPROCESSOR"]: self.threads_per_sm,
            A["ASYNC_ENGINE_COUNT"]: 2,
            A["UNIFIED_ADDRESSING"]: 1,
            A["PCI_DOMAIN_ID"]: 0,
            A["COMPUTE_CAPABILITY_MAJOR"]: self.cc[0],
            A["COMPUTE_CAPABILITY_MINOR"]: self.cc[1],
            A["MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"]: self.smem_per_sm,
            A["MAX_REGISTERS_PER_MULTIPROCESSOR"]: self.regs_per_sm,
            A["MANAGED_MEMORY"]: 1,
            A["MULTI_GPU_BOARD"]: 0,
            A["COOPERATIVE_LAUNCH"]: 1,
            A["MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"]: self.smem_per_block_optin,
            A["MAX_BLOCKS_PER_MULTIPROCESSOR"]: self.max_blocks_per_sm,
            A["MAX_PERSISTING_L2_CACHE_SIZE"]: self.l2_bytes * 3 // 4,
            A["RESERVED_SHARED_MEMORY_PER_BLOCK"]: self.reserved_smem_per_block,
            A["CLUSTER_LAUNCH"]: 1 if hopper else 0,
        }


EMULATED_DEVICES: dict[str, EmulatedDevice] = {
    "sm_86": EmulatedDevice(
        name="oxicuda emulator (RTX A4000-like, sm_86)", arch="sm_86", cc=(8, 6), sm_count=48,
        threads_per_sm=1536, max_blocks_per_sm=16, smem_per_block_optin=101376,
        smem_per_sm=102400, l2_bytes=4 * 1024 * 1024, total_mem=16 * 1024**3,
        clock_khz=1560000, mem_clock_khz=7001000, bus_width=256,
    ),
    "sm_80": EmulatedDevice(
        name="oxicuda emulator (A100-like, sm_80)", arch="sm_80", cc=(8, 0), sm_count=108,
        threads_per_sm=2048, max_blocks_per_sm=32, smem_per_block_optin=166912,
        smem_per_sm=167936, l2_bytes=40 * 1024 * 1024, total_mem=40 * 1024**3,
        clock_khz=1410000, mem_clock_khz=1215000, bus_width=5120,
    ),
    "sm_90": EmulatedDevice(
        name="oxicuda emulator (H200-like, sm_90)", arch="sm_90", cc=(9, 0), sm_count=132,
        threads_per_sm=2048, max_blocks_per_sm=32, smem_per_block_optin=232448,
        smem_per_sm=233472, l2_bytes=62914560, total_mem=141 * 1000**3,
        clock_khz=1980000, mem_clock_khz=3201000, bus_width=6144,
    ),
}


def emulated_device_from_env() -> EmulatedDevice:
    """The device table chosen by ``OXICUDA_EMULATOR_ARCH`` (default sm_86)."""
    arch = os.environ.get("OXICUDA_EMULATOR_ARCH", "sm_86").strip().lower() or "sm_86"
    if arch not in EMULATED_DEVICES:
        raise ValueError(
            f"OXICUDA_EMULATOR_ARCH={arch!r}; allowed values are {sorted(EMULATED_DEVICES)}"
        )
    return EMULATED_DEVICES[arch]
