"""float64 GEMM on tensor cores (DMMA): ``mma.sync.aligned.m8n8k4.row.col.f64`` (sm_80+).

The SIMT float64 kernel is bounded by the FP64 FMA rate (half of the H200's 67 TFLOP/s, which is
its FP64 *tensor-core* rate); cuBLAS's dgemm runs DMMA. This kernel keeps the SIMT kernel's
global -> register -> shared pipeline (``gemm_tiled.TileLoader``: any transpose, 16-byte loads
when aligned, zero-filled tails, double-buffered shared tiles, one barrier per K step) and
replaces the register-blocked FMA with warp MMAs: a CTA of ``warps_m x warps_n`` warps computes a
``bm x bn`` tile, each warp ``(bm / warps_m) x (bn / warps_n)`` as m8n8 blocks.

Fragments (``oxicuda.ptx.fragments``, m8n8k4 f64): lane (g = lane / 4, t = lane % 4) holds
A[g][t], B[t][g] and C[g][2t], C[g][2t + 1]. Shared tiles are K-major with rows padded by 4
doubles, so the 8 g-values and 4 t-values of a half-warp hit distinct banks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.registry import register_family
from oxicuda.ptx.spec import KernelSpec

from . import gemm_codegen as cg
from .gemm_tiled import TileLoader

ALGO = "dmma"
PAD = 4  # doubles of padding per shared row (bank-conflict-free fragment loads)


@dataclass(frozen=True)
class GemmDmmaSpec(KernelSpec):
    """float64 GEMM on DMMA. ``transa``/``transb``: storage of A/B ("N" or "T"); ``vec_a``/
    ``vec_b``: doubles per global load (1 or 2, set by dispatch from alignment)."""

    family = "gemm_dmma"
    transa: str = "N"
    transb: str = "N"
    bm: int = 64
    bn: int = 64
    bk: int = 16
    warps_m: int = 2
    warps_n: int = 2
    vec_a: int = 1
    vec_b: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        name = type(self).__name__
        if self.transa not in ("N", "T") or self.transb not in ("N", "T"):
            raise ValueError(f"{name}: transa={self.transa!r}, transb={self.transb!r}; allowed 'N', 'T'")
        if self.bm % (8 * self.warps_m) or self.bn % (8 * self.warps_n) or self.bk % 4:
            raise ValueError(f"{name}: tile {self.bm}x{self.bn}x{self.bk} with {self.warps_m}x{self.warps_n} warps: "
                             "warp tiles must be multiples of 8 and bk a multiple of 4")
        for v in (self.vec_a, self.vec_b):
            if v not in (1, 2) or self.bk % v:
                raise ValueError(f"{name}: vector width {v}; allowed 1 or 2 (dividing bk={self.bk})")
        if self.shared_bytes > 48 * 1024:
            raise ValueError(f"{name}: {self.shared_bytes} bytes of static shared memory; at most 49152")
        if self.sm < 80:
            raise ValueError(f"{name}: arch={self.arch!r}; mma.sync f64 needs sm_80+")

    @property
    def sm(self) -> int:
        return int(self.arch[3:].rstrip("a"))

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    @property
    def shared_bytes(self) -> int:
        return 2 * self.bk * (self.bm + self.bn + 2 * PAD) * 8


def generate(spec: GemmDmmaSpec) -> str:
    """PTX of the DMMA GEMM. Parameters as the tiled kernel's (gemm_tiled.generate): m n k
    k_split (u32; k_split unused), a lda b ldb c ldc stride_a stride_b stride_c (u64),
    alpha alpha_ptr beta beta_ptr. Launch: block (threads,), grid (ceil(m/bm), ceil(n/bn), batch)."""
    kind = cg.kind_of("float64")
    bm, bn, bk = spec.bm, spec.bn, spec.bk
    ra, rb = bm + PAD, bn + PAD
    wtm, wtn = bm // spec.warps_m, bn // spec.warps_n
    MT, NT = wtm // 8, wtn // 8
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    m, n, k, _ = (kb.param(x, "u32") for x in ("m", "n", "k", "k_split"))
    a0, lda, b0, ldb, c0, ldc = (kb.param(x, "u64") for x in ("a", "lda", "b", "ldb", "c", "ldc"))
    a0, b0, c0 = (kb.cvta("global", p, to_generic=False) for p in (a0, b0, c0))
    sa, sb, sc = (kb.param(x, "u64") for x in ("stride_a", "stride_b", "stride_c"))
    alpha, _ = cg.scalar_params(kb, kind, "alpha")
    beta, beta_zero = cg.scalar_params(kb, kind, "beta")
    kb.reqntid(spec.threads)
    stage = bk * (ra + rb) * 8
    smem = kb.shared("tiles", "f64", 2 * bk * (ra + rb), align=16)

    tid = kb.tid()
    z = kb.ctaid("z")
    i0 = kb.mul(kb.ctaid("x"), bm)
    j0 = kb.mul(kb.ctaid("y"), bn)
    a = cg.batch_operand(kb, a0, sa, z, 8, False)
    b = cg.batch_operand(kb, b0, sb, z, 8, False)
    c = cg.batch_operand(kb, c0, sc, z, 8, False)
    load_a = TileLoader(kb, spec, kind, a, lda, m, tid, i0, bm, spec.transa == "T", spec.vec_a, False, 0, ra)
    load_b = TileLoader(kb, spec, kind, b, ldb, n, tid, j0, bn, spec.transb == "N", spec.vec_b, False, bk * ra * 8, rb)
    base = kb.shared_addr(smem)
    buf = kb.mov(0, "u32")
    load_a.fetch(kb.mov(0, "u32"), k)
    load_b.fetch(kb.mov(0, "u32"), k)
    load_a.store(kb.add(base, buf))
    load_b.store(kb.add(base, buf))
    kb.bar_sync()

    warp = kb.shr(tid, 5)
    lane = kb.and_(tid, 31)
    g, t = kb.shr(lane, 2), kb.and_(lane, 3)
    wm = kb.sub(warp, kb.mul(kb.div(warp, spec.warps_m), spec.warps_m)) if spec.warps_m & (spec.warps_m - 1) \
        else kb.and_(warp, spec.warps_m - 1)
    wn = kb.div(warp, spec.warps_m)
    # lane's fragment offsets inside a stage: A[k = t][m = wm*wtm + g], B[k = t][n = wn*wtn + g]
    a_lane = kb.mul(kb.add(kb.mul(t, ra), kb.add(kb.mul(wm, wtm), g)), 8)
    b_lane = kb.add(kb.mul(kb.add(kb.mul(t, rb), kb.add(kb.mul(wn, wtn), g)), 8), bk * ra * 8)
    acc = [[(kb.mov(0.0, "f64"), kb.mov(0.0, "f64")) for _ in range(NT)] for _ in range(MT)]
    ntiles = kb.div(kb.add(k, bk - 1), bk)
    with kb.loop(0, ntiles, 1, type_="u32") as kt:
        load_a.advance()
        load_b.advance()
        k_next = kb.mul(kb.add(kt, 1), bk)
        load_a.fetch(k_next, k)
        load_b.fetch(k_next, k)
        cur = kb.add(base, buf)
        pa, pb = kb.add(cur, a_lane), kb.add(cur, b_lane)
        for ks in kb.unroll(bk // 4):
            af = [kb.ld("shared", "f64", pa, offset=(ks * 4 * ra + mt * 8) * 8) for mt in range(MT)]
            bf = [kb.ld("shared", "f64", pb, offset=(ks * 4 * rb + nt * 8) * 8) for nt in range(NT)]
            for mt in range(MT):
                for nt in range(NT):
                    kb.mma_sync("m8n8k4", "f64", "f64", "f64", (af[mt],), (bf[nt],), acc[mt][nt], d=acc[mt][nt])
        kb.xor(buf, stage, out=buf)
        nxt = kb.add(base, buf)
        load_a.store(nxt)
        load_b.store(nxt)
        kb.bar_sync()

    # C[g][2t + i] of each m8n8 block
    row0 = kb.add(kb.add(i0, kb.mul(wm, wtm)), g)
    col0 = kb.add(kb.add(j0, kb.mul(wn, wtn)), kb.mul(t, 2))
    rows = [kb.add(row0, mt * 8) for mt in range(MT)]
    row_ok = [kb.setp("lt", r, m) for r in rows]
    for nt in range(NT):
        for i in range(2):
            col = kb.add(col0, nt * 8 + i)
            col_ptr = kb.addr(c, kb.mul(kb.cvt(col, "u64"), ldc), 8)
            with kb.if_(kb.setp("lt", col, n)):
                for mt in range(MT):
                    with kb.if_(row_ok[mt]):
                        cg.epilogue(kb, kind, kb.addr(col_ptr, rows[mt], 8), (acc[mt][nt][i],), alpha, beta,
                                    beta_zero)
    return kb.ptx()


#: (bm, bn, bk, warps_m, warps_n) registered; dispatch's table picks among them
TILES = ((64, 64, 16, 2, 2), (128, 64, 8, 4, 2), (64, 128, 8, 2, 4), (128, 128, 8, 2, 4))


def configurations(arch: str) -> Iterable[GemmDmmaSpec]:
    """Every tile x storage order x load width for ``arch`` (sm_80+)."""
    if int(arch[3:].rstrip("a")) < 80:
        return
    for bm, bn, bk, wm, wn in TILES:
        for ta in ("N", "T"):
            for tb in ("N", "T"):
                for v in (1, 2):
                    yield GemmDmmaSpec(arch=arch.rstrip("a"), transa=ta, transb=tb, bm=bm, bn=bn, bk=bk, warps_m=wm,
                                       warps_n=wn, vec_a=v, vec_b=v)


register_family("gemm_dmma", GemmDmmaSpec, generate, configurations, archs=("sm_80", "sm_86", "sm_90"))
