"""Host cost of one kernel launch through oxicuda's public call, with the driver's launch stubbed.

Where does the Python side of a launch go? This runs the real launch path (``Function.__call__``
and ``prepared_launch`` over ``LibCudaAPI``'s cffi binding) against a compiled stand-in for
libcuda's ``cuLaunchKernel``/``cuLaunchKernelEx`` that records its arguments and returns, so the
figure is everything oxicuda adds on top of the driver's own launch cost. Beside it: the bare
cffi calls of both entry points (the floor this path can reach in Python) and an empty Python
call. Module loading, device limits and arrays come from the emulator backend; only the launch
goes through the stub. No GPU is used; on the H200 the bench case ``memory/launch_tiny_kernel``
measures the same call against CuPy's RawKernel with the real driver.

Usage: ``python benches/launch_host_cost.py [--launches N] [--repeats R]``; prints ns per launch
(median and best of R loops of N launches) and checks what the stub received.
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import sys
import time

os.environ.setdefault("OXICUDA_BACKEND", "emulator")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, ".."))

import libcuda_stub
import numpy as np

import oxicuda
from oxicuda.bench.cases_memory import _TINY_PTX
from oxicuda.driver.module import Module
from oxicuda.driver.params import build_launch
from oxicuda.driver.stream import Stream


def bind_to_stub(fn, api) -> None:
    """Make ``fn`` launch through ``api`` (a LibCudaAPI over the stub), as a Function made on
    the real driver would."""
    plan = api.launch_plan(fn.handle, fn.layout)
    if plan is not None:
        fn._launch = build_launch(fn.packer, new_native=lambda: api.launch_plan(fn.handle, fn.layout),
                                  first_native=plan)
    else:
        fn._launch = build_launch(fn.packer, launch_kernel=api.launch_kernel, handle=fn.handle,
                                  new_params=lambda: api.param_buffer(fn.layout))


def measure(label: str, loop, launches: int, repeats: int) -> dict:
    samples = []
    for _ in range(repeats):
        t0 = time.thread_time_ns()
        loop(launches)
        samples.append((time.thread_time_ns() - t0) / launches)
    row = {"case": label, "median_ns": statistics.median(samples), "best_ns": min(samples)}
    print(f"{label:58s} {row['median_ns']:8.0f} {row['best_ns']:8.0f}")
    return row


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launches", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=7)
    opts = ap.parse_args(argv)

    stub = libcuda_stub.StubDriver(libcuda_stub.build())
    api, ffi = stub.api, stub.api.ffi
    fn = Module(_TINY_PTX).get_function("oxi_bench_tiny")
    out = oxicuda.empty(32, np.uint32)
    n = np.uint32(32)
    fn(1, 32, (out, n))  # reads the launch limits from the (emulated) device once
    bind_to_stub(fn, api)
    prepared = fn.prepared_launch(1, 32)
    stream = Stream()
    legacy_params = api.param_buffer(fn.layout)

    def nothing(grid, block, args) -> None:
        pass

    def empty_call(k):
        f = nothing
        for _ in range(k):
            f(1, 32, (out, n))

    def raw_legacy(k):
        call, h, p, null = api.lib.cuLaunchKernel, fn.handle, legacy_params.handle, ffi.NULL
        for _ in range(k):
            call(h, 1, 1, 1, 32, 1, 1, 0, 0, p, null)

    def raw_ex(k):
        plan = api.launch_plan(fn.handle, fn.layout)
        call, (c0, c1, c2, c3) = plan.call, plan.call_args
        for _ in range(k):
            call(c0, c1, c2, c3)

    def public(grid, block, args, **kw):
        def loop(k):
            f = fn
            for _ in range(k):
                f(grid, block, args, **kw)
        return loop

    def prepared_loop(k):
        f, args = prepared, (out, n)
        for _ in range(k):
            f(args)

    def legacy_method(k):
        launch, h, p = api.launch_kernel, fn.handle, legacy_params
        for _ in range(k):
            launch(h, (1, 1, 1), (32, 1, 1), 0, 0, p)

    print(f"{'ns per launch (stubbed driver)':58s} {'median':>8s} {'best':>8s}")
    rows = [
        measure("empty Python call of 3 arguments", empty_call, opts.launches, opts.repeats),
        measure("bare cffi cuLaunchKernel (11 arguments)", raw_legacy, opts.launches, opts.repeats),
        measure("bare cffi cuLaunchKernelEx (4 prebuilt cdata)", raw_ex, opts.launches, opts.repeats),
        measure("LibCudaAPI.launch_kernel (the DriverAPI seam)", legacy_method, opts.launches,
                opts.repeats),
        measure("fn(1, 32, (array, np.uint32))", public(1, 32, (out, n)), opts.launches,
                opts.repeats),
        measure("fn(1, 32, (array, int))", public(1, 32, (out, 32)), opts.launches, opts.repeats),
        measure("fn((1,), (32,), (array, np.uint32))  [CuPy spelling]",
                public((1,), (32,), (out, n)), opts.launches, opts.repeats),
        measure("fn((1, 1, 1), (32, 1, 1), (array, np.uint32))",
                public((1, 1, 1), (32, 1, 1), (out, n)), opts.launches, opts.repeats),
        measure("fn(1, 32, (array, np.uint32), stream=Stream)",
                public(1, 32, (out, n), stream=stream), opts.launches, opts.repeats),
        measure("fn.prepared_launch(1, 32)((array, np.uint32))", prepared_loop, opts.launches,
                opts.repeats),
    ]
    # what a launch on a stream hands the driver
    fn(3, 64, (out, np.uint32(17)), stream=stream)
    grid, block, smem = stub.last_geometry()
    raw = stub.last_param_bytes(fn.layout)
    expected = struct.pack("<QI", out.ptr, 17)
    ok = (grid == (3, 1, 1) and block == (64, 1, 1) and smem == 0 and raw == expected
          and stub.state.stub_stream == stream.handle and stub.state.stub_function == fn.handle)
    print(f"stub saw grid {grid} block {block} shared {smem} stream 0x{stub.state.stub_stream:x} "
          f"params {raw.hex()} (expected {expected.hex()}): {'OK' if ok else 'MISMATCH'}")
    if not ok:
        raise SystemExit(1)
    return rows


if __name__ == "__main__":
    main()
