"""The launch path on the live backend (the emulator in CI; the real driver, through the
``cuLaunchKernelEx`` launch plan, on a GPU): what a kernel sees of its geometry, dynamic shared
memory, stream and arguments, for every way a launch can be spelled, and back-to-back launches
that reuse a function's parameter buffers without mixing their arguments.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from test_driver_launch import AXPB_PTX

import oxicuda
from oxicuda.driver.backend import api
from oxicuda.driver.module import Module
from oxicuda.driver.stream import Stream
from oxicuda.ptx.validate import find_ptxas

# probe(out): block (0,0,0) thread (0,0,0) writes nctaid.xyz, ntid.xyz and %dynamic_smem_size
PROBE_PTX = r"""
.version 7.0
.target sm_80
.address_size 64

.visible .entry oxi_launch_probe(
    .param .u64 oxi_launch_probe_out
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<3>;

    ld.param.u64 %rd1, [oxi_launch_probe_out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %tid.y;
    or.b32 %r1, %r1, %r2;
    mov.u32 %r2, %tid.z;
    or.b32 %r1, %r1, %r2;
    mov.u32 %r2, %ctaid.x;
    or.b32 %r1, %r1, %r2;
    mov.u32 %r2, %ctaid.y;
    or.b32 %r1, %r1, %r2;
    mov.u32 %r2, %ctaid.z;
    or.b32 %r1, %r1, %r2;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_done;
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r3, %nctaid.x;
    st.global.u32 [%rd2], %r3;
    mov.u32 %r4, %nctaid.y;
    st.global.u32 [%rd2+4], %r4;
    mov.u32 %r5, %nctaid.z;
    st.global.u32 [%rd2+8], %r5;
    mov.u32 %r6, %ntid.x;
    st.global.u32 [%rd2+12], %r6;
    mov.u32 %r7, %ntid.y;
    st.global.u32 [%rd2+16], %r7;
    mov.u32 %r8, %ntid.z;
    st.global.u32 [%rd2+20], %r8;
    mov.u32 %r9, %dynamic_smem_size;
    st.global.u32 [%rd2+24], %r9;
$L_done:
    ret;
}
"""


def _dims(value) -> tuple[int, int, int]:
    t = (value,) if isinstance(value, int) else tuple(value)
    return t + (1,) * (3 - len(t))


def test_the_probe_kernel_assembles_with_ptxas(tmp_path):
    import subprocess

    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("no ptxas")
    src = tmp_path / "probe.ptx"
    src.write_text(PROBE_PTX)
    for arch in ("sm_86", "sm_90"):
        done = subprocess.run([ptxas, f"-arch={arch}", "-o", str(tmp_path / "p.cubin"), str(src)],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("spelling", ["call", "prepared"])
def test_kernel_sees_the_geometry_shared_memory_and_stream_of_every_spelling(spelling):
    fn = Module(PROBE_PTX).get_function("oxi_launch_probe")
    out = oxicuda.empty(7, np.uint32)
    own = Stream(non_blocking=True)
    cases = [
        (3, 32, 0, None),
        ((2,), (16,), 256, own),
        ((2, 3), (8, 4), 0, own.handle),
        ((3, 2, 2), (4, 2, 2), 1024, None),
        (np.int64(2), (np.int32(4), 2), np.int64(64), own),
    ]
    for grid, block, smem, stream in cases:
        out.fill(0xFFFFFFFF)
        api().ctx_synchronize()
        if spelling == "call":
            fn(grid, block, (out,), shared_mem=smem, stream=stream)
        else:
            fn.prepared_launch(grid, block, shared_mem=smem)((out,), stream)
        api().ctx_synchronize()
        expected = (*_dims(int(grid) if np.isscalar(grid) else tuple(int(g) for g in grid)),
                    *_dims(tuple(int(b) for b in block) if isinstance(block, tuple) else int(block)),
                    int(smem))
        assert tuple(int(v) for v in out.get()) == expected, (grid, block, smem, stream)


def test_back_to_back_launches_keep_their_own_arguments(rng):
    """Launches queued without a synchronisation between them, each with other arguments: the
    driver must have taken every launch's parameters when the call returned."""
    fn = Module(AXPB_PTX).get_function("axpb")
    n = 257
    xs = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    x_dev = [oxicuda.asarray(x) for x in xs]
    outs = [oxicuda.full(n, np.nan, np.float32) for _ in range(24)]
    scalars = []
    s = Stream(non_blocking=True)
    for k, out in enumerate(outs):
        a = np.float32(rng.standard_normal())
        b, c = float(rng.standard_normal()), int(rng.integers(-50, 50))
        scalars.append((k % 3, a, b, c))
        args = (out, x_dev[k % 3], a, b, c, np.uint32(n))
        if k % 3 == 0:
            fn(3, 128, args)
        elif k % 3 == 1:
            fn((3, 1), (128,), args, stream=s)
        else:
            fn.prepared_launch(3, 128)(args, s)
    api().ctx_synchronize()
    for out, (xi, a, b, c) in zip(outs, scalars):
        x = xs[xi].astype(np.float64)
        ref64 = x * float(a) + b + c
        got = out.get()
        # the kernel rounds each step to float32 (mul.rn, add.rn): exact against those steps
        steps = (xs[xi] * a + np.float32(b)) + np.float32(c)
        np.testing.assert_array_equal(got, steps)
        assert np.all(np.abs(got - ref64) <= 1e-5 * (1 + np.abs(ref64)))


@pytest.mark.gpu
def test_real_driver_launches_through_the_cuLaunchKernelEx_plan_and_the_seam_still_works(rng):
    drv = api()
    fn = Module(AXPB_PTX).get_function("axpb")
    assert drv._launch_ex is not None, "this driver lacks cuLaunchKernelEx"
    assert drv.launch_plan(fn.handle, fn.layout) is not None
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    xd = oxicuda.asarray(x)
    out = oxicuda.full(n, np.nan, np.float32)
    # the DriverAPI seam (cuLaunchKernel, 11 arguments) on the same function
    params = drv.param_buffer(fn.layout)
    fn.packer.pack_into(params.data, (out, xd, 0.5, 1.25, -2, n))
    drv.launch_kernel(fn.handle, (8, 1, 1), (128, 1, 1), 0, 0, params)
    drv.ctx_synchronize()
    np.testing.assert_array_equal(out.get(), (x * np.float32(0.5) + np.float32(1.25)) + np.float32(-2))
    # and through the plan, with the bytes a launch plan packs
    out2 = oxicuda.full(n, np.nan, np.float32)
    plan = drv.launch_plan(fn.handle, fn.layout)
    struct.pack_into("<" + plan.header_format, plan.buffer, 0, 8, 1, 1, 128, 1, 1, 0, 0)
    fn.packer.pack_into(memoryview(plan.buffer)[plan.header_size:], (out2, xd, 2.0, 0.0, 3, n))
    assert plan.call(*plan.call_args) == 0
    drv.ctx_synchronize()
    np.testing.assert_array_equal(out2.get(), x * np.float32(2.0) + np.float32(3))


def test_a_launch_from_a_thread_without_a_context_computes(rng):
    """The first thing a new thread does is a launch: no context is current there yet (on the
    real driver the launch is refused once, then made with the primary context current)."""
    import threading

    from oxicuda.driver import context

    fn = Module(AXPB_PTX).get_function("axpb")
    n = 300
    x = rng.standard_normal(n).astype(np.float32)
    xd = oxicuda.asarray(x)
    out = oxicuda.full(n, np.nan, np.float32)
    seen = {}

    def worker() -> None:
        seen["context before"] = getattr(context._local, "ctx", None)
        try:
            fn(3, 128, (out, xd, np.float32(1.5), -0.25, 4, np.uint32(n)))
            api().ctx_synchronize()
        except Exception as exc:
            seen["error"] = exc
        seen["context after"] = getattr(context._local, "ctx", None)

    th = threading.Thread(target=worker)
    th.start()
    th.join()
    assert seen.get("error") is None, seen["error"]
    assert seen["context before"] is None and seen["context after"] is not None
    np.testing.assert_array_equal(out.get(), (x * np.float32(1.5) + np.float32(-0.25)) + np.float32(4))
