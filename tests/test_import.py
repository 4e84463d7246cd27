"""`import oxicuda` is cheap and touches no driver; the lazy names resolve to the driver modules."""

from __future__ import annotations

import subprocess
import sys
import time


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_import_oxicuda_loads_no_driver_and_no_cffi():
    code = (
        "import oxicuda, sys\n"
        "bad = [m for m in ('oxicuda.driver.libcuda', 'oxicuda.emulator.api', 'cffi') "
        "if m in sys.modules]\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_import_oxicuda_driver_loads_no_driver_and_no_cffi():
    code = (
        "import oxicuda.driver, sys\n"
        "bad = [m for m in ('oxicuda.driver.libcuda', 'oxicuda.emulator.api', 'cffi') "
        "if m in sys.modules]\n"
        "assert not bad, bad\n"
        "from oxicuda.driver import api\n"
        "assert callable(api) and api.__module__ == 'oxicuda.driver.backend', api\n"
        "print('ok')\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_import_oxicuda_is_fast():
    baseline_start = time.perf_counter()
    assert _run("pass").returncode == 0
    baseline = time.perf_counter() - baseline_start
    start = time.perf_counter()
    result = _run("import oxicuda")
    elapsed = time.perf_counter() - start
    assert result.returncode == 0, result.stderr
    assert elapsed - baseline < 0.5, f"import oxicuda took {elapsed - baseline:.3f} s over bare Python"


def test_lazy_public_names_resolve_to_the_driver_objects():
    import importlib

    import oxicuda

    device = importlib.import_module("oxicuda.driver.device")
    stream = importlib.import_module("oxicuda.driver.stream")
    trace_module = importlib.import_module("oxicuda.driver.trace")
    assert oxicuda.Device is device.Device
    assert oxicuda.Stream is stream.Stream
    assert oxicuda.Event is stream.Event
    assert oxicuda.trace is trace_module.trace
