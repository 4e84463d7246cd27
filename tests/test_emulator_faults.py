"""Faults: each kind raises LaunchError naming kernel, PTX line, block, thread and address;
writes before the fault stay; the emulator keeps working afterwards."""

from __future__ import annotations

import numpy as np
import pytest

from oxicuda.driver.errors import LaunchError
from oxicuda.emulator.api import EmulatorAPI
from oxicuda.emulator.interp.harness import run_ptx

HEAD = """.version 8.0
.target sm_86
.address_size 64

.visible .entry f(
\t.param .u64 p,
\t.param .u32 n
)
{
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<8>;
\t.reg .pred %p<4>;
\t.shared .align 4 .b8 sm[256];
\tld.param.u64 %rd1, [p];
\tld.param.u32 %r1, [n];
\tmov.u32 %r2, %tid.x;
\tmul.wide.u32 %rd2, %r2, 4;
\tadd.s64 %rd3, %rd1, %rd2;
"""


def kernel(body: str) -> str:
    return HEAD + body + "\tret;\n}\n"


@pytest.fixture
def emu():
    return EmulatorAPI()


def launch(emu, body, arr, n, block=64):
    return run_ptx(emu, kernel(body), "f", (2, 1, 1), (block, 1, 1), [arr, n])


def test_out_of_bounds_global_store_names_thread_and_address(emu):
    # thread i stores i at p[i + n]: with n = 60 threads 4..63 of block 0 are past a 64-element array
    body = "\tmul.wide.u32 %rd4, %r1, 4;\n\tadd.s64 %rd5, %rd3, %rd4;\n\tst.global.u32 [%rd5], %r2;\n"
    with pytest.raises(LaunchError) as info:
        launch(emu, body, np.zeros(64, np.uint32), 60)
    e = info.value
    assert e.code == 700
    msg = str(e)
    assert "kernel f" in msg and "PTX line 21: st.global.u32 [%rd5], %r2;" in msg
    assert "block (0, 0, 0)" in msg and "thread (4, 0, 0)" in msg and "past the end" in msg


def test_misaligned_access_is_716(emu):
    body = "\tadd.s64 %rd5, %rd3, 2;\n\tld.global.u32 %r3, [%rd5];\n"
    with pytest.raises(LaunchError) as info:
        launch(emu, body, np.zeros(64, np.uint32), 0)
    assert info.value.code == 716 and "misaligned" in str(info.value)


def test_shared_out_of_bounds(emu):
    body = "\tshl.b32 %r3, %r2, 3;\n\tst.shared.u32 [%r3], %r2;\n"
    with pytest.raises(LaunchError) as info:
        launch(emu, body, np.zeros(64, np.uint32), 0)
    assert info.value.code == 700 and "shared" in str(info.value) and "thread (32, 0, 0)" in str(info.value)


def test_freed_memory_access_faults(emu):
    p = emu.mem_alloc(256)
    emu.mem_free(p)
    import struct

    from oxicuda.driver.params import entry_layouts
    text = kernel("\tst.global.u32 [%rd3], %r2;\n")
    mod = emu.module_load_data(text.encode())
    f = emu.module_get_function(mod, "f")
    pb = emu.param_buffer(entry_layouts(text)["f"])
    struct.pack_into("<QI", pb.data, 0, p, 0)
    with pytest.raises(LaunchError, match="freed allocation"):
        emu.launch_kernel(f, (1, 1, 1), (32, 1, 1), 0, 0, pb)


def test_divergence_at_barrier(emu):
    body = ("\tsetp.lt.u32 %p1, %r2, 16;\n\t@%p1 bra $L_a;\n\tbar.sync 0;\n\tbra $L_b;\n"
            "$L_a:\n\tbar.sync 0;\n$L_b:\n")
    with pytest.raises(LaunchError) as info:
        launch(emu, body, np.zeros(64, np.uint32), 0)
    assert info.value.code == 719 and "divergence at a barrier" in str(info.value)


def test_barrier_after_some_threads_exit_is_fine(emu, rng):
    body = ("\tsetp.ge.u32 %p1, %r2, 40;\n\t@%p1 bra $L_end;\n\tshl.b32 %r3, %r2, 2;\n"
            "\tst.shared.u32 [%r3], %r2;\n\tbar.sync 0;\n\txor.b32 %r4, %r2, 1;\n\tshl.b32 %r4, %r4, 2;\n"
            "\tld.shared.u32 %r5, [%r4];\n\tst.global.u32 [%rd3], %r5;\n$L_end:\n")
    # threads >= 40 exit (ret) before the barrier; the others swap values through shared memory
    body = body.replace("@%p1 bra $L_end;", "@%p1 ret;")
    out, _ = launch(emu, body, np.full(64, 7, np.uint32), 0)
    i = np.arange(40)
    np.testing.assert_array_equal(out[:40], i ^ 1)
    assert (out[40:] == 7).all()


def test_incomplete_warp_at_shuffle_faults(emu):
    body = ("\tsetp.lt.u32 %p1, %r2, 16;\n\t@%p1 bra $L_x;\n\tshfl.sync.bfly.b32 %r3, %r2, 1, 31, -1;\n"
            "$L_x:\n")
    with pytest.raises(LaunchError) as info:
        launch(emu, body, np.zeros(64, np.uint32), 0)
    assert info.value.code == 719 and "member mask 0xffffffff" in str(info.value)


def test_writes_before_a_fault_stay_and_later_launches_work(emu, rng):
    x = rng.integers(0, 100, 64).astype(np.uint32)
    p = emu.mem_alloc(64 * 4)
    emu.memcpy_htod(p, x.ctypes.data, x.nbytes)
    import struct

    from oxicuda.driver.params import entry_layouts
    # store tid, then thread 63 reads far out of bounds
    body = ("\tst.global.u32 [%rd3], %r2;\n\tsetp.eq.u32 %p1, %r2, 63;\n\t@%p1 bra $L_bad;\n\tbra $L_ok;\n"
            "$L_bad:\n\tld.global.u32 %r4, [%rd3+4096];\n$L_ok:\n")
    text = kernel(body)
    mod = emu.module_load_data(text.encode())
    f = emu.module_get_function(mod, "f")
    pb = emu.param_buffer(entry_layouts(text)["f"])
    struct.pack_into("<QI", pb.data, 0, p, 0)
    with pytest.raises(LaunchError, match="thread \\(63, 0, 0\\)"):
        emu.launch_kernel(f, (1, 1, 1), (64, 1, 1), 0, 0, pb)
    out = np.empty(64, np.uint32)
    emu.memcpy_dtoh(out.ctypes.data, p, out.nbytes)
    np.testing.assert_array_equal(out, np.arange(64))
    out2, _ = launch(emu, "\tadd.u32 %r5, %r2, %r1;\n\tst.global.u32 [%rd3], %r5;\n", x, 5)
    np.testing.assert_array_equal(out2, np.arange(64) + 5)


def test_infinite_loop_hits_the_step_limit(emu, monkeypatch):
    monkeypatch.setenv("OXICUDA_EMULATOR_MAX_STEPS", "5000")
    with pytest.raises(LaunchError) as info:
        launch(emu, "$L_spin:\n\tbra $L_spin;\n", np.zeros(64, np.uint32), 0)
    assert info.value.code == 702
