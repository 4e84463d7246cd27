"""builder_hopper: wgmma with A from registers, named-barrier turns and setmaxnreg emit the PTX
the ISA defines (ptxas accepts it for sm_90a), refuse what does not exist, and run on the
emulator (a register-A wgmma against float64 numpy on an emulated sm_90)."""

from __future__ import annotations

import numpy as np
import pytest

from oxicuda.ptx import fragments
from oxicuda.ptx.builder import KernelBuilder


def _kernel_with_every_hopper_instruction() -> str:
    kb = KernelBuilder("hopper_ops", arch="sm_90a")
    kb.reqntid(256)
    smem = kb.shared("b_tile", "b8", 16 * 64 * 2, align=1024)
    wg = kb.shr(kb.tid(), 7)
    kb.setmaxnreg(232, increase=True)
    with kb.if_(kb.setp("eq", wg, 1)):
        kb.named_barrier_arrive(1, 256)
    with kb.if_(kb.setp("eq", wg, 0)):
        kb.named_barrier_sync(kb.add(wg, 1), 256)
    d = [kb.mov(0.0, "f32") for _ in range(fragments.wgmma_accumulator_regs(64))]
    a = [kb.mov(0, "b32") for _ in range(4)]
    desc = kb.wgmma_descriptor(kb.shared_addr(smem), 1024, 1024, "128B")
    kb.wgmma_fence()
    kb.wgmma_mma_async_rs(64, "bf16", d, a, desc, scale_d=0, trans_b=1)
    kb.wgmma_commit_group()
    kb.wgmma_wait_group(0)
    return kb.ptx()


def test_hopper_instructions_have_the_isa_spelling_and_assemble_for_sm90a():
    text = _kernel_with_every_hopper_instruction()
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in text
    assert "bar.arrive 1, 256;" in text and "bar.sync %r" in text
    line = next(x for x in text.splitlines() if "wgmma.mma_async" in x).strip()
    assert line.startswith("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {")
    assert line.endswith(", 1, 1, 1;")  # imm-scale-a, imm-scale-b, imm-trans-b
    from oxicuda.ptx.validate import PtxasNotFound, assemble

    try:
        report = assemble(text, "sm_90a")
    except PtxasNotFound as exc:
        pytest.skip(str(exc))
    assert report.ok, report.message


def test_hopper_instructions_refuse_what_does_not_exist():
    kb = KernelBuilder("bad", arch="sm_90a")
    d = [kb.mov(0.0, "f32") for _ in range(4)]
    a = [kb.mov(0, "b32") for _ in range(4)]
    desc = kb.mov(0, "u64")
    with pytest.raises(ValueError, match="a_type"):
        kb.wgmma_mma_async_rs(8, "tf32", d, a, desc)
    with pytest.raises(ValueError, match="d has 3 registers"):
        kb.wgmma_mma_async_rs(8, "f16", d[:3], a, desc)
    with pytest.raises(ValueError, match="a has 2 registers"):
        kb.wgmma_mma_async_rs(8, "f16", d, a[:2], desc)
    with pytest.raises(ValueError, match="count"):
        kb.named_barrier_sync(1, 100)
    with pytest.raises(ValueError, match="barrier 16"):
        kb.named_barrier_arrive(16, 64)
    with pytest.raises(ValueError, match="setmaxnreg"):
        kb.setmaxnreg(20, increase=False)
    with pytest.raises(NotImplementedError, match="sm_90a"):
        KernelBuilder("old", arch="sm_90").setmaxnreg(240, increase=True)


def test_register_a_wgmma_with_mn_major_b_runs_on_an_emulated_sm90(rng):
    # D = A B with A (64x16) in the register fragment layout and B (16x64) MN-major, 128B swizzle
    from oxicuda.emulator.api import EmulatorAPI
    from oxicuda.emulator.devices import EMULATED_DEVICES
    from oxicuda.emulator.interp.harness import run_ptx

    kb = KernelBuilder("rs_wgmma", arch="sm_90a")
    kb.reqntid(128)
    pa, pb, pd = (kb.param_ptr(x) for x in ("a", "b", "d"))
    smem = kb.shared("b_tile", "b8", 16 * 64 * 2, align=1024)
    t = kb.tid()
    # the 2048-byte B image, 16 bytes per thread
    kb.st("shared", kb.shared_addr(smem, kb.mul(t, 16)), list(kb.ld("global", "b32", kb.addr(pb, t, 16), vec=4)))
    kb.bar_sync()
    kb.fence_proxy_async()
    a = [kb.ld("global", "b32", kb.addr(pa, kb.mad(t, 4, j), 4)) for j in range(4)]
    d = [kb.mov(0.0, "f32") for _ in range(32)]
    kb.wgmma_fence()
    kb.wgmma_mma_async_rs(64, "bf16", d, a, kb.wgmma_descriptor(kb.shared_addr(smem), 1024, 1024, "128B"),
                          scale_d=0, trans_b=1)
    kb.wgmma_commit_group()
    kb.wgmma_wait_group(0)
    for j, v in enumerate(d):
        kb.st("global", kb.addr(pd, kb.mad(t, 32, j), 4), v)

    from oxicuda.memory.dtypes import bfloat16_bits_to_float32, float32_to_bfloat16_bits

    A = bfloat16_bits_to_float32(float32_to_bfloat16_bits(rng.standard_normal((64, 16), dtype=np.float32)))
    B = bfloat16_bits_to_float32(float32_to_bfloat16_bits(rng.standard_normal((16, 64), dtype=np.float32)))
    words = np.zeros((128, 4), np.uint32)
    atab = fragments.mma_shape("m16n8k16", "bf16", "f32").a.table
    bits_a = float32_to_bfloat16_bits(A).astype(np.uint32)
    for th in range(128):
        for e, (r, c) in enumerate(atab[th % 32]):
            words[th, e // 2] |= bits_a[16 * (th // 32) + r, c] << (16 * (e % 2))
    # B MN-major, one 64-column atom: key row k at k * 128 bytes, 16-byte chunks XOR-swizzled by k % 8
    image = np.zeros(16 * 64, np.uint16)
    bits_b = float32_to_bfloat16_bits(B)
    for k in range(16):
        for n in range(64):
            off = fragments.swizzle_128b(k * 128 + n * 2)
            image[off // 2] = bits_b[k, n]
    api = EmulatorAPI(device=EMULATED_DEVICES["sm_90"])
    api.init()
    out = run_ptx(api, kb.ptx(), "rs_wgmma", (1, 1, 1), (128, 1, 1),
                  [words.reshape(-1), image.view(np.uint8), np.zeros(128 * 32, np.float32)])[2]
    got = np.empty((64, 64))
    acc = fragments.wgmma_accumulator_layout(64)
    for th in range(128):
        for i, (r, c) in enumerate(acc[th]):
            got[r, c] = out[th * 32 + i]
    ref = A.astype(np.float64) @ B.astype(np.float64)
    assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max()
