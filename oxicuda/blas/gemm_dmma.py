"""float64 GEMM on tensor cores (DMMA): ``mma.sync.aligned.<shape>.row.col.f64`` (sm_80+).

The SIMT float64 kernel is bounded by the FP64 FMA rate (half of the H200's 67 TFLOP/s, which is
its FP64 *tensor-core* rate); cuBLAS's dgemm runs DMMA. This kernel keeps the SIMT kernel's
global -> register -> shared pipeline (``gemm_tiled.TileLoader``: any transpose, 16-byte loads
when aligned, zero-filled tails, double-buffered shared tiles, one barrier per K step) and
replaces the register-blocked FMA with warp MMAs: a CTA of ``warps_m x warps_n`` warps computes a
``bm x bn`` tile, each warp ``(bm / warps_m) x (bn / warps_n)`` as blocks of the MMA shape.

Shapes: ``m8n8k4`` (sm_80+, SASS DMMA.8x8x4) and, on sm_90, ``m16n8k4``/``m16n8k8``/``m16n8k16``
(PTX 7.8, SASS DMMA.16x8x{4,8,16}). On the H200 the m8n8k4 kernel measured no faster than the
SIMT one (20.6 against 21.3 TFLOP/s, bench dgemm_4096_dmma): Hopper doubled the FP64
tensor rate per SM over the A100 with its new DMMA.16x8xK instructions, and CUTLASS's sm_90
dgemm uses m16n8k16; the sm_90 tiles here use the new shapes.

Fragments come from ``oxicuda.ptx.fragments`` (the emulator computes from the same tables): for
every f64 shape a lane (g = lane / 4, t = lane % 4) holds A elements at (g + ra_i, t + ca_i), B
elements at (t + rb_i, g + cb_i) and C elements at (g + rc_i, 2t + cc_i), constant offsets per
register that ``_offsets`` reads off the tables. Shared tiles are K-major with rows padded by 4
doubles, so the 8 g-values and 4 t-values of a half-warp hit distinct banks.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from oxicuda.ptx import fragments
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.registry import register_family
from oxicuda.ptx.spec import KernelSpec

from . import gemm_codegen as cg
from .gemm_tiled import TileLoader

ALGO = "dmma"
PAD = 4  # doubles of padding per shared row (bank-conflict-free fragment loads)
#: MMA shape -> the oldest sm that has it
SHAPES = {"m8n8k4": 80, "m16n8k4": 90, "m16n8k8": 90, "m16n8k16": 90}


def _offsets(frag: fragments.Fragment, g_axis: int, t_scale: int, what: str) -> tuple[tuple[int, int], ...]:
    """Per element of ``frag``: (coordinate along ``g_axis`` (0: row, 1: col) minus g, the other
    coordinate minus ``t_scale`` * t), the same for every lane (raises if the table has another
    form)."""
    out = None
    for lane, elems in enumerate(frag.table):
        g, t = lane >> 2, lane % 4
        here = tuple((rc[g_axis] - g, rc[1 - g_axis] - t_scale * t) for rc in elems)
        if out is None:
            out = here
        elif here != out:
            raise AssertionError(f"gemm_dmma: the {what} fragment is not (g + const, {t_scale}t + const)")
    return out


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
    shape: str = "m8n8k4"

    def __post_init__(self) -> None:
        super().__post_init__()
        name = type(self).__name__
        if self.transa not in ("N", "T") or self.transb not in ("N", "T"):
            raise ValueError(f"{name}: transa={self.transa!r}, transb={self.transb!r}; allowed 'N', 'T'")
        if self.shape not in SHAPES:
            raise ValueError(f"{name}: shape={self.shape!r}; allowed {sorted(SHAPES)}")
        mm, mk = self.mma_m, self.mma_k
        if self.bm % (mm * self.warps_m) or self.bn % (8 * self.warps_n) or self.bk % mk:
            raise ValueError(f"{name}: tile {self.bm}x{self.bn}x{self.bk} with {self.warps_m}x{self.warps_n} warps: "
                             f"warp tiles must be multiples of {mm}x8 and bk a multiple of {mk} ({self.shape})")
        for v in (self.vec_a, self.vec_b):
            if v not in (1, 2) or self.bk % v:
                raise ValueError(f"{name}: vector width {v}; allowed 1 or 2 (dividing bk={self.bk})")
        if self.shared_bytes > 48 * 1024:
            raise ValueError(f"{name}: {self.shared_bytes} bytes of static shared memory; at most 49152")
        if self.sm < SHAPES[self.shape]:
            raise ValueError(f"{name}: arch={self.arch!r}; mma.sync {self.shape} f64 needs sm_{SHAPES[self.shape]}+")

    @property
    def sm(self) -> int:
        return int(self.arch[3:].rstrip("a"))

    @property
    def mma_m(self) -> int:
        return int(self.shape[1:].split("n")[0])

    @property
    def mma_k(self) -> int:
        return int(self.shape.split("k")[1])

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

    info = fragments.mma_shape(spec.shape, "f64", "f64")
    a_off = _offsets(info.a, 0, 1, "A")  # (m - g, k - t) per A register
    b_off = _offsets(info.b, 1, 1, "B")  # (n - g, k - t) per B register
    c_off = _offsets(info.c, 0, 2, "C")  # (m - g, n - 2t) per C register
    MM, MK = spec.mma_m, spec.mma_k
    MT, NT = wtm // MM, wtn // 8
    warp = kb.shr(tid, 5)
    lane = kb.and_(tid, 31)
    g, t = kb.shr(lane, 2), kb.and_(lane, 3)
    wm = kb.sub(warp, kb.mul(kb.div(warp, spec.warps_m), spec.warps_m)) if spec.warps_m & (spec.warps_m - 1) \
        else kb.and_(warp, spec.warps_m - 1)
    wn = kb.div(warp, spec.warps_m)
    # lane's fragment bases inside a stage: A[k = t][m = wm*wtm + g], B[k = t][n = wn*wtn + g]
    a_lane = kb.mul(kb.add(kb.mul(t, ra), kb.add(kb.mul(wm, wtm), g)), 8)
    b_lane = kb.add(kb.mul(kb.add(kb.mul(t, rb), kb.add(kb.mul(wn, wtn), g)), 8), bk * ra * 8)
    acc = [[tuple(kb.mov(0.0, "f64") for _ in range(info.c_regs)) for _ in range(NT)] for _ in range(MT)]
    ntiles = kb.div(kb.add(k, bk - 1), bk)
    with kb.loop(0, ntiles, 1, type_="u32") as kt:
        load_a.advance()
        load_b.advance()
        k_next = kb.mul(kb.add(kt, 1), bk)
        load_a.fetch(k_next, k)
        load_b.fetch(k_next, k)
        cur = kb.add(base, buf)
        pa, pb = kb.add(cur, a_lane), kb.add(cur, b_lane)
        for ks in kb.unroll(bk // MK):
            af = [tuple(kb.ld("shared", "f64", pa, offset=((ks * MK + dk) * ra + mt * MM + dm) * 8)
                        for dm, dk in a_off) for mt in range(MT)]
            bf = [tuple(kb.ld("shared", "f64", pb, offset=((ks * MK + dk) * rb + nt * 8 + dn) * 8)
                        for dn, dk in b_off) for nt in range(NT)]
            for mt in range(MT):
                for nt in range(NT):
                    kb.mma_sync(spec.shape, "f64", "f64", "f64", af[mt], bf[nt], acc[mt][nt], d=acc[mt][nt])
        kb.xor(buf, stage, out=buf)
        nxt = kb.add(base, buf)
        load_a.store(nxt)
        load_b.store(nxt)
        kb.bar_sync()

    # C[g + dm][2t + dn] of each MM x 8 block
    row0 = kb.add(kb.add(i0, kb.mul(wm, wtm)), g)
    col0 = kb.add(kb.add(j0, kb.mul(wn, wtn)), kb.mul(t, 2))
    row_offs = sorted({dm for dm, _ in c_off})
    col_offs = sorted({dn for _, dn in c_off})
    rows = {(mt, dm): kb.add(row0, mt * MM + dm) for mt in range(MT) for dm in row_offs}
    row_ok = {key: kb.setp("lt", r, m) for key, r in rows.items()}
    for nt in range(NT):
        for dn in col_offs:
            col = kb.add(col0, nt * 8 + dn)
            col_ptr = kb.addr(c, kb.mul(kb.cvt(col, "u64"), ldc), 8)
            with kb.if_(kb.setp("lt", col, n)):
                for mt in range(MT):
                    for i, (dm, dn_i) in enumerate(c_off):
                        if dn_i != dn:
                            continue
                        with kb.if_(row_ok[(mt, dm)]):
                            cg.epilogue(kb, kind, kb.addr(col_ptr, rows[(mt, dm)], 8), (acc[mt][nt][i],), alpha,
                                        beta, beta_zero)
    return kb.ptx()


#: (bm, bn, bk, warps_m, warps_n, shape) registered; dispatch's table picks among them. The sm_90
#: tiles: 128x64 with m16n8k8 at bk 8 (bk 16 would pass the 48 KB of static shared memory) as
#: 4x2 warps of 32x32 (~130 registers, 2 CTAs = 16 warps per SM) and as CUTLASS's Hopper dgemm
#: has it, 2x2 warps of 64x32 (~250 registers, 8 warps per SM, fewer shared loads per MMA);
#: 128x128 m16n8k8 (2x4 warps of 64x32); 64x64 m16n8k16 for small problems.
TILES = ((64, 64, 16, 2, 2, "m8n8k4"), (128, 64, 8, 4, 2, "m8n8k4"), (64, 128, 8, 2, 4, "m8n8k4"),
         (128, 128, 8, 2, 4, "m8n8k4"),
         (128, 64, 8, 4, 2, "m16n8k8"), (128, 64, 8, 2, 2, "m16n8k8"), (128, 128, 8, 2, 4, "m16n8k8"),
         (64, 64, 16, 2, 2, "m16n8k16"))


def tiles_for(arch: str) -> tuple[tuple, ...]:
    """The registered tiles whose MMA shape ``arch`` has."""
    sm = int(arch[3:].rstrip("a"))
    return tuple(tile for tile in TILES if SHAPES[tile[5]] <= sm)


def configurations(arch: str) -> Iterable[GemmDmmaSpec]:
    """Every tile ``arch`` has x storage order x load width of A and of B (sm_80+; dispatch picks
    each operand's width from its own alignment)."""
    if int(arch[3:].rstrip("a")) < 80:
        return
    for bm, bn, bk, wm, wn, shape in tiles_for(arch):
        for ta, tb, va, vb in itertools.product(("N", "T"), ("N", "T"), (1, 2), (1, 2)):
            yield GemmDmmaSpec(arch=arch.rstrip("a"), transa=ta, transb=tb, bm=bm, bn=bn, bk=bk, warps_m=wm,
                               warps_n=wn, vec_a=va, vec_b=vb, shape=shape)


register_family("gemm_dmma", GemmDmmaSpec, generate, configurations, archs=("sm_80", "sm_86", "sm_90"))
