"""Strict mode of the emulator: reads of registers or shared memory never written in this CTA
fault with the kernel, PTX line, block, thread and register/offset; correct kernels still
compute the same values; the default mode is unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from oxicuda.driver.errors import LaunchError
from oxicuda.emulator.api import EmulatorAPI
from oxicuda.emulator.interp import strict
from oxicuda.emulator.interp.harness import run_ptx

HEAD = ".version 8.0\n.target sm_86\n.address_size 64\n\n"


@pytest.fixture(scope="module")
def emu():
    return EmulatorAPI()


def reg_kernel(write_first: bool) -> str:
    """out[tid] = %r2 + tid, where %r2 = 7 is written by every thread when ``write_first``,
    else only by threads 0..15."""
    body = ("\tmov.u32 %r2, 7;\n" if write_first else
            "\tsetp.lt.u32 %p0, %r1, 16;\n\t@%p0 mov.u32 %r2, 7;\n")
    return HEAD + (".visible .entry regk(.param .u64 out)\n{\n"
                   "\t.reg .b32 %r<5>;\n\t.reg .b64 %rd<3>;\n\t.reg .pred %p<2>;\n"
                   "\tmov.u32 %r1, %tid.x;\n" + body +
                   "\tadd.u32 %r3, %r2, %r1;\n"
                   "\tld.param.u64 %rd0, [out];\n\tmul.wide.u32 %rd1, %r1, 4;\n"
                   "\tadd.s64 %rd2, %rd0, %rd1;\n\tst.global.u32 [%rd2], %r3;\n\tret;\n}\n")


def shared_kernel(nwrite: int) -> str:
    """Threads < nwrite store tid*3 to s[tid]; after bar.sync every thread reads s[31 - tid]."""
    return HEAD + (".visible .entry shk(.param .u64 out)\n{\n"
                   "\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<3>;\n\t.reg .pred %p<2>;\n"
                   "\t.shared .align 4 .b32 s[32];\n"
                   "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r4, s;\n"
                   f"\tsetp.lt.u32 %p0, %r1, {nwrite};\n"
                   "\tmul.lo.u32 %r2, %r1, 3;\n\tshl.b32 %r3, %r1, 2;\n\tadd.u32 %r5, %r4, %r3;\n"
                   "\t@%p0 st.shared.u32 [%r5], %r2;\n\tbar.sync 0;\n"
                   "\tsub.u32 %r6, 31, %r1;\n\tshl.b32 %r6, %r6, 2;\n\tadd.u32 %r6, %r4, %r6;\n"
                   "\tld.shared.u32 %r7, [%r6];\n"
                   "\tld.param.u64 %rd0, [out];\n\tmul.wide.u32 %rd1, %r1, 4;\n"
                   "\tadd.s64 %rd2, %rd0, %rd1;\n\tst.global.u32 [%rd2], %r7;\n\tret;\n}\n")


def test_strict_switch_follows_environment_and_in_process_override(monkeypatch):
    monkeypatch.setenv("OXICUDA_EMULATOR_STRICT", "1")
    assert strict.strict_enabled()
    with strict.strict_mode(False):
        assert not strict.strict_enabled()
    monkeypatch.setenv("OXICUDA_EMULATOR_STRICT", "0")
    assert not strict.strict_enabled()
    with strict.strict_mode():
        assert strict.strict_enabled()
    assert not strict.strict_enabled()


def test_correct_kernels_compute_the_same_in_strict_mode(emu):
    for on in (False, True):
        out = np.full(64, 0xDEADBEEF, np.uint32)
        with strict.strict_mode(on):
            out = run_ptx(emu, reg_kernel(True), "regk", (1, 1, 1), (64, 1, 1), [out])[0]
        np.testing.assert_array_equal(out, np.arange(64, dtype=np.uint32) + 7)
        out = np.full(32, 0xDEADBEEF, np.uint32)
        with strict.strict_mode(on):
            out = run_ptx(emu, shared_kernel(32), "shk", (2, 1, 1), (32, 1, 1), [out])[0]
        np.testing.assert_array_equal(out, (31 - np.arange(32, dtype=np.uint32)) * 3)


def test_read_of_a_register_written_by_only_some_threads_faults_naming_register_and_thread(emu):
    ptx = reg_kernel(False)
    out = np.zeros(32, np.uint32)
    with strict.strict_mode(False):  # the default mode computes garbage silently
        run_ptx(emu, ptx, "regk", (1, 1, 1), (32, 1, 1), [out])
    with strict.strict_mode(True), pytest.raises(LaunchError) as ei:
        run_ptx(emu, ptx, "regk", (1, 1, 1), (32, 1, 1), [out])
    msg = str(ei.value)
    assert "kernel regk" in msg and "add.u32 %r3, %r2, %r1" in msg and "PTX line 13" in msg
    assert "register %r2" in msg and "thread (16, 0, 0)" in msg and "block (0, 0, 0)" in msg


def test_registers_do_not_carry_over_from_the_previous_cta_in_strict_mode(emu):
    # block 0 writes %r5 for every thread; block 1 reads it without writing it
    ptx = HEAD + (".visible .entry carry(.param .u64 out)\n{\n"
                  "\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<3>;\n\t.reg .pred %p<2>;\n"
                  "\tmov.u32 %r1, %ctaid.x;\n\tsetp.eq.u32 %p0, %r1, 0;\n"
                  "\t@%p0 mov.u32 %r5, 11;\n"
                  "\tld.param.u64 %rd0, [out];\n\tmul.wide.u32 %rd1, %r1, 4;\n"
                  "\tadd.s64 %rd2, %rd0, %rd1;\n\tst.global.u32 [%rd2], %r5;\n\tret;\n}\n")
    out = np.zeros(2, np.uint32)
    with strict.strict_mode(False):
        out = run_ptx(emu, ptx, "carry", (2, 1, 1), (1, 1, 1), [out])[0]
    assert list(out) == [11, 11]  # the default mode keeps the previous CTA's registers
    with strict.strict_mode(True), pytest.raises(LaunchError, match=r"block \(1, 0, 0\).*register %r5"):
        run_ptx(emu, ptx, "carry", (2, 1, 1), (1, 1, 1), [np.zeros(2, np.uint32)])


def test_read_of_shared_memory_never_written_faults_naming_offset_and_thread(emu):
    with strict.strict_mode(True), pytest.raises(LaunchError) as ei:
        run_ptx(emu, shared_kernel(20), "shk", (1, 1, 1), (32, 1, 1), [np.zeros(32, np.uint32)])
    msg = str(ei.value)
    # thread 0 reads s[31], which thread 31 (>= 20) never wrote: offset 124
    assert "ld.shared.u32 %r7, [%r6]" in msg and "thread (0, 0, 0)" in msg
    assert "offset 124" in msg and "never written" in msg


def test_shared_memory_written_by_a_previous_cta_counts_as_unwritten(emu):
    ptx = HEAD + (".visible .entry shcarry(.param .u64 out)\n{\n"
                  "\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<3>;\n\t.reg .pred %p<2>;\n"
                  "\t.shared .align 4 .b32 s[1];\n"
                  "\tmov.u32 %r1, %ctaid.x;\n\tsetp.eq.u32 %p0, %r1, 0;\n"
                  "\t@%p0 st.shared.u32 [s], 5;\n\tld.shared.u32 %r2, [s];\n"
                  "\tld.param.u64 %rd0, [out];\n\tmul.wide.u32 %rd1, %r1, 4;\n"
                  "\tadd.s64 %rd2, %rd0, %rd1;\n\tst.global.u32 [%rd2], %r2;\n\tret;\n}\n")
    with strict.strict_mode(True), pytest.raises(LaunchError, match=r"block \(1, 0, 0\).*offset 0"):
        run_ptx(emu, ptx, "shcarry", (2, 1, 1), (1, 1, 1), [np.zeros(2, np.uint32)])


def test_shared_atomics_on_initialised_bins_pass_and_on_unwritten_bins_fault(emu):
    def ptx(init: bool) -> str:
        return HEAD + (".visible .entry atom(.param .u64 out)\n{\n"
                       "\t.reg .b32 %r<8>;\n\t.reg .b64 %rd<3>;\n\t.reg .pred %p<2>;\n"
                       "\t.shared .align 4 .b32 s[1];\n\tmov.u32 %r1, %tid.x;\n"
                       "\tsetp.eq.u32 %p0, %r1, 0;\n"
                       + ("\t@%p0 st.shared.u32 [s], 100;\n" if init else "") +
                       "\tbar.sync 0;\n\tatom.shared.add.u32 %r2, [s], 1;\n\tbar.sync 0;\n"
                       "\tld.shared.u32 %r3, [s];\n\tld.param.u64 %rd0, [out];\n"
                       "\t@%p0 st.global.u32 [%rd0], %r3;\n\tret;\n}\n")
    with strict.strict_mode(True):
        out = run_ptx(emu, ptx(True), "atom", (1, 1, 1), (64, 1, 1), [np.zeros(1, np.uint32)])[0]
        assert out[0] == 164
        with pytest.raises(LaunchError, match="atom.shared.add.u32"):
            run_ptx(emu, ptx(False), "atom", (1, 1, 1), (64, 1, 1), [np.zeros(1, np.uint32)])


def test_guard_predicate_never_written_faults_in_strict_mode(emu):
    # %p1 is set only by threads < 8; every thread then branches on it
    ptx = HEAD + (".visible .entry guard(.param .u64 out)\n{\n"
                  "\t.reg .b32 %r<5>;\n\t.reg .b64 %rd<3>;\n\t.reg .pred %p<2>;\n"
                  "\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, 1;\n\tsetp.lt.u32 %p0, %r1, 8;\n"
                  "\t@%p0 setp.eq.u32 %p1, %r1, 3;\n\t@%p1 mov.u32 %r2, 2;\n"
                  "\tld.param.u64 %rd0, [out];\n\tmul.wide.u32 %rd1, %r1, 4;\n"
                  "\tadd.s64 %rd2, %rd0, %rd1;\n\tst.global.u32 [%rd2], %r2;\n\tret;\n}\n")
    with strict.strict_mode(True), pytest.raises(LaunchError) as ei:
        run_ptx(emu, ptx, "guard", (1, 1, 1), (32, 1, 1), [np.zeros(32, np.uint32)])
    msg = str(ei.value)
    assert "@%p1 mov.u32 %r2, 2" in msg and "guard predicate %p1" in msg and "thread (8, 0, 0)" in msg
    with strict.strict_mode(True):  # with 8 threads every lane writes %p1
        out = run_ptx(emu, ptx, "guard", (1, 1, 1), (8, 1, 1), [np.zeros(8, np.uint32)])[0]
    np.testing.assert_array_equal(out, np.where(np.arange(8) == 3, 2, 1))
