"""The emulator's warp-level tensor-core instructions (mma.sync, ldmatrix, stmatrix) against
numpy, with fragment layouts restated here from the PTX ISA (not read from oxicuda.ptx.fragments,
so that a wrong table fails these tests).

The kernel builders are shared with tests/test_emulator_tc_gpu.py, which runs the same kernels on
a GPU and on an in-process emulator.
"""

from __future__ import annotations

import numpy as np
import pytest

from oxicuda.driver.errors import CudaError
from oxicuda.emulator.api import EmulatorAPI
from oxicuda.emulator.interp.harness import run_ptx
from oxicuda.ptx import ir
from oxicuda.ptx.builder import KernelBuilder

# -- layouts from the PTX ISA ("Matrix fragments for mma.m16n8k*"); g = lane>>2, t = lane%4 ------
ISA_LAYOUTS = {
    # (shape, type): (A fn, A elems, B fn, B elems, C fn, C elems, (m, n, k))
    ("m16n8k16", "f16"): (lambda g, t, i: (g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)), 8,
                          lambda g, t, i: (2 * t + (i & 1) + 8 * (i >> 1), g), 4,
                          lambda g, t, i: (g + 8 * (i >> 1), 2 * t + (i & 1)), 4, (16, 8, 16)),
    ("m16n8k8", "f16"): (lambda g, t, i: (g + 8 * (i >> 1), 2 * t + (i & 1)), 4,
                         lambda g, t, i: (2 * t + i, g), 2,
                         lambda g, t, i: (g + 8 * (i >> 1), 2 * t + (i & 1)), 4, (16, 8, 8)),
    ("m16n8k8", "tf32"): (lambda g, t, i: (g + 8 * (i & 1), t + 4 * (i >> 1)), 4,
                          lambda g, t, i: (t + 4 * i, g), 2,
                          lambda g, t, i: (g + 8 * (i >> 1), 2 * t + (i & 1)), 4, (16, 8, 8)),
    ("m16n8k4", "tf32"): (lambda g, t, i: (g + 8 * i, t), 2,
                          lambda g, t, i: (t, g), 1,
                          lambda g, t, i: (g + 8 * (i >> 1), 2 * t + (i & 1)), 4, (16, 8, 4)),
    ("m8n8k4", "f64"): (lambda g, t, i: (g, t), 1,
                        lambda g, t, i: (t, g), 1,
                        lambda g, t, i: (g, 2 * t + i), 2, (8, 8, 4)),
}
ISA_LAYOUTS[("m16n8k16", "bf16")] = ISA_LAYOUTS[("m16n8k16", "f16")]
ISA_LAYOUTS[("m16n8k8", "bf16")] = ISA_LAYOUTS[("m16n8k8", "f16")]


def emulator(arch: str = "sm_86") -> EmulatorAPI:
    """An in-process emulator of ``arch`` (independent of OXICUDA_EMULATOR_ARCH)."""
    from oxicuda.emulator.devices import EMULATED_DEVICES

    api = EmulatorAPI(device=EMULATED_DEVICES[arch])
    api.init()
    return api


def to_bits(x: np.ndarray, elem: str) -> np.ndarray:
    """float values -> uint16 bits (f16, bf16 with round to nearest even) or uint32 (f32/tf32)."""
    if elem == "f16":
        return np.asarray(x, np.float16).view(np.uint16)
    if elem == "bf16":
        from oxicuda.memory import float32_to_bfloat16_bits

        return np.asarray(float32_to_bfloat16_bits(np.asarray(x, np.float32)), np.uint16)
    return np.asarray(x, np.float32).view(np.uint32)


def bits_value(b: np.ndarray, elem: str) -> np.ndarray:
    """Bits -> float64 values as the tensor core sees them (tf32: low 13 mantissa bits cleared)."""
    if elem == "f16":
        return b.view(np.float16).astype(np.float64)
    if elem == "bf16":
        return (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if elem == "tf32":
        return (b & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    return b.view(np.float64)


def lane_words(mat_bits: np.ndarray, fn, elems: int, per_reg: int) -> np.ndarray:
    """(32, regs) register words of every lane for a matrix given as element bits."""
    regs = elems // per_reg
    out = np.zeros((32, regs), dtype=np.uint64 if mat_bits.dtype == np.uint64 else np.uint32)
    for lane in range(32):
        for i in range(elems):
            r, c = fn(lane >> 2, lane % 4, i)
            v = int(mat_bits[r, c])
            out[lane, i // per_reg] |= type(out[0, 0])(v << (16 * (i % per_reg)))
    return out


def mma_kernel(shape: str, elem: str, acc: str, arch: str = "sm_86") -> str:
    """One warp: load each lane's A/B/C registers (u32 or f64 words), mma.sync, store D."""
    from oxicuda.ptx import fragments

    info = fragments.mma_shape(shape, elem, acc)
    kb = KernelBuilder(f"mma_{shape}_{elem}_{acc}", arch=arch)
    pa, pb, pc, pd = (kb.param_ptr(x) for x in "abcd")
    lane = kb.tid()
    wide = elem == "f64"
    rt = "f64" if wide else "b32"
    esz = 8 if wide else 4

    def load(p, count, t):
        return [kb.ld("global", t if t != "f16x2" else "b32", kb.addr(p, kb.mad(lane, count, j), esz if t in ("f64", "b32") else 4))
                for j in range(count)]

    a = load(pa, info.a_regs, rt)
    b = load(pb, info.b_regs, rt)
    c = load(pc, info.c_regs, "f64" if acc == "f64" else ("b32" if acc == "f16" else "f32"))
    if acc == "f16":
        c = [kb.bitcast(x, "f16x2") for x in c]
    d = kb.mma_sync(shape, elem, elem, acc, a, b, c)
    for j, v in enumerate(d):
        v = kb.bitcast(v, "b32") if acc == "f16" else v
        kb.st("global", kb.addr(pd, kb.mad(lane, info.c_regs, j), 8 if acc == "f64" else 4), v)
    return kb.ptx()


def run_mma(api, shape: str, elem: str, acc: str, rng, arch: str = "sm_86"):
    """(D from the kernel, float64 reference) for random A, B, C."""
    fa, ea, fb, eb, fc, ec, (m, n, k) = ISA_LAYOUTS[(shape, elem)]
    A = rng.standard_normal((m, k))
    B = rng.standard_normal((k, n))
    C = rng.standard_normal((m, n))
    if elem == "f64":
        abits, bbits = A.view(np.uint64), B.view(np.uint64)
        per = 1
    else:
        abits, bbits = to_bits(A, elem), to_bits(B, elem)
        per = 2 if elem in ("f16", "bf16") else 1
    cdt = {"f32": np.float32, "f16": np.float16, "f64": np.float64}[acc]
    cv = C.astype(cdt)
    cbits = cv.view({np.float32: np.uint32, np.float16: np.uint16, np.float64: np.uint64}[cdt])
    wa = lane_words(abits, fa, ea, per)
    wb = lane_words(bbits, fb, eb, per)
    wc = lane_words(cbits, fc, ec, 2 if acc == "f16" else 1)
    dwords = np.zeros_like(wc)
    dwords[:] = 0x7FC00000 if acc == "f32" else (0x7E007E00 if acc == "f16" else 0x7FF8000000000000)
    ptx = mma_kernel(shape, elem, acc, arch)
    name = f"mma_{shape}_{elem}_{acc}"
    if elem == "f64":
        wa, wb = wa.view(np.float64), wb.view(np.float64)
    out = run_ptx(api, ptx, name, (1, 1, 1), (32, 1, 1), [wa, wb, wc, dwords])[3]
    D = np.full((m, n), np.nan)
    for lane in range(32):
        for i in range(ec):
            r, c = fc(lane >> 2, lane % 4, i)
            w = int(out[lane, i // (2 if acc == "f16" else 1)])
            if acc == "f16":
                D[r, c] = np.array([(w >> (16 * (i % 2))) & 0xFFFF], np.uint16).view(np.float16)[0]
            elif acc == "f32":
                D[r, c] = np.array([w], np.uint32).view(np.float32)[0]
            else:
                D[r, c] = np.array([w], np.uint64).view(np.float64)[0]
    ref = bits_value(abits, elem) @ bits_value(bbits, elem) + cv.astype(np.float64)
    return D, ref


TOL = {"f32": 2e-6, "f16": 2e-3, "f64": 1e-14}


@pytest.mark.parametrize("shape,elem,acc", [
    ("m16n8k16", "f16", "f32"), ("m16n8k16", "f16", "f16"), ("m16n8k16", "bf16", "f32"),
    ("m16n8k8", "f16", "f32"), ("m16n8k8", "bf16", "f32"), ("m16n8k8", "tf32", "f32"),
    ("m16n8k4", "tf32", "f32"), ("m8n8k4", "f64", "f64"),
])
def test_mma_sync_matches_float64_reference_through_isa_fragment_layouts(shape, elem, acc, rng):
    D, ref = run_mma(emulator(), shape, elem, acc, rng)
    assert not np.isnan(D).any()
    scale = np.abs(ref).max()
    assert np.abs(D - ref).max() <= TOL[acc] * scale, (shape, elem, acc)


def test_tf32_mma_ignores_the_low_13_mantissa_bits(rng):
    """A value that differs only below tf32 precision gives the same product."""
    D, ref = run_mma(emulator(), "m16n8k8", "tf32", "f32", rng)
    assert np.allclose(D, ref, rtol=0, atol=2e-6 * np.abs(ref).max())


def ldmatrix_mma_kernel(elem: str, arch: str = "sm_86") -> str:
    """cp.async fills shared memory with A (16x16 row-major) and B (16x8 row-major); ldmatrix.x4
    loads the A fragment, ldmatrix.x2.trans the B fragment; mma.sync m16n8k16 computes
    D = A*B + C (C, D 16x8 f32 row-major)."""
    kb = KernelBuilder(f"ldsm_mma_{elem}", arch=arch)
    pa, pb, pc, pd = (kb.param_ptr(x) for x in "abcd")
    sA = kb.shared("sA", "b16", 256)
    sB = kb.shared("sB", "b16", 128)
    t = kb.tid()
    kb.cp_async(kb.shared_addr(sA, kb.mul(t, 16)), kb.addr(pa, t, 16))
    with kb.if_(kb.setp("lt", t, 16)):
        kb.cp_async(kb.shared_addr(sB, kb.mul(t, 16)), kb.addr(pb, t, 16))
    kb.cp_async_commit()
    kb.cp_async_wait(0)
    kb.bar_sync()
    aaddr = kb.shared_addr(sA, kb.add(kb.mul(kb.and_(t, 15), 32), kb.mul(kb.shr(t, 4), 16)))
    a = kb.ldmatrix(4, aaddr)
    b = kb.ldmatrix(2, kb.shared_addr(sB, kb.mul(kb.and_(t, 15), 16)), trans=True)
    g, q = kb.shr(t, 2), kb.and_(t, 3)
    cs, idxs = [], []
    for i in range(4):
        idx = kb.add(kb.mul(kb.add(g, 8 * (i >> 1)), 8), kb.add(kb.mul(q, 2), i & 1))
        idxs.append(idx)
        cs.append(kb.ld("global", "f32", kb.addr(pc, idx, 4)))
    d = kb.mma_sync("m16n8k16", elem, elem, "f32", a, b, cs)
    for i in range(4):
        kb.st("global", kb.addr(pd, idxs[i], 4), d[i])
    return kb.ptx()


def ldmatrix_mma_case(rng, elem: str):
    A = rng.standard_normal((16, 16))
    B = rng.standard_normal((16, 8))
    C = rng.standard_normal((16, 8)).astype(np.float32)
    ab, bb = to_bits(A, elem), to_bits(B, elem)
    ref = bits_value(ab, elem) @ bits_value(bb, elem) + C
    return [ab, bb, C, np.full((16, 8), np.nan, np.float32)], ref


@pytest.mark.parametrize("elem", ["f16", "bf16"])
def test_ldmatrix_fed_mma_from_cp_async_shared_tiles_matches_numpy(elem, rng):
    args, ref = ldmatrix_mma_case(rng, elem)
    out = run_ptx(emulator(), ldmatrix_mma_kernel(elem), f"ldsm_mma_{elem}", (1, 1, 1), (32, 1, 1), args)[3]
    assert np.abs(out - ref).max() <= 2e-6 * np.abs(ref).max()


def ldmatrix_roundtrip_kernel(num: int, trans: bool, arch: str = "sm_90") -> str:
    """Global 8*num x 8 b16 -> shared; ldmatrix.x{num}[.trans] -> registers stored per lane, and
    stmatrix of the same registers back into a second shared tile copied out."""
    kb = KernelBuilder(f"ldsm_x{num}{'_t' if trans else ''}", arch=arch)
    pin, pregs, pout = kb.param_ptr("inp"), kb.param_ptr("regs"), kb.param_ptr("out")
    s = kb.shared("s", "b16", 64 * num)
    s2 = kb.shared("s2", "b16", 64 * num)
    t = kb.tid()
    with kb.if_(kb.setp("lt", t, 8 * num)):
        v = kb.ld("global", "b32", kb.addr(pin, kb.mul(t, 4), 4), vec=4)
        kb.st("shared", kb.shared_addr(s, kb.mul(t, 16)), list(v))
    kb.bar_sync()
    row = kb.and_(t, 8 * num - 1) if num > 1 else kb.and_(t, 7)
    regs = kb.ldmatrix(num, kb.shared_addr(s, kb.mul(row, 16)), trans=trans)
    for j, r in enumerate(regs):
        kb.st("global", kb.addr(pregs, kb.mad(t, num, j), 4), r)
    kb.instr("stmatrix", ("sync", "aligned", "m8n8", f"x{num}") + (("trans",) if trans else ()) + ("shared", "b16"),
             (ir.Addr(kb.shared_addr(s2, kb.mul(row, 16)).reg, 0), ir.Vec(tuple(r.reg for r in regs))))
    kb.bar_sync()
    with kb.if_(kb.setp("lt", t, 8 * num)):
        v = kb.ld("shared", "b32", kb.shared_addr(s2, kb.mul(t, 16)), vec=4)
        kb.st("global", kb.addr(pout, kb.mul(t, 4), 4), list(v))
    return kb.ptx()


@pytest.mark.parametrize("num,trans", [(1, False), (2, False), (4, False), (4, True), (2, True)])
def test_ldmatrix_delivers_isa_layout_and_stmatrix_inverts_it(num, trans, rng):
    mats = rng.integers(0, 1 << 16, size=(num, 8, 8), dtype=np.uint16)
    regs = np.zeros((32, num), np.uint32)
    out = np.zeros_like(mats)
    name = f"ldsm_x{num}{'_t' if trans else ''}"
    _, regs, out = run_ptx(emulator("sm_90"), ldmatrix_roundtrip_kernel(num, trans), name,
                           (1, 1, 1), (32, 1, 1), [mats, regs, out])
    for lane in range(32):
        g, q = lane >> 2, lane % 4
        for i in range(num):
            m = mats[i].T if trans else mats[i]
            want = int(m[g, 2 * q]) | (int(m[g, 2 * q + 1]) << 16)
            assert int(regs[lane, i]) == want, (lane, i)
    assert (out == mats).all()


def test_mma_with_an_incomplete_warp_faults_naming_the_missing_thread():
    ptx = mma_kernel("m16n8k8", "tf32", "f32")
    zeros = [np.zeros((48, 4), np.uint32), np.zeros((48, 2), np.uint32), np.zeros((48, 4), np.float32),
             np.zeros((48, 4), np.float32)]
    with pytest.raises(CudaError, match=r"mma.sync.m16n8k8.tf32 needs every thread of the warp: the "
                                        r"block has 48 threads"):
        run_ptx(emulator(), ptx, "mma_m16n8k8_tf32_f32", (1, 1, 1), (48, 1, 1), zeros)


def test_mma_under_a_divergent_branch_faults():
    kb = KernelBuilder("mma_div", arch="sm_86")
    pd = kb.param_ptr("d")
    t = kb.tid()
    z = kb.mov(0, "b32")
    zf = kb.mov(0.0, "f32")
    with kb.if_(kb.setp("lt", t, 16)):
        d = kb.mma_sync("m16n8k8", "tf32", "tf32", "f32", [z] * 4, [z] * 2, [zf] * 4)
        kb.st("global", kb.addr(pd, t, 4), d[0])
    with pytest.raises(CudaError, match=r"thread 16 of warp 0 \(threads 0..31\) is not at this instruction"):
        run_ptx(emulator(), kb.ptx(), "mma_div", (1, 1, 1), (32, 1, 1), [np.zeros(32, np.float32)])
