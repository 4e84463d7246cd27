import statistics
import time

import numpy as np

import oxicuda
from oxicuda.blas.gemm_core import gemm_colmajor
from oxicuda.driver.backend import api

drv = api()
a = oxicuda.asarray(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32))
c = oxicuda.empty((64, 64), np.float32)
def t(f, n=5000):
    for _ in range(200): f()
    drv.ctx_synchronize()
    t0 = time.perf_counter()
    for _ in range(n): f()
    t1 = time.perf_counter()
    drv.ctx_synchronize()
    return (t1 - t0) / n * 1e6
rows = {"range": [], "gemm_checked": [], "gemm_owned": [], "empty": []}
for r in range(7):
    rows["range"].append(t(lambda: drv.mem_get_address_range(a.ptr)))
    rows["gemm_checked"].append(t(lambda: gemm_colmajor("N", "N", 64, 64, 64, 1.0, a.ptr, 64, a.ptr, 64, 0.0, c.ptr, 64, dtype="float32")))
    rows["gemm_owned"].append(t(lambda: gemm_colmajor("N", "N", 64, 64, 64, 1.0, a.ptr, 64, a.ptr, 64, 0.0, c.ptr, 64, dtype="float32", _owned=True)))
    rows["empty"].append(t(lambda: None))
for k, v in rows.items():
    print(f"{k:14s} median {statistics.median(v):7.3f} us  rounds {[round(x, 2) for x in v]}")
