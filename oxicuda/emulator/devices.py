"""The emulated GPU: one of the boards of ``facts.BOARDS``, under an emulator name.

``OXICUDA_EMULATOR_ARCH=sm_80|sm_86|sm_90`` picks the A100, RTX A4000 or H200 board (default
sm_86, the reference user's card); every attribute the emulator reports comes from that board's
row of the one device-facts table, so the emulator and the device profiles cannot disagree.
"""

from __future__ import annotations

import dataclasses
import os

from ..driver.boards import BOARDS, Board
from ..driver.enums import DEVICE_ATTRIBUTES as A

#: The emulator's device is a Board (its ``name`` says it is emulated).
EmulatedDevice = Board

#: arch -> (BOARDS key, what the emulator calls it)
_EMULATED = {"sm_86": ("rtx-a4000", "RTX A4000-like"), "sm_80": ("a100", "A100-like"),
             "sm_90": ("h200", "H200-like")}


def _emulated(arch: str) -> Board:
    profile, label = _EMULATED[arch]
    return dataclasses.replace(BOARDS[profile], name=f"oxicuda emulator ({label}, {arch})")


EMULATED_DEVICES: dict[str, Board] = {arch: _emulated(arch) for arch in _EMULATED}


def device_attributes(board: Board) -> dict[int, int]:
    """CUdevice_attribute value -> integer, for every attribute the emulator knows."""
    hopper = board.cc[0] >= 9
    return {
        A["MAX_THREADS_PER_BLOCK"]: board.max_threads_per_block,
        A["MAX_BLOCK_DIM_X"]: 1024,
        A["MAX_BLOCK_DIM_Y"]: 1024,
        A["MAX_BLOCK_DIM_Z"]: 64,
        A["MAX_GRID_DIM_X"]: 2**31 - 1,
        A["MAX_GRID_DIM_Y"]: 65535,
        A["MAX_GRID_DIM_Z"]: 65535,
        A["MAX_SHARED_MEMORY_PER_BLOCK"]: board.smem_per_block,
        A["TOTAL_CONSTANT_MEMORY"]: 65536,
        A["WARP_SIZE"]: board.warp_size,
        A["MAX_PITCH"]: 2**31 - 1,
        A["MAX_REGISTERS_PER_BLOCK"]: board.regs_per_block,
        A["CLOCK_RATE"]: board.clock_khz,
        A["TEXTURE_ALIGNMENT"]: 512,
        A["MULTIPROCESSOR_COUNT"]: board.sm_count,
        A["KERNEL_EXEC_TIMEOUT"]: 0,
        A["INTEGRATED"]: 0,
        A["CAN_MAP_HOST_MEMORY"]: 1,
        A["COMPUTE_MODE"]: 0,
        A["CONCURRENT_KERNELS"]: 1,
        A["ECC_ENABLED"]: int(board.ecc),
        A["PCI_BUS_ID"]: 0,
        A["PCI_DEVICE_ID"]: 0,
        A["MEMORY_CLOCK_RATE"]: board.mem_clock_khz,
        A["GLOBAL_MEMORY_BUS_WIDTH"]: board.bus_width,
        A["L2_CACHE_SIZE"]: board.l2_bytes,
        A["MAX_THREADS_PER_MULTIPROCESSOR"]: board.threads_per_sm,
        A["ASYNC_ENGINE_COUNT"]: board.copy_engines,
        A["UNIFIED_ADDRESSING"]: 1,
        A["PCI_DOMAIN_ID"]: 0,
        A["COMPUTE_CAPABILITY_MAJOR"]: board.cc[0],
        A["COMPUTE_CAPABILITY_MINOR"]: board.cc[1],
        A["MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"]: board.smem_per_sm,
        A["MAX_REGISTERS_PER_MULTIPROCESSOR"]: board.regs_per_sm,
        A["MANAGED_MEMORY"]: 1,
        A["MULTI_GPU_BOARD"]: 0,
        A["COOPERATIVE_LAUNCH"]: 1,
        A["MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"]: board.smem_per_block_optin,
        A["MAX_BLOCKS_PER_MULTIPROCESSOR"]: board.max_blocks_per_sm,
        A["MAX_PERSISTING_L2_CACHE_SIZE"]: board.persisting_l2_bytes,
        A["RESERVED_SHARED_MEMORY_PER_BLOCK"]: board.reserved_smem_per_block,
        A["CLUSTER_LAUNCH"]: 1 if hopper else 0,
    }


def emulated_device_from_env() -> Board:
    """The board chosen by ``OXICUDA_EMULATOR_ARCH`` (default sm_86)."""
    arch = os.environ.get("OXICUDA_EMULATOR_ARCH", "sm_86").strip().lower() or "sm_86"
    if arch not in EMULATED_DEVICES:
        raise ValueError(
            f"OXICUDA_EMULATOR_ARCH={arch!r}; allowed values are {sorted(EMULATED_DEVICES)}"
        )
    return EMULATED_DEVICES[arch]
