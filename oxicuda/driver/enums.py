"""Numeric enum values of cuda.h used by oxicuda, one table per enum.

The toolkit this design comes from misnumbered several device attributes; the GPU tests check
these against values PyTorch and CuPy read independently.
"""

from __future__ import annotations

# CUdevice_attribute
DEVICE_ATTRIBUTES: dict[str, int] = {
    "MAX_THREADS_PER_BLOCK": 1,
    "MAX_BLOCK_DIM_X": 2,
    "MAX_BLOCK_DIM_Y": 3,
    "MAX_BLOCK_DIM_Z": 4,
    "MAX_GRID_DIM_X": 5,
    "MAX_GRID_DIM_Y": 6,
    "MAX_GRID_DIM_Z": 7,
    "MAX_SHARED_MEMORY_PER_BLOCK": 8,
    "TOTAL_CONSTANT_MEMORY": 9,
    "WARP_SIZE": 10,
    "MAX_PITCH": 11,
    "MAX_REGISTERS_PER_BLOCK": 12,
    "CLOCK_RATE": 13,
    "TEXTURE_ALIGNMENT": 14,
    "MULTIPROCESSOR_COUNT": 16,
    "KERNEL_EXEC_TIMEOUT": 17,
    "INTEGRATED": 18,
    "CAN_MAP_HOST_MEMORY": 19,
    "COMPUTE_MODE": 20,
    "CONCURRENT_KERNELS": 31,
    "ECC_ENABLED": 32,
    "PCI_BUS_ID": 33,
    "PCI_DEVICE_ID": 34,
    "MEMORY_CLOCK_RATE": 36,
    "GLOBAL_MEMORY_BUS_WIDTH": 37,
    "L2_CACHE_SIZE": 38,
    "MAX_THREADS_PER_MULTIPROCESSOR": 39,
    "ASYNC_ENGINE_COUNT": 40,
    "UNIFIED_ADDRESSING": 41,
    "PCI_DOMAIN_ID": 50,
    "COMPUTE_CAPABILITY_MAJOR": 75,
    "COMPUTE_CAPABILITY_MINOR": 76,
    "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 81,
    "MAX_REGISTERS_PER_MULTIPROCESSOR": 82,
    "MANAGED_MEMORY": 83,
    "MULTI_GPU_BOARD": 84,
    "COOPERATIVE_LAUNCH": 95,
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 97,
    "MAX_BLOCKS_PER_MULTIPROCESSOR": 106,
    "MAX_PERSISTING_L2_CACHE_SIZE": 108,
    "RESERVED_SHARED_MEMORY_PER_BLOCK": 111,
    "CLUSTER_LAUNCH": 120,
}

# CUfunction_attribute
FUNCTION_ATTRIBUTES: dict[str, int] = {
    "MAX_THREADS_PER_BLOCK": 0,
    "SHARED_SIZE_BYTES": 1,
    "CONST_SIZE_BYTES": 2,
    "LOCAL_SIZE_BYTES": 3,
    "NUM_REGS": 4,
    "PTX_VERSION": 5,
    "BINARY_VERSION": 6,
    "CACHE_MODE_CA": 7,
    "MAX_DYNAMIC_SHARED_SIZE_BYTES": 8,
    "PREFERRED_SHARED_MEMORY_CARVEOUT": 9,
}

# CUpointer_attribute
POINTER_ATTRIBUTES: dict[str, int] = {
    "CONTEXT": 1,
    "MEMORY_TYPE": 2,
    "DEVICE_POINTER": 3,
    "HOST_POINTER": 4,
    "IS_MANAGED": 8,
    "DEVICE_ORDINAL": 9,
}

# CUmemorytype
MEMORY_TYPES: dict[str, int] = {"HOST": 1, "DEVICE": 2, "ARRAY": 3, "UNIFIED": 4}

# CUstream_flags / CUevent_flags
STREAM_DEFAULT = 0
STREAM_NON_BLOCKING = 1
EVENT_DEFAULT = 0
EVENT_BLOCKING_SYNC = 1
EVENT_DISABLE_TIMING = 2

# CUstreamCaptureMode, CUstreamCaptureStatus, CUgraphExecUpdateResult (cuda.h)
STREAM_CAPTURE_MODES: dict[str, int] = {"GLOBAL": 0, "THREAD_LOCAL": 1, "RELAXED": 2}
STREAM_CAPTURE_STATUS: dict[str, int] = {"NONE": 0, "ACTIVE": 1, "INVALIDATED": 2}
GRAPH_EXEC_UPDATE_RESULTS: dict[str, int] = {
    "SUCCESS": 0,
    "ERROR": 1,
    "ERROR_TOPOLOGY_CHANGED": 2,
    "ERROR_NODE_TYPE_CHANGED": 3,
    "ERROR_FUNCTION_CHANGED": 4,
    "ERROR_PARAMETERS_CHANGED": 5,
    "ERROR_NOT_SUPPORTED": 6,
    "ERROR_UNSUPPORTED_FUNCTION_CHANGE": 7,
    "ERROR_ATTRIBUTES_CHANGED": 8,
}

# CUtensorMapDataType
TENSOR_MAP_DATA_TYPES: dict[str, int] = {
    "UINT8": 0,
    "UINT16": 1,
    "UINT32": 2,
    "INT32": 3,
    "UINT64": 4,
    "INT64": 5,
    "FLOAT16": 6,
    "FLOAT32": 7,
    "FLOAT64": 8,
    "BFLOAT16": 9,
    "FLOAT32_FTZ": 10,
    "TFLOAT32": 11,
    "TFLOAT32_FTZ": 12,
}

# CUtensorMapSwizzle
TENSOR_MAP_SWIZZLE: dict[str, int] = {"NONE": 0, "32B": 1, "64B": 2, "128B": 3}
