import statistics
import time

import numpy as np

import oxicuda
from oxicuda.dnn.conv import conv2d
from oxicuda.driver.backend import api
from oxicuda.driver.stream import Event

drv = api()
for (n, c, hw, k) in ((32, 64, 56, 64), (32, 128, 28, 128)):
    rng = np.random.default_rng(0)
    x = oxicuda.asarray(rng.standard_normal((n, c, hw, hw)).astype(np.float32))
    w = oxicuda.asarray(rng.standard_normal((k, c, 3, 3)).astype(np.float32))
    y = oxicuda.empty((n, k, hw, hw), np.float32)
    for algo in ("winograd_4x4", "winograd_2x2", "implicit_gemm"):
        f = lambda: conv2d(x, w, padding=1, algo=algo, out=y)
        for _ in range(5): f()
        drv.ctx_synchronize()
        per = []
        for _ in range(30):
            s, e = Event(), Event()
            s.record(0); f(); e.record(0); e.synchronize(); per.append(s.elapsed_time(e))
        s, e = Event(), Event()
        s.record(0)
        for _ in range(20): f()
        e.record(0); e.synchronize(); batch = s.elapsed_time(e) / 20
        t0 = time.perf_counter()
        for _ in range(20): f()
        host = (time.perf_counter() - t0) / 20 * 1e3
        drv.ctx_synchronize()
        with oxicuda.trace() as t:
            f()
        drv.ctx_synchronize()
        print(f"C{c} {hw}x{hw} {algo:14s} per-call median {statistics.median(per):.3f} min {min(per):.3f} max {max(per):.3f} ms | 20 back-to-back {batch:.3f} ms/call | host {host:.3f} ms/call | launches {[(r.kernel[:24], r.grid) for r in t.launches]}")
