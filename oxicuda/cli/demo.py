"""``python -m oxicuda demo``: a short tour that runs real kernels and checks every result.

Each step launches oxicuda's own generated kernels through the public API, compares the whole
output with a float64 numpy reference and prints the error and the launches it made. On a
machine without a GPU it runs on the emulator (small sizes) and says so. Exit status 1 if any
check fails.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

import numpy as np


def _rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if not np.all(np.isfinite(got)):
        return float("inf")
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300))


def _step_raw_kernel(rng, big):
    import oxicuda
    from oxicuda.driver import Module
    from oxicuda.ptx.builder import KernelBuilder
    from oxicuda.ptx.target import device_arch

    kb = KernelBuilder("demo_saxpy", arch=device_arch())
    x, y = kb.param_ptr("x"), kb.param_ptr("y")
    a, n = kb.param("a", "f32"), kb.param("n", "u32")
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lt", i, n)):
        xi = kb.ld("global", "f32", kb.addr(x, i, 4))
        yi = kb.ld("global", "f32", kb.addr(y, i, 4))
        kb.st("global", kb.addr(y, i, 4), kb.fma(a, xi, yi))
    fn = Module(kb.ptx()).get_function("demo_saxpy")
    n_el = 1 << 20 if big else 1000
    hx = rng.standard_normal(n_el, dtype=np.float32)
    hy = rng.standard_normal(n_el, dtype=np.float32)
    dx, dy = oxicuda.asarray(hx), oxicuda.asarray(hy)
    fn(((n_el + 255) // 256,), (256,), (dx, dy, np.float32(2.5), np.uint32(n_el)))
    ref = 2.5 * hx.astype(np.float64) + hy
    return f"builder-made saxpy, n={n_el}", _rel_err(dy.get(), ref), 1e-6


def _step_gemm(rng, big):
    import oxicuda
    from oxicuda import blas

    m, n, k = (1024, 1024, 1024) if big else (37, 29, 45)
    ha = rng.standard_normal((m, k), dtype=np.float32)
    hb = rng.standard_normal((k, n), dtype=np.float32)
    c = blas.gemm(oxicuda.asarray(ha), oxicuda.asarray(hb))
    return f"sgemm {m}x{n}x{k}", _rel_err(c.get(), ha.astype(np.float64) @ hb), 1e-5


def _step_softmax(rng, big):
    import oxicuda
    from oxicuda import dnn

    rows, cols = (4096, 4096) if big else (7, 300)
    hx = (rng.standard_normal((rows, cols)) * 8).astype(np.float32)
    y = dnn.softmax(oxicuda.asarray(hx))
    x64 = hx.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    return f"softmax {rows}x{cols}", _rel_err(y.get(), e / e.sum(axis=-1, keepdims=True)), 1e-5


def _step_attention(rng, big):
    import oxicuda
    from oxicuda import dnn

    b, h, s, d = (2, 8, 1024, 64) if big else (1, 2, 19, 16)
    q, k, v = (rng.standard_normal((b, h, s, d), dtype=np.float32) for _ in range(3))
    out = dnn.attention(oxicuda.asarray(q), oxicuda.asarray(k), oxicuda.asarray(v), causal=True)
    q64, k64, v64 = (t.astype(np.float64) for t in (q, k, v))
    sc = q64 @ k64.transpose(0, 1, 3, 2) / np.sqrt(d)
    sc = np.where(np.tril(np.ones((s, s), bool)), sc, -np.inf)
    p = np.exp(sc - sc.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ v64
    return f"causal attention fp32 B{b} H{h} S{s} D{d}", _rel_err(out.get(), ref), 1e-5


STEPS = [_step_raw_kernel, _step_gemm, _step_softmax, _step_attention]


def main(argv: list[str] | None = None) -> int:
    """Run the tour; returns the exit status (1 on a failed check or when no backend loads)."""
    parser = argparse.ArgumentParser(prog="python -m oxicuda demo",
                                     description=__doc__.split("\n\n")[0].split(": ", 1)[1],
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print the traceback of a step that raises")
    args = parser.parse_args([] if argv is None else argv)

    import oxicuda
    from oxicuda.cli.info import open_backend
    from oxicuda.driver import Device, trace
    from oxicuda.driver.backend import why_not_cuda

    if open_backend("demo") is None:
        return 1
    backend = oxicuda.get_backend()
    dev = Device(0)
    print(f"oxicuda {oxicuda.__version__} demo on {dev.name} (sm_{dev.compute_capability[0]}"
          f"{dev.compute_capability[1]}, {dev.multiprocessor_count} SMs), backend: {backend}")
    if backend != "cuda":
        print("No usable GPU here: running on the emulator (PTX interpreted on the CPU; small "
              f"sizes, exact but slow). Reason: {why_not_cuda() or 'OXICUDA_BACKEND=emulator'}")
    rng = np.random.default_rng()
    big = backend == "cuda"
    failures = 0
    for step in STEPS:
        t0 = time.perf_counter()
        try:
            with trace() as t:
                what, err, tol = step(rng, big)
        except Exception as exc:  # a step that raises is a failed check, reported
            failures += 1
            print(f"  FAIL  {step.__name__[6:]}: {type(exc).__name__}: {exc}")
            if args.verbose:
                traceback.print_exc()
            continue
        ok = err <= tol
        failures += not ok
        kernels = sorted({rec.kernel for rec in t.launches})
        print(f"  {'ok  ' if ok else 'FAIL'}  {what}: rel. error {err:.1e} (tol {tol:.0e}), "
              f"{len(t.launches)} launch(es) of {', '.join(kernels)} "
              f"[{time.perf_counter() - t0:.2f} s]")
    print("all checks passed" if not failures else f"{failures} check(s) FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
