"""Memory and launch-path cases (issue 2's figures): copies, staging, launch and pool costs."""

from __future__ import annotations

import numpy as np

from .case import Case, Prepared, register_case

_MiB = 1 << 20

_TINY_PTX = """
.version 7.0
.target sm_80
.address_size 64

.visible .entry oxi_bench_tiny(
\t.param .u64 p,
\t.param .u32 n
)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<3>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [p];
\tld.param.u32 %r1, [n];
\tmov.u32 %r2, %tid.x;
\tsetp.ge.u32 %p1, %r2, %r1;
\t@%p1 bra $L_done;
\tmul.wide.u32 %rd2, %r2, 4;
\tadd.u64 %rd3, %rd1, %rd2;
\tst.global.u32 [%rd3], %r2;
$L_done:
\tret;
}
"""


def _torch():
    try:
        import torch

        return torch if torch.cuda.is_available() else None
    except Exception:
        return None


def _cupy():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:
        return None


def _prep_copy_d2d(quick: bool) -> Prepared:
    import oxicuda
    from oxicuda.driver.backend import api

    nbytes = (4 << 10) if not _torch() else (256 * _MiB if quick else 4096 * _MiB)
    n = nbytes // 4
    src = oxicuda.asarray(np.random.default_rng(0).standard_normal(n, dtype=np.float32))
    dst = oxicuda.empty(n, np.float32)
    drv = api()

    def ours(i: int) -> None:
        drv.memcpy_dtod(dst.ptr, src.ptr, nbytes, 0)

    def check() -> float:
        return float(np.max(np.abs(dst.get() - src.get())))

    ours(0)
    drv.ctx_synchronize()
    prepared = Prepared(ours=ours, check=check, tolerance=0.0, bytes=2 * nbytes)
    torch = _torch()
    if torch is not None:
        ts = torch.randn(n, device="cuda")
        td = torch.empty_like(ts)
        prepared.vendor = lambda i: td.copy_(ts)
        prepared.vendor_name = "torch copy_"
    return prepared


def _prep_host_copy(direction: str, kind: str):
    """256 MiB between a pageable numpy array and the device, host-to-device ("h2d") or back
    ("d2h"): through the pinned staging path (``DeviceArray.set`` / ``memory.staging.
    copy_device_to_host``, what ``DeviceArray.get`` uses), a plain ``cuMemcpyHtoD/DtoH`` of the same
    pageable array, and a pinned host buffer (the peak)."""
    h2d = direction == "h2d"

    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda.driver.backend import api
        from oxicuda.memory.staging import copy_device_to_host

        drv = api()
        nbytes = (64 * _MiB if quick else 256 * _MiB) if _torch() else _MiB
        want = np.random.default_rng(1 if h2d else 2).standard_normal(nbytes // 4, dtype=np.float32)
        host = want if h2d else np.full_like(want, np.nan)  # the pageable side
        dev = oxicuda.empty(want.shape, np.float32) if h2d else oxicuda.asarray(want)
        pinned = None
        if kind == "pinned":
            hptr, view = drv.mem_alloc_host(nbytes)
            pinned = (hptr, np.frombuffer(view, dtype=np.float32))
            pinned[1][:] = want if h2d else np.nan

        def ours(i: int) -> None:
            if kind == "staging":
                dev.set(host) if h2d else copy_device_to_host(host, dev.ptr)
            elif kind == "plain":
                (drv.memcpy_htod(dev.ptr, host.ctypes.data, nbytes) if h2d
                 else drv.memcpy_dtoh(host.ctypes.data, dev.ptr, nbytes))
            else:
                drv.memcpy_htod(dev.ptr, pinned[0], nbytes, 0) if h2d else drv.memcpy_dtoh(pinned[0], dev.ptr, nbytes, 0)

        def check() -> float:
            ours(0)
            drv.ctx_synchronize()
            got = dev.get() if h2d else (pinned[1] if pinned is not None else host)
            return float(np.max(np.abs(got - want)))

        def cleanup() -> None:
            if pinned is not None:
                drv.mem_free_host(pinned[0])

        return Prepared(ours=ours, check=check, tolerance=0.0, cleanup=cleanup, bytes=nbytes)

    return prepare


def _tiny_kernel():
    """The tiny kernel loaded through the public Module, a 32-element output and its count."""
    import oxicuda
    from oxicuda.driver.module import Module

    fn = Module(_TINY_PTX).get_function("oxi_bench_tiny")
    return fn, oxicuda.empty(32, np.uint32), np.uint32(32)


def _tiny_check(ours, out):
    def check() -> float:
        out.fill(0xFFFFFFFF)
        ours(0)
        got = out.get()
        return float(np.max(np.abs(got.astype(np.int64) - np.arange(32))))

    return check


def _cupy_tiny(n):
    """CuPy's RawKernel of the same kernel, called as CuPy users spell it; None without CuPy."""
    cupy = _cupy()
    if cupy is None:
        return None
    src = r'extern "C" __global__ void tiny(unsigned* p, unsigned n)'
    src += r'{ unsigned t = threadIdx.x; if (t < n) p[t] = t; }'
    kern = cupy.RawKernel(src, "tiny")
    cout = cupy.empty(32, dtype=cupy.uint32)
    kern((1,), (32,), (cout, n))
    return lambda i: kern((1,), (32,), (cout, n))


def _prep_launch(spelling: str):
    """The public launch call, ``fn(grid, block, args)``, with ints or with CuPy's 1-tuples."""

    def prepare(quick: bool) -> Prepared:
        fn, out, n = _tiny_kernel()
        args = (out, n)
        if spelling == "ints":
            def ours(i: int) -> None:
                fn(1, 32, args)
        else:
            def ours(i: int) -> None:
                fn((1,), (32,), args)

        prepared = Prepared(ours=ours, check=_tiny_check(ours, out), tolerance=0.0)
        vendor = _cupy_tiny(n)
        if vendor is not None:
            prepared.vendor = vendor
            prepared.vendor_name = "cupy RawKernel"
        return prepared

    return prepare


def _prep_driver_entry(quick: bool) -> Prepared:
    """The two driver entry points through oxicuda's cffi binding, with everything prepared:
    cuLaunchKernelEx with the launch plan's prebuilt config (what ``fn(...)`` calls) against
    cuLaunchKernel with 11 converted arguments (the vendor column). The difference is the
    driver's and cffi's, not oxicuda's Python."""
    import struct

    from oxicuda.driver.backend import api

    drv = api()
    fn, out, _ = _tiny_kernel()
    plan = drv.launch_plan(fn.handle, fn.layout)
    if plan is None:
        raise RuntimeError("this driver has no cuLaunchKernelEx launch plan")
    struct.pack_into("<" + plan.header_format + "QI", plan.buffer, 0, 1, 1, 1, 32, 1, 1, 0, 0,
                     out.ptr, 32)
    call, (c0, c1, c2, c3) = plan.call, plan.call_args
    legacy = drv.param_buffer(fn.layout)
    struct.pack_into("<QI", legacy.data, 0, out.ptr, 32)
    launch, handle, pointers, null = drv.lib.cuLaunchKernel, fn.handle, legacy.handle, drv.ffi.NULL

    def ours(i: int) -> None:
        call(c0, c1, c2, c3)

    def vendor(i: int) -> None:
        launch(handle, 1, 1, 1, 32, 1, 1, 0, 0, pointers, null)

    return Prepared(ours=ours, check=_tiny_check(ours, out), tolerance=0.0, vendor=vendor,
                    vendor_name="cuLaunchKernel through the same cffi binding")


def _prep_pool(quick: bool) -> Prepared:
    import oxicuda
    from oxicuda.driver.backend import api

    drv = api()

    def ours(i: int) -> None:
        a = oxicuda.empty(1 << 18, np.float32)  # 1 MiB through the caching pool
        del a

    def raw(i: int) -> None:
        p = drv.mem_alloc(1 << 20)
        drv.mem_free(p)

    return Prepared(ours=ours, vendor=raw, vendor_name="cuMemAlloc+cuMemFree")


register_case(Case("memory", "copy_d2d", _prep_copy_d2d, unit="GB/s",
                   bytes=2 * 4096 * _MiB, note="bytes = read + write; quick pass uses 256 MiB"))
_COPY_NOTES = {"staging": "pageable numpy through the pinned staging buffer",
               "plain": "pageable numpy, plain cuMemcpyHtoD / cuMemcpyDtoH", "pinned": "pinned host memory: the peak"}
for _dir in ("h2d", "d2h"):
    for _kind in ("staging", "plain", "pinned"):
        register_case(Case("memory", f"{_dir}_256MiB_{_kind}", _prep_host_copy(_dir, _kind), unit="GB/s",
                           bytes=256 * _MiB, gpu_only=True, note=_COPY_NOTES[_kind]))
register_case(Case("memory", "launch_tiny_kernel", _prep_launch("ints"), unit="us", timing="host",
                   note="host cost per launch of a cached tiny kernel: fn(1, 32, args)"))
register_case(Case("memory", "launch_tiny_kernel_tuples", _prep_launch("tuples"), unit="us",
                   timing="host", note="the same, spelled fn((1,), (32,), args) as CuPy is"))
register_case(Case("memory", "launch_driver_entry", _prep_driver_entry, unit="us", timing="host",
                   gpu_only=True, note="bare cuLaunchKernelEx (ours) vs cuLaunchKernel, same cffi"))
register_case(Case("memory", "pool_alloc_1MiB", _prep_pool, unit="us", timing="host",
                   note="vendor column: raw cuMemAlloc+cuMemFree"))
