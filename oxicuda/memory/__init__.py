"""oxicuda.memory: device arrays, the caching pool, pinned staging, workspaces, interop."""

from .array import (
    DeviceArray,
    asarray,
    asnumpy,
    empty,
    empty_like,
    full,
    full_like,
    zeros,
    zeros_like,
)
from .dtypes import (
    BFLOAT16,
    SUPPORTED_DTYPES,
    bfloat16_bits_to_float32,
    dtype_name,
    float32_to_bfloat16_bits,
    host_astype,
    normalize_dtype,
)
from .interop import from_cuda_array_interface, from_dlpack
from .pool import MemoryBlock, MemoryPool, get_pool
from .staging import StagingBuffer, get_staging_buffer
from .workspace import clear_workspaces, workspace, workspace_stats

__all__ = [
    "BFLOAT16", "SUPPORTED_DTYPES", "DeviceArray", "MemoryBlock", "MemoryPool", "StagingBuffer",
    "asarray", "asnumpy", "bfloat16_bits_to_float32", "clear_workspaces", "dtype_name", "empty",
    "empty_like", "float32_to_bfloat16_bits", "from_cuda_array_interface", "from_dlpack", "full",
    "full_like", "get_pool", "get_staging_buffer", "host_astype", "normalize_dtype", "workspace",
    "workspace_stats", "zeros", "zeros_like",
]


def __dir__() -> list[str]:
    # the public names and the module attributes, not the submodules and helpers imported above
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__")})
