"""Hopper (sm_90a) GEMM: ``wgmma.mma_async`` from shared-memory descriptors, TMA tile loads
(``cp.async.bulk.tensor`` with tensor maps from ``tensor_map_encode_tiled``) and a full/empty
mbarrier pipeline of ``stages`` buffers.

Column-major, cuBLAS semantics, like ``gemm_tensorcore``: f16/bf16 data with f32 accumulation or
f32 data as tf32; C has the data's dtype; ``beta == 0`` never reads C.

Operand layouts (PTX ISA, "Asynchronous Warpgroup Level Canonical Layouts"), both with the
128-byte swizzle, one K tile (``block_k``) = 128 bytes of K per stage:

- K-major (op(A) = A^T, i.e. ``transa``; op(B) = B, i.e. not ``transb``): one TMA box of
  128 bytes of K times the tile rows; rows are 128 bytes apart, 8-row groups 1024 (SBO); the
  descriptor start advances 32 bytes per k16 (k8 for tf32) step.
- MN-major (f16/bf16 only; A not transposed, B transposed): boxes of 64 elements (128 bytes) of
  M/N times ``block_k`` rows of K, one per 64 rows of the tile, ``block_k * 128`` bytes apart
  (LBO: the next 64 M/N elements); K rows are 128 bytes apart, 8-row groups 1024 (SBO); the
  descriptor start advances 16 rows (2048 bytes) per k16 step; wgmma reads it with imm-trans 1.
  tf32 has no transpose immediates (ISA restriction), so the tf32 kernels read K-major operands
  only; the plan first transposes an MN-major tf32 operand (A not transposed, B transposed)
  into a K-major scratch buffer from the workspace cache with ``transpose_kernels`` (one launch
  per operand covering the whole batch, on the caller's stream), so ``supports`` takes tf32 in
  every layout. The transpose moves 2 x 4 bytes per element at near copy bandwidth: ~0.13 ms
  for an 8192^2 operand on the H200, against ~2.8 ms for the 8192^3 GEMM.

Pipeline: ``consumers`` warpgroups, each owning block_m / consumers rows of the tile (in m64 wgmma
tiles) times the whole block_n. Per stage a "full" mbarrier (expect_tx: the TMA bytes) and an
"empty" one (4 arrivals per consumer warpgroup). Thread 0 fills every stage first; then each
K tile is: wait "full", issue the stage's wgmma chain, commit, ``wgmma.wait_group 1`` (the chain
of the previous K tile is done reading its stage, while this one keeps the tensor cores busy),
lane 0 of every warp arrives on the previous stage's "empty" barrier, and thread 0 waits for it
to complete and refills that stage with K tile + stages - 1. No CTA-wide barrier runs in the main
loop and every role decision is a guard predicate, not a branch: ptxas serializes wgmma that runs
under a branch it cannot prove warp-uniform (C7518 "WG.DP in divergent path") or whose
accumulators cross one (C7517), and the test of this family asserts neither appears. (A
warp-specialized producer warp needs such a role branch around the consumer code, and the
emulator, which runs the lowest program counter first, cannot run two roles that spin on each
other's barriers in separate loops; the producer is therefore an elected consumer thread, as in
CUTLASS's non-warp-specialized sm90 TMA mainloop.)

Out-of-bounds parts of a box are zero-filled by TMA, so K, M and N tails need no code; the
epilogue predicates stores. ``raster`` > 0 maps a 1-D grid onto output tiles in groups of
``raster`` tile rows (M) so that concurrently running CTAs share A and B panels in L2.
``persistent`` launches at most one wave of CTAs that loop over output tiles; the stage ring and
the load counters run on across tiles, so the next tile's first K tiles load during the epilogue.

Not done (would need clusters, which the emulator does not run): TMA multicast of the shared
operand across a 2-CTA cluster, which halves the L2 traffic of the 128x256 tile.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import ClassVar

from oxicuda.driver.backend import api
from oxicuda.driver.facts import DeviceFacts, device_facts, shared_optin_limit
from oxicuda.ptx import fragments
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from oxicuda.ptx.registry import register_family
from oxicuda.ptx.spec import KernelSpec

from .gemm_problem import GemmProblem
from .gemm_tensorcore import (
    COPY_BYTES,
    _input_type,
    as_problem,
    batch_pointers,
    kernel_params,
    load_scalars,
    offset_ptr,
    with_call_layout,
)
from .gemm_tensorcore import (
    _load_as_f32 as load_as_f32,
)
from .transpose_kernels import DEFAULT_TILE as TRANSPOSE_TILE
from .transpose_kernels import MAX_GRID_YZ, transpose_step

ALGO = "wgmma"
FAMILY = "gemm_wgmma"
ARCHS = ("sm_90a",)
SWIZZLE_BYTES = 128
MN_BOX = 64  # elements of M/N per MN-major box: 128 bytes of 16-bit data
#: CUtensorMapDataType per input type (tf32 loads f32 words; wgmma reads their tf32 bits)
TMA_DATA_TYPE = {"f16": 6, "bf16": 9, "tf32": 7}
TMA_SWIZZLE_128B, TMA_L2_PROMOTION_128B = 3, 2
#: the opt-in shared memory per block of the one arch this family targets
MAX_SHARED = shared_optin_limit((9, 0))


@dataclass(frozen=True)
class GemmWgmmaSpec(KernelSpec):
    """One wgmma GEMM kernel: input type, operand majorness (``a_kmajor``: op(A) contiguous along
    K, i.e. transa; ``b_kmajor``: op(B) contiguous along K, i.e. not transb), CTA tile (block_m x
    block_n, K step of 128 bytes), consumer warpgroups (each owns block_m / consumers rows, in
    m64 wgmma tiles), pipeline stages, the tile raster group (0: a 2-D grid) and ``persistent``
    (a grid of at most one wave of CTAs, each looping over output tiles with one continuous
    stage ring, so the next tile's first loads fly during this tile's epilogue)."""

    family: ClassVar[str] = FAMILY
    arch: str = "sm_90a"
    dtype: str = "f16"
    a_kmajor: bool = True
    b_kmajor: bool = True
    block_m: int = 128
    block_n: int = 128
    consumers: int = 1
    stages: int = 4
    raster: int = 0
    persistent: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.arch != "sm_90a":
            raise ValueError(f"GemmWgmmaSpec: arch={self.arch!r}; wgmma needs 'sm_90a'")
        if self.dtype not in TMA_DATA_TYPE:
            raise ValueError(f"GemmWgmmaSpec: dtype={self.dtype!r}; allowed {tuple(TMA_DATA_TYPE)}")
        if (self.consumers not in (1, 2, 3) or self.block_m % (64 * self.consumers) or self.block_m > 256
                or self.block_n % 8 or not 8 <= self.block_n <= 256 or self.stages < 2):
            raise ValueError(f"GemmWgmmaSpec: block {self.block_m}x{self.block_n}, {self.consumers} consumers, "
                             f"{self.stages} stages: block_m a multiple of 64 per consumer (<= 256), block_n a "
                             "multiple of 8 in 8..256, 1 to 3 consumers, stages >= 2")
        if self.dtype == "tf32" and not (self.a_kmajor and self.b_kmajor):
            raise ValueError("GemmWgmmaSpec: tf32 wgmma reads K-major operands only (no transpose immediates); "
                             f"got a_kmajor={self.a_kmajor}, b_kmajor={self.b_kmajor}")
        if not self.b_kmajor and self.block_n % MN_BOX:
            raise ValueError(f"GemmWgmmaSpec: an MN-major B needs block_n a multiple of {MN_BOX}; got {self.block_n}")
        if not isinstance(self.raster, int) or self.raster < 0:
            raise ValueError(f"GemmWgmmaSpec: raster={self.raster!r}; a group size >= 1, or 0 for a 2-D grid")
        if self.shared_bytes > MAX_SHARED:
            raise ValueError(f"GemmWgmmaSpec: {self.shared_bytes} bytes of shared memory; sm_90 allows {MAX_SHARED}")

    @property
    def elem_bytes(self) -> int:
        return 4 if self.dtype == "tf32" else 2

    @property
    def block_k(self) -> int:
        return SWIZZLE_BYTES // self.elem_bytes

    @property
    def k_step(self) -> int:
        return 8 if self.dtype == "tf32" else 16

    @property
    def threads(self) -> int:
        return 128 * self.consumers

    @property
    def max_registers(self) -> int:
        """The per-thread register cap: 65536 over the block's threads, in units of 8, at most 255
        (what ptxas derives from ``.reqntid`` itself; stated as ``.maxnreg`` so that the emulator,
        which estimates registers from the PTX, admits the block too)."""
        return min(255, 65536 // self.threads) // 8 * 8

    @property
    def a_bytes(self) -> int:
        return self.block_m * SWIZZLE_BYTES

    @property
    def stage_bytes(self) -> int:
        return (self.block_m + self.block_n) * SWIZZLE_BYTES

    @property
    def shared_bytes(self) -> int:
        return self.stages * self.stage_bytes + 16 * self.stages + 1024  # + 2 barriers/stage + alignment slack

    def ctas_per_sm(self, device: DeviceFacts) -> int:
        """Resident CTAs per SM of ``device`` by shared memory (its reserve per CTA included) and
        threads."""
        per_cta = self.shared_bytes + device.reserved_smem_per_block
        return max(1, min(device.smem_per_sm // per_cta, device.max_threads_per_sm // self.threads))

    def grid(self, m: int, n: int, batch: int, device: DeviceFacts) -> tuple[int, int, int]:
        """The launch grid of an m x n output with ``batch`` entries (persistent: at most one
        wave of the device's SMs)."""
        tm, tn = -(-m // self.block_m), -(-n // self.block_n)
        if self.persistent:
            return (max(1, min(tm * tn, device.sm_count * self.ctas_per_sm(device))), 1, batch)
        return (tm * tn, 1, batch) if self.raster else (tm, tn, batch)


def _accumulator_affine(n: int) -> tuple[tuple[tuple[int, int], ...], tuple[int, int, int], tuple[int, int, int]]:
    """Thread 0's (row, col) per register of the m64nN accumulator and the (warp, g, t) deltas of
    row and col, checked over all 128 threads of the warpgroup."""
    table = fragments.wgmma_accumulator_layout(n)
    deltas = []
    for axis in (0, 1):
        d = tuple(table[th][0][axis] - table[0][0][axis] for th in (32, 4, 1))
        for th in range(fragments.WARPGROUP):
            w, g, t = th // 32, (th % 32) >> 2, th % 4
            for i, rc in enumerate(table[th]):
                if rc[axis] != table[0][i][axis] + d[0] * w + d[1] * g + d[2] * t:
                    raise AssertionError(f"wgmma m64n{n} accumulator is not affine in (warp, g, t)")
        deltas.append(d)
    return table[0], deltas[0], deltas[1]


def operand_geometry(spec: GemmWgmmaSpec, operand: str) -> tuple[int, int, int, int]:
    """(LBO, SBO, bytes per 64-row tile, bytes per k step) of operand "a" or "b" in one stage:
    the descriptor fields and the offsets of m64 tile j / k step kk from the operand's base."""
    kmajor = spec.a_kmajor if operand == "a" else spec.b_kmajor
    if kmajor:
        return 16, 1024, 64 * SWIZZLE_BYTES, spec.k_step * spec.elem_bytes
    return spec.block_k * SWIZZLE_BYTES, 1024, spec.block_k * SWIZZLE_BYTES, spec.k_step * SWIZZLE_BYTES


def _tile_origin(kb: KernelBuilder, spec: GemmWgmmaSpec, p, pid=None) -> tuple[object, object]:
    """(m0, n0) of output tile ``pid`` (a linear index; None: this CTA's, from ctaid.x/y or,
    with a raster, ctaid.x): grouped in ``raster`` tile rows, or M fastest without a raster."""
    BM, BN, G = spec.block_m, spec.block_n, spec.raster
    if pid is None and not G:
        return kb.mul(kb.ctaid("x"), BM), kb.mul(kb.ctaid("y"), BN)
    pid = kb.ctaid("x") if pid is None else pid
    tm = kb.div(kb.add(p["m"], BM - 1), BM)
    if not G:
        q = kb.div(pid, tm)
        return kb.mul(kb.sub(pid, kb.mul(q, tm)), BM), kb.mul(q, BN)
    tn = kb.div(kb.add(p["n"], BN - 1), BN)
    per_group = kb.mul(tn, G)
    group = kb.div(pid, per_group)
    first_m = kb.mul(group, G)
    size = kb.min(kb.sub(tm, first_m), G)
    r = kb.sub(pid, kb.mul(group, per_group))
    q = kb.div(r, size)
    pid_m = kb.add(first_m, kb.sub(r, kb.mul(q, size)))
    return kb.mul(pid_m, BM), kb.mul(q, BN)


def store_c(kb: KernelBuilder, dtype: str, c, ldc, m, n, alpha, beta, row_base, col_base,
            cells: list[tuple[int, int, object]]) -> None:
    """The epilogue: C[row_base + dr, col_base + dc] = alpha * v (+ beta * C when beta != 0) for
    each (dr, dc, v) in ``cells``; cells outside m x n are skipped and beta == 0 never reads C.
    Column addresses are formed where each column is written, not held across the epilogue
    (64 live column registers beside a 128-register accumulator would spill)."""
    es = 4 if dtype == "f32" else 2
    rows = sorted({dr for dr, _, _ in cells})
    row_ok = {dr: kb.setp("lt", kb.add(row_base, dr), m) for dr in rows}
    row_off = {dr: kb.mul(kb.add(row_base, dr), es, mode="wide", type_="u32") for dr in rows}
    beta_zero = kb.setp("eq", beta, 0.0)
    by_col: dict[int, list[tuple[int, object]]] = {}
    for dr, dc, v in cells:
        by_col.setdefault(dc, []).append((dr, v))
    for read_c in (False, True):
        with kb.if_(beta_zero, negate=read_c):
            for dc, col_cells in sorted(by_col.items()):
                col = kb.add(col_base, dc)
                with kb.if_(kb.setp("lt", col, n)):
                    col_ptr = offset_ptr(kb, c, kb.mul(col, ldc, mode="wide", type_="u32"), es)
                    for dr, v in col_cells:
                        with kb.if_(row_ok[dr]):
                            addr = kb.add(col_ptr, row_off[dr])
                            out = kb.mul(alpha, v)
                            if read_c:
                                out = kb.fma(beta, load_as_f32(kb, dtype, addr), out)
                            kb.st("global", addr, out if dtype == "f32" else kb.cvt(out, dtype))


def generate(spec: GemmWgmmaSpec) -> str:
    """PTX of one wgmma + TMA GEMM kernel (see the module docstring)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.reqntid(spec.threads)
    kb.maxnreg(spec.max_registers)
    S, BM, BN, BK, C = spec.stages, spec.block_m, spec.block_n, spec.block_k, spec.consumers
    p = kernel_params(kb)
    tmap_a, tmap_b = kb.param_array("tmap_a"), kb.param_array("tmap_b")
    smem = kb.dynamic_shared("smem", spec.shared_bytes, align=1024)
    alpha, beta = load_scalars(kb, p)
    _, _, c_g = batch_pointers(kb, p, 4 if spec.dtype == "tf32" else 2)
    tid = kb.tid()
    wg, lane_wg = kb.shr(tid, 7), kb.and_(tid, 127)
    leader = kb.setp("eq", tid, 0)
    warp_lead = kb.setp("eq", kb.and_(tid, 31), 0)
    z = kb.ctaid("z")
    raw = kb.shared_addr(smem)
    tiles = kb.and_(kb.add(raw, 1023), 0xFFFFFC00)  # swizzled tiles need 1024-byte alignment
    bars = kb.add(tiles, S * spec.stage_bytes)  # full[0..S), then empty[0..S)
    with kb.if_(leader):
        for s in range(S):
            kb.mbarrier_init(kb.add(bars, 8 * s), 1)
            kb.mbarrier_init(kb.add(bars, 8 * (S + s)), 4 * C)
        kb.fence_proxy_async("shared::cta")
    kb.bar_sync()
    ktiles = kb.div(kb.add(p["k"], BK - 1), BK)
    if spec.persistent:  # tiles first, first + step, ... of this batch entry
        first, step = kb.ctaid("x"), kb.nctaid("x")
        count = kb.mul(kb.div(kb.add(p["m"], BM - 1), BM), kb.div(kb.add(p["n"], BN - 1), BN))
        my_tiles = kb.div(kb.add(kb.sub(count, first), kb.sub(step, 1)), step)
        total = kb.mul(my_tiles, ktiles)
    else:
        total = ktiles
    a_lbo, a_sbo, a_tile, a_kstep = operand_geometry(spec, "a")
    b_lbo, b_sbo, _, b_kstep = operand_geometry(spec, "b")

    fixed = None if spec.persistent else _tile_origin(kb, spec, p)

    def origin(local_tile):
        return fixed if fixed is not None else _tile_origin(kb, spec, p, kb.mad(local_tile, step, first))

    # the next load: K tile ld_kt of local output tile ld_tile (the same counters in every
    # thread; only thread 0 issues)
    ld_kt, ld_tile = kb.mov(0, "u32"), kb.mov(0, "u32")

    def issue(stage, pred, advance) -> None:
        """Thread 0 (where ``pred``) loads the next K tile into ``stage``: expect_tx, then the A and
        B boxes, all completing on the stage's full barrier (guards, not branches); every thread
        then advances the load counters where ``advance`` holds."""
        lm0, ln0 = origin(ld_tile)
        base = kb.add(tiles, kb.mul(stage, spec.stage_bytes))
        full = kb.add(bars, kb.shl(stage, 3))
        kb.mbarrier_arrive_expect_tx(full, spec.stage_bytes, pred=pred)
        k0 = kb.mul(ld_kt, BK)
        if spec.a_kmajor:
            kb.cp_async_bulk_tensor(3, base, tmap_a, (k0, lm0, z), full, pred=pred)
        else:
            for j in range(BM // MN_BOX):
                kb.cp_async_bulk_tensor(3, kb.add(base, j * a_tile), tmap_a, (kb.add(lm0, MN_BOX * j), k0, z), full,
                                        pred=pred)
        b_base = kb.add(base, spec.a_bytes)
        if spec.b_kmajor:
            kb.cp_async_bulk_tensor(3, b_base, tmap_b, (k0, ln0, z), full, pred=pred)
        else:
            for j in range(BN // MN_BOX):
                kb.cp_async_bulk_tensor(3, kb.add(b_base, j * BK * SWIZZLE_BYTES), tmap_b,
                                        (kb.add(ln0, MN_BOX * j), k0, z), full, pred=pred)
        nk = kb.add(ld_kt, 1)
        wrap = kb.setp("eq", nk, ktiles)
        kb.selp(kb.selp(0, nk, wrap, type_="u32"), ld_kt, advance, out=ld_kt)
        kb.selp(kb.add(ld_tile, kb.selp(1, 0, wrap, type_="u32")), ld_tile, advance, out=ld_tile)

    for s in range(S):  # the prologue fills every stage
        more = kb.setp("lt", kb.mov(s, "u32"), total)
        issue(kb.mov(s, "u32"), kb.and_(leader, more), more)

    mtiles = BM // 64 // C
    nregs = fragments.wgmma_accumulator_regs(BN)
    acc = [[kb.mov(0.0, "f32") for _ in range(nregs)] for _ in range(mtiles)]
    stage, phase = kb.mov(0, "u32"), kb.mov(0, "u32")
    prev_stage, prev_phase = kb.mov(0, "u32"), kb.mov(0, "u32")
    it = kb.mov(0, "u32")  # K tiles consumed so far, over all of this CTA's output tiles
    a_first = kb.mul(wg, mtiles * a_tile)  # this warpgroup's first m64 tile in the A stage
    lane0, (rw, rg, rt), (cw, cg, ct) = _accumulator_affine(BN)
    warp, lane = kb.shr(lane_wg, 5), kb.and_(lane_wg, 31)
    g, t = kb.shr(lane, 2), kb.and_(lane, 3)

    def lin(w0, a, b, c):
        return kb.add(kb.add(kb.mul(warp, a), kb.mul(g, b)), kb.add(kb.mul(t, c), w0))

    with kb.loop(0, my_tiles, 1, type_="u32") if spec.persistent else nullcontext() as tile_i:
        if spec.persistent:
            for row in acc:
                for r in row:
                    kb.assign(r, 0.0)
        with kb.loop(0, ktiles, 1, type_="u32"):
            kb.mbarrier_wait_parity(kb.add(bars, kb.shl(stage, 3)), phase)
            base = kb.add(tiles, kb.mul(stage, spec.stage_bytes))
            a_desc = kb.wgmma_descriptor(kb.add(base, a_first), a_lbo, a_sbo, "128B")
            b_desc = kb.wgmma_descriptor(kb.add(base, spec.a_bytes), b_lbo, b_sbo, "128B")
            kb.wgmma_fence()
            for kk in range(BK // spec.k_step):
                bd = kb.add(b_desc, (kk * b_kstep) >> 4, type_="u64") if kk else b_desc
                for mt in range(mtiles):
                    off = mt * a_tile + kk * a_kstep
                    ad = kb.add(a_desc, off >> 4, type_="u64") if off else a_desc
                    kb.wgmma_mma_async(BN, spec.dtype, acc[mt], ad, bd, scale_d=1,
                                       trans_a=0 if spec.a_kmajor else 1, trans_b=0 if spec.b_kmajor else 1)
            kb.wgmma_commit_group()
            kb.wgmma_wait_group(1)  # the previous K tile's chain is done reading its stage: release it
            has_prev = kb.setp("gt", it, 0)
            prev_empty = kb.add(bars, kb.shl(kb.add(prev_stage, S), 3))
            kb.mbarrier_arrive(prev_empty, pred=kb.and_(warp_lead, has_prev))
            more = kb.and_(has_prev, kb.setp("lt", kb.add(it, S - 1), total))  # a K tile is left to load
            refill = kb.and_(leader, more)
            kb.mbarrier_wait_parity(prev_empty, prev_phase, only=refill)
            issue(prev_stage, refill, more)
            kb.assign(prev_stage, stage)
            kb.assign(prev_phase, phase)
            kb.add(stage, 1, out=stage)
            wrapped = kb.setp("eq", stage, S)
            kb.selp(0, stage, wrapped, out=stage)
            kb.xor(phase, kb.selp(1, 0, wrapped, type_="u32"), out=phase)
            kb.add(it, 1, out=it)
        kb.wgmma_wait_group(0)
        m0, n0 = origin(tile_i)
        row_base = lin(kb.add(m0, kb.mul(wg, BM // C)), rw, rg, rt)
        col_base = lin(n0, cw, cg, ct)
        cells = [(mt * 64 + lane0[i][0], lane0[i][1], acc[mt][i]) for mt in range(mtiles) for i in range(nregs)]
        store_c(kb, "f32" if spec.dtype == "tf32" else spec.dtype, c_g, p["ldc"], p["m"], p["n"], alpha, beta,
                row_base, col_base, cells)
    return kb.ptx()


#: (block_m, block_n, consumers, stages, raster[, persistent]): the first for large problems, the second for
#: small ones. Provisional until benches/sweep_wgmma.py has measured the candidates on the H200.
TILES = ((128, 256, 2, 4, 8), (128, 128, 1, 6, 0))
#: Further candidates the sweep times (bf16 with row-major operands, tf32 TN); ptxas checks them.
SWEEP_TILES = ((128, 256, 2, 4, 0), (128, 256, 2, 3, 8), (256, 128, 2, 4, 8), (192, 256, 3, 4, 8),
               (128, 128, 2, 3, 8), (128, 192, 2, 5, 8), (128, 256, 2, 4, 8, True), (192, 256, 3, 4, 8, True))
#: Layouts of the sweep candidates: (dtype, a_kmajor, b_kmajor).
SWEEP_LAYOUTS = (("bf16", False, True), ("tf32", True, True))
SMALL_PROBLEM_MN = 1024 * 1024
#: (a_kmajor, b_kmajor) per dtype: every N/T combination for f16/bf16, K-major only for tf32.
LAYOUTS = {"f16": ((True, True), (False, True), (True, False), (False, False)),
           "bf16": ((True, True), (False, True), (True, False), (False, False)),
           "tf32": ((True, True),)}


def _spec(dtype: str, a_kmajor: bool, b_kmajor: bool, tile: tuple) -> GemmWgmmaSpec:
    """The spec of ``tile`` = (block_m, block_n, consumers, stages, raster[, persistent])."""
    bm, bn, c, s, r = tile[:5]
    return GemmWgmmaSpec(dtype=dtype, a_kmajor=a_kmajor, b_kmajor=b_kmajor, block_m=bm, block_n=bn,
                         consumers=c, stages=s, raster=r, persistent=bool(tile[5]) if len(tile) > 5 else False)


def configurations(arch: str) -> list[GemmWgmmaSpec]:
    """Every kernel the family can produce (sm_90a only): dtypes x layouts x tiles, plus the
    sweep's candidate tiles."""
    out = [_spec(d, ak, bk, t) for d, layouts in LAYOUTS.items() for ak, bk in layouts for t in TILES]
    out += [_spec(d, ak, bk, t) for d, ak, bk in SWEEP_LAYOUTS for t in SWEEP_TILES]
    return [s for s in out if s.arch == arch]


register_family(FAMILY, GemmWgmmaSpec, generate, configurations, archs=ARCHS)


def supports(problem: object) -> bool:
    """True for f16/bf16 (compute f32) or f32 (compute tf32) with any transposes, on an sm_90
    device, with 16-byte alignment of pointers and leading dimensions and sizes below 2**31
    (tf32 operands that are not K-major are transposed into scratch by the plan)."""
    p = as_problem(problem)
    dtype = _input_type(p)
    if p.sm != 90 or dtype is None or p.alignment < COPY_BYTES or p.pointer_array:
        return False
    if p.c_dtype not in ("", p.dtype):  # C in the data's dtype only (no MIXED_C)
        return False
    if max(p.m, p.n, p.k, p.lda, p.ldb, p.ldc) >= 2**31:
        return False
    if any(needs_transpose(p)) and -(-p.k // TRANSPOSE_TILE) > MAX_GRID_YZ:  # the transpose's grid.y covers K
        return False
    rows_a, rows_b = (p.k if p.a_transposed else p.m), (p.n if p.b_transposed else p.k)
    return p.lda >= max(1, rows_a) and p.ldb >= max(1, rows_b) and p.ldc >= max(1, p.m)


def choose_spec(problem: object) -> GemmWgmmaSpec:
    """The kernel for ``problem``: layouts from the transposes (tf32: always K-major, see
    ``needs_transpose``), the large tile unless the output is small."""
    p = as_problem(problem)
    dtype = _input_type(p)
    if dtype is None:
        raise ValueError(f"wgmma gemm: dtype={p.dtype!r} with compute={p.compute!r} is not supported")
    tile = TILES[1] if p.m * p.n < SMALL_PROBLEM_MN else TILES[0]
    if dtype == "tf32":
        return _spec(dtype, True, True, tile)
    return _spec(dtype, p.a_transposed, not p.b_transposed, tile)


def needs_transpose(problem: object) -> tuple[bool, bool]:
    """(A, B): whether the plan transposes that operand into a K-major scratch buffer first
    (tf32 only: A not transposed, B transposed)."""
    p = as_problem(problem)
    if _input_type(p) != "tf32":
        return False, False
    return not p.a_transposed, p.b_transposed


def _check_spec(p: GemmProblem, spec: GemmWgmmaSpec | None) -> GemmWgmmaSpec:
    """``spec`` (or the natural choice when None), checked against the dtype and layouts ``p``
    runs with."""
    natural = choose_spec(p)
    if spec is None:
        return natural
    if (spec.dtype, spec.a_kmajor, spec.b_kmajor) != (natural.dtype, natural.a_kmajor, natural.b_kmajor):
        raise ValueError(f"wgmma gemm: spec has dtype {spec.dtype}, a_kmajor={spec.a_kmajor}, "
                         f"b_kmajor={spec.b_kmajor}; this problem needs {natural.dtype}, {natural.a_kmajor}, "
                         f"{natural.b_kmajor}")
    return spec


def _tensor_map(dtype: str, ptr: int, inner: int, outer: int, ld: int, batch: int, stride: int,
                box: tuple[int, int], es: int) -> bytes:
    """The 3-D (inner, outer, batch) tensor map of a column-major operand: ``inner`` contiguous
    elements per column, ``outer`` columns ``ld`` elements apart, batches ``stride`` apart."""
    batch_stride = stride * es if batch > 1 else max(16, -(-ld * es * outer // 16) * 16)
    return api().tensor_map_encode_tiled(
        TMA_DATA_TYPE[dtype], 3, ptr, (max(inner, 1), max(outer, 1), max(batch, 1)), (ld * es, batch_stride),
        (box[0], box[1], 1), (1, 1, 1), 0, TMA_SWIZZLE_128B, TMA_L2_PROMOTION_128B, 0)


def operand_map(spec: GemmWgmmaSpec, operand: str, ptr: int, mn: int, k: int, ld: int, batch: int,
                stride: int) -> bytes:
    """The tensor map of operand "a" (mn = m) or "b" (mn = n) for ``spec``'s layout and boxes."""
    kmajor = spec.a_kmajor if operand == "a" else spec.b_kmajor
    rows = spec.block_m if operand == "a" else spec.block_n
    es = spec.elem_bytes
    if kmajor:
        return _tensor_map(spec.dtype, ptr, k, mn, ld, batch, stride, (spec.block_k, rows), es)
    return _tensor_map(spec.dtype, ptr, mn, k, ld, batch, stride, (MN_BOX, spec.block_k), es)


#: tensor maps kept per pointer pair by each GEMM step (a map holds its operand's address)
TENSOR_MAPS_PER_STEP = 64


def _scratch_steps(p: GemmProblem, arch: str) -> tuple[list[KernelStep], int, tuple]:
    """The transposes of the MN-major tf32 operands of ``p`` into one workspace (A's part, then
    B's; K padded to 4 elements so each column starts 16-byte aligned, as TMA needs): the steps,
    the workspace bytes and the K-major (lda, stride_a, ldb, stride_b, a_at, b_at) the GEMM then
    reads, where ``a_at``/``b_at`` map (pointers, workspace) to the operand's address. A batch
    stride of 0 (one operand shared by every batch entry) stays 0 and is transposed once."""
    ta, tb = needs_transpose(p) if p.k else (False, False)  # k == 0 reads neither operand
    batch = p.batch
    kp = max(4, -(-p.k // 4) * 4)
    count_a = p.m * kp * (batch if p.stride_a and batch > 1 else 1) if ta else 0
    count_b = p.n * kp * (batch if p.stride_b and batch > 1 else 1) if tb else 0
    steps = []
    lda, sa, ldb, sb = p.lda, p.stride_a, p.ldb, p.stride_b

    def a_at(ptr, ws):
        return ptr[0]

    def b_at(ptr, ws):
        return ptr[1]

    if ta:  # A: m x k column-major (lda) -> A^T: k x m (kp)
        sa_dst = p.m * kp if p.stride_a and batch > 1 else 0
        steps.append(transpose_step(p.m, p.k, p.lda, kp, elem_bytes=4, batch=batch if sa_dst else 1,
                                    stride_src=p.stride_a, stride_dst=sa_dst, arch=arch,
                                    src=lambda ptr, ws: ptr[0], dst=lambda ptr, ws: ws))
        lda, sa = kp, sa_dst

        def a_at(ptr, ws):
            return ws
    if tb:  # B: n x k column-major (ldb) -> B^T: k x n (kp)
        sb_dst = p.n * kp if p.stride_b and batch > 1 else 0
        b_off = 4 * count_a
        steps.append(transpose_step(p.n, p.k, p.ldb, kp, elem_bytes=4, batch=batch if sb_dst else 1,
                                    stride_src=p.stride_b, stride_dst=sb_dst, arch=arch, dst_offset=b_off,
                                    src=lambda ptr, ws: ptr[1], dst=lambda ptr, ws: ws + b_off))
        ldb, sb = kp, sb_dst

        def b_at(ptr, ws):
            return ws + b_off
    return steps, 4 * (count_a + count_b), (lda, sa, ldb, sb, a_at, b_at)


def _gemm_bind(spec: GemmWgmmaSpec, p: GemmProblem, layout: tuple, first: int, count: int):
    """The bind of one GEMM launch over batch entries first..first+count: the kernel parameters
    and the two tensor maps, encoded once per (A, B) address pair and kept (bounded)."""
    lda, sa, ldb, sb, a_at, b_at = layout
    es = spec.elem_bytes
    m, n, k, ldc, sc = p.m, p.n, p.k, p.ldc, p.stride_c
    maps: dict[tuple[int, int], tuple[bytes, bytes]] = {}

    def bind(ptr, s, ws):
        a0 = a_at(ptr, ws) + first * sa * es
        b0 = b_at(ptr, ws) + first * sb * es
        pair = maps.get((a0, b0))
        if pair is None:
            if len(maps) >= TENSOR_MAPS_PER_STEP:
                maps.clear()
            pair = maps[(a0, b0)] = (operand_map(spec, "a", a0, m, k, lda, count, sa),
                                     operand_map(spec, "b", b0, n, k, ldb, count, sb))
        return (a0, b0, ptr[2] + first * sc * es, m, n, k, lda, ldb, ldc, s[0], s[1], ptr[3], ptr[4], sa, sb, sc,
                *pair)

    return bind


def plan(problem: object, device: DeviceFacts, spec: GemmWgmmaSpec | None = None) -> LaunchPlan:
    """The launch plan of ``problem`` (batch and strides included) with wgmma + TMA (sm_90):
    the transposes of MN-major tf32 operands into workspace scratch (see ``needs_transpose``),
    then the GEMM; batches whose A/B strides are not positive multiples of 16 bytes take one
    launch per batch entry. ``spec`` overrides the tile choice (its dtype and layouts must match
    the problem). Raises ValueError for unsupported problems, before any launch."""
    p = as_problem(problem)
    if not supports(p):
        raise ValueError(f"wgmma gemm does not support {p} (needs sm_90, f16/bf16 with compute f32 or f32 "
                         "with compute tf32, 16-byte alignment)")
    spec = _check_spec(p, spec)
    batch = p.batch
    grid = spec.grid(p.m, p.n, batch, device)
    if grid[1] > MAX_GRID_YZ or grid[2] > MAX_GRID_YZ or grid[0] >= 2**31:
        raise ValueError(f"wgmma gemm: grid {grid} exceeds the launch limits (n={p.n}, batch={batch}); "
                         "split the problem")
    if p.m == 0 or p.n == 0 or batch == 0:
        return LaunchPlan(ALGO, ())
    steps, ws_bytes, layout = _scratch_steps(p, p.arch.rstrip("a"))
    es = spec.elem_bytes
    strided = batch == 1 or all(s > 0 and (s * es) % 16 == 0 for s in (layout[1], layout[3]))
    runs = [(0, batch)] if strided else [(i, 1) for i in range(batch)]
    for first, count in runs:
        steps.append(KernelStep(spec, (grid[0], grid[1], count), spec.threads, _gemm_bind(spec, p, layout, first, count),
                                spec.shared_bytes))
    return LaunchPlan(ALGO, steps, ws_bytes)


def launch(problem: object, alpha: float, a_ptr: int, lda: int, b_ptr: int, ldb: int, beta: float, c_ptr: int,
           ldc: int, *, batch: int = 1, stride_a: int = 0, stride_b: int = 0, stride_c: int = 0,
           alpha_ptr: int = 0, beta_ptr: int = 0, stream: object = None, spec: GemmWgmmaSpec | None = None) -> None:
    """C = alpha * op(A) @ op(B) + beta * C, column-major, with wgmma + TMA (sm_90): ``plan`` for
    ``problem`` with these leading dimensions, batch and strides (``spec``: an explicit
    configuration, e.g. a sweep tile), then its ``run``. Same arguments as
    ``gemm_tensorcore.launch``. Raises ValueError for unsupported problems, before any launch."""
    p = with_call_layout(as_problem(problem), lda, ldb, ldc, batch, stride_a, stride_b, stride_c)
    device = device_facts()
    launch_plan = LAUNCH_PLANS.get_or_build((p, spec, device.ordinal), lambda: plan(p, device, spec))
    launch_plan.run((a_ptr, b_ptr, c_ptr, alpha_ptr, beta_ptr), (alpha, beta), stream)


#: plans of ``launch`` by (problem, spec, device ordinal)
LAUNCH_PLANS = PlanCache(FAMILY, maxsize=256)
