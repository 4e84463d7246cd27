"""oxicuda.ptx: IR, builder, emitter, parser, specs, kernel cache, registry, validation.

Importing this package touches no device: the cache loads the driver only when ``load`` runs.
"""

from .builder import KernelBuilder, ParamArray, SharedArray, Value
from .cache import CODEGEN_SCHEMA_VERSION, cache_info, clear_memory_cache, load, ptx_for
from .emit import emit
from .registry import configurations, families, generate_ptx, load_all_families, register_family
from .spec import KernelSpec
from .target import device_arch, driver_max_ptx_version, ptx_version_for
from .validate import AssemblyReport, assemble, find_ptxas

__all__ = [
    "CODEGEN_SCHEMA_VERSION",
    "AssemblyReport",
    "KernelBuilder",
    "KernelSpec",
    "ParamArray",
    "SharedArray",
    "Value",
    "assemble",
    "cache_info",
    "clear_memory_cache",
    "configurations",
    "device_arch",
    "driver_max_ptx_version",
    "emit",
    "families",
    "find_ptxas",
    "generate_ptx",
    "load",
    "load_all_families",
    "ptx_for",
    "ptx_version_for",
    "register_family",
]


def __dir__() -> list[str]:
    # the public names and the module attributes, not the submodules and helpers imported above
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__")})
