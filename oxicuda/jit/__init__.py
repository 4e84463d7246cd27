"""oxicuda.jit: Python functions compiled to PTX (``@oxicuda.kernel``, ``@oxicuda.device``),
and the generated elementwise and reduction kernels built on the same compiler.

The language, its types and its promotion rules: ``oxicuda.jit.ops`` (arithmetic),
``oxicuda.jit.lower`` (statements), ``oxicuda.jit.mathlib`` (functions), ``oxicuda.jit.kernel``
(launch, checks, KernelError) and docs/jit.md.
"""

from .frontend import CompileError
from .intrinsics import (
    all_sync,
    any_sync,
    atomic,
    ballot_sync,
    block_dim,
    block_idx,
    fma,
    grid,
    grid_dim,
    gridsize,
    lane_id,
    local,
    shared,
    shfl_down_sync,
    shfl_sync,
    shfl_up_sync,
    shfl_xor_sync,
    syncthreads,
    thread_idx,
    unroll,
    warp_reduce,
    warp_size,
)
from .kernel import DeviceFunction, Kernel, KernelError, check, device, kernel

__all__ = [
    "CompileError", "DeviceFunction", "Kernel", "KernelError", "all_sync", "any_sync", "atomic",
    "ballot_sync", "block_dim", "block_idx", "check", "device", "fma", "grid", "grid_dim",
    "gridsize", "kernel", "lane_id", "local", "shared", "shfl_down_sync", "shfl_sync",
    "shfl_up_sync", "shfl_xor_sync", "syncthreads", "thread_idx", "unroll", "warp_reduce",
    "warp_size",
]
