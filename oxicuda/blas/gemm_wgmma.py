"""Hopper (sm_90a) GEMM: ``wgmma.mma_async`` from shared-memory descriptors, TMA tile loads
(``cp.async.bulk.tensor`` with tensor maps from ``tensor_map_encode_tiled``) and an mbarrier
pipeline of ``stages`` buffers.

Column-major, cuBLAS semantics, like ``gemm_tensorcore``: f16/bf16 data with f32 accumulation or
f32 data as tf32; C has the data's dtype; ``beta == 0`` never reads C.

Layout: both operands K-major (op(A) = A^T, op(B) = B: ``transa=True, transb=False``), loaded by
TMA as boxes of 128 bytes of K times the tile rows with the 128-byte swizzle, which is the layout
a K-major wgmma descriptor with 128B swizzle (SBO 1024) reads; the descriptor start advances
32 bytes per k16 (k8 for tf32) step. Other transposes: ``supports`` is False (dispatch falls back
to the mma.sync family). Out-of-bounds parts of a box are zero-filled by TMA, so K, M and N tails
need no code; the epilogue predicates stores. Thread 0 issues the loads; every warpgroup waits on
the stage's mbarrier, runs its wgmma chain, and a CTA barrier frees the stage for the next load.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import fragments
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.registry import register_family
from oxicuda.ptx.spec import KernelSpec

from .gemm_tensorcore import (
    COPY_BYTES,
    GemmProblem,
    _input_type,
    as_problem,
    batch_pointers,
    check_launch,
    kernel_params,
    launch_args,
    load_function,
    load_scalars,
    write_c,
)

ALGO = "wgmma"
FAMILY = "gemm_wgmma"
ARCHS = ("sm_90a",)
SWIZZLE_BYTES = 128
#: CUtensorMapDataType per input type (tf32 loads f32 words; wgmma reads their tf32 bits)
TMA_DATA_TYPE = {"f16": 6, "bf16": 9, "tf32": 7}
TMA_SWIZZLE_128B, TMA_L2_PROMOTION_128B = 3, 2


@dataclass(frozen=True)
class GemmWgmmaSpec(KernelSpec):
    """One wgmma GEMM kernel: input type, CTA tile (block_m x block_n, K step of 128 bytes),
    consumer warpgroups (each owns block_m / consumers rows, in m64 wgmma tiles) and stages."""

    family: ClassVar[str] = FAMILY
    arch: str = "sm_90a"
    dtype: str = "f16"
    block_m: int = 128
    block_n: int = 128
    consumers: int = 1
    stages: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.arch != "sm_90a":
            raise ValueError(f"GemmWgmmaSpec: arch={self.arch!r}; wgmma needs 'sm_90a'")
        if self.dtype not in TMA_DATA_TYPE:
            raise ValueError(f"GemmWgmmaSpec: dtype={self.dtype!r}; allowed {tuple(TMA_DATA_TYPE)}")
        if (self.consumers not in (1, 2) or self.block_m % (64 * self.consumers) or self.block_m > 256
                or self.block_n % 8 or not 8 <= self.block_n <= 256 or self.stages < 2):
            raise ValueError(f"GemmWgmmaSpec: block {self.block_m}x{self.block_n}, {self.consumers} consumers, "
                             f"{self.stages} stages: block_m a multiple of 64 per consumer (<= 256), block_n a "
                             "multiple of 8 in 8..256, 1 or 2 consumers, stages >= 2")
        if self.shared_bytes > 232448:
            raise ValueError(f"GemmWgmmaSpec: {self.shared_bytes} bytes of shared memory; sm_90 allows 232448")

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
    def stage_bytes(self) -> int:
        return (self.block_m + self.block_n) * SWIZZLE_BYTES

    @property
    def shared_bytes(self) -> int:
        return self.stages * self.stage_bytes + 8 * self.stages + 1024  # + barriers + 1024-byte alignment slack


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


def generate(spec: GemmWgmmaSpec) -> str:
    """PTX of one wgmma + TMA GEMM kernel (see the module docstring)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.reqntid(spec.threads)
    es, S, BM, BN, BK = spec.elem_bytes, spec.stages, spec.block_m, spec.block_n, spec.block_k
    p = kernel_params(kb)
    tmap_a, tmap_b = kb.param_array("tmap_a"), kb.param_array("tmap_b")
    smem = kb.dynamic_shared("smem", spec.shared_bytes, align=1024)
    alpha, beta = load_scalars(kb, p)
    _, _, c_g = batch_pointers(kb, p, es)
    tid = kb.tid()
    wg, lane_wg = kb.shr(tid, 7), kb.and_(tid, 127)
    m0, n0 = kb.mul(kb.ctaid("x"), BM), kb.mul(kb.ctaid("y"), BN)
    z = kb.ctaid("z")
    raw = kb.shared_addr(smem)
    tiles = kb.and_(kb.add(raw, 1023), 0xFFFFFC00)  # swizzled tiles need 1024-byte alignment
    bars = kb.add(tiles, S * spec.stage_bytes)
    a_bytes = BM * SWIZZLE_BYTES
    leader = kb.setp("eq", tid, 0)
    with kb.if_(leader):
        for s in range(S):
            kb.mbarrier_init(kb.add(bars, 8 * s), 1)
        kb.fence_proxy_async("shared::cta")
    kb.bar_sync()
    ktiles = kb.div(kb.add(p["k"], BK - 1), BK)

    def issue(stage: int | object, k_tile) -> None:
        stage_off = kb.mul(stage, spec.stage_bytes) if not isinstance(stage, int) else stage * spec.stage_bytes
        dst = kb.add(tiles, stage_off)
        bar = kb.add(bars, kb.mul(stage, 8) if not isinstance(stage, int) else 8 * stage)
        kb.mbarrier_arrive_expect_tx(bar, spec.stage_bytes)
        k0 = kb.mul(k_tile, BK) if not isinstance(k_tile, int) else kb.mov(k_tile * BK, "u32")
        kb.cp_async_bulk_tensor(3, dst, tmap_a, (k0, m0, z), bar)
        kb.cp_async_bulk_tensor(3, kb.add(dst, a_bytes), tmap_b, (k0, n0, z), bar)

    with kb.if_(leader):
        for s in range(S):
            with kb.if_(kb.setp("lt", kb.mov(s, "u32"), ktiles)):
                issue(s, s)

    mtiles = BM // 64 // spec.consumers
    nregs = fragments.wgmma_accumulator_regs(BN)
    acc = [[kb.mov(0.0, "f32") for _ in range(nregs)] for _ in range(mtiles)]
    stage, phase = kb.mov(0, "u32"), kb.mov(0, "u32")
    a_row0 = kb.mul(wg, (BM // spec.consumers) * SWIZZLE_BYTES)
    with kb.loop(0, ktiles, 1, type_="u32") as kt:
        bar = kb.add(bars, kb.mul(stage, 8))
        kb.mbarrier_wait_parity(bar, phase)
        base = kb.add(tiles, kb.mul(stage, spec.stage_bytes))
        a_base, b_base = kb.add(base, a_row0), kb.add(base, a_bytes)
        kb.wgmma_fence()
        for kk in range(BK // spec.k_step):
            b_desc = kb.wgmma_descriptor(kb.add(b_base, kk * 32), 16, 1024, "128B")
            for mt in range(mtiles):
                a_desc = kb.wgmma_descriptor(kb.add(a_base, mt * 64 * SWIZZLE_BYTES + kk * 32), 16, 1024, "128B")
                kb.wgmma_mma_async(BN, spec.dtype, acc[mt], a_desc, b_desc, scale_d=1)
        kb.wgmma_commit_group()
        kb.wgmma_wait_group(0)
        kb.bar_sync()  # every warpgroup is done reading this stage
        nxt = kb.add(kt, S)
        with kb.if_(kb.and_(leader, kb.setp("lt", nxt, ktiles))):
            issue(stage, nxt)
        kb.add(stage, 1, out=stage)
        wrapped = kb.setp("eq", stage, S)
        kb.selp(0, stage, wrapped, out=stage)
        kb.xor(phase, kb.selp(1, 0, wrapped, type_="u32"), out=phase)

    lane0, (rw, rg, rt), (cw, cg, ct) = _accumulator_affine(BN)
    warp, lane = kb.shr(lane_wg, 5), kb.and_(lane_wg, 31)
    g, t = kb.shr(lane, 2), kb.and_(lane, 3)

    def lin(w0, a, b, c):
        return kb.add(kb.add(kb.mul(warp, a), kb.mul(g, b)), kb.add(kb.mul(t, c), w0))

    row_base = lin(kb.add(m0, kb.mul(wg, BM // spec.consumers)), rw, rg, rt)
    col_base = lin(n0, cw, cg, ct)
    row_consts = sorted({mt * 64 + rc[0] for mt in range(mtiles) for rc in lane0})
    col_consts = sorted({rc[1] for rc in lane0})
    rows = [kb.add(row_base, c) for c in row_consts]
    cols = [kb.add(col_base, c) for c in col_consts]
    values = [(row_consts.index(mt * 64 + lane0[i][0]), col_consts.index(lane0[i][1]), acc[mt][i])
              for mt in range(mtiles) for i in range(nregs)]
    write_c(kb, "f32" if spec.dtype == "tf32" else spec.dtype, c_g, p["ldc"], p["m"], p["n"], alpha, beta,
            rows, cols, values)
    return kb.ptx()


#: (block_m, block_n, consumers, stages); the first for large problems, the second for small.
#: Provisional until measured on the H200.
TILES = ((128, 256, 2, 4), (128, 128, 1, 4))
SMALL_PROBLEM_MN = 1024 * 1024


def configurations(arch: str) -> list[GemmWgmmaSpec]:
    """Every kernel the family can produce (sm_90a only): dtypes x tiles."""
    return [GemmWgmmaSpec(arch=arch, dtype=d, block_m=bm, block_n=bn, consumers=c, stages=s)
            for d in TMA_DATA_TYPE for bm, bn, c, s in TILES]


register_family(FAMILY, GemmWgmmaSpec, generate, configurations, archs=ARCHS)


def supports(problem: object) -> bool:
    """True for f16/bf16 (compute f32) or f32 (compute tf32) on an sm_90 device with both operands
    K-major (transa=True, transb=False), 16-byte alignment and sizes below 2**31."""
    p = as_problem(problem)
    if p.sm != 90 or _input_type(p) is None or p.alignment < COPY_BYTES:
        return False
    if not p.transa or p.transb or max(p.m, p.n, p.k, p.lda, p.ldb, p.ldc) >= 2**31:
        return False
    return p.lda >= max(1, p.k) and p.ldb >= max(1, p.k) and p.ldc >= max(1, p.m)


def choose_spec(problem: object) -> GemmWgmmaSpec:
    """The kernel for ``problem``: the 128x256 two-consumer tile unless the output is small."""
    p = as_problem(problem)
    dtype = _input_type(p)
    if dtype is None:
        raise ValueError(f"wgmma gemm: dtype={p.dtype!r} with compute={p.compute!r} is not supported")
    bm, bn, c, s = TILES[1] if p.m * p.n < SMALL_PROBLEM_MN else TILES[0]
    return GemmWgmmaSpec(dtype=dtype, block_m=bm, block_n=bn, consumers=c, stages=s)


def _tensor_map(dtype: str, ptr: int, k: int, rows: int, ld: int, batch: int, stride: int, box_rows: int,
                es: int) -> bytes:
    from oxicuda.driver.backend import api

    batch_stride = stride * es if batch > 1 else max(16, -(-ld * es * rows // 16) * 16)
    return api().tensor_map_encode_tiled(
        TMA_DATA_TYPE[dtype], 3, ptr, (max(k, 1), max(rows, 1), max(batch, 1)), (ld * es, batch_stride),
        (SWIZZLE_BYTES // es, box_rows, 1), (1, 1, 1), 0, TMA_SWIZZLE_128B, TMA_L2_PROMOTION_128B, 0)


def launch(problem: object, alpha: float, a_ptr: int, lda: int, b_ptr: int, ldb: int, beta: float, c_ptr: int,
           ldc: int, *, batch: int = 1, stride_a: int = 0, stride_b: int = 0, stride_c: int = 0,
           alpha_ptr: int = 0, beta_ptr: int = 0, stream: object = None) -> None:
    """C = alpha * op(A) @ op(B) + beta * C, column-major, with wgmma + TMA (sm_90).

    Same arguments as ``gemm_tensorcore.launch``; the problem must satisfy ``supports`` (transa,
    not transb). Batches whose A/B strides are not positive multiples of 16 bytes run as one
    launch per batch. Raises ValueError for unsupported problems, before any launch."""
    p = as_problem(problem)
    if (p.lda, p.ldb, p.ldc) != (lda, ldb, ldc):
        p = GemmProblem(p.m, p.n, p.k, p.dtype, p.compute, p.transa, p.transb, lda, ldb, ldc, p.alignment, p.arch)
    spec = choose_spec(p)
    es = spec.elem_bytes
    grid = (-(-p.m // spec.block_m), -(-p.n // spec.block_n), int(batch))
    check_launch(p, grid, batch, ALGO)
    if not supports(p):
        raise ValueError(f"wgmma gemm does not support {p} (needs sm_90, transa=True, transb=False)")
    if p.m == 0 or p.n == 0 or batch == 0:
        return
    fn = load_function(spec, spec.shared_bytes)
    strided = batch == 1 or all(s > 0 and (s * es) % 16 == 0 for s in (stride_a, stride_b))
    runs = [(0, batch)] if strided else [(i, 1) for i in range(batch)]
    for first, count in runs:
        a0, b0, c0 = a_ptr + first * stride_a * es, b_ptr + first * stride_b * es, c_ptr + first * stride_c * es
        tmaps = (_tensor_map(spec.dtype, a0, p.k, p.m, lda, count, stride_a, spec.block_m, es),
                 _tensor_map(spec.dtype, b0, p.k, p.n, ldb, count, stride_b, spec.block_n, es))
        args = launch_args(a0, b0, c0, p.m, p.n, p.k, lda, ldb, ldc, alpha, beta, alpha_ptr, beta_ptr, stride_a,
                           stride_b, stride_c) + list(tmaps)
        fn((grid[0], grid[1], count), spec.threads, args, shared_mem=spec.shared_bytes, stream=stream)
