"""``python -m oxicuda info``: the backend, the driver version and every device's attributes."""

from __future__ import annotations

import argparse
import sys


def _format_bytes(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit} ({n} bytes)"
    return f"{n} bytes"


def _version_text(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10} ({v})"


def open_backend(command: str):
    """The live driver API, or None after one line on stderr saying why no backend could be
    loaded (``OXICUDA_BACKEND=cuda`` on a machine without a usable GPU, say): every command
    that needs a device starts with it, so that none of them ends in a traceback there."""
    from oxicuda import __version__
    from oxicuda.driver import backend

    try:
        return backend.api()
    except Exception as exc:  # any failure to load is reported the same way
        print(f"oxicuda {__version__} {command}: no backend could be loaded: "
              f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> int:
    """Print what oxicuda runs on. Exit 0 (1 when no backend at all could be loaded)."""
    parser = argparse.ArgumentParser(prog="python -m oxicuda info", description=__doc__)
    parser.parse_args([] if argv is None else argv)

    from oxicuda import __version__
    from oxicuda.driver import backend, enums
    from oxicuda.driver.device import Device

    drv = open_backend("info")
    if drv is None:
        return 1
    print(f"oxicuda {__version__}")
    print(f"backend: {drv.name}")
    why = backend.why_not_cuda()
    if why:
        print(f"  (the real driver was not used: {why})")
    print(f"driver version: {_version_text(drv.driver_get_version())}")
    count = Device.count()
    print(f"devices: {count}")
    from oxicuda.driver import facts

    try:
        profile = facts.active_profile()
    except facts.DeviceProfileError as exc:
        print(f"device profile: {exc}")
        profile = "native"
    if profile != "native":
        print(f"device profile: {profile} (dispatch and code generation see that board; kernels run on "
              f"the devices below)")
    for i in range(count):
        dev = Device(i)
        major, minor = dev.compute_capability
        print(f"\ndevice {i}: {dev.name}")
        print(f"  compute capability: {major}.{minor} ({dev.arch})")
        print(f"  multiprocessors: {dev.multiprocessor_count}")
        print(f"  total memory: {_format_bytes(dev.total_memory)}")
        if profile != "native":
            try:
                seen = facts.device_facts(i)
                print(f"  as profiled: {seen.name}: {seen.arch}, {seen.sm_count} SMs, "
                      f"{seen.smem_per_block_optin} B shared per block")
            except facts.DeviceProfileError as exc:
                print(f"  as profiled: {exc}")
        print("  attributes:")
        width = max(len(n) for n in enums.DEVICE_ATTRIBUTES)
        for name, code in enums.DEVICE_ATTRIBUTES.items():
            try:
                value: object = dev.get_attribute(name)
            except Exception as exc:  # an attribute this driver does not know
                value = f"n/a ({type(exc).__name__})"
            print(f"    {name:<{width}} [{code:>3}] {value}")
    return 0
