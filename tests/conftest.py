"""Shared test setup: the `gpu` marker skips cleanly off a GPU; caches go to a temp folder."""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np
import pytest

os.environ.setdefault("OXICUDA_CACHE_DIR", tempfile.mkdtemp(prefix="oxicuda-test-cache-"))


def _backend() -> str:
    import oxicuda

    try:
        return oxicuda.get_backend()
    except Exception as exc:  # a broken driver is a failure of the GPU tests, not a skip
        return f"unavailable ({type(exc).__name__}: {exc})"


def pytest_report_header(config):
    return f"oxicuda backend: {_backend()}"


def pytest_runtest_setup(item):
    if item.get_closest_marker("gpu") is not None:
        backend = _backend()
        if backend != "cuda":
            pytest.skip(f"needs a real GPU; live backend is {backend}")


@pytest.fixture(autouse=True)
def _fresh_conv_call_plans():
    """conv2d reuses the plan of a call signature it has checked and dispatched; tests that
    change dispatch settings (monkeypatched THRESHOLDS or tables) need the next call dispatched
    again, as users who change them at run time call ``clear_call_plans``."""
    conv = sys.modules.get("oxicuda.dnn.conv")
    if conv is not None:
        conv.clear_call_plans()
    yield


@pytest.fixture(scope="session", autouse=True)
def _primary_context_on_the_main_thread():
    """On the real driver, make the primary context current on the main thread once per process:
    tests that call the driver directly (streams, events, raw allocations) otherwise fail with
    INVALID_CONTEXT when they happen to be the first test of a fresh xdist worker. Library calls
    make their own context current (tests in new threads check that)."""
    if _backend() == "cuda":
        from oxicuda.driver.context import ensure_context

        ensure_context()
    yield


@pytest.fixture
def rng(request):
    """A fresh, logged random generator per test: new inputs every run, reproducible from the log."""
    pinned = os.environ.get("OXICUDA_TEST_SEED")  # reproduce a logged failure: OXICUDA_TEST_SEED=<seed>
    seed = int(pinned) if pinned else int.from_bytes(os.urandom(4), "little")
    request.node.user_properties.append(("seed", seed))
    print(f"rng seed {seed}")
    return np.random.default_rng(seed)


_RESULT_LOG = os.environ.get("OXICUDA_TEST_LOG")


def pytest_runtest_logreport(report):
    """With OXICUDA_TEST_LOG=path, append one line per test phase as it finishes (outcome, seconds,
    and the first lines of a failure), so a run cut off by a time limit still says what ran."""
    if not _RESULT_LOG or (report.when != "call" and report.outcome == "passed"):
        return
    line = f"{report.outcome:8s} {report.duration:8.2f}s {report.when:8s} {report.nodeid}\n"
    if report.failed:
        text = str(report.longrepr)
        line += "".join(f"    | {ln}\n" for ln in text.splitlines()[-25:])
    with open(_RESULT_LOG, "a") as fh:
        fh.write(line)


def pytest_sessionstart(session):
    """With OXICUDA_TEST_LOG under xdist, a worker that dies (segfault, abort, a timeout's exit)
    leaves its Python stacks in <log>.<worker>.fault: xdist drops a crashed worker's stderr."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if _RESULT_LOG and worker:
        import faulthandler

        global _FAULT_FILE
        _FAULT_FILE = open(f"{_RESULT_LOG}.{worker}.fault", "w")  # noqa: SIM115 - open until exit
        faulthandler.enable(file=_FAULT_FILE, all_threads=True)


_FAULT_FILE = None


def pytest_runtest_logstart(nodeid, location):
    """With OXICUDA_TEST_LOG, also note each test as it starts (with the xdist worker), so a test that
    hangs is the one logged as started and never finished."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if _RESULT_LOG and worker:
        with open(_RESULT_LOG, "a") as fh:
            fh.write(f"started  {worker:>8s}  {nodeid}\n")
    if _FAULT_FILE is not None:  # a test still running after this long: every thread's stack, once
        import faulthandler

        _FAULT_FILE.write(f"--- {nodeid}\n")
        _FAULT_FILE.flush()
        faulthandler.dump_traceback_later(float(os.environ.get("OXICUDA_TEST_DUMP_AFTER", "90")),
                                          file=_FAULT_FILE)


def pytest_runtest_logfinish(nodeid, location):
    if _FAULT_FILE is not None:
        import faulthandler

        faulthandler.cancel_dump_traceback_later()


_ISOLATED_CHILD = "OXICUDA_ISOLATED_CHILD"


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "gpu_isolated: on a GPU, run the test in a fresh Python process (a kernel that faults leaves a "
        "sticky error in its context, which would fail every later test of the same worker)",
    )


def pytest_pyfunc_call(pyfuncitem):
    """Run gpu_isolated tests in a child pytest on the real driver; the child's verdict is the test's."""
    if pyfuncitem.get_closest_marker("gpu_isolated") is None or os.environ.get(_ISOLATED_CHILD):
        return None
    if _backend() != "cuda":
        return None
    import subprocess
    import sys

    env = dict(os.environ, **{_ISOLATED_CHILD: "1"})
    env.pop("OXICUDA_TEST_LOG", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-x",
         pyfuncitem.nodeid],
        cwd=str(pyfuncitem.config.rootpath), env=env, capture_output=True, text=True, timeout=300,
    )
    if done.returncode != 0:
        pytest.fail(f"in a child process:\n{done.stdout[-6000:]}\n{done.stderr[-2000:]}", pytrace=False)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if " passed" not in summary:  # the child skipped it: say so, never count it as a pass
        pytest.skip(f"child process: {summary}")
    return True


_STICKY = frozenset({700, 714, 715, 716, 717, 718, 719})


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """On the real driver, after every test: a kernel that faulted leaves a sticky error in the
    process's context, and every later test of this worker would fail with it. Find it here, name
    the test that was running (the fault is asynchronous, so it may have been reported as passed),
    and end the worker so xdist starts a fresh one; the rest of the suite then runs clean."""
    if os.environ.get(_ISOLATED_CHILD) or _backend() != "cuda":
        return
    from oxicuda.driver.backend import api
    from oxicuda.driver.errors import CudaError

    try:
        api().ctx_synchronize()
    except CudaError as exc:
        if exc.code not in _STICKY:
            return
        line = f"STICKY   {exc.name} after {item.nodeid}\n"
        sys.stderr.write(line)
        if _RESULT_LOG:
            with open(_RESULT_LOG, "a") as fh:
                fh.write(line)
        if os.environ.get("PYTEST_XDIST_WORKER"):
            os._exit(17)
        pytest.exit(f"sticky {exc.name} after {item.nodeid}", returncode=17)
