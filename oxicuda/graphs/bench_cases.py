"""CUDA graph benchmark cases (issue 23's figures): launch cost removed by replay.

- ``tiny_kernels_100_{graph,eager}``: 100 launches of a one-block kernel (x += 1 over 256 floats),
  replayed as one graph or launched one by one; the vendor side is CuPy's RawKernel, captured
  with ``cupy.cuda.Stream.begin_capture`` or launched eagerly. Per-kernel cost = ms / 100 (the
  goal: <= 2 us per kernel in replay).
- ``mlp_step_b8_{graph,eager}``: a small MLP step at batch 8 (three GEMMs with bias and an
  activation, layer_norm, softmax), as an oxicuda graph or eager, beside the same step in
  PyTorch as a CUDA graph (``torch.cuda.graph``) or eager.

Graphs are captured on a blocking stream (the arrays live on it) and replayed on the legacy
stream, where the timing events are recorded. On the emulator the cases shrink (10 kernels, a
narrower MLP) and say so.
"""

from __future__ import annotations

import numpy as np

from oxicuda.bench.case import Case, Prepared, register_case

TINY_PTX = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry oxi_graph_bench_add1(.param .u64 p) {
 .reg .u64 %rd<4>; .reg .u32 %r<2>; .reg .f32 %f<3>;
 ld.param.u64 %rd1, [p]; mov.u32 %r1, %tid.x;
 mul.wide.u32 %rd2, %r1, 4; add.u64 %rd3, %rd1, %rd2;
 ld.global.f32 %f1, [%rd3]; add.f32 %f2, %f1, 0f3F800000; st.global.f32 [%rd3], %f2; ret; }
"""
TINY_CUDA = 'extern "C" __global__ void add1(float* p) { p[threadIdx.x] += 1.0f; }'


def _on_gpu() -> bool:
    import oxicuda

    return oxicuda.get_backend() == "cuda"


def _cupy():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:
        return None


def _torch():
    try:
        import torch

        return torch if torch.cuda.is_available() else None
    except Exception:
        return None


def _tiny_case(graph: bool):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda.driver import Module

        count = 100 if _on_gpu() else 10
        fn = Module(TINY_PTX).get_function("oxi_graph_bench_add1")
        s = oxicuda.Stream()
        x = oxicuda.zeros(256, np.float32, stream=s)
        calls = {"n": 0}

        def eager(i: int) -> None:
            for _ in range(count):
                fn(1, 256, (x,), stream=0)
            calls["n"] += 1

        if graph:
            fn(1, 256, (x,), stream=s)  # warm up (loads nothing new, but the same path)
            s.synchronize()
            with oxicuda.graph(stream=s) as g:
                for _ in range(count):
                    fn(1, 256, (x,), stream=s)
            x.fill(0.0)

            def ours(i: int) -> None:
                g.replay(stream=0)
                calls["n"] += 1
        else:
            ours = eager

        def check() -> float:
            got = x.get()
            want = float(count * calls["n"])
            return float(np.max(np.abs(got - want)) / want)

        prepared = Prepared(ours=ours, check=check, tolerance=0.0,
                            problem=f"{count} kernels of 256 threads")
        cupy = _cupy()
        if cupy is not None:
            kern = cupy.RawKernel(TINY_CUDA, "add1")
            cx = cupy.zeros(256, dtype=cupy.float32)
            if graph:
                cs = cupy.cuda.Stream(non_blocking=False)
                kern((1,), (256,), (cx,), stream=cs)
                cs.synchronize()
                cs.begin_capture()
                for _ in range(count):
                    kern((1,), (256,), (cx,), stream=cs)
                cgraph = cs.end_capture()

                def vendor(i: int) -> None:
                    cgraph.launch(cupy.cuda.Stream.null)
                name = "CuPy RawKernel in a CUDA graph (Stream.begin_capture)"
            else:
                def vendor(i: int) -> None:
                    for _ in range(count):
                        kern((1,), (256,), (cx,))
                name = "CuPy RawKernel, eager"
            prepared.vendor, prepared.vendor_name = vendor, name
        return prepared

    return prepare


def mlp_params(rng: np.random.Generator, width: int, classes: int, stream) -> dict:
    """Weights of the MLP step (input width -> 2*width -> 2*width -> classes), on ``stream``."""
    import oxicuda

    def w(*shape):
        return oxicuda.asarray((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32),
                               stream=stream)

    return {"w1": w(width, 2 * width), "b1": w(1, 2 * width)[0], "w2": w(2 * width, 2 * width),
            "b2": w(1, 2 * width)[0], "g": w(1, 2 * width)[0], "w3": w(2 * width, classes),
            "b3": w(1, classes)[0]}


def mlp_step(p: dict, x, stream):
    """softmax(gemm(relu(gemm(layer_norm(gelu(gemm(x, w1) + b1)), w2) + b2), w3) + b3)."""
    import oxicuda

    h = oxicuda.dnn.gelu(oxicuda.blas.gemm(x, p["w1"], stream=stream), bias=p["b1"])
    h = oxicuda.dnn.layer_norm(h, weight=p["g"])
    h = oxicuda.dnn.relu(oxicuda.blas.gemm(h, p["w2"], stream=stream), bias=p["b2"])
    logits = oxicuda.blas.gemm(h, p["w3"], stream=stream)
    return oxicuda.dnn.softmax(oxicuda.dnn.relu(logits, bias=p["b3"]))


def mlp_reference(p: dict, x: np.ndarray) -> np.ndarray:
    """The step in float64 numpy (exact GELU through math.erf)."""
    from math import erf, sqrt

    def host(a):
        return a.get().astype(np.float64)

    h = x.astype(np.float64) @ host(p["w1"]) + host(p["b1"])
    h = h * 0.5 * (1 + np.vectorize(erf)(h / sqrt(2)))
    h = (h - h.mean(1, keepdims=True)) / np.sqrt(h.var(1, keepdims=True) + 1e-5) * host(p["g"])
    h = np.maximum(h @ host(p["w2"]) + host(p["b2"]), 0)
    z = np.maximum(h @ host(p["w3"]) + host(p["b3"]), 0)
    z = np.exp(z - z.max(1, keepdims=True))
    return z / z.sum(1, keepdims=True)


def _mlp_case(graph: bool):
    def prepare(quick: bool) -> Prepared:
        import oxicuda

        width, classes = (512, 128) if _on_gpu() else (16, 8)
        rng = np.random.default_rng(23)
        s = oxicuda.Stream()
        p = mlp_params(rng, width, classes, s)
        xh = rng.standard_normal((8, width)).astype(np.float32)
        x = oxicuda.asarray(xh, stream=s)
        # x and p stay referenced by ``out``: a graph replays the addresses it captured, so the
        # arrays behind them must outlive it (the emulator faults on a replay into freed memory)
        out = {"y": mlp_step(p, x, s), "inputs": (x, p)}  # warm up: plans, tables, workspaces
        s.synchronize()
        if graph:
            with oxicuda.graph(stream=s) as g:
                out["y"] = mlp_step(p, x, s)

            def ours(i: int) -> None:
                g.replay(stream=0)
        else:
            def ours(i: int) -> None:
                out["y"] = mlp_step(p, x, s)

        def check() -> float:
            s.synchronize()
            want = mlp_reference(p, xh)
            return float(np.max(np.abs(out["y"].get() - want)))

        prepared = Prepared(ours=ours, check=check, tolerance=1e-4,
                            problem=f"batch 8, widths {width}-{2 * width}-{2 * width}-{classes}")
        torch = _torch()
        if torch is not None:
            tp = {k: torch.as_tensor(v.get(), device="cuda") for k, v in p.items()}
            tx = torch.as_tensor(xh, device="cuda")
            fn = torch.nn.functional

            def step():
                h = fn.gelu(tx @ tp["w1"] + tp["b1"])
                h = fn.layer_norm(h, (2 * width,), weight=tp["g"])
                h = torch.relu(h @ tp["w2"] + tp["b2"])
                return torch.softmax(torch.relu(h @ tp["w3"] + tp["b3"]), dim=1)

            if graph:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        step()
                torch.cuda.current_stream().wait_stream(side)
                tg = torch.cuda.CUDAGraph()
                with torch.cuda.graph(tg):
                    step()

                def vendor(i: int) -> None:
                    tg.replay()
                name = "PyTorch CUDA graph (torch.cuda.graph)"
            else:
                def vendor(i: int) -> None:
                    step()
                name = "PyTorch eager"
            prepared.vendor, prepared.vendor_name = vendor, name
        return prepared

    return prepare


_NOTE = "per-kernel cost = ms / kernels; the goal is <= 2 us per kernel in replay"
register_case(Case("graphs", "tiny_kernels_100_graph", _tiny_case(True), unit="ms", note=_NOTE))
register_case(Case("graphs", "tiny_kernels_100_eager", _tiny_case(False), unit="ms", note=_NOTE))
register_case(Case("graphs", "mlp_step_b8_graph", _mlp_case(True), unit="ms"))
register_case(Case("graphs", "mlp_step_b8_eager", _mlp_case(False), unit="ms"))
