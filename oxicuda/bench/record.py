"""The JSON record of a benchmark run: where it ran, on what, and every figure."""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess


def git_commit() -> str:
    """The checkout's commit (``-dirty`` with local changes); ``OXICUDA_COMMIT`` overrides it, for
    copies of a working tree whose git metadata is not the tree's (remote GPU runners)."""
    override = os.environ.get("OXICUDA_COMMIT", "").strip()
    if override:
        return override
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
        commit = out.stdout.strip()
        if out.returncode != 0 or len(commit) != 40:  # no repository (an installed package)
            return "unknown"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here, capture_output=True, text=True, timeout=5,
        ).stdout.strip()
        return commit + ("-dirty" if dirty else "") if commit else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def environment() -> dict:
    import oxicuda
    from oxicuda.driver.backend import api
    from oxicuda.driver.device import Device

    drv = api()
    dev = Device(0)
    version = drv.driver_get_version()
    env = {
        "backend": drv.name,
        "gpu": dev.name,
        "compute_capability": "{}.{}".format(*dev.compute_capability),
        "sm_count": dev.multiprocessor_count,
        # CU_DEVICE_ATTRIBUTE_CLOCK_RATE (kHz): with the SM count it gives the FP32 FMA ceiling
        "sm_clock_khz": dev.get_attribute("CLOCK_RATE"),
        "driver_cuda_version": f"{version // 1000}.{version % 1000 // 10}",
        "oxicuda_version": oxicuda.__version__,
        "commit": git_commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "host": platform.node(),
    }
    from oxicuda.driver.facts import active_profile, device_facts

    env["device_profile"] = active_profile()
    if env["device_profile"] != "native":  # what dispatch saw; the timings are the device's
        env["profile_facts"] = {"name": device_facts(0).name, "arch": device_facts(0).arch,
                                "sm_count": device_facts(0).sm_count}
    for mod in ("torch", "cupy"):
        try:
            env[mod] = __import__(mod).__version__
        except Exception:  # noqa: S110 - a vendor package that is absent or broken is left out of the record
            pass
    return env


def write_json(path: str, record: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(record, fh, indent=1, sort_keys=False)
        fh.write("\n")
    os.replace(tmp, path)
