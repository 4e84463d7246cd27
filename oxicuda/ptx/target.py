"""Target selection: PTX ISA version per arch, the live device's arch, the driver's PTX ceiling.

Facts (PTX ISA release notes, "PTX ISA version / CUDA release" table):
- the lowest ISA that knows each target: sm_80 7.0, sm_86 7.1, sm_87 7.4, sm_89/sm_90 7.8,
  sm_90a 8.0, sm_100/sm_100a/sm_101 8.6, sm_120 8.7;
- each CUDA driver JITs the ISA of its own toolkit release and older: CUDA 11.0 -> 7.0, 11.1 -> 7.1,
  ..., 11.8 -> 7.8, 12.0 -> 8.0, 12.1 -> 8.1, ..., 12.8 -> 8.7, 12.9 -> 8.8, 13.0 -> 9.0.
"""

from __future__ import annotations

# arch -> the lowest PTX ISA version that supports it (what the builder emits by default)
ARCH_PTX_VERSION: dict[str, str] = {
    "sm_70": "6.0",
    "sm_72": "6.1",
    "sm_75": "6.3",
    "sm_80": "7.0",
    "sm_86": "7.1",
    "sm_87": "7.4",
    "sm_89": "7.8",
    "sm_90": "7.8",
    "sm_90a": "8.0",
    "sm_100": "8.6",
    "sm_100a": "8.6",
    "sm_101": "8.6",
    "sm_120": "8.7",
    "sm_120a": "8.7",
}

# CUDA (driver) release -> the highest PTX ISA its JIT accepts
CUDA_PTX_VERSION: dict[tuple[int, int], str] = {
    (11, 0): "7.0",
    (11, 1): "7.1",
    (11, 2): "7.2",
    (11, 3): "7.3",
    (11, 4): "7.4",
    (11, 5): "7.5",
    (11, 6): "7.6",
    (11, 7): "7.7",
    (11, 8): "7.8",
    (12, 0): "8.0",
    (12, 1): "8.1",
    (12, 2): "8.2",
    (12, 3): "8.3",
    (12, 4): "8.4",
    (12, 5): "8.5",
    (12, 6): "8.5",
    (12, 8): "8.7",
    (12, 9): "8.8",
    (13, 0): "9.0",
}


class PtxVersionError(RuntimeError):
    """The installed driver is too old to JIT the PTX we emit."""


def version_tuple(version: str) -> tuple[int, int]:
    """``"7.8"`` -> ``(7, 8)``; raises ValueError on anything else."""
    try:
        major, minor = version.split(".")
        return int(major), int(minor)
    except ValueError:
        raise ValueError(f"PTX version {version!r}; expected 'MAJOR.MINOR' like '8.0'") from None


def ptx_version_for(arch: str) -> str:
    """The lowest PTX ISA version that supports ``arch`` (``sm_86`` -> ``"7.1"``)."""
    try:
        return ARCH_PTX_VERSION[arch]
    except KeyError:
        raise ValueError(f"unknown arch {arch!r}; known: {sorted(ARCH_PTX_VERSION)}") from None


def device_arch(device: int | None = None) -> str:
    """The arch of device ``device`` (an ordinal), or of the current context's device if None
    (from the device facts, read once per device)."""
    from oxicuda.driver.facts import device_facts

    return device_facts(device).arch


def ptx_version_for_driver(driver_version: int) -> str:
    """The highest PTX ISA a driver (``cuDriverGetVersion`` value, e.g. 12040) JITs."""
    major, minor = driver_version // 1000, (driver_version % 1000) // 10
    if (major, minor) in CUDA_PTX_VERSION:
        return CUDA_PTX_VERSION[(major, minor)]
    known = sorted(CUDA_PTX_VERSION)
    if (major, minor) < known[0]:
        raise PtxVersionError(
            f"CUDA driver {major}.{minor} is older than the oldest supported (11.0); update the driver"
        )
    # a release newer than the table (or a gap): the best known release not above it
    best = max(k for k in known if k <= (major, minor))
    return CUDA_PTX_VERSION[best]


def driver_max_ptx_version() -> str:
    """The highest PTX ISA version the live driver can JIT (from ``cuDriverGetVersion``)."""
    from oxicuda.driver.backend import api

    return ptx_version_for_driver(api().driver_get_version())


def check_driver_supports(ptx_version: str, driver_max: str | None = None) -> None:
    """Raise PtxVersionError if the driver's JIT is older than ``ptx_version``."""
    ceiling = driver_max if driver_max is not None else driver_max_ptx_version()
    if version_tuple(ptx_version) > version_tuple(ceiling):
        raise PtxVersionError(
            f"this kernel is PTX ISA {ptx_version} but the installed driver JITs at most {ceiling}; "
            f"update the NVIDIA driver (or choose an older arch)"
        )
