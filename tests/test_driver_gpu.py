"""The real driver: attributes against PyTorch/CuPy, launches, events, JIT logs, OOM, sharing.

Every test is marked ``gpu`` and skips unless the live backend is ``cuda``. Run on a GPU with
``OXICUDA_BACKEND=cuda python3 -m pytest -q tests/test_driver_gpu.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_driver_launch import ADD_ONE_PTX, AXPB_PTX

pytestmark = pytest.mark.gpu


def _api():
    """The driver API (conftest makes the primary context current on the main thread)."""
    from oxicuda.driver import backend

    return backend.api()


def _vendor_properties() -> dict[str, int]:
    """Device 0's properties read by CuPy or PyTorch, keyed by our attribute names."""
    try:
        import cupy

        p = cupy.cuda.runtime.getDeviceProperties(0)
        return {
            "MULTIPROCESSOR_COUNT": p["multiProcessorCount"],
            "COMPUTE_CAPABILITY_MAJOR": p["major"],
            "COMPUTE_CAPABILITY_MINOR": p["minor"],
            "MAX_THREADS_PER_MULTIPROCESSOR": p["maxThreadsPerMultiProcessor"],
            "MAX_THREADS_PER_BLOCK": p["maxThreadsPerBlock"],
            "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": p["sharedMemPerBlockOptin"],
            "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": p["sharedMemPerMultiprocessor"],
            "L2_CACHE_SIZE": p["l2CacheSize"],
            "WARP_SIZE": p["warpSize"],
            "MAX_REGISTERS_PER_BLOCK": p["regsPerBlock"],
            "MAX_REGISTERS_PER_MULTIPROCESSOR": p["regsPerMultiprocessor"],
            "MAX_BLOCKS_PER_MULTIPROCESSOR": p["maxBlocksPerMultiProcessor"],
        }
    except ImportError:
        pass
    try:
        import torch
    except ImportError:
        pytest.skip("neither CuPy nor PyTorch is importable to cross-check device attributes")
    p = torch.cuda.get_device_properties(0)
    out = {
        "MULTIPROCESSOR_COUNT": p.multi_processor_count,
        "COMPUTE_CAPABILITY_MAJOR": p.major,
        "COMPUTE_CAPABILITY_MINOR": p.minor,
    }
    optional = {
        "MAX_THREADS_PER_MULTIPROCESSOR": "max_threads_per_multi_processor",
        "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": "shared_memory_per_block_optin",
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": "shared_memory_per_multiprocessor",
        "L2_CACHE_SIZE": "L2_cache_size",
        "WARP_SIZE": "warp_size",
        "MAX_REGISTERS_PER_MULTIPROCESSOR": "regs_per_multiprocessor",
    }
    for ours, theirs in optional.items():
        if hasattr(p, theirs):
            out[ours] = getattr(p, theirs)
    return out


def test_device_attributes_match_the_vendor_library():
    from oxicuda.driver.device import Device

    dev = Device(0)
    vendor = _vendor_properties()
    assert len(vendor) >= 3
    mismatched = {k: (dev.get_attribute(k), v) for k, v in vendor.items() if dev.get_attribute(k) != v}
    assert not mismatched, f"ours vs vendor: {mismatched}"
    assert dev.compute_capability == (vendor["COMPUTE_CAPABILITY_MAJOR"],
                                      vendor["COMPUTE_CAPABILITY_MINOR"])
    assert dev.multiprocessor_count == vendor["MULTIPROCESSOR_COUNT"]


def test_h200_matches_the_design_table():
    from oxicuda.driver.device import Device

    dev = Device(0)
    if "H200" not in dev.name:
        pytest.skip(f"device is {dev.name}, not an H200")
    assert dev.compute_capability == (9, 0) and dev.arch == "sm_90"
    assert dev.multiprocessor_count == 132
    assert dev.max_threads_per_multiprocessor == 2048
    assert dev.max_shared_memory_per_block_optin == 232448
    assert dev.max_registers_per_multiprocessor == 65536
    assert dev.l2_cache_size == 62914560
    assert dev.warp_size == 32


def test_device_basics_are_plausible():
    from oxicuda.driver.device import Device

    dev = Device(0)
    assert isinstance(dev.name, str) and dev.name
    assert len(dev.uuid) == 16 and dev.uuid != bytes(16)
    dev.use()  # cuMemGetInfo needs a current context
    free, total = _api().mem_get_info()
    assert 0 < free <= total and abs(total - dev.total_memory) <= total // 100
    assert _api().driver_get_version() >= 11000


def test_add_one_kernel_on_the_gpu(rng):
    from oxicuda.driver import Module, trace

    drv = _api()
    fn = Module(ADD_ONE_PTX).get_function("add_one")
    assert fn.attributes["num_regs"] > 0
    assert fn.max_active_blocks_per_sm(256) > 0
    x = rng.standard_normal(100_003).astype(np.float32)
    n = 100_000
    ptr = drv.mem_alloc(x.nbytes)
    try:
        drv.memcpy_htod(ptr, x.ctypes.data, x.nbytes)
        with trace() as t:
            fn((n + 255) // 256, 256, [ptr, n])
        drv.ctx_synchronize()
        got = np.full_like(x, np.nan)
        drv.memcpy_dtoh(got.ctypes.data, ptr, x.nbytes)
    finally:
        drv.mem_free(ptr)
    expected = x.copy()
    expected[:n] += np.float32(1)
    np.testing.assert_array_equal(got, expected)
    assert [r.kernel for r in t.launches] == ["add_one"]


def test_axpb_kernel_reads_mixed_parameters_on_the_gpu(rng):
    from oxicuda.driver import Module

    drv = _api()
    fn = Module(AXPB_PTX).get_function("axpb")
    n = 5000
    x = rng.standard_normal(n).astype(np.float32)
    a, b, c = np.float32(rng.standard_normal()), float(rng.standard_normal()), int(rng.integers(-50, 50))
    px, pout = drv.mem_alloc(x.nbytes), drv.mem_alloc(x.nbytes)
    try:
        drv.memcpy_htod(px, x.ctypes.data, x.nbytes)
        drv.memset_d32(pout, 0x7FC00000, n)  # NaN
        fn((n + 127) // 128, 128, [pout, px, a, b, c, n])
        got = np.empty_like(x)
        drv.memcpy_dtoh(got.ctypes.data, pout, x.nbytes)
    finally:
        drv.mem_free(px)
        drv.mem_free(pout)
    expected = ((x * a).astype(np.float32) + np.float32(b)).astype(np.float32) + np.float32(c)
    np.testing.assert_array_equal(got, expected)


def test_event_timed_loop_of_launches_on_a_stream(rng):
    from oxicuda.driver import Event, Module, Stream

    drv = _api()
    fn = Module(ADD_ONE_PTX).get_function("add_one")
    n = 1 << 20
    x = rng.standard_normal(n).astype(np.float32)
    ptr = drv.mem_alloc(x.nbytes)
    try:
        drv.memcpy_htod(ptr, x.ctypes.data, x.nbytes)
        s = Stream(non_blocking=True)
        start, end = Event(), Event()
        start.record(s)
        for _ in range(100):
            fn(n // 256, 256, [ptr, n], stream=s)
        end.record(s)
        end.synchronize()
        ms = Event.elapsed_ms(start, end)
        got = np.empty_like(x)
        drv.memcpy_dtoh(got.ctypes.data, ptr, x.nbytes)
    finally:
        drv.mem_free(ptr)
    assert 0.0 < ms < 10_000.0
    expected = x.copy()
    for _ in range(100):
        expected += np.float32(1)
    np.testing.assert_array_equal(got, expected)


def test_bad_ptx_raises_module_load_error_with_the_jit_log():
    from oxicuda.driver import Module, ModuleLoadError

    bad = ADD_ONE_PTX.replace("add.rn.f32 %f2, %f1, 0f3F800000;", "add.rn.f32 %f2, %f1, %nosuch;")
    with pytest.raises(ModuleLoadError) as info:
        Module(bad)
    assert "nosuch" in info.value.detail or "error" in info.value.detail.lower(), info.value.detail
    assert info.value.detail in str(info.value)


def test_ten_terabyte_allocation_raises_out_of_memory():
    from oxicuda.driver import OutOfMemoryError

    with pytest.raises(OutOfMemoryError, match="cuMemAlloc_v2"):
        _api().mem_alloc(10 * 2**40)


def test_copies_memsets_pinned_memory_and_pointer_attributes(rng):
    from oxicuda.driver import enums
    from oxicuda.driver.context import ensure_context

    drv = _api()
    ctx = ensure_context()
    rows, cols, pitch = 37, 19, 32
    host = rng.standard_normal((rows, pitch)).astype(np.float32)
    src, dst = drv.mem_alloc(host.nbytes), drv.mem_alloc(host.nbytes)
    hptr, view = drv.mem_alloc_host(host.nbytes)
    try:
        drv.memcpy_htod(src, host.ctypes.data, host.nbytes)
        drv.memset_d8(dst, 0xFF, host.nbytes)  # NaN pattern
        drv.memcpy_2d(dst, pitch * 4, src, pitch * 4, cols * 4, rows)
        drv.memcpy_dtoh(hptr, dst, host.nbytes)
        got = np.frombuffer(view, dtype=np.float32).reshape(rows, pitch).copy()
        np.testing.assert_array_equal(got[:, :cols], host[:, :cols])
        assert np.isnan(got[:, cols:]).all()
        base, size = drv.mem_get_address_range(src + 100)
        assert base == src and size >= host.nbytes
        assert drv.pointer_get_attribute(enums.POINTER_ATTRIBUTES["CONTEXT"], src) == ctx
        assert drv.pointer_get_attribute(enums.POINTER_ATTRIBUTES["MEMORY_TYPE"], src) == \
            enums.MEMORY_TYPES["DEVICE"]
    finally:
        drv.mem_free(src)
        drv.mem_free(dst)
        drv.mem_free_host(hptr)


def test_tensor_map_encode_returns_128_bytes():
    from oxicuda.driver import enums
    from oxicuda.driver.device import Device

    if Device(0).compute_capability < (9, 0):
        pytest.skip("tensor maps need sm_90")
    drv = _api()
    ptr = drv.mem_alloc(256 * 256 * 4)
    try:
        tmap = drv.tensor_map_encode_tiled(
            enums.TENSOR_MAP_DATA_TYPES["FLOAT32"], 2, ptr, (256, 256), (256 * 4,), (32, 32),
            (1, 1), 0, enums.TENSOR_MAP_SWIZZLE["NONE"], 0, 0,
        )
    finally:
        drv.mem_free(ptr)
    assert len(tmap) == 128 and tmap != bytes(128)


def test_primary_context_is_shared_with_pytorch(rng):
    torch = pytest.importorskip("torch")
    from oxicuda.driver import Module, enums
    from oxicuda.driver.context import ensure_context, primary_context

    x = torch.from_numpy(rng.standard_normal(4096).astype(np.float32)).cuda()
    torch.cuda.synchronize()
    drv = _api()
    ensure_context()
    got = np.full(4096, np.nan, dtype=np.float32)
    drv.memcpy_dtoh(got.ctypes.data, x.data_ptr(), got.nbytes)
    np.testing.assert_array_equal(got, x.cpu().numpy())
    ctx = drv.pointer_get_attribute(enums.POINTER_ATTRIBUTES["CONTEXT"], x.data_ptr())
    assert ctx == primary_context(0)
    fn = Module(ADD_ONE_PTX).get_function("add_one")
    before = x.cpu().numpy()
    fn(16, 256, [x, 4096])  # a torch tensor through __cuda_array_interface__
    drv.ctx_synchronize()
    np.testing.assert_array_equal(x.cpu().numpy(), before + np.float32(1))
