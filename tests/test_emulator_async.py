"""The emulator's asynchronous instructions: cp.async groups and zero fill, mbarrier phases and
transaction counts, TMA (cp.async.bulk.tensor) with swizzle and out-of-bounds fill, and wgmma
from shared-memory descriptors, against numpy; plus the faults (misaligned warpgroup, mbarrier
deadlock). Hopper kernels run on an in-process sm_90 emulator.

``wgmma_tma_kernel``/``run_wgmma_tma`` are shared with tests/test_emulator_tc_gpu.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_emulator_tensorcore import bits_value, emulator, to_bits

from oxicuda.driver.enums import TENSOR_MAP_DATA_TYPES, TENSOR_MAP_SWIZZLE
from oxicuda.driver.errors import CudaError
from oxicuda.emulator.interp.harness import run_ptx
from oxicuda.emulator.interp.strict import strict_mode
from oxicuda.ptx import ir
from oxicuda.ptx.builder import KernelBuilder

FULL = 0xFFFFFFFF


# -- cp.async ----------------------------------------------------------------------------------
def cp_async_kernel() -> str:
    """Thread t copies 16 bytes from src[16t] with src-size t % 17 into shared (group 0) and
    16 bytes from src2[16t] (group 1); after wait_group 1 it stores both shared chunks to out:
    group 0 must have landed (zero-filled past src-size), group 1 need not."""
    kb = KernelBuilder("cpasync_groups", arch="sm_86")
    src, src2, out = kb.param_ptr("src"), kb.param_ptr("src2"), kb.param_ptr("out")
    s = kb.shared("s", "b8", 32 * 32)
    t = kb.tid()
    kb.cp_async(kb.shared_addr(s, kb.mul(t, 16)), kb.addr(src, t, 16), src_size=kb.sub(t, kb.mul(kb.div(t, 17), 17)))
    kb.cp_async_commit()
    kb.cp_async(kb.shared_addr(s, kb.add(kb.mul(t, 16), 512)), kb.addr(src2, t, 16))
    kb.cp_async_commit()
    kb.cp_async_wait(1)
    for half in range(2):
        v = kb.ld("shared", "b32", kb.shared_addr(s, kb.add(kb.mul(t, 16), 512 * half)), vec=4)
        kb.st("global", kb.addr(out, kb.add(kb.mul(t, 2), half), 16), list(v))
    return kb.ptx()


def test_cp_async_zero_fills_past_src_size_and_lands_only_at_wait_group(rng):
    src = rng.integers(1, 256, size=(32, 16), dtype=np.uint8)
    src2 = rng.integers(1, 256, size=(32, 16), dtype=np.uint8)
    out = np.zeros((32, 2, 16), np.uint8)
    # the kernel reads group 1's destination before it lands, on purpose: not in strict mode
    with strict_mode(False):
        out = run_ptx(emulator(), cp_async_kernel(), "cpasync_groups", (1, 1, 1), (32, 1, 1),
                      [src, src2, out])[2]
    for t in range(32):
        n = t % 17
        assert (out[t, 0, :n] == src[t, :n]).all() and (out[t, 0, n:] == 0).all(), t
    # group 1 was not waited for: shared memory still holds its initial garbage (0xFF), not src2
    assert (out[:, 1] == 0xFF).all()


# -- wgmma fed by TMA --------------------------------------------------------------------------
def wgmma_tma_kernel(swizzle: str, n: int = 64, k: int = 64, arch: str = "sm_90a") -> str:
    """One warpgroup: TMA loads A (64 x k bf16, K-major) and B (n x k bf16, K-major) into shared
    memory, completing on one mbarrier; k/16 wgmma.m64n{n}k16 accumulate D = A B^T in f32; D is
    stored row-major. ``swizzle`` "none": boxes of 8 columns x rows, so each 8x16-byte core
    matrix is contiguous (LBO 1024 between K chunks... per row count, SBO 128); "128B": one box of
    64 columns x rows per operand with the 128-byte swizzle (SBO 1024), the descriptor start
    advancing 32 bytes per k step."""
    kb = KernelBuilder(f"wgmma_tma_{swizzle}_n{n}", arch=arch)
    tma_a, tma_b = kb.param_array("tma_a"), kb.param_array("tma_b")
    pd = kb.param_ptr("d")
    sA = kb.shared("sA", "b16", 64 * k, align=1024)
    sB = kb.shared("sB", "b16", n * k, align=1024)
    bar = kb.shared("bar", "b64", 1, align=8)
    t = kb.tid()
    with kb.if_(kb.setp("eq", t, 0)):
        kb.mbarrier_init(bar, 1)
    kb.bar_sync()
    with kb.if_(kb.setp("eq", t, 0)):
        kb.mbarrier_arrive_expect_tx(bar, 2 * (64 + n) * k)
        if swizzle == "none":
            for kc in range(k // 8):
                kb.cp_async_bulk_tensor(2, kb.shared_addr(sA, kc * 64 * 16), tma_a, [8 * kc, 0], bar)
                kb.cp_async_bulk_tensor(2, kb.shared_addr(sB, kc * n * 16), tma_b, [8 * kc, 0], bar)
        else:
            kb.cp_async_bulk_tensor(2, kb.shared_addr(sA), tma_a, [0, 0], bar)
            kb.cp_async_bulk_tensor(2, kb.shared_addr(sB), tma_b, [0, 0], bar)
    kb.mbarrier_wait_parity(bar, 0)
    kb.wgmma_fence()
    d = None
    for j in range(k // 16):
        if swizzle == "none":
            da = kb.wgmma_descriptor(kb.shared_addr(sA, 2 * j * 64 * 16), 64 * 16, 128)
            db = kb.wgmma_descriptor(kb.shared_addr(sB, 2 * j * n * 16), n * 16, 128)
        else:
            da = kb.wgmma_descriptor(kb.shared_addr(sA, 32 * j), 16, 1024, "128B")
            db = kb.wgmma_descriptor(kb.shared_addr(sB, 32 * j), 16, 1024, "128B")
        d = kb.wgmma_mma_async(n, "bf16", d, da, db, scale_d=0 if j == 0 else 1)
    kb.wgmma_commit_group()
    kb.wgmma_wait_group(0)
    w, lane = kb.shr(t, 5), kb.and_(t, 31)
    g, q = kb.shr(lane, 2), kb.and_(lane, 3)
    base_row = kb.add(kb.mul(w, 16), g)
    for i, v in enumerate(d):
        row = kb.add(base_row, 8 * ((i >> 1) & 1))
        col = kb.add(kb.mul(q, 2), 8 * (i >> 2) + (i & 1))
        kb.st("global", kb.addr(pd, kb.mad(row, n, col), 4), v)
    return kb.ptx()


def tensor_map(api, ptr: int, rows: int, cols: int, box_cols: int, box_rows: int, swizzle: str,
               elem: str = "BFLOAT16") -> bytes:
    return api.tensor_map_encode_tiled(TENSOR_MAP_DATA_TYPES[elem], 2, ptr, (cols, rows), (cols * 2,),
                                       (box_cols, box_rows), (1, 1), 0, TENSOR_MAP_SWIZZLE[swizzle], 0, 0)


def run_wgmma_tma(api, swizzle: str, rng, n: int = 64, k: int = 64):
    """(D from the kernel, float64 reference) on ``api`` (emulator or real driver)."""
    A = rng.standard_normal((64, k))
    B = rng.standard_normal((n, k))
    ab, bb = to_bits(A, "bf16"), to_bits(B, "bf16")
    pa, pb = api.mem_alloc(ab.nbytes), api.mem_alloc(bb.nbytes)
    try:
        api.memcpy_htod(pa, ab.ctypes.data, ab.nbytes)
        api.memcpy_htod(pb, bb.ctypes.data, bb.nbytes)
        box = 8 if swizzle == "none" else 64
        ma = tensor_map(api, pa, 64, k, box, 64, swizzle.upper() if swizzle != "none" else "NONE")
        mb = tensor_map(api, pb, n, k, box, n, swizzle.upper() if swizzle != "none" else "NONE")
        d = np.full((64, n), np.nan, np.float32)
        out = run_ptx(api, wgmma_tma_kernel(swizzle, n, k), f"wgmma_tma_{swizzle}_n{n}", (1, 1, 1),
                      (128, 1, 1), [ma, mb, d])[2]
    finally:
        api.mem_free(pa)
        api.mem_free(pb)
    return out, bits_value(ab, "bf16") @ bits_value(bb, "bf16").T


@pytest.mark.parametrize("swizzle", ["none", "128B"])
def test_wgmma_m64n64k16_bf16_from_tma_loaded_shared_tiles_matches_numpy(swizzle, rng):
    out, ref = run_wgmma_tma(emulator("sm_90"), swizzle, rng)
    assert not np.isnan(out).any()
    assert np.abs(out - ref).max() <= 2e-6 * np.abs(ref).max()


def test_wgmma_kernel_does_not_load_on_an_sm_86_emulator():
    with pytest.raises(CudaError, match=r"needs an sm_90 device; the emulated device is sm_86"):
        emulator("sm_86").module_load_data(wgmma_tma_kernel("128B").encode())


def tma_oob_kernel() -> str:
    """Thread 0 loads a 16 x 8 f32 box at (cx, cy) with TMA; all 32 threads copy it out."""
    kb = KernelBuilder("tma_oob", arch="sm_90")
    tm = kb.param_array("tm")
    pout = kb.param_ptr("out")
    cx, cy = kb.param("cx", "s32"), kb.param("cy", "s32")
    s = kb.shared("s", "f32", 16 * 8, align=128)
    bar = kb.shared("bar", "b64", 1, align=8)
    t = kb.tid()
    # init, make it visible to every thread and to the async proxy, then issue: waiting on a
    # barrier another thread may not have initialised yet is a race on hardware
    with kb.if_(kb.setp("eq", t, 0)):
        kb.mbarrier_init(bar, 1)
        kb.fence_proxy_async()
    kb.bar_sync()
    with kb.if_(kb.setp("eq", t, 0)):
        kb.mbarrier_arrive_expect_tx(bar, 16 * 8 * 4)
        kb.cp_async_bulk_tensor(2, kb.shared_addr(s), tm, [cx, cy], bar)
    kb.mbarrier_wait_parity(bar, 0)
    for j in range(4):
        idx = kb.add(t, 32 * j)
        kb.st("global", kb.addr(pout, idx, 4), kb.ld("shared", "f32", kb.shared_addr(s, kb.mul(idx, 4))))
    return kb.ptx()


#: box origins (x, y): x times 4 bytes must be a multiple of 16 (the H200 raises
#: CUDA_ERROR_ILLEGAL_INSTRUCTION for (-3, -5) and (7, 4), which the first version used)
TMA_OOB_COORDS = ((-4, -5), (8, 4), (0, 0), (4, 7))


def run_tma_oob(api, X: np.ndarray, coords) -> list[np.ndarray]:
    """The 16 x 8 boxes of the rows x cols f32 tensor X at each (cx, cy), loaded by TMA on ``api``."""
    ptx = tma_oob_kernel()
    px = api.mem_alloc(X.nbytes)
    try:
        api.memcpy_htod(px, X.ctypes.data, X.nbytes)
        rows, cols = X.shape
        tmap = api.tensor_map_encode_tiled(TENSOR_MAP_DATA_TYPES["FLOAT32"], 2, px, (cols, rows),
                                           (cols * 4,), (8, 16), (1, 1), 0, 0, 0, 0)
        return [run_ptx(api, ptx, "tma_oob", (1, 1, 1), (32, 1, 1),
                        [tmap, np.full((16, 8), np.nan, np.float32), cx, cy])[1] for cx, cy in coords]
    finally:
        api.mem_free(px)


def test_tma_zero_fills_out_of_bounds_box_elements(rng):
    """2D boxes hanging over the tensor's edges (negative and past-the-end coordinates)."""
    X = rng.standard_normal((10, 12)).astype(np.float32)
    outs = run_tma_oob(emulator("sm_90"), X, TMA_OOB_COORDS)
    for (cx, cy), out in zip(TMA_OOB_COORDS, outs):
        want = np.zeros((16, 8), np.float32)
        for r in range(16):
            for c in range(8):
                y, x = cy + r, cx + c
                if 0 <= y < 10 and 0 <= x < 12:
                    want[r, c] = X[y, x]
        assert (out == want).all(), (cx, cy)


@pytest.mark.parametrize("cx", [-3, 7, 2])
def test_tma_box_whose_innermost_start_is_not_16_byte_aligned_faults_as_illegal_instruction(rng, cx):
    X = rng.standard_normal((10, 12)).astype(np.float32)
    with pytest.raises(CudaError, match=r"(?s)CUDA_ERROR_ILLEGAL_INSTRUCTION.*tma_oob.*cp\.async\.bulk\.tensor.*"
                                        rf"innermost coordinate {cx} x 4-byte elements"):
        run_tma_oob(emulator("sm_90"), X, [(cx, 0)])


# -- faults --------------------------------------------------------------------------------------
def test_wgmma_with_a_misaligned_warpgroup_faults():
    """Warps 1..4 of a 160-thread block issue wgmma: warpgroup 0 lacks warp 0."""
    kb = KernelBuilder("wgmma_misaligned", arch="sm_90a")
    pd = kb.param_ptr("d")
    t = kb.tid()
    with kb.if_(kb.setp("ge", t, 32)):
        kb.wgmma_fence()
        z = kb.mov(0, "u64")
        d = kb.wgmma_mma_async(8, "bf16", None, z, z, scale_d=0)
        kb.st("global", kb.addr(pd, t, 4), d[0])
    api = emulator("sm_90")
    with pytest.raises(CudaError, match=r"wgmma.fence needs every thread of the warpgroup: thread 0 of "
                                        r"warpgroup 0 .*multiple of 4"):
        run_ptx(api, kb.ptx(), "wgmma_misaligned", (1, 1, 1), (160, 1, 1), [np.zeros(160, np.float32)],
                shared_mem=0)


def test_mbarrier_wait_that_can_never_complete_faults_as_deadlock():
    """Two arrivals expected, one made: the waiters would spin forever."""
    kb = KernelBuilder("mbar_deadlock", arch="sm_90")
    pd = kb.param_ptr("d")
    bar = kb.shared("bar", "b64", 1, align=8)
    t = kb.tid()
    with kb.if_(kb.setp("eq", t, 0)):
        kb.mbarrier_init(bar, 2)
    kb.bar_sync()
    with kb.if_(kb.setp("eq", t, 0)):
        kb.mbarrier_arrive(bar)
    kb.mbarrier_wait_parity(bar, 0)
    kb.st("global", kb.addr(pd, t, 4), t)
    with pytest.raises(CudaError, match=r"deadlock: threads wait on the mbarrier at shared offset 0 for "
                                        r"phase parity 0.*1 of 2 arrivals"):
        run_ptx(emulator("sm_90"), kb.ptx(), "mbar_deadlock", (1, 1, 1), (128, 1, 1),
                [np.zeros(128, np.uint32)])


#: what every thread of ``mbarrier_phases_kernel`` reports at its five probes
MBARRIER_PHASES_WANT = (0, 1, 0, 0, 1)


def mbarrier_phases_kernel(settled: bool = True) -> str:
    """Phase 0 completes after 64 arrivals (two warps); phase 1 needs 32 arrivals plus 64
    transaction bytes (expect_tx then complete_tx); try_wait.parity reports each in turn.

    Each probe is fenced by bar.sync on both sides: warps do not run in lockstep, and a
    try_wait suspends until the phase completes (or a time limit), so without the closing
    bar.sync warp 1 can still be inside probe 3 when warp 0 runs complete_tx and then sees
    phase 1 complete. ``settled=False`` builds that first, racy version (the H200 disagreed
    with the emulator on it); benches/probe_fidelity.py runs both."""
    kb = KernelBuilder("mbar_phases", arch="sm_90")
    pd = kb.param_ptr("d")
    bar = kb.shared("bar", "b64", 1, align=8)
    t = kb.tid()
    with kb.if_(kb.setp("eq", t, 0)):
        kb.mbarrier_init(bar, 64)
    kb.bar_sync()
    a = kb.shared_addr(bar)

    def probe(slot, parity):
        kb.bar_sync()  # every warp has done the step before (warps do not run in lockstep)
        p = kb.setp("ne", t, t)  # a written predicate for try_wait to overwrite
        kb.instr("mbarrier", ("try_wait", "parity", "shared::cta", "b64"),
                 (p.reg, ir.Addr(a.reg, 0), ir.Imm(str(parity))))
        kb.st("global", kb.addr(pd, kb.add(kb.mul(t, 5), slot), 4), kb.selp(1, 0, p, type_="u32"))
        if settled:
            kb.bar_sync()  # every warp has probed before anyone takes the next step

    probe(0, 0)                       # nobody arrived: phase 0 open
    kb.mbarrier_arrive(bar)           # 64 threads arrive: phase 0 completes
    probe(1, 0)
    with kb.if_(kb.setp("lt", t, 32)):
        kb.mbarrier_arrive_expect_tx(bar, 2)  # 32 arrivals, 64 bytes expected
    probe(2, 1)                       # arrivals done (32 of... 64 expected: still open)
    with kb.if_(kb.setp("ge", t, 32)):
        kb.mbarrier_arrive(bar)       # the other 32 arrivals; 64 tx bytes still outstanding
    probe(3, 1)
    with kb.if_(kb.setp("eq", t, 0)):  # the transaction bytes arrive: phase 1 completes
        kb.instr("mbarrier", ("complete_tx", "shared::cta", "b64"), (ir.Addr(a.reg, 0), ir.Imm("64")))
    probe(4, 1)
    return kb.ptx()


def test_mbarrier_phases_flip_when_arrivals_and_transaction_bytes_complete():
    out = run_ptx(emulator("sm_90"), mbarrier_phases_kernel(), "mbar_phases", (1, 1, 1), (64, 1, 1),
                  [np.full((64, 5), 7, np.uint32)])[0]
    assert (out == np.array(MBARRIER_PHASES_WANT, np.uint32)).all(), out


# -- wgmma operand layouts, restated from the PTX ISA canonical-layout table --------------------
def canonical_layout(major: str, swizzle: int, eb: int, lbo: int, sbo: int):
    """((mn shape, mn byte strides), (k shape, k byte strides)) of the ISA table "canonical
    layouts" with T = 16 bytes of elements and W = swizzle bytes (0: none)."""
    t = 16 // eb
    if major == "K":
        if not swizzle:
            return ((8, None), (16, sbo)), ((t, None), (eb, lbo))
        return ((8, None), (swizzle, sbo)), ((t, None), (eb, 16))
    if not swizzle:
        return ((t, 1, None), (eb, 16, sbo)), ((8, None), (16, lbo))
    return ((t, swizzle // 16, None), (eb, 16, lbo)), ((8, None), (swizzle, sbo))


def layout_offset(coord: int, mode) -> int:
    shape, stride = mode
    off = 0
    for s, d in zip(shape, stride):
        c = coord if s is None else coord % s
        off += c * d
        coord = 0 if s is None else coord // s
    return off


def swizzled(addr: int, swizzle: int) -> int:
    bits = {0: 0, 32: 1, 64: 2, 128: 3}[swizzle]
    return addr ^ (((addr >> 7) & ((1 << bits) - 1)) << 4)


def place(img: np.ndarray, base: int, mat_bits: np.ndarray, major: str, swizzle: int, lbo: int, sbo: int):
    """Write a rows x k operand (element bits) into the shared-memory image."""
    eb = mat_bits.dtype.itemsize
    mn_mode, k_mode = canonical_layout(major, swizzle, eb, lbo, sbo)
    raw = mat_bits.view(np.uint8).reshape(mat_bits.shape[0], mat_bits.shape[1], eb)
    for r in range(mat_bits.shape[0]):
        for kk in range(mat_bits.shape[1]):
            a = swizzled(base + layout_offset(r, mn_mode) + layout_offset(kk, k_mode), swizzle)
            img[a:a + eb] = raw[r, kk]


#: (major, swizzle bytes) -> (LBO, SBO) for a 64-row operand of 16 k-bytes... chosen per layout
LBO_SBO = {("K", 0): (128, 256), ("K", 32): (16, 256), ("K", 64): (16, 512), ("K", 128): (16, 1024),
           ("MN", 0): (1024, 128), ("MN", 32): (512, 256), ("MN", 64): (1024, 512), ("MN", 128): (8192, 1024)}
IMG_B = 8192  # B's offset in the image
SWZ_NAME = {0: "none", 32: "32B", 64: "64B", 128: "128B"}


def wgmma_layout_kernel(elem: str, n: int, a_layout, b_layout, acc: str, a_in_regs: bool, scale_a: int,
                        arch: str = "sm_90a") -> str:
    """128 threads copy a 16 KiB image into shared memory; wgmma.m64n{n} (A from a descriptor at
    0 or from registers, B from a descriptor at IMG_B) accumulates into D loaded from c when the
    parameter accumulate != 0; D is stored per thread and register."""
    from oxicuda.ptx import fragments

    k = 8 if elem == "tf32" else 16
    kb = KernelBuilder("wgmma_layout", arch=arch)
    pimg, pa, pc, pd = (kb.param_ptr(x) for x in ("img", "a", "c", "d"))
    accumulate = kb.param("accumulate", "u32")
    s = kb.shared("s", "b8", 2 * IMG_B, align=1024)
    t = kb.tid()
    for j in range(2 * IMG_B // (16 * 128)):
        idx = kb.add(t, 128 * j)
        v = kb.ld("global", "b32", kb.addr(pimg, idx, 16), vec=4)
        kb.st("shared", kb.shared_addr(s, kb.mul(idx, 16)), list(v))
    kb.bar_sync()
    kb.fence_proxy_async()
    nregs = fragments.wgmma_accumulator_regs(n) // (2 if acc == "f16" else 1)
    dt = "f32" if acc == "f32" else "b32"
    d = [kb.ld("global", dt, kb.addr(pc, kb.mad(t, nregs, j), 4)) for j in range(nregs)]
    descs = []
    for base, (major, swz) in ((0, a_layout), (IMG_B, b_layout)):
        lbo, sbo = LBO_SBO[(major, swz)]
        descs.append(kb.wgmma_descriptor(kb.shared_addr(s, base), lbo, sbo, SWZ_NAME[swz]))
    if a_in_regs:
        aregs = fragments.MMA_SHAPES[("m16n8k16" if k == 16 else "m16n8k8", elem, "f32")].a_regs
        a_op = ir.Vec(tuple(kb.ld("global", "b32", kb.addr(pa, kb.mad(t, aregs, j), 4)).reg
                            for j in range(aregs)))
    else:
        a_op = descs[0].reg
    p = kb.setp("ne", accumulate, 0)
    kb.wgmma_fence()
    imms = [ir.Imm(str(scale_a)), ir.Imm("1")]
    if elem != "tf32":
        if not a_in_regs:
            imms.append(ir.Imm("1" if a_layout[0] == "MN" else "0"))
        imms.append(ir.Imm("1" if b_layout[0] == "MN" else "0"))
    kb.instr("wgmma", ("mma_async", "sync", "aligned", f"m64n{n}k{k}", acc, elem, elem),
             (ir.Vec(tuple(x.reg for x in d)), a_op, descs[1].reg, p.reg, *imms))
    kb.wgmma_commit_group()
    kb.wgmma_wait_group(0)
    for j, v in enumerate(d):
        kb.st("global", kb.addr(pd, kb.mad(t, nregs, j), 4), v)
    return kb.ptx()


def acc_position(thread: int, i: int) -> tuple[int, int]:
    """PTX ISA wgmma D fragment: row 16w + g + 8*((i>>1)&1), col 8*(i>>2) + 2t + (i&1)."""
    w, lane = thread // 32, thread % 32
    return 16 * w + (lane >> 2) + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * (lane % 4) + (i & 1)


def run_wgmma_layout(api, rng, elem, n, a_layout, b_layout, acc="f32", a_in_regs=False, scale_a=1,
                     accumulate=1):
    k = 8 if elem == "tf32" else 16
    A, B = rng.standard_normal((64, k)), rng.standard_normal((n, k))
    C = rng.standard_normal((64, n))
    ab, bb = to_bits(A, elem), to_bits(B, elem)
    img = np.zeros(2 * IMG_B, np.uint8)
    place(img, 0, ab, *a_layout, *LBO_SBO[a_layout])
    place(img, IMG_B, bb, *b_layout, *LBO_SBO[b_layout])
    words = np.zeros((128, 4), np.uint32)
    if a_in_regs:  # the mma A fragment of the ISA, rows offset by 16 per warp
        for th in range(128):
            w, lane = th // 32, th % 32
            g, q = lane >> 2, lane % 4
            for i in range(8 if elem != "tf32" else 4):
                if elem == "tf32":
                    r, c = g + 8 * (i & 1), q + 4 * (i >> 1)
                    words[th, i] = ab[16 * w + r, c]
                else:
                    r, c = g + 8 * ((i >> 1) & 1), 2 * q + (i & 1) + 8 * (i >> 2)
                    words[th, i // 2] |= np.uint32(int(ab[16 * w + r, c]) << (16 * (i % 2)))
    per = 2 if acc == "f16" else 1
    nregs = n // 2 // per
    cdt = np.float16 if acc == "f16" else np.float32
    cv = C.astype(cdt)
    cw = np.zeros((128, nregs), np.uint32)
    for th in range(128):
        for i in range(n // 2):
            r, c = acc_position(th, i)
            bits = int(cv[r:r + 1, c].view(np.uint16 if acc == "f16" else np.uint32)[0])
            cw[th, i // per] |= np.uint32(bits << (16 * (i % per)))
    out = run_ptx(api, wgmma_layout_kernel(elem, n, a_layout, b_layout, acc, a_in_regs, scale_a),
                  "wgmma_layout", (1, 1, 1), (128, 1, 1),
                  [img, words, cw, np.full((128, nregs), 0x7FC00000, np.uint32), accumulate])[3]
    D = np.full((64, n), np.nan)
    for th in range(128):
        for i in range(n // 2):
            r, c = acc_position(th, i)
            w = int(out[th, i // per]) >> (16 * (i % per))
            D[r, c] = (np.array([w & 0xFFFF], np.uint16).view(np.float16)[0] if acc == "f16"
                       else np.array([w], np.uint32).view(np.float32)[0])
    ref = scale_a * bits_value(ab, elem) @ bits_value(bb, elem).T + (cv.astype(np.float64) if accumulate else 0)
    return D, ref


WGMMA_LAYOUT_CASES = [
    # elem, n, A (major, swizzle), B (major, swizzle), acc, A in registers, imm-scale-a, accumulate
    ("f16", 24, ("K", 0), ("MN", 0), "f32", False, 1, 1),
    ("bf16", 16, ("MN", 128), ("K", 128), "f32", False, -1, 1),
    ("bf16", 8, ("K", 64), ("MN", 64), "f32", False, 1, 0),
    ("f16", 32, ("K", 32), ("MN", 32), "f16", False, 1, 1),
    ("tf32", 16, ("K", 128), ("K", 0), "f32", False, 1, 1),
    ("bf16", 16, ("K", 0), ("MN", 128), "f32", True, 1, 1),
    ("tf32", 8, ("K", 0), ("K", 32), "f32", True, 1, 1),
]


@pytest.mark.parametrize("case", WGMMA_LAYOUT_CASES, ids=lambda c: "-".join(map(str, c[:5])) +
                         ("-regA" if c[5] else ""))
def test_wgmma_reads_every_canonical_shared_layout_and_register_a(case, rng):
    elem, n, al, bl, acc, regs, sa, accum = case
    D, ref = run_wgmma_layout(emulator("sm_90"), rng, elem, n, al, bl, acc, regs, sa, accum)
    assert not np.isnan(D).any()
    tol = 2e-3 if acc == "f16" else 2e-6
    assert np.abs(D - ref).max() <= tol * np.abs(ref).max(), case


def tma_store_kernel() -> str:
    """TMA-load an 8 x 16 f32 box with the 64-byte swizzle, copy the raw shared bytes out, and
    TMA-store the box through a second map (same shape, another tensor)."""
    kb = KernelBuilder("tma_swz64_store", arch="sm_90")
    tin, tout = kb.param_array("tin"), kb.param_array("tout")
    praw = kb.param_ptr("raw")
    s = kb.shared("s", "f32", 128, align=1024)
    bar = kb.shared("bar", "b64", 1, align=8)
    t = kb.tid()
    with kb.if_(kb.setp("eq", t, 0)):
        kb.mbarrier_init(bar, 1)
        kb.mbarrier_arrive_expect_tx(bar, 512)
        kb.cp_async_bulk_tensor(2, kb.shared_addr(s), tin, [0, 0], bar)
    kb.mbarrier_wait_parity(bar, 0)
    for j in range(4):
        idx = kb.add(t, 32 * j)
        kb.st("global", kb.addr(praw, idx, 4), kb.ld("shared", "b32", kb.shared_addr(s, kb.mul(idx, 4))))
    with kb.if_(kb.setp("eq", t, 0)):
        tm = kb.param_address(tout)
        c0 = kb.mov(0, "s32")
        kb.instr("cp", ("async", "bulk", "tensor", "2d", "global", "shared::cta", "tile", "bulk_group"),
                 (ir.Addr(tm.reg, 0, ir.Vec((c0.reg, c0.reg))), ir.Addr(kb.shared_addr(s).reg, 0)))
        kb.instr("cp", ("async", "bulk", "commit_group"), ())
        kb.instr("cp", ("async", "bulk", "wait_group"), (ir.Imm("0"),))
    return kb.ptx()


def run_tma_store(api, X: np.ndarray):
    """(raw swizzled shared bytes, tensor written by the TMA store) for the 8 x 16 f32 X."""
    px, py = api.mem_alloc(X.nbytes), api.mem_alloc(X.nbytes)
    try:
        api.memcpy_htod(px, X.ctypes.data, X.nbytes)
        api.memset_d8(py, 0, X.nbytes)
        maps = [api.tensor_map_encode_tiled(TENSOR_MAP_DATA_TYPES["FLOAT32"], 2, p, (16, 8), (64,), (16, 8),
                                            (1, 1), 0, TENSOR_MAP_SWIZZLE["64B"], 0, 0) for p in (px, py)]
        raw = run_ptx(api, tma_store_kernel(), "tma_swz64_store", (1, 1, 1), (32, 1, 1),
                      [maps[0], maps[1], np.zeros(128, np.uint32)])[2]
        Y = np.empty_like(X)
        api.memcpy_dtoh(Y.ctypes.data, py, Y.nbytes)
    finally:
        api.mem_free(px)
        api.mem_free(py)
    return raw, Y


def test_tma_64b_swizzle_lands_swizzled_and_tma_store_writes_the_box_back(rng):
    X = rng.standard_normal((8, 16)).astype(np.float32)
    raw, Y = run_tma_store(emulator("sm_90"), X)
    want = np.zeros(512, np.uint8)
    xb = X.view(np.uint8).reshape(-1)
    for off in range(0, 512, 4):  # element at dense offset off lands at swizzle(off), 64B mode
        want[swizzled(off, 64):swizzled(off, 64) + 4] = xb[off:off + 4]
    assert (raw.view(np.uint8) == want).all()
    assert (Y == X).all()
