"""The emulated driver's stream capture and graphs, call by call, against the driver's rules:
recorded launches, copies and memsets replay in order (and only on replay), updates, and each
refused call's CUresult and its effect on the capture. A standalone EmulatorAPI, so these run
without touching the process backend."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from oxicuda.driver.enums import STREAM_CAPTURE_MODES as MODES
from oxicuda.driver.errors import CudaError
from oxicuda.driver.params import entry_layouts
from oxicuda.emulator.api import EmulatorAPI

PTX = """
.version 8.0
.target sm_86
.address_size 64
.visible .entry axpb(.param .u64 p, .param .u32 n, .param .f32 a, .param .f32 b) {
 .reg .u64 %rd<4>; .reg .u32 %r<4>; .reg .f32 %f<5>; .reg .pred %p;
 ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [n]; ld.param.f32 %f3, [a]; ld.param.f32 %f4, [b];
 mov.u32 %r2, %tid.x; setp.ge.u32 %p, %r2, %r1; @%p ret;
 mul.wide.u32 %rd2, %r2, 4; add.u64 %rd3, %rd1, %rd2;
 ld.global.f32 %f1, [%rd3]; fma.rn.f32 %f2, %f1, %f3, %f4; st.global.f32 [%rd3], %f2; ret; }
"""
N = 16


class Harness:
    """One emulator, the axpb kernel (x = a * x + b over N floats) and helpers."""

    def __init__(self) -> None:
        self.drv = drv = EmulatorAPI()
        drv.init()
        self.func = drv.module_get_function(drv.module_load_data(PTX.encode()), "axpb")
        self.params = drv.param_buffer(entry_layouts(PTX)["axpb"])
        self.blocking = drv.stream_create(0)
        self.stream = drv.stream_create(1)  # non-blocking

    def launch(self, ptr: int, stream: int, a: float = 2.0, b: float = 1.0) -> None:
        struct.pack_into("<QIff", self.params.data, 0, ptr, N, a, b)
        self.drv.launch_kernel(self.func, (1, 1, 1), (N, 1, 1), 0, stream, self.params)

    def upload(self, values: np.ndarray) -> int:
        ptr = self.drv.mem_alloc(values.nbytes)
        self.drv.memcpy_htod(ptr, values.ctypes.data, values.nbytes)
        return ptr

    def read(self, ptr: int) -> np.ndarray:
        out = np.full(N, np.nan, np.float32)
        self.drv.memcpy_dtoh(out.ctypes.data, ptr, out.nbytes)
        return out


@pytest.fixture
def h() -> Harness:
    return Harness()


def test_captured_work_runs_only_on_replay_and_in_recorded_order(h, rng):
    x = rng.standard_normal(N).astype(np.float32)
    p, q = h.upload(x), h.upload(np.zeros(N, np.float32))
    drv, s = h.drv, h.stream
    drv.stream_begin_capture(s, MODES["GLOBAL"])
    assert drv.stream_is_capturing(s) == 1
    assert drv.stream_get_capture_info(s)[0] == 1
    h.launch(p, s, 2.0, 1.0)
    drv.memcpy_dtod(q, p, x.nbytes, s)  # q = 2x + 1
    h.launch(p, s, 3.0, 0.0)  # p = 6x + 3
    drv.memset_d32(p, 0x3F800000, 4, s)  # p[:4] = 1
    graph = drv.stream_end_capture(s)
    assert drv.stream_is_capturing(s) == 0
    assert drv.graph_node_count(graph) == 4
    np.testing.assert_array_equal(h.read(p), x)  # nothing ran during the capture
    exe = drv.graph_instantiate(graph)
    drv.graph_destroy(graph)  # the executable graph stands alone
    drv.graph_launch(exe, s)
    want_p = (x.astype(np.float64) * 2 + 1) * 3
    want_p[:4] = 1
    np.testing.assert_allclose(h.read(p), want_p, rtol=1e-6)
    np.testing.assert_allclose(h.read(q), x.astype(np.float64) * 2 + 1, rtol=1e-6)
    drv.graph_launch(exe, s)  # a second replay applies the whole sequence again
    want2 = (want_p * 2 + 1) * 3
    want2[:4] = 1
    np.testing.assert_allclose(h.read(p), want2, rtol=1e-5)
    drv.graph_exec_destroy(exe)
    with pytest.raises(CudaError, match="CUDA_ERROR_INVALID_HANDLE"):
        drv.graph_launch(exe, s)


def test_kernel_parameters_are_those_of_the_capture_not_of_the_reused_buffer(h, rng):
    x = rng.standard_normal(N).astype(np.float32)
    p = h.upload(x)
    drv, s = h.drv, h.stream
    drv.stream_begin_capture(s, 0)
    h.launch(p, s, 5.0, 0.0)
    graph = drv.stream_end_capture(s)
    h.launch(p, s, 1.0, 100.0)  # rewrites the shared parameter buffer, runs eagerly
    drv.graph_launch(drv.graph_instantiate(graph), s)
    np.testing.assert_allclose(h.read(p), (x.astype(np.float64) + 100) * 5, rtol=1e-6)


def test_exec_update_takes_new_pointers_and_refuses_a_new_topology(h, rng):
    x, y = (rng.standard_normal(N).astype(np.float32) for _ in range(2))
    p, q = h.upload(x), h.upload(y)
    drv, s = h.drv, h.stream

    def capture(ptr, launches=1):
        drv.stream_begin_capture(s, 0)
        for _ in range(launches):
            h.launch(ptr, s, 2.0, 0.0)
        return drv.stream_end_capture(s)

    exe = drv.graph_instantiate(capture(p))
    assert drv.graph_exec_update(exe, capture(q)) == 0
    drv.graph_launch(exe, s)
    np.testing.assert_array_equal(h.read(p), x)
    np.testing.assert_allclose(h.read(q), 2 * y.astype(np.float64), rtol=1e-6)
    assert drv.graph_exec_update(exe, capture(p, launches=2)) == 2  # TOPOLOGY_CHANGED
    drv.graph_launch(exe, s)  # still the updated graph
    np.testing.assert_allclose(h.read(q), 4 * y.astype(np.float64), rtol=1e-6)
    drv.stream_begin_capture(s, 0)
    drv.memset_d8(q, 0, 4, s)
    assert drv.graph_exec_update(exe, drv.stream_end_capture(s)) == 3  # NODE_TYPE_CHANGED


def test_synchronizing_a_capturing_stream_invalidates_the_capture_and_the_stream_recovers(h):
    p = h.upload(np.ones(N, np.float32))
    drv, s = h.drv, h.stream
    drv.stream_begin_capture(s, 0)
    h.launch(p, s)
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"):
        drv.stream_synchronize(s)
    assert drv.stream_is_capturing(s) == 2  # INVALIDATED
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"):
        h.launch(p, s)
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"):
        drv.stream_end_capture(s)
    assert drv.stream_is_capturing(s) == 0
    h.launch(p, s)  # usable again, eagerly
    np.testing.assert_array_equal(h.read(p), np.full(N, 3, np.float32))


@pytest.mark.parametrize("call", ["ctx_synchronize", "stream_query", "mem_alloc", "mem_free",
                                  "dtoh_pageable"])
def test_forbidden_calls_during_a_global_capture_are_refused_with_the_drivers_code(h, call):
    p = h.upload(np.ones(N, np.float32))
    drv, s = h.drv, h.stream
    drv.stream_begin_capture(s, MODES["GLOBAL"])
    host = np.zeros(N, np.float32)
    do = {
        "ctx_synchronize": drv.ctx_synchronize,
        "stream_query": lambda: drv.stream_query(s),
        "mem_alloc": lambda: drv.mem_alloc(256),
        "mem_free": lambda: drv.mem_free(p),
        "dtoh_pageable": lambda: drv.memcpy_dtoh(host.ctypes.data, p, host.nbytes, s),
    }[call]
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"):
        do()
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"):
        drv.stream_end_capture(s)
    np.testing.assert_array_equal(h.read(p), np.ones(N, np.float32))  # still allocated


def test_relaxed_mode_allows_allocation_and_pinned_copies_are_captured(h, rng):
    drv, s = h.drv, h.stream
    x = rng.standard_normal(N).astype(np.float32)
    hptr, view = drv.mem_alloc_host(x.nbytes)
    pinned = np.frombuffer(view, np.float32)
    pinned[:] = x
    drv.stream_begin_capture(s, MODES["GLOBAL"])
    old = drv.thread_exchange_stream_capture_mode(MODES["RELAXED"])
    p = drv.mem_alloc(x.nbytes)  # allowed: this thread is relaxed
    assert drv.thread_exchange_stream_capture_mode(old) == MODES["RELAXED"]
    drv.memcpy_htod(p, hptr, x.nbytes, s)
    h.launch(p, s, 1.0, 1.0)
    drv.memcpy_dtoh(hptr, p, x.nbytes, s)
    exe = drv.graph_instantiate(drv.stream_end_capture(s))
    np.testing.assert_array_equal(pinned, x)
    drv.graph_launch(exe, s)
    np.testing.assert_allclose(pinned, x.astype(np.float64) + 1, rtol=1e-6)


def test_a_relaxed_capture_does_not_forbid_allocation(h):
    drv, s = h.drv, h.stream
    drv.stream_begin_capture(s, MODES["RELAXED"])
    drv.mem_free(drv.mem_alloc(512))
    drv.graph_destroy(drv.stream_end_capture(s))


def test_legacy_stream_work_breaks_a_blocking_capture_but_not_a_non_blocking_one(h):
    p = h.upload(np.ones(N, np.float32))
    drv = h.drv
    drv.stream_begin_capture(h.stream, 0)  # non-blocking: the legacy stream is independent
    h.launch(p, 0)
    drv.memset_d8(p, 0, 4)  # a synchronous memset runs at once
    drv.graph_destroy(drv.stream_end_capture(h.stream))
    got = h.read(p)
    assert got[0] == 0 and got[1] == 3
    drv.stream_begin_capture(h.blocking, 0)
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"):
        h.launch(p, 0)
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"):
        drv.stream_end_capture(h.blocking)


def test_captured_events_fork_and_join_streams_and_cannot_be_queried(h, rng):
    x = rng.standard_normal(N).astype(np.float32)
    p, q = h.upload(x), h.upload(x)
    drv, s, t = h.drv, h.stream, h.drv.stream_create(1)
    fork, join = drv.event_create(2), drv.event_create(2)
    drv.stream_begin_capture(s, 0)
    h.launch(p, s, 2.0, 0.0)
    drv.event_record(fork, s)
    drv.stream_wait_event(t, fork)  # t joins the capture
    assert drv.stream_get_capture_info(t) == drv.stream_get_capture_info(s)
    h.launch(q, t, 3.0, 0.0)
    with pytest.raises(CudaError, match="CUDA_ERROR_CAPTURED_EVENT"):
        drv.event_query(fork)
    # the query invalidated this capture; begin again and finish the join properly
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"):
        drv.stream_end_capture(s)
    assert drv.stream_is_capturing(t) == 0
    drv.stream_begin_capture(s, 0)
    h.launch(p, s, 2.0, 0.0)
    drv.event_record(fork, s)
    drv.stream_wait_event(t, fork)
    h.launch(q, t, 3.0, 0.0)
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_UNMATCHED"):
        drv.stream_end_capture(t)
    drv.event_record(join, t)
    drv.stream_wait_event(s, join)
    exe = drv.graph_instantiate(drv.stream_end_capture(s))
    drv.graph_launch(exe, s)
    np.testing.assert_allclose(h.read(p), 2 * x.astype(np.float64), rtol=1e-6)
    np.testing.assert_allclose(h.read(q), 3 * x.astype(np.float64), rtol=1e-6)


def test_an_unjoined_fork_fails_the_capture(h):
    p = h.upload(np.ones(N, np.float32))
    drv, s, t = h.drv, h.stream, h.drv.stream_create(1)
    ev = drv.event_create(2)
    drv.stream_begin_capture(s, 0)
    drv.event_record(ev, s)
    drv.stream_wait_event(t, ev)
    h.launch(p, t)
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_UNJOINED"):
        drv.stream_end_capture(s)
    assert drv.stream_is_capturing(t) == 0


def test_nested_capture_legacy_capture_and_outside_events_are_refused(h):
    drv, s = h.drv, h.stream
    outside = drv.event_create(2)
    drv.event_record(outside, s)
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"):
        drv.stream_begin_capture(0, 0)
    drv.stream_begin_capture(s, 0)
    with pytest.raises(CudaError, match="CUDA_ERROR_ILLEGAL_STATE"):
        drv.stream_begin_capture(s, 0)
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_ISOLATION"):
        drv.stream_wait_event(s, outside)
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"):
        drv.stream_end_capture(s)
    with pytest.raises(CudaError, match="CUDA_ERROR_ILLEGAL_STATE"):
        drv.stream_end_capture(s)


def test_a_graph_launched_inside_a_capture_becomes_a_child_graph(h, rng):
    x = rng.standard_normal(N).astype(np.float32)
    p = h.upload(x)
    drv, s = h.drv, h.stream
    drv.stream_begin_capture(s, 0)
    h.launch(p, s, 2.0, 0.0)
    inner = drv.graph_instantiate(drv.stream_end_capture(s))
    drv.stream_begin_capture(s, 0)
    drv.graph_launch(inner, s)
    drv.graph_launch(inner, s)
    h.launch(p, s, 1.0, 1.0)
    outer = drv.stream_end_capture(s)
    assert drv.graph_node_count(outer) == 3
    np.testing.assert_array_equal(h.read(p), x)
    drv.graph_launch(drv.graph_instantiate(outer), s)
    np.testing.assert_allclose(h.read(p), 4 * x.astype(np.float64) + 1, rtol=1e-6)


def test_a_graph_allocation_is_mapped_only_between_its_nodes(h, rng):
    drv, s = h.drv, h.stream
    x = rng.standard_normal(N).astype(np.float32)
    keep = h.upload(np.zeros(N, np.float32))
    drv.stream_begin_capture(s, 0)
    p = drv.mem_alloc_async(x.nbytes, s)  # an allocation node: no cuMemAlloc
    drv.memset_d32(p, 0x40000000, N, s)  # 2.0
    h.launch(p, s, 3.0, 1.0)  # 7.0
    drv.memcpy_dtod(keep, p, x.nbytes, s)
    drv.mem_free_async(p, s)
    exe = drv.graph_instantiate(drv.stream_end_capture(s))
    drv.graph_launch(exe, s)
    np.testing.assert_array_equal(h.read(keep), np.full(N, 7, np.float32))
    with pytest.raises(CudaError, match="ILLEGAL_ADDRESS"):
        h.launch(p, s)  # outside the graph's span: unmapped
    drv.graph_launch(exe, s)  # freed in the graph: it may run again
    drv.stream_begin_capture(s, 0)
    q = drv.mem_alloc_async(x.nbytes, s)
    drv.memset_d32(q, 0, N, s)
    exe2 = drv.graph_instantiate(drv.stream_end_capture(s))
    drv.graph_launch(exe2, s)
    with pytest.raises(CudaError, match="still live"):
        drv.graph_launch(exe2, s)
    drv.mem_free_async(q, s)  # freed outside the graph
    drv.graph_launch(exe2, s)
    eager = drv.mem_alloc_async(64, s)  # outside a capture: an ordinary allocation
    drv.mem_free_async(eager, s)


def test_capture_modes_decide_which_threads_may_allocate(h):
    import threading

    drv, s = h.drv, h.stream
    results = {}

    def allocate(key):
        drv.ctx_set_current(0)
        try:
            drv.mem_free(drv.mem_alloc(512))
            results[key] = "ok"
        except CudaError as exc:
            results[key] = exc.name

    for mode, want in (("GLOBAL", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"), ("THREAD_LOCAL", "ok"),
                       ("RELAXED", "ok")):
        drv.stream_begin_capture(s, MODES[mode])
        t = threading.Thread(target=allocate, args=(mode,))
        t.start()
        t.join()
        assert results[mode] == want, mode
        if want == "ok":
            drv.graph_destroy(drv.stream_end_capture(s))
        else:
            with pytest.raises(CudaError, match="INVALIDATED"):
                drv.stream_end_capture(s)


def test_a_non_relaxed_capture_must_end_in_its_own_thread(h):
    import threading

    drv, s = h.drv, h.stream
    drv.stream_begin_capture(s, MODES["GLOBAL"])
    seen = []

    def end():
        try:
            drv.stream_end_capture(s)
        except CudaError as exc:
            seen.append(exc.name)

    t = threading.Thread(target=end)
    t.start()
    t.join()
    assert seen == ["CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD"]
    drv.graph_destroy(drv.stream_end_capture(s))


def test_exec_update_may_change_a_kernel_nodes_function(h, rng):
    drv, s = h.drv, h.stream
    other = drv.module_get_function(drv.module_load_data(PTX.encode()), "axpb")
    x = rng.standard_normal(N).astype(np.float32)
    p = h.upload(x)
    drv.stream_begin_capture(s, 0)
    h.launch(p, s, 2.0, 0.0)
    exe = drv.graph_instantiate(drv.stream_end_capture(s))
    drv.stream_begin_capture(s, 0)
    h.func, first = other, h.func
    h.launch(p, s, 5.0, 0.0)
    h.func = first
    assert drv.graph_exec_update(exe, drv.stream_end_capture(s)) == 0
    drv.graph_launch(exe, s)
    np.testing.assert_allclose(h.read(p), 5 * x.astype(np.float64), rtol=1e-6)
