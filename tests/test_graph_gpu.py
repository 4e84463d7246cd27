"""CUDA graphs on the real driver (marked gpu): the capture rules the emulator reproduces, checked
against the driver (the emulator's fidelity), library calls at real sizes captured and replayed
bit for bit against eager calls, PyTorch interop (an oxicuda call inside ``torch.cuda.graph``),
and asyncio waits on long kernels."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import oxicuda
from oxicuda.driver import Module
from oxicuda.driver.backend import api
from oxicuda.driver.errors import CudaError

pytestmark = pytest.mark.gpu

PTX = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry axpb(.param .u64 p, .param .u32 n, .param .f32 a, .param .f32 b) {
 .reg .u64 %rd<4>; .reg .u32 %r<4>; .reg .f32 %f<5>; .reg .pred %p;
 ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [n]; ld.param.f32 %f3, [a]; ld.param.f32 %f4, [b];
 mov.u32 %r2, %tid.x; setp.ge.u32 %p, %r2, %r1; @%p ret;
 mul.wide.u32 %rd2, %r2, 4; add.u64 %rd3, %rd1, %rd2;
 ld.global.f32 %f1, [%rd3]; fma.rn.f32 %f2, %f1, %f3, %f4; st.global.f32 [%rd3], %f2; ret; }
"""
N = 256


@pytest.fixture(scope="module")
def axpb():
    return Module(PTX).get_function("axpb")


def _ones(stream):
    return oxicuda.full(N, 1.0, np.float32, stream=stream)


# -- the driver's rules (what tests/test_graph_emulator_driver.py asserts of the emulator) ----------
@pytest.mark.parametrize("call, code", [
    ("ctx_synchronize", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"),
    ("stream_synchronize", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"),
    ("stream_query", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"),
    ("mem_alloc", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"),
    ("dtoh_pageable", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"),
    ("legacy_launch_blocking", "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"),
    ("captured_event_query", "CUDA_ERROR_CAPTURED_EVENT"),
])
def test_the_driver_refuses_what_the_emulator_refuses(axpb, call, code):
    drv = api()
    blocking = call == "legacy_launch_blocking"
    s = oxicuda.Stream(non_blocking=not blocking)
    x = _ones(s)
    s.synchronize()
    host = np.zeros(N, np.float32)
    ev = oxicuda.Event(timing=False)
    drv.stream_begin_capture(s.handle, 0)
    axpb(1, N, (x, N, 2.0, 1.0), stream=s)
    do = {
        "ctx_synchronize": drv.ctx_synchronize,
        "stream_synchronize": lambda: drv.stream_synchronize(s.handle),
        "stream_query": lambda: drv.stream_query(s.handle),
        "mem_alloc": lambda: drv.mem_alloc(4096),
        "dtoh_pageable": lambda: drv.memcpy_dtoh(host.ctypes.data, x.ptr, host.nbytes, s.handle),
        "legacy_launch_blocking": lambda: axpb(1, N, (x, N, 2.0, 1.0), stream=0),
        "captured_event_query": lambda: (ev.record(s), drv.event_query(ev.handle)),
    }[call]
    with pytest.raises(CudaError, match=code):
        do()
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"):
        drv.stream_end_capture(s.handle)
    assert drv.stream_is_capturing(s.handle) == 0
    axpb(1, N, (x, N, 2.0, 1.0), stream=s)  # usable again
    np.testing.assert_array_equal(x.get(), np.full(N, 3, np.float32))


def test_fork_join_unjoined_and_unmatched_on_the_driver(axpb):
    drv = api()
    s, t = oxicuda.Stream(non_blocking=True), oxicuda.Stream(non_blocking=True)
    x, y = _ones(s), _ones(t)
    oxicuda.synchronize()
    fork, join = oxicuda.Event(timing=False), oxicuda.Event(timing=False)
    drv.stream_begin_capture(s.handle, 0)
    fork.record(s)
    t.wait_event(fork)
    axpb(1, N, (y, N, 3.0, 0.0), stream=t)
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_UNJOINED"):
        drv.stream_end_capture(s.handle)
    assert drv.stream_is_capturing(t.handle) == 0
    drv.stream_begin_capture(s.handle, 0)
    fork.record(s)
    t.wait_event(fork)
    axpb(1, N, (y, N, 3.0, 0.0), stream=t)
    axpb(1, N, (x, N, 2.0, 0.0), stream=s)
    join.record(t)
    s.wait_event(join)
    graph = drv.stream_end_capture(s.handle)
    exe = drv.graph_instantiate(graph)
    drv.graph_launch(exe, s.handle)
    s.synchronize()
    np.testing.assert_array_equal(x.get(), np.full(N, 2, np.float32))
    np.testing.assert_array_equal(y.get(), np.full(N, 3, np.float32))
    assert drv.graph_node_count(graph) == 2
    drv.graph_exec_destroy(exe)
    drv.graph_destroy(graph)


def test_ending_a_capture_on_a_joined_stream_is_unmatched(axpb):
    """The emulator keeps the capture going after UNMATCHED; this records what the driver does
    (the assertion after it accepts either, so that the code itself is what is checked)."""
    drv = api()
    s, t = oxicuda.Stream(non_blocking=True), oxicuda.Stream(non_blocking=True)
    fork = oxicuda.Event(timing=False)
    drv.stream_begin_capture(s.handle, 0)
    fork.record(s)
    t.wait_event(fork)
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_UNMATCHED"):
        drv.stream_end_capture(t.handle)
    try:
        drv.graph_destroy(drv.stream_end_capture(s.handle))
    except CudaError as exc:
        assert exc.name in ("CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED")
    assert drv.stream_is_capturing(s.handle) == drv.stream_is_capturing(t.handle) == 0


def test_nested_and_legacy_capture_codes_on_the_driver():
    drv = api()
    s = oxicuda.Stream(non_blocking=True)
    with pytest.raises(CudaError, match="CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"):
        drv.stream_begin_capture(0, 0)
    drv.stream_begin_capture(s.handle, 0)
    with pytest.raises(CudaError, match="CUDA_ERROR_ILLEGAL_STATE"):
        drv.stream_begin_capture(s.handle, 0)
    drv.graph_destroy(drv.stream_end_capture(s.handle))
    with pytest.raises(CudaError, match="CUDA_ERROR_ILLEGAL_STATE"):
        drv.stream_end_capture(s.handle)


def test_exec_update_results_on_the_driver(axpb):
    drv = api()
    s = oxicuda.Stream(non_blocking=True)
    x, y = _ones(s), _ones(s)

    def capture(arr, launches=1):
        drv.stream_begin_capture(s.handle, 0)
        for _ in range(launches):
            axpb(1, N, (arr, N, 2.0, 0.0), stream=s)
        return drv.stream_end_capture(s.handle)

    exe = drv.graph_instantiate(capture(x))
    assert drv.graph_exec_update(exe, capture(y)) == 0
    drv.graph_launch(exe, s.handle)
    s.synchronize()
    np.testing.assert_array_equal(x.get(), np.ones(N, np.float32))
    np.testing.assert_array_equal(y.get(), np.full(N, 2, np.float32))
    assert drv.graph_exec_update(exe, capture(x, launches=2)) == 2  # TOPOLOGY_CHANGED


# -- library calls at real sizes ------------------------------------------------------------------
def _replay_equals_eager(s, call, exact=True):
    eager = call()
    want = eager.get()
    with oxicuda.graph(stream=s) as g:
        got = call()
    got.fill(np.nan)
    g.replay()
    s.synchronize()
    if exact:
        np.testing.assert_array_equal(got.get(), want)
    else:  # kernels that may accumulate in another order per run (atomics)
        np.testing.assert_allclose(got.get().astype(np.float32), want.astype(np.float32),
                                   rtol=2e-2, atol=2e-2)
    return g


@pytest.mark.parametrize("dtype, algo", [("float32", "tiled"), ("float32", "split_k"),
                                         ("float32", None), ("bfloat16", "tensor_core"),
                                         ("bfloat16", "wgmma")])
def test_gemm_replay_is_bitwise_the_eager_result(rng, dtype, algo):
    s = oxicuda.Stream()
    m = n = k = 2048
    a = oxicuda.asarray(rng.standard_normal((m, k)).astype(np.float32), stream=s).astype(dtype)
    b = oxicuda.asarray(rng.standard_normal((k, n)).astype(np.float32), stream=s).astype(dtype)
    try:
        _replay_equals_eager(s, lambda: oxicuda.blas.gemm(a, b, algo=algo, stream=s))
    except (ValueError, NotImplementedError) as exc:  # an algorithm this device lacks (wgmma)
        pytest.skip(str(exc))


def test_dnn_fft_rand_sparse_replay_at_real_sizes(rng):
    s = oxicuda.Stream()
    x = oxicuda.asarray(rng.standard_normal((32, 64, 56, 56)).astype(np.float32), stream=s)
    w = oxicuda.asarray(rng.standard_normal((64, 64, 3, 3)).astype(np.float32), stream=s)
    _replay_equals_eager(s, lambda: oxicuda.dnn.conv2d(x, w, padding=1))
    h = oxicuda.asarray(rng.standard_normal((8192, 4096)).astype(np.float32), stream=s)
    _replay_equals_eager(s, lambda: oxicuda.dnn.layer_norm(h))
    _replay_equals_eager(s, lambda: oxicuda.dnn.softmax(h))
    q = oxicuda.asarray(rng.standard_normal((4, 16, 1024, 64)).astype(np.float32), stream=s)
    q = q.astype("bfloat16")
    _replay_equals_eager(s, lambda: oxicuda.dnn.attention(q, q, q, causal=True), exact=False)
    z = oxicuda.asarray((rng.standard_normal(1 << 20) + 1j * rng.standard_normal(1 << 20))
                        .astype(np.complex64), stream=s)
    _replay_equals_eager(s, lambda: oxicuda.fft.fft(z))
    out = oxicuda.empty(1 << 24, np.float32, stream=s)
    _replay_equals_eager(s, lambda: oxicuda.rand.Generator(seed=7, stream=s).standard_normal(
        1 << 24, dtype=np.float32, out=out))
    sp = pytest.importorskip("scipy.sparse")
    M = sp.random(1 << 16, 1 << 16, density=1e-3, format="csr", random_state=1, dtype=np.float32)
    A = oxicuda.sparse.csr_matrix(M, stream=s)
    v = oxicuda.asarray(rng.standard_normal(1 << 16).astype(np.float32), stream=s)
    yv = oxicuda.empty(1 << 16, np.float32, stream=s)
    _replay_equals_eager(s, lambda: A.spmv(v, yv))


def test_mlp_step_graph_on_the_gpu(rng):
    from oxicuda.graphs.bench_cases import mlp_params, mlp_reference, mlp_step

    s = oxicuda.Stream()
    p = mlp_params(rng, 512, 128, s)
    x = oxicuda.asarray(rng.standard_normal((8, 512)).astype(np.float32), stream=s)
    mlp_step(p, x, s)
    with oxicuda.graph(stream=s) as g:
        y = mlp_step(p, x, s)
    for _ in range(3):
        xh = rng.standard_normal((8, 512)).astype(np.float32)
        x.set(xh)
        y.fill(np.nan)
        g.replay()
        np.testing.assert_allclose(y.get(), mlp_reference(p, xh), rtol=1e-3, atol=1e-5)


def test_replaying_100_tiny_kernels_costs_less_per_kernel_than_launching_them(axpb):
    s = oxicuda.Stream()
    x = oxicuda.zeros(N, np.float32, stream=s)
    with oxicuda.graph(stream=s) as g:
        for _ in range(100):
            axpb(1, N, (x, N, 1.0, 1.0), stream=s)
    g.replay()
    s.synchronize()
    start, end = oxicuda.Event(), oxicuda.Event()
    start.record(s)
    for _ in range(50):
        g.replay()
    end.record(s)
    end.synchronize()
    replay_us = start.elapsed_time(end) * 1e3 / (50 * 100)
    start.record(s)
    for _ in range(50):
        for _ in range(100):
            axpb(1, N, (x, N, 1.0, 1.0), stream=s)
    end.record(s)
    end.synchronize()
    eager_us = start.elapsed_time(end) * 1e3 / (50 * 100)
    np.testing.assert_array_equal(x.get(), np.full(N, 101 * 100, np.float32))
    print(f"per kernel: replay {replay_us:.2f} us, eager {eager_us:.2f} us")
    assert replay_us < eager_us


# -- PyTorch -------------------------------------------------------------------------------------
def test_an_oxicuda_call_inside_torch_cuda_graph_is_captured_into_torchs_graph(rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA device")
    ts = torch.cuda.Stream()
    ta = torch.randn(512, 256, device="cuda")
    tb = torch.randn(256, 384, device="cuda")
    tc = torch.empty(512, 384, device="cuda")
    a, b, c = oxicuda.asarray(ta), oxicuda.asarray(tb), oxicuda.asarray(tc)
    ts.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(ts):
        oxicuda.blas.gemm(a, b, c, stream=ts)  # warm up on the capture stream: plans, workspaces
    ts.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=ts):
        oxicuda.blas.gemm(a, b, c, stream=torch.cuda.current_stream())
        td = torch.relu(tc)
    tc.fill_(float("nan"))
    ta.copy_(torch.randn_like(ta))  # new data in place
    g.replay()
    torch.cuda.synchronize()
    want = torch.relu(ta.double() @ tb.double()).float()
    torch.testing.assert_close(td, want, rtol=1e-4, atol=1e-4)


def test_torch_graph_allocation_inside_raises_and_leaves_torchs_capture_intact():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA device")
    ts = torch.cuda.Stream()
    # an oxicuda array on torch's stream, of a size no cached block has (relu must allocate)
    x = oxicuda.zeros((1 << 20) + 12345, np.float32, stream=ts)
    oxicuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=ts):
        with pytest.raises(oxicuda.GraphCaptureError, match="did not begin"):
            oxicuda.dnn.relu(x)  # needs a new output on the capturing stream
        ty = torch.ones(4, device="cuda") * 2
    g.replay()
    torch.cuda.synchronize()
    assert ty.tolist() == [2.0, 2.0, 2.0, 2.0]


# -- asyncio -------------------------------------------------------------------------------------
def test_asyncio_waits_on_long_kernels_do_not_block_the_loop(rng):
    streams = [oxicuda.Stream(non_blocking=True) for _ in range(3)]
    mats = [oxicuda.asarray(rng.standard_normal((4096, 4096)).astype(np.float32), stream=s)
            for s in streams]
    ticks = []

    async def work(i):
        c = mats[i]
        for _ in range(4):
            c = oxicuda.blas.gemm(mats[i], c, stream=streams[i])
        await streams[i].synchronize_async()
        return await c[:2, :2].copy().get_async()

    async def ticker(stop):
        while not stop.done():
            ticks.append(1)
            await asyncio.sleep(0)

    async def main():
        stop = asyncio.get_running_loop().create_future()
        tick = asyncio.ensure_future(ticker(stop))
        results = await asyncio.gather(*(work(i) for i in range(3)))
        stop.set_result(None)
        await tick
        return results

    results = asyncio.run(main())
    assert len(results) == 3 and all(np.isfinite(r).all() for r in results)
    assert len(ticks) > 10  # the loop kept running while the GEMMs did
