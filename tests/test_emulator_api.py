"""EmulatorAPI's non-launch driver calls: device facts, memory, copies, streams, events,
functions, occupancy, tensor maps."""

from __future__ import annotations

import numpy as np
import pytest

from oxicuda.driver.enums import DEVICE_ATTRIBUTES as DA
from oxicuda.driver.enums import FUNCTION_ATTRIBUTES as FA
from oxicuda.driver.enums import POINTER_ATTRIBUTES as PA
from oxicuda.driver.errors import CudaError, ModuleLoadError, OutOfMemoryError
from oxicuda.emulator.api import EmulatorAPI
from oxicuda.emulator.devices import EMULATED_DEVICES
from oxicuda.emulator.tensormap import TensorMapInfo, decode_tensor_map


@pytest.fixture
def emu():
    return EmulatorAPI()


@pytest.mark.parametrize("arch,sms,optin,l2", [("sm_86", 48, 101376, 4 << 20),
                                               ("sm_80", 108, 166912, 40 << 20),
                                               ("sm_90", 132, 232448, 62914560)])
def test_device_attributes_follow_the_arch(monkeypatch, arch, sms, optin, l2):
    monkeypatch.setenv("OXICUDA_EMULATOR_ARCH", arch)
    e = EmulatorAPI()
    get = lambda name: e.device_get_attribute(DA[name], 0)
    assert get("MULTIPROCESSOR_COUNT") == sms
    assert get("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN") == optin
    assert get("L2_CACHE_SIZE") == l2
    assert (get("COMPUTE_CAPABILITY_MAJOR"), get("COMPUTE_CAPABILITY_MINOR")) == EMULATED_DEVICES[arch].cc
    assert get("WARP_SIZE") == 32 and get("MAX_THREADS_PER_BLOCK") == 1024
    assert get("MAX_REGISTERS_PER_MULTIPROCESSOR") == 65536
    with pytest.raises(CudaError):
        e.device_get(1)


def test_bad_arch_is_rejected(monkeypatch):
    monkeypatch.setenv("OXICUDA_EMULATOR_ARCH", "sm_70")
    with pytest.raises(ValueError, match="sm_70"):
        EmulatorAPI()


def test_allocations_are_aligned_distinct_and_round_trip(emu, rng):
    ptrs = [emu.mem_alloc(int(n)) for n in rng.integers(1, 5000, 10)]
    assert all(p % 256 == 0 for p in ptrs) and len(set(ptrs)) == 10
    x = rng.standard_normal(300)
    p = emu.mem_alloc(x.nbytes)
    emu.memcpy_htod(p, x.ctypes.data, x.nbytes)
    y = np.full(100, np.nan)
    emu.memcpy_dtoh(y.ctypes.data, p + 800, y.nbytes)  # a sub-array pointer
    np.testing.assert_array_equal(y, x[100:200])
    q = emu.mem_alloc(x.nbytes)
    emu.memcpy_dtod(q, p, x.nbytes)
    z = np.empty_like(x)
    emu.memcpy_dtoh(z.ctypes.data, q, z.nbytes)
    np.testing.assert_array_equal(z, x)
    assert emu.mem_get_address_range(p + 17) == (p, x.nbytes)
    assert emu.pointer_get_attribute(PA["MEMORY_TYPE"], p + 8) == 2


def test_memset_and_2d_copy(emu, rng):
    p = emu.mem_alloc(64 * 10)
    emu.memset_d32(p, 0xDEADBEEF, 160)
    emu.memset_d8(p + 4, 0x11, 3)
    out = np.empty(160, np.uint32)
    emu.memcpy_dtoh(out.ctypes.data, p, out.nbytes)
    assert out[0] == 0xDEADBEEF and out[1] == 0xDE111111 and (out[2:] == 0xDEADBEEF).all()
    src = rng.integers(0, 2**31, (10, 16)).astype(np.uint32)
    s = emu.mem_alloc(src.nbytes)
    emu.memcpy_htod(s, src.ctypes.data, src.nbytes)
    d = emu.mem_alloc(10 * 40)
    emu.memset_d8(d, 0, 400)
    emu.memcpy_2d(d, 40, s + 8, 64, 24, 10)
    got = np.empty((10, 10), np.uint32)
    emu.memcpy_dtoh(got.ctypes.data, d, got.nbytes)
    np.testing.assert_array_equal(got[:, :6], src[:, 2:8])
    assert (got[:, 6:] == 0).all()


def test_out_of_memory_and_bad_frees(monkeypatch):
    monkeypatch.setenv("OXICUDA_EMULATOR_MEM_BYTES", str(1 << 20))
    e = EmulatorAPI()
    p = e.mem_alloc(1 << 19)
    with pytest.raises(OutOfMemoryError) as info:
        e.mem_alloc(1 << 20)
    assert info.value.code == 2
    e.mem_free(p)
    with pytest.raises(CudaError) as info:
        e.mem_free(p)
    assert info.value.code == 1 and "already freed" in str(info.value)
    with pytest.raises(CudaError):
        e.mem_free(0x1234)
    free, total = e.mem_get_info()
    assert (free, total) == (1 << 20, 1 << 20)


def test_copies_outside_allocations_raise(emu):
    p = emu.mem_alloc(100)
    buf = np.zeros(200, np.uint8)
    with pytest.raises(CudaError, match="past the end|not inside"):
        emu.memcpy_htod(p, buf.ctypes.data, 200)


def test_host_memory_streams_events(emu):
    h, view = emu.mem_alloc_host(1000)
    view[:4] = b"abcd"
    p = emu.mem_alloc(1000)
    s = emu.stream_create()
    emu.memcpy_htod(p, h, 1000, s)
    back = np.zeros(4, np.uint8)
    emu.memcpy_dtoh(back.ctypes.data, p, 4, s)
    assert bytes(back) == b"abcd"
    e0, e1 = emu.event_create(), emu.event_create()
    emu.event_record(e0, s)
    emu.event_record(e1, s)
    assert emu.stream_query(s) and emu.event_query(e1)
    assert emu.event_elapsed_time(e0, e1) >= 0.0
    emu.stream_destroy(s)
    with pytest.raises(CudaError):
        emu.stream_synchronize(s)
    emu.mem_free_host(h)
    with pytest.raises(CudaError):
        emu.mem_free_host(h)


KERNEL = """.version 8.0
.target sm_86
.address_size 64

.visible .entry k(
\t.param .u64 p
)
.maxntid 256, 1, 1
{
\t.reg .b32 %r<40>;
\t.reg .b64 %rd<10>;
\t.shared .align 16 .b8 tile[4096];
\t.local .align 8 .b8 depot[64];
\tret;
}
"""


def test_function_attributes_and_occupancy(emu):
    mod = emu.module_load_data(KERNEL.encode())
    f = emu.module_get_function(mod, "k")
    assert emu.func_get_attribute(FA["SHARED_SIZE_BYTES"], f) == 4096
    assert emu.func_get_attribute(FA["LOCAL_SIZE_BYTES"], f) == 64
    assert emu.func_get_attribute(FA["MAX_THREADS_PER_BLOCK"], f) == 256
    regs = emu.func_get_attribute(FA["NUM_REGS"], f)
    assert 40 + 20 <= regs <= 255
    assert emu.func_get_attribute(FA["MAX_DYNAMIC_SHARED_SIZE_BYTES"], f) == 48 * 1024 - 4096
    emu.func_set_attribute(f, FA["MAX_DYNAMIC_SHARED_SIZE_BYTES"], 101376 - 4096)
    with pytest.raises(CudaError):
        emu.func_set_attribute(f, FA["MAX_DYNAMIC_SHARED_SIZE_BYTES"], 101376)
    occ = emu.occupancy_max_active_blocks_per_multiprocessor(f, 256, 0)
    regs8 = (regs + 7) // 8 * 8
    assert occ == min(16, 1536 // 256, 65536 // (regs8 * 256), 102400 // (4096 + 1024))
    assert emu.occupancy_max_active_blocks_per_multiprocessor(f, 256, 60000) == 1
    assert emu.occupancy_max_active_blocks_per_multiprocessor(f, 512, 0) == 0
    with pytest.raises(CudaError) as info:
        emu.module_get_function(mod, "nope")
    assert info.value.code == 500


def test_unsupported_instruction_is_named_at_load(emu):
    text = KERNEL.replace("\tret;", "\tfrobnicate.b32 %r1, %r2;\n\tret;")
    with pytest.raises(ModuleLoadError, match=r"frobnicate\.b32.*|PTX line 15"):
        emu.module_load_data(text.encode())


def test_tensor_map_packs_and_decodes(emu):
    p = emu.mem_alloc(1 << 16)
    raw = emu.tensor_map_encode_tiled(7, 2, p, (100, 64), (512,), (32, 16), (1, 1), 0, 3, 0, 0)
    assert len(raw) == 128
    assert decode_tensor_map(raw) == TensorMapInfo(7, 2, p, (100, 64), (512,), (32, 16), (1, 1), 0, 3, 0, 0)
    with pytest.raises(CudaError):
        emu.tensor_map_encode_tiled(7, 2, p, (100, 64), (500,), (32, 16), (1, 1), 0, 3, 0, 0)


def test_the_backend_emulator_needs_a_current_context_per_thread_like_the_driver():
    import threading

    from oxicuda.driver import backend
    from oxicuda.driver.context import ensure_context
    from oxicuda.driver.errors import CudaError

    drv = backend.api()
    if drv.name != "emulator":
        pytest.skip("checks the emulator backend")
    seen = []

    def bare():
        try:
            drv.mem_alloc(256)
        except CudaError as exc:
            seen.append(exc.code)
        ensure_context()
        ptr = drv.mem_alloc(256)  # fine once a context is current in this thread
        drv.mem_free(ptr)
        seen.append("ok")

    t = threading.Thread(target=bare)
    t.start()
    t.join()
    assert seen == [201, "ok"]
