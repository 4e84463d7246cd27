"""Run Python kernels under compute-sanitizer on the GPU (issue 21: GPU tests under memcheck):

    compute-sanitizer --tool memcheck --error-exitcode 1 python3 benches/gpu_checks/jit_memcheck.py

Every launch below must be clean: checked and unchecked kernels in bounds, shared memory,
atomics, warp collectives, elementwise (vectorized and strided) and reductions (all kinds), and a
checked out-of-bounds access that must be caught by the kernel's own check (KernelError) before
any invalid access reaches memory. Prints OK at the end."""

import numpy as np

import oxicuda
from oxicuda.jit import KernelError, grid

rng = np.random.default_rng(0)


@oxicuda.kernel
def shifted(x, out):
    i = grid(1)
    if i < len(out):
        out[i] = x[i + 1]


x = oxicuda.asarray(rng.standard_normal(1 << 20).astype(np.float32))
out = oxicuda.empty(1 << 20, np.float32)
shifted[(1 << 20) // 256, 256](x, out[: (1 << 20) - 1])
shifted.check()
try:  # raised by the launch on the emulator, by check() on a GPU
    shifted[(1 << 20) // 256, 256](x, out)
    shifted.check()
    raise SystemExit("expected a KernelError")
except KernelError as exc:
    print("caught:", exc)
fused = oxicuda.elementwise(lambda a, b, c: a * b + c)
fused(x, x, x).get()
fused(x[1:], x[:-1], 2.0).get()
d = oxicuda.asarray(rng.standard_normal((1000, 777)))
rs = oxicuda.reduction(lambda v: v, lambda a, b: a + b, 0)
for axis in (None, 0, 1):
    np.testing.assert_allclose(rs(d, axis=axis).get(), d.get().sum(axis=axis), rtol=1e-10)
oxicuda.synchronize()
print("OK")
