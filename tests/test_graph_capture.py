"""``oxicuda.graph``: library calls captured on a stream, replayed, updated; calls that cannot be
captured raise naming themselves and leave the stream usable; graph-owned memory.

Every family: warm the call up eagerly (the eager result is the reference, checked against
numpy), capture it, poison what the graph writes, replay, and compare element by element.
"""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
import oxicuda.primitives
from oxicuda.driver.backend import api
from oxicuda.memory import capture as mcapture


@pytest.fixture
def s():
    stream = oxicuda.Stream(non_blocking=True)
    yield stream
    assert not mcapture.ACTIVE  # every capture ended, whatever the test did


def dev(x, s):
    return oxicuda.asarray(np.ascontiguousarray(x), stream=s)


def poison(*arrays):
    for a in arrays:
        a.fill(np.nan if a.dtype.kind in "fc" else 0x5A)


def capture_and_replay(s, call):
    """Eager result of ``call()``, then the graph's result after poisoning (and the graph)."""
    eager = call()
    eager = eager if isinstance(eager, tuple) else (eager,)
    want = [e.get() for e in eager]
    with oxicuda.graph(stream=s) as g:
        got = call()
    got = got if isinstance(got, tuple) else (got,)
    poison(*got)
    g.replay()
    for w, a in zip(want, got):
        np.testing.assert_array_equal(a.get(), w)
    return g, want


def test_gemm_bias_relu_softmax_replay_matches_eager_and_numpy(s, rng):
    A = rng.standard_normal((8, 24)).astype(np.float32)
    B = rng.standard_normal((24, 16)).astype(np.float32)
    bias = rng.standard_normal(16).astype(np.float32)
    a, b, bb = dev(A, s), dev(B, s), dev(bias, s)

    def step():
        h = oxicuda.dnn.relu(oxicuda.blas.gemm(a, b, stream=s), bias=bb)
        return oxicuda.dnn.softmax(h)

    with oxicuda.trace() as t:
        g, (want,) = capture_and_replay(s, step)
    ref = np.maximum(A.astype(np.float64) @ B + bias, 0)
    ref = np.exp(ref - ref.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    np.testing.assert_allclose(want, ref, rtol=1e-5, atol=1e-7)
    kernels = [r.kernel for r in g.launches]
    assert len(kernels) == 3 and "gemm" in kernels[0] and "softmax" in kernels[2]
    assert g.node_count == 3
    # eager (3) + captured (3, recorded at capture) + replay (3)
    assert len(t.launches) == 9 and t.kernels()[6:] == kernels
    assert all(r.stream == s.handle for r in t.launches[6:])


@pytest.mark.parametrize("algo", ["naive", "tiled", "split_k"])
def test_gemm_algorithms_are_capturable(s, rng, algo):
    A = rng.standard_normal((20, 36)).astype(np.float32)
    B = rng.standard_normal((36, 12)).astype(np.float32)
    a, b = dev(A, s), dev(B, s)
    c = oxicuda.empty((20, 12), np.float32, stream=s)
    _, (want,) = capture_and_replay(s, lambda: oxicuda.blas.gemm(a, b, c, algo=algo, stream=s))
    np.testing.assert_allclose(want, A.astype(np.float64) @ B, rtol=2e-5, atol=1e-5)


def test_layer_norm_and_conv2d_replay(s, rng):
    X = rng.standard_normal((4, 32)).astype(np.float32)
    w = rng.standard_normal(32).astype(np.float32)
    x, wd = dev(X, s), dev(w, s)
    _, (ln,) = capture_and_replay(s, lambda: oxicuda.dnn.layer_norm(x, weight=wd))
    mu, var = X.mean(1, keepdims=True), X.var(1, keepdims=True)
    np.testing.assert_allclose(ln, (X - mu) / np.sqrt(var + 1e-5) * w, rtol=1e-4, atol=1e-5)
    img = dev(rng.standard_normal((1, 2, 6, 6)).astype(np.float32), s)
    ker = dev(rng.standard_normal((3, 2, 3, 3)).astype(np.float32), s)
    _, (y,) = capture_and_replay(s, lambda: oxicuda.dnn.conv2d(img, ker, padding=1))
    assert y.shape == (1, 3, 6, 6) and np.isfinite(y).all()


def test_fft_and_random_replay(s, rng):
    X = (rng.standard_normal(64) + 1j * rng.standard_normal(64)).astype(np.complex64)
    x = dev(X, s)
    _, (f,) = capture_and_replay(s, lambda: oxicuda.fft.fft(x))
    np.testing.assert_allclose(f, np.fft.fft(X.astype(np.complex128)), rtol=1e-4, atol=1e-4)
    gen = oxicuda.rand.Generator(seed=1234, stream=s) if hasattr(oxicuda.rand, "Generator") else None
    if gen is None:
        pytest.skip("oxicuda.rand has no Generator class")
    out = oxicuda.empty(256, np.float32, stream=s)
    eager = gen.standard_normal(256, dtype=np.float32, out=out).get()
    with oxicuda.graph(stream=s) as g:
        gen.standard_normal(256, dtype=np.float32, out=out)
    poison(out)
    g.replay()  # the captured draw: the numbers of the generator's state at capture time
    again = oxicuda.rand.Generator(seed=1234, stream=s)
    again.standard_normal(256, dtype=np.float32)
    np.testing.assert_array_equal(out.get(), again.standard_normal(256, dtype=np.float32).get())
    assert not np.array_equal(out.get(), eager)


def test_sparse_spmv_replay(s, rng):
    sp = pytest.importorskip("scipy.sparse")
    M = sp.random(24, 24, density=0.2, format="csr", random_state=int(rng.integers(1 << 30)),
                  dtype=np.float32)
    A = oxicuda.sparse.csr_matrix(M, stream=s)
    x = dev(rng.standard_normal(24).astype(np.float32), s)
    y = oxicuda.empty(24, np.float32, stream=s)
    _, (got,) = capture_and_replay(s, lambda: A.spmv(x, y))
    np.testing.assert_allclose(got, M.toarray().astype(np.float64) @ x.get(), rtol=1e-5, atol=1e-6)


def test_a_call_that_reads_back_raises_naming_itself_and_the_stream_stays_usable(s, rng):
    n = 8
    Q = rng.standard_normal((n, n))
    a = dev(Q @ Q.T + n * np.eye(n), s)
    b = dev(rng.standard_normal((n, 2)), s)
    want = oxicuda.solver.solve(a, b).get()
    with (pytest.raises(oxicuda.GraphCaptureError, match=r"oxicuda\.solver\.solve: .*on the host"),
          oxicuda.graph(stream=s)):
        oxicuda.solver.solve(a, b)
    assert api().stream_is_capturing(s.handle) == 0
    x = oxicuda.solver.solve(a, b)  # eager again, on the same stream
    np.testing.assert_allclose(x.get(), want, rtol=1e-12)


def test_a_driver_refusal_discards_the_capture_and_the_stream_recovers(s, rng):
    x = dev(rng.standard_normal(16).astype(np.float32), s)
    with pytest.raises(oxicuda.CudaError, match="STREAM_CAPTURE_UNSUPPORTED"), oxicuda.graph(stream=s):
        oxicuda.dnn.relu(x)
        s.synchronize()
    assert api().stream_is_capturing(s.handle) == 0
    np.testing.assert_array_equal(oxicuda.dnn.relu(x).get(), np.maximum(x.get(), 0))


def test_a_capture_the_driver_invalidated_silently_raises_at_the_end(s, rng):
    x = dev(rng.standard_normal(16).astype(np.float32), s)
    with pytest.raises(oxicuda.GraphCaptureError, match="invalidated"), oxicuda.graph(stream=s):
        oxicuda.dnn.relu(x)
        try:
            api().ctx_synchronize()
        except oxicuda.CudaError:
            pass  # swallowed by the user: the capture is still broken
    assert not mcapture.ACTIVE


def test_nested_capture_on_one_stream_is_refused_and_two_streams_join_with_events(s, rng):
    X = rng.standard_normal(32).astype(np.float32)
    x = dev(X, s)
    outer = oxicuda.graph(stream=s)
    with pytest.raises(RuntimeError, match="nested"), outer, oxicuda.graph(stream=s):
        pass
    assert api().stream_is_capturing(s.handle) == 0
    t = oxicuda.Stream(non_blocking=True)
    xt = oxicuda.asarray(X, stream=t)
    oxicuda.dnn.relu(x), oxicuda.dnn.sigmoid(xt)  # warm up
    fork, join = oxicuda.Event(timing=False), oxicuda.Event(timing=False)
    with oxicuda.graph(stream=s) as g:
        fork.record(s)
        t.wait_event(fork)
        ys = oxicuda.dnn.relu(x)
        yt = oxicuda.dnn.sigmoid(xt)  # on t: forked into the same capture
        join.record(t)
        s.wait_event(join)
    poison(ys, yt)
    g.replay()
    np.testing.assert_array_equal(ys.get(), np.maximum(X, 0))
    np.testing.assert_allclose(yt.get(), 1 / (1 + np.exp(-X.astype(np.float64))), rtol=1e-6)
    assert g.node_count == 2  # the two activations; events only carry dependencies


def test_recapture_with_new_pointers_updates_in_place(s, rng):
    A1, A2 = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2))
    B = rng.standard_normal((8, 8)).astype(np.float32)
    a1, a2, b = dev(A1, s), dev(A2, s), dev(B, s)
    oxicuda.blas.gemm(a1, b, stream=s)
    with oxicuda.graph(stream=s) as g:
        c1 = oxicuda.blas.gemm(a1, b, stream=s)
    with g.recapture():
        c2 = oxicuda.blas.gemm(a2, b, stream=s)
    assert g.updated_in_place is True
    poison(c1, c2)
    g.replay()
    np.testing.assert_allclose(c2.get(), A2.astype(np.float64) @ B, rtol=1e-5, atol=1e-6)
    assert np.isnan(c1.get()).all()  # the updated graph no longer writes c1
    with g.recapture():  # a different sequence: re-instantiated
        c3 = oxicuda.dnn.relu(oxicuda.blas.gemm(a1, b, stream=s))
    assert g.updated_in_place is False
    g.replay()
    np.testing.assert_allclose(c3.get(), np.maximum(A1.astype(np.float64) @ B, 0), rtol=1e-5,
                               atol=1e-6)


def test_update_from_another_graph(s, rng):
    x1, x2 = (dev(rng.standard_normal(16).astype(np.float32), s) for _ in range(2))
    oxicuda.dnn.relu(x1)
    with oxicuda.graph(stream=s) as g1:
        y1 = oxicuda.dnn.relu(x1)
    with oxicuda.graph(stream=s) as g2:
        y2 = oxicuda.dnn.relu(x2)
    assert g1.update(g2)
    poison(y1, y2)
    g1.replay()
    np.testing.assert_array_equal(y2.get(), np.maximum(x2.get(), 0))
    assert np.isnan(y1.get()).all()


def test_capture_allocates_no_device_memory_through_the_driver_in_global_mode(s, rng):
    """Memory made during a capture comes from the graph's reserve (relaxed-mode allocations
    or cached blocks), temporaries freed in it stay the graph's, and the graph's blocks go back
    to the pool when it closes."""
    X = rng.standard_normal((8, 8)).astype(np.float32)
    x = dev(X, s)
    oxicuda.dnn.softmax(oxicuda.dnn.relu(x))
    pool = oxicuda.get_default_memory_pool()
    with oxicuda.graph(stream=s) as g:
        tmp = oxicuda.dnn.relu(x)
        y = oxicuda.dnn.softmax(tmp)
        tmp_ptr = tmp.ptr
        del tmp  # freed inside the capture: the graph's, not the pool's
        z = oxicuda.empty((8, 8), np.float32, stream=s)
    assert z.ptr == tmp_ptr  # reused inside the graph, in stream order
    assert tmp_ptr in mcapture.OWNER
    poison(y)
    g.replay()
    ref = np.maximum(X.astype(np.float64), 0)
    ref = np.exp(ref - ref.max(1, keepdims=True))
    np.testing.assert_allclose(y.get(), ref / ref.sum(1, keepdims=True), rtol=1e-5)
    cached = pool.n_free_blocks()
    del z
    g.close()
    assert tmp_ptr not in mcapture.OWNER
    assert pool.n_free_blocks() > cached
    with pytest.raises(RuntimeError, match="nothing to replay"):
        g.replay()


def test_workspaces_asked_for_in_a_capture_belong_to_the_graph(s):
    from oxicuda.memory.workspace import workspace_ptr

    eager = workspace_ptr((np.float32, 100), s)
    with oxicuda.graph(stream=s) as g:
        inside = workspace_ptr((np.float32, 100), s)
        assert workspace_ptr((np.float32, 100), s) == inside
    assert inside != eager and inside in mcapture.OWNER
    assert workspace_ptr((np.float32, 100), s) == eager
    g.close()


def test_graph_arguments_are_checked(s):
    with pytest.raises(ValueError, match="stream="):
        oxicuda.graph()
    with pytest.raises(ValueError, match="legacy"):
        oxicuda.graph(stream=0)
    with pytest.raises(ValueError, match="mode"):
        oxicuda.graph(stream=s, mode="loose")
    g = oxicuda.graph(stream=s)
    with pytest.raises(RuntimeError, match="needs a captured graph"), g.recapture():
        pass


def test_oxicuda_calls_join_a_capture_another_package_began(s, rng):
    """What torch.cuda.graph does: the driver capture begun outside oxicuda. A call with its
    output given and warmed up on that stream is captured into the foreign graph; a call that
    would allocate raises naming itself and leaves the foreign capture intact; a block freed
    during the foreign capture is never handed out again."""
    drv = api()
    A = rng.standard_normal((8, 8)).astype(np.float32)
    B = rng.standard_normal((8, 8)).astype(np.float32)
    a, b = dev(A, s), dev(B, s)
    c = oxicuda.empty((8, 8), np.float32, stream=s)
    oxicuda.blas.gemm(a, b, c, stream=s)
    doomed = oxicuda.empty((64,), np.float32, stream=s)
    doomed_ptr = doomed.ptr
    big = oxicuda.zeros((512, 1024), np.float32, stream=s)
    drv.stream_begin_capture(s.handle, 0)
    try:
        oxicuda.blas.gemm(a, b, c, stream=s)
        with pytest.raises(oxicuda.GraphCaptureError, match=r"oxicuda\.dnn\..*relu: .*did not begin"):
            oxicuda.dnn.relu(big)
        assert drv.stream_is_capturing(s.handle) == 1  # not invalidated
        del doomed
    finally:
        graph = drv.stream_end_capture(s.handle)
    assert all(oxicuda.empty((64,), np.float32, stream=s).ptr != doomed_ptr for _ in range(3))
    exe = drv.graph_instantiate(graph)
    poison(c)
    drv.graph_launch(exe, s.handle)
    np.testing.assert_allclose(c.get(), A.astype(np.float64) @ B, rtol=1e-5, atol=1e-6)
    drv.graph_exec_destroy(exe)
    drv.graph_destroy(graph)


def test_a_replay_reading_an_input_freed_after_the_capture_faults_on_the_emulator(s, rng):
    if api().name != "emulator":
        pytest.skip("the real driver reads freed memory silently; the emulator checks it")
    x = dev(rng.standard_normal(16).astype(np.float32), s)
    oxicuda.dnn.relu(x)
    with oxicuda.graph(stream=s) as g:
        oxicuda.dnn.relu(x)
    x.memory.free()
    with pytest.raises(oxicuda.driver.LaunchError, match="freed block"):
        g.replay()


def test_mlp_step_of_the_bench_case_replays_to_the_float64_reference(s, rng):
    from oxicuda.graphs.bench_cases import mlp_params, mlp_reference, mlp_step

    p = mlp_params(rng, 16, 8, s)
    xh = rng.standard_normal((8, 16)).astype(np.float32)
    x = dev(xh, s)
    mlp_step(p, x, s)
    with oxicuda.graph(stream=s) as g:
        y = mlp_step(p, x, s)
    assert len(g.launches) >= 8
    for _ in range(2):  # refill the input in place, replay, compare
        xh = rng.standard_normal((8, 16)).astype(np.float32)
        x.set(xh)
        poison(y)
        g.replay()
        np.testing.assert_allclose(y.get(), mlp_reference(p, xh), rtol=1e-4, atol=1e-6)


def _family_cases(s, rng):
    """name -> a call on arrays of stream ``s`` returning its output (tuple for several)."""
    f32 = np.float32
    x2 = dev(rng.standard_normal((6, 40)).astype(f32), s)
    img = dev(rng.standard_normal((2, 3, 8, 8)).astype(f32), s)
    q = dev(rng.standard_normal((1, 2, 16, 16)).astype(f32), s).astype("float16")
    h16 = dev(rng.standard_normal((16, 16)).astype(f32), s).astype("float16")
    rm, rv = dev(np.zeros(3, f32), s), dev(np.ones(3, f32), s)
    keys = dev(rng.integers(0, 1000, 300).astype(np.uint32), s)
    vec = dev(rng.standard_normal(300).astype(f32), s)
    real = dev(rng.standard_normal((4, 32)).astype(f32), s)
    return {
        "gemm_tensor_core": lambda: oxicuda.blas.gemm(h16, h16, algo="tensor_core", stream=s),
        "rms_norm": lambda: oxicuda.dnn.rms_norm(x2),
        "batch_norm": lambda: oxicuda.dnn.batch_norm(img, rm, rv),
        "max_pool2d": lambda: oxicuda.dnn.max_pool2d(img, 2),
        "gelu": lambda: oxicuda.dnn.gelu(x2),
        "log_softmax": lambda: oxicuda.dnn.softmax(x2, log=True),
        "attention": lambda: oxicuda.dnn.attention(q, q, q, causal=True),
        "rfft": lambda: oxicuda.fft.rfft(real),
        "fft2": lambda: oxicuda.fft.fft2(real.astype(np.complex64)),
        "inclusive_scan": lambda: oxicuda.primitives.inclusive_scan(vec, stream=s),
        "reduce": lambda: oxicuda.primitives.reduce(vec, "max", stream=s),
        "radix_sort": lambda: oxicuda.primitives.radix_sort(keys, stream=s),
        "uniform": lambda: oxicuda.rand.Generator(seed=5, stream=s).uniform(size=100, dtype=f32),
    }


FAMILIES = ["gemm_tensor_core", "rms_norm", "batch_norm", "max_pool2d", "gelu", "log_softmax",
            "attention", "rfft", "fft2", "inclusive_scan", "reduce", "radix_sort", "uniform"]


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("blocking", [False, True], ids=["non_blocking", "blocking"])
def test_library_family_replays_bit_for_bit(rng, name, blocking):
    """On a blocking stream too: any use of the legacy stream by the call would break it."""
    s = oxicuda.Stream(non_blocking=not blocking)
    call = _family_cases(s, rng)[name]
    with oxicuda.trace() as t:
        g, _ = capture_and_replay(s, call)
    assert g.launches and t.kernels()[-len(g.launches):] == [r.kernel for r in g.launches]


def test_sparse_matrix_product_cannot_be_captured_and_says_so(s, rng):
    sp = pytest.importorskip("scipy.sparse")
    M = sp.random(16, 16, density=0.3, format="csr", random_state=3, dtype=np.float32)
    A = oxicuda.sparse.csr_matrix(M, stream=s)
    want = (A @ A).toarray() if hasattr(A @ A, "toarray") else None
    with (pytest.raises(oxicuda.GraphCaptureError, match=r"oxicuda\.sparse\..*read-back"),
          oxicuda.graph(stream=s)):
        A @ A  # sizing the product's nnz reads a count back to the host
    assert api().stream_is_capturing(s.handle) == 0
    got = A @ A
    if want is not None:
        np.testing.assert_array_equal(got.toarray(), want)


def test_stream_ordered_memory_puts_allocation_and_free_nodes_in_the_graph(s, rng):
    X = rng.standard_normal((8, 8)).astype(np.float32)
    x = dev(X, s)
    y = oxicuda.empty((8, 8), np.float32, stream=s)
    oxicuda.dnn.softmax(oxicuda.dnn.relu(x))
    pool = oxicuda.get_default_memory_pool()
    before = pool.stats()["in_use_blocks"]
    with oxicuda.graph(stream=s, memory="async") as g:
        tmp = oxicuda.dnn.relu(x)  # an allocation node
        y[...] = oxicuda.dnn.softmax(tmp)
        del tmp  # a free node
    assert pool.stats()["in_use_blocks"] == before
    kinds = g.node_count
    assert kinds >= 5  # alloc, relu, alloc, softmax, copy, free, free
    ref = np.maximum(X.astype(np.float64), 0)
    ref = np.exp(ref - ref.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    for _ in range(2):
        poison(y)
        g.replay()
        np.testing.assert_allclose(y.get(), ref, rtol=1e-5)


def test_stream_ordered_memory_refuses_arrays_that_outlive_the_capture(s, rng):
    x = dev(rng.standard_normal(16).astype(np.float32), s)
    oxicuda.dnn.relu(x)
    with pytest.raises(oxicuda.GraphCaptureError, match="outlive it"), \
            oxicuda.graph(stream=s, memory="async"):
        y = oxicuda.dnn.relu(x)
    del y
    with pytest.raises(ValueError, match="memory="):
        oxicuda.graph(stream=s, memory="cuda")


def test_launches_on_the_legacy_stream_during_a_capture_are_reported_as_not_captured(s, rng):
    X = rng.standard_normal(16).astype(np.float32)
    on_s, on_legacy = dev(X, s), oxicuda.asarray(X)  # the second one forgot stream=s
    oxicuda.dnn.relu(on_s), oxicuda.dnn.relu(on_legacy)

    def capture():
        with oxicuda.graph(stream=s) as g:
            ys = oxicuda.dnn.relu(on_s)
            yl = oxicuda.dnn.relu(on_legacy)  # runs now: a non-blocking capture ignores stream 0
        return g, ys, yl

    with pytest.warns(RuntimeWarning, match="1 launch.*legacy default stream"):
        g, ys, yl = capture()
    np.testing.assert_array_equal(yl.get(), np.maximum(X, 0))
    assert len(g.launches) == 1 == g.node_count
    poison(ys)
    g.replay()
    np.testing.assert_array_equal(ys.get(), np.maximum(X, 0))


def test_cupy_shaped_cublas_calls_on_the_handles_stream_are_captured(s, rng):
    from oxicuda.cuda import cublas

    A = rng.standard_normal((12, 12)).astype(np.float32)
    a = dev(A, s)
    c = oxicuda.empty((12, 12), np.float32, stream=s)
    one, zero = np.array(1.0, np.float32), np.array(0.0, np.float32)
    h = cublas.create()
    try:
        cublas.setStream(h, s.handle)

        def call():
            cublas.sgemm(h, 0, 0, 12, 12, 12, one.ctypes.data, a.ptr, 12, a.ptr, 12,
                         zero.ctypes.data, c.ptr, 12)
            return c

        _, (want,) = capture_and_replay(s, call)
    finally:
        cublas.destroy(h)
    np.testing.assert_allclose(want.T, A.T.astype(np.float64) @ A.T, rtol=1e-5, atol=1e-5)


def test_another_thread_allocating_during_a_global_capture_does_not_break_it(s, rng):
    import threading

    x = dev(rng.standard_normal(16).astype(np.float32), s)
    oxicuda.dnn.relu(x)
    made = []

    def other():
        # a fresh allocation (a new bucket) and an eager call on the legacy stream
        made.append(oxicuda.dnn.relu(oxicuda.zeros((3, 1000), np.float32)).get().sum())

    with oxicuda.graph(stream=s) as g:
        y = oxicuda.dnn.relu(x)
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert made == [0.0]
    poison(y)
    g.replay()
    np.testing.assert_array_equal(y.get(), np.maximum(x.get(), 0))


def test_closing_a_graph_during_another_capture_on_its_stream_hands_its_memory_to_that_graph(s, rng):
    x = dev(rng.standard_normal(16).astype(np.float32), s)
    oxicuda.dnn.relu(x)
    with oxicuda.graph(stream=s) as g1:
        tmp = oxicuda.dnn.relu(x)
        del tmp
    g1.replay()
    big = dev(rng.standard_normal(4000).astype(np.float32), s)  # another bucket than tmp's
    oxicuda.dnn.relu(big)
    with oxicuda.graph(stream=s) as g2:
        g1.close()  # its free blocks may not get an event recorded in this capture
        y = oxicuda.dnn.relu(big)
    poison(y)
    g2.replay()
    np.testing.assert_array_equal(y.get(), np.maximum(big.get(), 0))
    g2.close()
    t = oxicuda.Stream(non_blocking=True)  # another stream queries the cached blocks' events
    assert [oxicuda.zeros(16, np.float32, stream=t).get().sum() for _ in range(4)] == [0.0] * 4


def test_cusolver_shaped_potrf_potrs_on_the_handles_stream_are_captured(s, rng):
    """The cuSOLVER-shaped calls keep devInfo on the device: capturable, unlike numpy-shaped
    oxicuda.solver calls."""
    from oxicuda.cuda import cusolver

    n = 8
    Q = rng.standard_normal((n, n))
    spd = np.asfortranarray(Q @ Q.T / n + np.eye(n))
    bh = np.asfortranarray(rng.standard_normal((n, 1)))
    a, b = dev(spd, s), dev(bh, s)
    a0, b0 = dev(spd, s), dev(bh, s)  # the pristine inputs, copied in by the graph
    info = oxicuda.full(1, 99, np.int32, stream=s)
    h = cusolver.create()
    try:
        cusolver.setStream(h, s.handle)
        lwork = cusolver.dpotrf_bufferSize(h, 0, n, a.ptr, n)
        work = oxicuda.empty(max(lwork, 1), np.float64, stream=s)

        def call():
            a[...] = a0
            b[...] = b0
            cusolver.dpotrf(h, 0, n, a.ptr, n, work.ptr, lwork, info.ptr)
            cusolver.dpotrs(h, 0, n, 1, a.ptr, n, b.ptr, n, info.ptr)
            return b, info

        _, (x, code) = capture_and_replay(s, call)
    finally:
        cusolver.destroy(h)
    assert code[0] == 0
    np.testing.assert_allclose(x, np.linalg.solve(spd, bh), rtol=1e-10, atol=1e-12)


def test_recapturing_gives_the_previous_captures_memory_back(s, rng):
    x = dev(rng.standard_normal((8, 64)).astype(np.float32), s)
    oxicuda.dnn.softmax(oxicuda.dnn.relu(x))
    pool = oxicuda.get_default_memory_pool()
    outputs = []
    with oxicuda.graph(stream=s) as g:
        tmp = oxicuda.dnn.relu(x)
        outputs.append(oxicuda.dnn.softmax(tmp))
        first_tmp = tmp.ptr
        del tmp  # a temporary: the first capture's reserve keeps it
    assert first_tmp in mcapture.OWNER
    cached = pool.n_free_blocks()
    for _ in range(3):
        with g.recapture():
            outputs.append(oxicuda.dnn.softmax(oxicuda.dnn.relu(x)))
        g.replay()
    assert first_tmp not in mcapture.OWNER  # returned to the pool when the first was replaced
    assert pool.n_free_blocks() <= cached + 1
    ref = np.maximum(x.get().astype(np.float64), 0)
    ref = np.exp(ref - ref.max(1, keepdims=True))
    np.testing.assert_allclose(outputs[-1].get(), ref / ref.sum(1, keepdims=True), rtol=1e-5)


def test_an_updated_graph_keeps_the_memory_it_took_over_after_the_other_graph_goes(s, rng):
    X = rng.standard_normal(32).astype(np.float32)
    x = dev(X, s)
    oxicuda.dnn.relu(x)
    with oxicuda.graph(stream=s) as g1:
        oxicuda.dnn.relu(x)
    with oxicuda.graph(stream=s) as g2:
        y = oxicuda.dnn.sigmoid(oxicuda.dnn.relu(x))  # a temporary between the two kernels
    assert not g1.update(g2)  # two kernels against one: the topology differs
    with oxicuda.graph(stream=s) as g3:
        oxicuda.dnn.sigmoid(oxicuda.dnn.relu(x))
    assert g3.update(g2)
    g2.close()  # g3 replays g2's memory now: it must stay
    assert y.memory is not None and mcapture.OWNER.get(y.ptr) is not None
    poison(y)
    g3.replay()
    np.testing.assert_allclose(y.get(), 1 / (1 + np.exp(-np.maximum(X.astype(np.float64), 0))),
                               rtol=1e-6)
    g3.close()
    assert y.ptr in mcapture.OWNER  # y still alive: its block goes back when y goes
    del y
