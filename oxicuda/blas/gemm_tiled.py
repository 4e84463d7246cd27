"""The tiled SIMT GEMM: a CTA computes a ``bm x bn`` tile of column-major C, each thread a
``tm x tn`` register block, K advancing ``bk`` at a time through double-buffered shared memory.

Shared tiles hold op(A) and op(B) K-major (``S[p][x]``), widened to the accumulator type, so the
inner product reads 16-byte vectors of a thread's rows/columns. Every transpose is resolved in
the global->shared load: an operand contiguous along its M/N dimension is copied with vector
stores, one contiguous along K is transposed on the way in. Global loads are 16-byte vectors when
``vec_a``/``vec_b`` > 1 (the dispatcher sets them only when pointers, leading dimensions, batch
strides and the contiguous extent allow). Tails (M, N, K not multiples of the tile) are zero-filled
on load and masked on store. One barrier per K step: tile t+1 is fetched into registers while
tile t is multiplied, then stored to the other buffer.

A thread's rows are ``W``-element chunks spread ``bm / (tm / W)`` apart (W = 16 bytes of
accumulator elements), which keeps a warp's shared reads on distinct banks. Threads are laid out
row-major over the CTA's ``(bm / tm) x (bn / tn)`` grid, or, with ``warp_m``, warp by warp: each
warp a ``warp_m x (32 / warp_m)`` block of that grid, so that a warp's fragment reads of one K row
touch 16 * warp_m bytes of A and 16 * 32 / warp_m of B (one shared wavefront each for 4 x 8)
instead of 32 and 256 bytes (1 + 2 wavefronts). The same chunks make
the C epilogue one vector load/store per chunk when ``vec_c == W`` (the dispatcher sets it only
when M, the leading dimension of C and its pointer keep whole aligned chunks).

``c_dtype`` names C's type when it differs from A/B's: float16/bfloat16 data with float32 C
(cublasGemmEx with CUBLAS_COMPUTE_32F and Ctype CUDA_R_32F). ``min_ctas`` asks ptxas to fit that
many CTAs per SM (``.minnctapersm``), bounding registers.

``prefetch`` moves the end of a K step's work: the next tile is stored and the barrier passed
before the last K row's FFMAs, and the first fragments of the next tile are read right after the
barrier into registers that live across the loop, so those reads' latency hides behind the last
row's tm x tn FFMAs instead of stalling every warp at the top of the next step. Its FFMAs run in
serpentine order (row r's columns reversed on odd r), so consecutive FFMAs share an operand.

``interior`` gives CTAs whose tile lies wholly inside M x N a second copy of the K loop whose
global loads carry no bounds tests, zero fills or branches (all but its last two K steps, whose
fetches reach the K tail and past it); edge CTAs and those last steps run the checked loop.

``prefetch``, ``warp_m`` and ``interior`` are float32 sweep candidates. Each works for split-K
partials too (``raw_out``: K per grid.z slice); which of them dispatch uses, and as what, is
gemm_dispatch's table.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan
from oxicuda.ptx.registry import register_family
from oxicuda.ptx.spec import KernelSpec

from . import gemm_codegen as cg


@dataclass(frozen=True)
class TileConfig:
    """A CTA tile: ``bm x bn`` outputs, ``bk`` of K per step, ``tm x tn`` per thread, and the
    CTAs per SM ptxas must fit (0: no bound)."""

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int
    min_ctas: int = 0
    warp_m: int = 0
    prefetch: bool = False
    interior: bool = False

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)

    @property
    def square_only(self) -> bool:
        """A loop variant for whole-K problems (no split-K partials)."""
        return bool(self.warp_m or self.prefetch or self.interior)

    @property
    def name(self) -> str:
        return (f"{self.bm}x{self.bn}x{self.bk}_{self.tm}x{self.tn}" + (f"_c{self.min_ctas}" if self.min_ctas else "")
                + (f"_w{self.warp_m}x{32 // self.warp_m}" if self.warp_m else "") + ("_pf" if self.prefetch else "")
                + ("_i" if self.interior else ""))


_T128 = TileConfig(128, 128, 8, 8, 8)             # ~120-125 registers: 2 CTAs/SM unbounded
_T128_K16_2CTA = TileConfig(128, 128, 16, 8, 8, 2)  # ~145 registers unbounded; bounded to 128
_T64x128 = TileConfig(64, 128, 8, 8, 8)  # ~139 registers, 128 threads: 3 CTAs/SM unbounded
_T128x64 = TileConfig(128, 64, 8, 8, 8)
_T128x256 = TileConfig(128, 256, 8, 8, 16)  # ~215 registers: 1 CTA/SM; 6 LDS.128 per 128 FFMA
_T256x128 = TileConfig(256, 128, 8, 16, 8)  # ~200 registers (8x8 needs 4 LDS.128 per 64 FFMA)
# the prefetching loop, with and without the warp-blocked thread order; the 128x128 8x8 ones need
# the 2-CTA bound (~135-140 registers unbounded on sm_90; none spilled at 128 with 16-byte loads)
_T128_PF = TileConfig(128, 128, 8, 8, 8, 2, prefetch=True)
_T128x256_W_PF = TileConfig(128, 256, 8, 8, 16, warp_m=4, prefetch=True)  # ~220-230 registers: 1 CTA/SM
# 128 threads of 8x16: 6 LDS.128 per 128 FFMA like 128x256 (8x8 needs 4 per 64: the shared
# datapath's 128 B/clock at the FFMA peak), but 2 CTAs/SM (~230 registers) and half the tile, so
# 4096^2 still makes 1024 CTAs
_T128_8x16 = TileConfig(128, 128, 8, 8, 16)
_T128_8x16_PF = TileConfig(128, 128, 8, 8, 16, prefetch=True)
# the unchecked interior loop over the plain and the prefetching tiles (128 / 128 / ~230 registers)
_T128_I = TileConfig(128, 128, 8, 8, 8, interior=True)
_T128_PF_I = TileConfig(128, 128, 8, 8, 8, 2, prefetch=True, interior=True)
_T128_8x16_PF_I = TileConfig(128, 128, 8, 8, 16, prefetch=True, interior=True)
_T64 = TileConfig(64, 64, 8, 4, 4)
_T32 = TileConfig(32, 32, 8, 2, 2)
# the prefetching loop over the 128-thread 8x8 tiles (~146-148 registers: 3 CTAs/SM), for split-K
_T128x64_PF = TileConfig(128, 64, 8, 8, 8, prefetch=True)
_T64x128_PF = TileConfig(64, 128, 8, 8, 8, prefetch=True)

#: dtype -> every tile configuration the family registers (ptxas-validated, emulator-tested);
#: which one a problem gets is gemm_dispatch's table. The float32 candidates are what
#: benches/sweep_blas.py times on the H200.
TILE_CONFIGS: dict[str, tuple[TileConfig, ...]] = {
    "float32": (_T128, _T128_K16_2CTA, _T64x128, _T128x64, _T128x256, _T256x128, _T64, _T128_PF, _T128x256_W_PF, _T128_8x16,
                _T128_8x16_PF, _T128_I, _T128_PF_I, _T128_8x16_PF_I),
    "float16": (_T128, _T64),
    "bfloat16": (_T128, _T64),
    "float64": (TileConfig(128, 64, 8, 8, 4, 2), TileConfig(128, 128, 8, 8, 8), _T64, _T32),
    "complex64": (_T64, _T32),
    "complex128": (_T32,),
}

#: dtype -> loop-variant tiles whose split-K partials (raw_out) are registered too: gemm_dispatch's
#: SPLIT_K_VARIANTS (the whole-K problems' loop variants register whole-K outputs only). Those not
#: in TILE_CONFIGS register partials only.
SPLIT_K_TILES: dict[str, tuple[TileConfig, ...]] = {
    "float32": (_T128_8x16_PF_I, _T128x64_PF, _T64x128_PF),
}


@dataclass(frozen=True)
class GemmTiledSpec(KernelSpec):
    """Tiled SIMT GEMM. ``transa``/``transb``: storage of A/B ("N" or "T"; conjugation is
    ``conj_a``/``conj_b``). ``vec_a``/``vec_b``: elements per global load. ``raw_out``: write
    unscaled accumulators (split-K partials) with K per grid.z slice given by ``k_split``."""

    family = "gemm_tiled"
    dtype: str = "float32"
    transa: str = "N"
    transb: str = "N"
    conj_a: bool = False
    conj_b: bool = False
    bm: int = 128
    bn: int = 128
    bk: int = 8
    tm: int = 8
    tn: int = 8
    vec_a: int = 1
    vec_b: int = 1
    pointer_array: bool = False
    raw_out: bool = False
    vec_c: int = 1
    c_dtype: str = ""
    min_ctas: int = 0
    warp_m: int = 0
    prefetch: bool = False
    interior: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        kind = cg.kind_of(self.dtype)
        name = type(self).__name__
        if self.c_dtype and self.c_dtype != self.dtype:
            if (self.dtype, self.c_dtype) not in MIXED_OUTPUTS:
                raise ValueError(f"{name}: c_dtype={self.c_dtype!r} with dtype {self.dtype!r}; allowed mixed pairs "
                                 f"{MIXED_OUTPUTS}")
            if self.raw_out:
                raise ValueError(f"{name}: raw_out writes accumulators; c_dtype must stay empty")
        if self.vec_c not in (1, self.smem_vector) or (self.vec_c > 1 and (kind.complex or self.c_kind.nbytes < 4)):
            raise ValueError(f"{name}: vec_c={self.vec_c} for {self.dtype} (C {self.c_kind.dtype}); allowed 1 or "
                             f"{self.smem_vector} for real C of 4 or 8 bytes")
        if self.min_ctas < 0:
            raise ValueError(f"{name}: min_ctas={self.min_ctas}; must be >= 0")
        if self.transa not in ("N", "T") or self.transb not in ("N", "T"):
            raise ValueError(f"{name}: transa={self.transa!r}, transb={self.transb!r}; allowed 'N', 'T'")
        if (self.conj_a or self.conj_b) and not kind.complex:
            raise ValueError(f"{name}: conjugation needs a complex dtype, got {self.dtype!r}")
        w = self.smem_vector
        if self.tm % w or self.tn % w or self.bm % self.tm or self.bn % self.tn:
            raise ValueError(f"{name}: tile {self.bm}x{self.bn} per-thread {self.tm}x{self.tn} must divide "
                             f"evenly with {w}-element shared vectors")
        for v in (self.vec_a, self.vec_b):
            if v not in (1, 2, 4) or v * kind.nbytes > 16 or (v > 1 and kind.complex) or self.bk % v:
                raise ValueError(f"{name}: vector width {v} is not allowed for {self.dtype} with bk={self.bk}")
        if self.threads > 1024:
            raise ValueError(f"{name}: {self.threads} threads per CTA; at most 1024")
        ny, nx = self.bm // self.tm, self.bn // self.tn
        if self.warp_m and (self.warp_m not in (1, 2, 4, 8, 16, 32) or ny % self.warp_m
                            or nx % (32 // self.warp_m)):
            raise ValueError(f"{name}: warp_m={self.warp_m} must be a power of two <= 32 dividing the {ny} thread "
                             f"rows, with 32 / warp_m dividing the {nx} thread columns")
        if self.prefetch and self.bk % 2:
            raise ValueError(f"{name}: prefetch needs an even bk; got bk={self.bk}")

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)

    @property
    def c_kind(self) -> cg.ElementKind:
        """How C lives in memory (the accumulator kind for split-K partials)."""
        kind = cg.kind_of(self.dtype)
        if self.raw_out:
            return cg.ElementKind(kind.dtype, kind.acc, kind.comps, kind.acc)
        return cg.kind_of(self.c_dtype) if self.c_dtype else kind

    @property
    def smem_vector(self) -> int:
        """Accumulator elements per 16-byte shared read."""
        return max(1, 16 // cg.kind_of(self.dtype).acc_nbytes)

    @property
    def shared_bytes(self) -> int:
        return 2 * self.bk * (self.bm + self.bn) * cg.kind_of(self.dtype).acc_nbytes


#: (A/B dtype, C dtype) pairs whose C type differs from the data (cublasGemmEx with COMPUTE_32F).
MIXED_OUTPUTS = (("float16", "float32"), ("bfloat16", "float32"))


class TileLoader:
    """Global -> register -> shared copy of one operand tile (``X`` rows of M or N by ``bk``),
    stored K-major: element (p, x) at ``p * row_stride + x`` (``row_stride`` defaults to X; the
    tensor-core f64 kernel pads it). ``spec`` needs ``bk`` and ``threads``."""

    def __init__(self, kb: KernelBuilder, spec, kind: cg.ElementKind, base: Value,
                 ld: Value, extent: Value, tid: Value, x0: Value, X: int, along_k: bool, vec: int,
                 conj: bool, smem_offset: int, row_stride: int | None = None) -> None:
        self.kb, self.kind, self.vec, self.conj, self.along_k = kb, kind, vec, conj, along_k
        bk, nt, es, sz = spec.bk, spec.threads, kind.nbytes, kind.acc_nbytes
        RS = X if row_stride is None else row_stride
        per_row = (bk if along_k else X) // vec
        nvec = X * bk // vec
        self.slots = []
        for r in range((nvec + nt - 1) // nt):
            vid = kb.add(tid, r * nt)
            live = kb.setp("lt", vid, nvec) if (r + 1) * nt > nvec else None
            lane = kb.sub(vid, kb.mul(kb.div(vid, per_row), per_row)) if per_row & (per_row - 1) else \
                kb.and_(vid, per_row - 1)
            row = kb.div(vid, per_row) if per_row & (per_row - 1) else kb.shr(vid, per_row.bit_length() - 1)
            lane = kb.mul(lane, vec) if vec > 1 else lane
            p, x = (lane, row) if along_k else (row, lane)
            gx = kb.add(x0, x)
            inb = kb.setp("lt", gx, extent)
            if live is not None:
                inb = kb.and_(inb, live)
            # element offset (x0 + x) * sx + p * sp, with one of the steps 1 and the other ld
            if along_k:
                off = kb.add(kb.mul(kb.cvt(gx, "u64"), ld), kb.cvt(p, "u64"))
            else:
                off = kb.add(kb.cvt(gx, "u64"), kb.mul(kb.cvt(p, "u64"), ld))
            gptr = kb.addr(base, off, es)
            sm = kb.mad(p, RS * sz, kb.mul(x, sz), type_="u32")
            sm = kb.add(sm, smem_offset)
            regs = tuple(kb.mov(0.0, kind.acc) for _ in range(vec * kind.comps))
            self.slots.append((gptr, inb, p, sm, regs, live))
        self.step = kb.mul(ld, bk * es) if not along_k else None
        self.step_const = bk * es
        self.X = RS

    def fetch(self, k_base: Value, kz: Value, checked: bool = True) -> None:
        """Registers <- global tile starting at K = ``k_base`` (zero outside the matrix); with
        ``checked`` False the caller knows the whole tile is inside it (no tests, no zero fill)."""
        kb, kind = self.kb, self.kind
        for gptr, inb, p, _, regs, live in self.slots:
            if not checked:
                with kb.if_(live) if live is not None else contextlib.nullcontext():
                    if self.vec > 1:
                        vals = cg.widen(kb, kind, kb.ld("global", kind.storage, gptr, vec=self.vec))
                    else:
                        vals = cg.load(kb, kind, gptr, conj=self.conj)
                    for reg, v in zip(regs, vals):
                        kb.assign(reg, v)
                continue
            ok = kb.and_(inb, kb.setp("lt", kb.add(k_base, p), kz))
            for reg in regs:
                kb.assign(reg, 0.0)
            with kb.if_(ok):
                if self.vec > 1:
                    got = kb.ld("global", kind.storage, gptr, vec=self.vec)
                    vals = cg.widen(kb, kind, got)
                else:
                    vals = cg.load(kb, kind, gptr, conj=self.conj)
                for reg, v in zip(regs, vals):
                    kb.assign(reg, v)

    def advance(self) -> None:
        kb = self.kb
        for gptr, *_ in self.slots:
            if self.step is not None:
                kb.add(gptr, self.step, out=gptr)
            else:
                kb.add(gptr, self.step_const, out=gptr)

    def store(self, buf: Value) -> None:
        """Shared buffer ``buf`` (byte offset of the stage) <- the fetched registers."""
        kb, kind = self.kb, self.kind
        sz = kind.acc_nbytes
        for _, _, _, sm, regs, live in self.slots:
            addr = kb.add(sm, buf)
            ctx = kb.if_(live) if live is not None else None
            if ctx is not None:
                ctx.__enter__()
            if self.along_k:
                for e in range(self.vec):
                    comp = regs[e * kind.comps:(e + 1) * kind.comps]
                    kb.st("shared", addr, list(comp) if kind.complex else comp[0], offset=e * self.X * sz)
            else:
                kb.st("shared", addr, list(regs) if len(regs) > 1 else regs[0])
            if ctx is not None:
                ctx.__exit__(None, None, None)


def generate(spec: GemmTiledSpec) -> str:
    """PTX of the tiled GEMM for ``spec``. Parameters, in order: m n k k_split (u32), a lda b ldb
    c ldc stride_a stride_b stride_c (u64; element counts), alpha[, alpha_im] alpha_ptr,
    beta[, beta_im] beta_ptr. Launch: block (threads,), grid (ceil(m/bm), ceil(n/bn), batch or
    splits)."""
    kind = cg.kind_of(spec.dtype)
    es, sz, W = kind.nbytes, kind.acc_nbytes, spec.smem_vector
    bm, bn, bk, tm, tn, nt = spec.bm, spec.bn, spec.bk, spec.tm, spec.tn, spec.threads
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    m, n, k, k_split = (kb.param(x, "u32") for x in ("m", "n", "k", "k_split"))
    a0, lda, b0, ldb, c0, ldc = (kb.param(x, "u64") for x in ("a", "lda", "b", "ldb", "c", "ldc"))
    a0, b0, c0 = (kb.cvta("global", p, to_generic=False) for p in (a0, b0, c0))
    sa, sb, sc = (kb.param(x, "u64") for x in ("stride_a", "stride_b", "stride_c"))
    if spec.prefetch:  # resolved after the loop, where they hold no registers during it
        alpha_p, beta_p = cg.declare_scalar(kb, kind, "alpha"), cg.declare_scalar(kb, kind, "beta")
    else:
        alpha, _ = cg.scalar_params(kb, kind, "alpha")
        beta, beta_zero = cg.scalar_params(kb, kind, "beta")
    kb.reqntid(nt)
    if spec.min_ctas:
        kb.minnctapersm(spec.min_ctas)
    smem = kb.shared("tiles", kind.acc, 2 * bk * (bm + bn) * kind.comps, align=16)
    stage = bk * (bm + bn) * sz

    tid = kb.tid()
    z = kb.ctaid("z")
    i0 = kb.mul(kb.ctaid("x"), bm)
    j0 = kb.mul(kb.ctaid("y"), bn)
    a = cg.batch_operand(kb, a0, sa, z, es, spec.pointer_array)
    b = cg.batch_operand(kb, b0, sb, z, es, spec.pointer_array)
    if not spec.prefetch:
        c = cg.batch_operand(kb, c0, sc, z, spec.c_kind.nbytes, spec.pointer_array)
    kz = kb.min(kb.sub(k, kb.mul(z, k_split)), k_split) if spec.raw_out else k

    load_a = TileLoader(kb, spec, kind, a, lda, m, tid, i0, bm, spec.transa == "T", spec.vec_a,
                         spec.conj_a, 0)
    load_b = TileLoader(kb, spec, kind, b, ldb, n, tid, j0, bn, spec.transb == "N", spec.vec_b,
                         spec.conj_b, bk * bm * sz)
    base = kb.shared_addr(smem)
    buf = kb.mov(0, "u32")
    load_a.fetch(kb.mov(0, "u32"), kz)
    load_b.fetch(kb.mov(0, "u32"), kz)
    load_a.store(kb.add(base, buf))
    load_b.store(kb.add(base, buf))
    kb.bar_sync()

    tx, ty = _thread_coords(kb, spec, tid)
    a_frag = kb.mul(ty, W * sz)
    b_frag = kb.add(kb.mul(tx, W * sz), bk * bm * sz)
    acc = [[cg.zero(kb, kind) for _ in range(tn)] for _ in range(tm)]

    def frags(at: tuple[Value, Value], p: int) -> tuple[list[cg.Element], list[cg.Element]]:
        return (_frag(kb, kind, at[0], p * bm * sz, tm, W, (bm // tm) * W * sz),
                _frag(kb, kind, at[1], p * bn * sz, tn, W, (bn // tn) * W * sz))

    def frag_bases(stage_base: Value) -> tuple[Value, Value]:
        return kb.add(stage_base, a_frag), kb.add(stage_base, b_frag)

    if spec.prefetch:  # K row 0 of the first tile, in registers that the loop keeps refilling
        first = frags(frag_bases(base), 0)
        carried = tuple([tuple(kb.mov(x) for x in e) for e in side] for side in first)
    def k_step(kt: Value, checked: bool) -> None:
        """One K step: fetch tile kt + 1, multiply tile kt, store tile kt + 1, barrier."""
        load_a.advance()
        load_b.advance()
        k_next = kb.mul(kb.add(kt, 1), bk)
        load_a.fetch(k_next, kz, checked)
        load_b.fetch(k_next, kz, checked)
        cur = frag_bases(kb.add(base, buf))
        for p in kb.unroll(bk):
            av, bv = carried if spec.prefetch and p == 0 else frags(cur, p)
            if spec.prefetch and p == bk - 1:
                # the next tile goes to the other buffer and the barrier passes before this row's
                # FFMAs; the next tile's row 0 is then read under them
                kb.xor(buf, stage, out=buf)
                nxt = kb.add(base, buf)
                load_a.store(nxt)
                load_b.store(nxt)
                kb.bar_sync()
                for side_regs, side_new in zip(carried, frags(frag_bases(nxt), 0)):
                    for regs, got in zip(side_regs, side_new):
                        for reg, v in zip(regs, got):
                            kb.assign(reg, v)
            nims = [kb.neg(x[1]) for x in av] if kind.complex else [None] * tm
            for r in range(tm):
                cols = range(tn - 1, -1, -1) if spec.prefetch and r % 2 else range(tn)
                for q in cols:
                    cg.mul_add(kb, kind, av[r], bv[q], acc[r][q], nims[r])
        if not spec.prefetch:
            kb.xor(buf, stage, out=buf)
            nxt = kb.add(base, buf)
            load_a.store(nxt)
            load_b.store(nxt)
            kb.bar_sync()

    ntiles = kb.div(kb.add(kz, bk - 1), bk)
    start: Value | int = 0
    if spec.interior:
        # step kt fetches tile kt + 1: for kt < ntiles - 2 that tile is whole in K too
        inside = kb.and_(kb.setp("le", kb.add(i0, bm), m), kb.setp("le", kb.add(j0, bn), n))
        inside = kb.and_(inside, kb.setp("ge", ntiles, 2))
        start = kb.mov(0, "u32")
        with kb.if_(inside):
            unchecked_end = kb.sub(ntiles, 2)
            with kb.loop(0, unchecked_end, 1, type_="u32") as kt:
                k_step(kt, checked=False)
            kb.assign(start, unchecked_end)
    with kb.loop(start, ntiles, 1, type_="u32") as kt:
        k_step(kt, checked=True)

    if spec.prefetch:
        alpha, _ = cg.resolve_scalar(kb, kind, *alpha_p)
        beta, beta_zero = cg.resolve_scalar(kb, kind, *beta_p)
        z = kb.ctaid("z")
        c = cg.batch_operand(kb, c0, sc, z, spec.c_kind.nbytes, spec.pointer_array)
        i0, j0 = kb.mul(kb.ctaid("x"), bm), kb.mul(kb.ctaid("y"), bn)
        tx, ty = _thread_coords(kb, spec, kb.tid())
    _write_c(kb, spec, kind, c, ldc, m, n, i0, j0, tx, ty, acc, alpha, beta, beta_zero)
    return kb.ptx()


def _thread_coords(kb: KernelBuilder, spec: GemmTiledSpec, tid: Value) -> tuple[Value, Value]:
    """(tx, ty): the thread's column and row in the CTA's (bm / tm) x (bn / tn) thread grid,
    row-major over the CTA, or warp by warp in ``warp_m x (32 / warp_m)`` blocks."""
    nx = spec.bn // spec.tn
    if not spec.warp_m:
        tx = kb.and_(tid, nx - 1) if nx & (nx - 1) == 0 else kb.sub(tid, kb.mul(kb.div(tid, nx), nx))
        return tx, kb.div(tid, nx)
    wn = 32 // spec.warp_m
    warps_x = nx // wn
    lane, warp = kb.and_(tid, 31), kb.shr(tid, 5)
    wx = kb.and_(warp, warps_x - 1) if warps_x & (warps_x - 1) == 0 else kb.sub(warp, kb.mul(kb.div(warp, warps_x),
                                                                                               warps_x))
    wy = kb.div(warp, warps_x)
    tx = kb.mad(wx, wn, kb.and_(lane, wn - 1), type_="u32")
    ty = kb.mad(wy, spec.warp_m, kb.shr(lane, wn.bit_length() - 1), type_="u32")
    return tx, ty


def _write_c(kb: KernelBuilder, spec: GemmTiledSpec, kind: cg.ElementKind, c: Value, ldc: Value, m: Value,
             n: Value, i0: Value, j0: Value, tx: Value, ty: Value, acc: list, alpha: cg.Element,
             beta: cg.Element, beta_zero: Value) -> None:
    """C[rows, cols] = alpha * acc + beta * C (raw accumulators for split-K partials), masked to
    m x n; with ``vec_c`` one vector access per W-row chunk (M a multiple of W: a chunk is all in
    or all out)."""
    W, tm, tn, bm, bn = spec.smem_vector, spec.tm, spec.tn, spec.bm, spec.bn
    ck = spec.c_kind
    out_es = ck.nbytes
    rows = [kb.add(i0, (r // W) * (bm // tm) * W + r % W) for r in range(tm)]
    rows = [kb.add(rr, kb.mul(ty, W)) for rr in rows]
    step = W if spec.vec_c > 1 else 1
    row_ok = {r: kb.setp("lt", rows[r], m) for r in range(0, tm, step)}
    for q in range(tn):
        col = kb.add(kb.add(j0, (q // W) * (bn // tn) * W + q % W), kb.mul(tx, W))
        col_ok = kb.setp("lt", col, n)
        col_ptr = kb.addr(c, kb.mul(kb.cvt(col, "u64"), ldc), out_es)
        with kb.if_(col_ok):
            for r in range(0, tm, step):
                with kb.if_(row_ok[r]):
                    addr = kb.addr(col_ptr, rows[r], out_es)
                    if step == 1:
                        cg.epilogue(kb, ck, addr, acc[r][q], alpha, beta, beta_zero, raw=spec.raw_out)
                    else:
                        _vector_epilogue(kb, ck, addr, [acc[r + e][q][0] for e in range(W)], alpha[0], beta[0],
                                         beta_zero, spec.raw_out)


def _vector_epilogue(kb: KernelBuilder, ck: cg.ElementKind, addr: Value, vals: list[Value], alpha: Value,
                     beta: Value, beta_zero: Value, raw: bool) -> None:
    """One vector of consecutive real C elements: ``alpha * vals + beta * C`` (C read only when
    beta != 0), or ``vals`` as they are for raw partials."""
    if raw:
        kb.st("global", addr, list(vals))
        return
    out = [kb.mul(alpha, v) for v in vals]
    with kb.if_(beta_zero, negate=True):
        old = kb.ld("global", ck.storage, addr, vec=len(vals))
        for o, c_old in zip(out, old):
            kb.fma(beta, c_old, o, out=o)
    kb.st("global", addr, out)


def _frag(kb: KernelBuilder, kind: cg.ElementKind, base: Value, offset: int, count: int, W: int,
          chunk_stride: int) -> list[cg.Element]:
    """``count`` accumulator elements of one K row: chunks of W read as 16-byte vectors."""
    out: list[cg.Element] = []
    comps = kind.comps
    for ci in range(count // W):
        n_regs = W * comps
        got = kb.ld("shared", kind.acc, base, offset=offset + ci * chunk_stride, vec=n_regs) if n_regs > 1 \
            else (kb.ld("shared", kind.acc, base, offset=offset + ci * chunk_stride),)
        got = got if isinstance(got, tuple) else (got,)
        out.extend(tuple(got[e * comps:(e + 1) * comps]) for e in range(W))
    return out


def spec_for(cfg: TileConfig, **fields) -> GemmTiledSpec:
    """The GemmTiledSpec of tile ``cfg`` with the other ``fields`` (arch, dtype, transposes, ...)."""
    return GemmTiledSpec(bm=cfg.bm, bn=cfg.bn, bk=cfg.bk, tm=cfg.tm, tn=cfg.tn, min_ctas=cfg.min_ctas,
                         warp_m=cfg.warp_m, prefetch=cfg.prefetch, interior=cfg.interior, **fields)


def configurations(arch: str) -> Iterable[GemmTiledSpec]:
    """The tiled configurations for ``arch``: every tile of TILE_CONFIGS for every dtype, both
    storage orders of A and B (and conjugations for complex), scalar or vector loads of A and of
    B and scalar or vector C access, each as dispatch picks it from that operand's alignment
    (``gemm_dispatch._vector_width``/``_vec_c``), split-K partials (raw_out) for every dtype (of the loop
    variants only SPLIT_K_TILES'), pointer-array batches (scalar access), and the mixed-output variants
    (float16/bfloat16 data, float32 C)."""
    for dtype, cfgs in TILE_CONFIGS.items():
        kind = cg.kind_of(dtype)
        trans = ["N", "T", "C"] if kind.complex else ["N", "T"]
        vecs = [1] if kind.complex else [1, min(4, 16 // kind.nbytes)]
        outs = [("", False), ("", True)]  # C, and split-K partials (dispatch splits every dtype)
        outs += [(c, False) for d, c in MIXED_OUTPUTS if d == dtype]
        split_k = SPLIT_K_TILES.get(dtype, ())
        for cfg in dict.fromkeys((*cfgs, *split_k)):
            cfg_outs = [o for o in outs if (o[1] and (not cfg.square_only or cfg in split_k))
                        or (not o[1] and cfg in cfgs)]
            for ta, tb, va, vb, (c_dtype, raw) in itertools.product(trans, trans, vecs, vecs, cfg_outs):
                probe = spec_for(cfg, arch=arch, dtype=dtype, c_dtype=c_dtype, raw_out=raw)
                wide_c = probe.smem_vector if probe.c_kind.nbytes >= 4 and not kind.complex else 1
                for vec_c in dict.fromkeys((1, wide_c)):
                    yield spec_for(cfg, arch=arch, dtype=dtype, transa="N" if ta == "N" else "T",
                                   transb="N" if tb == "N" else "T", conj_a=ta == "C", conj_b=tb == "C",
                                   vec_a=va, vec_b=vb, vec_c=vec_c, c_dtype=c_dtype, raw_out=raw)
                if va == vb == 1 and not raw and cfg in cfgs:  # pointer-array batches: scalar access
                    yield spec_for(cfg, arch=arch, dtype=dtype, transa="N" if ta == "N" else "T",
                                   transb="N" if tb == "N" else "T", conj_a=ta == "C", conj_b=tb == "C",
                                   c_dtype=c_dtype, pointer_array=True)


register_family("gemm_tiled", GemmTiledSpec, generate, configurations)


def plan(spec, p, device) -> LaunchPlan:
    """The launch plan of problem ``p`` with a tiled kernel ``spec`` (a ``GemmTiledSpec``, or a
    DMMA spec, which takes the same arguments): one CTA per bm x bn output tile, grid.z over the
    batch (several steps past 65535)."""
    m, n, k, lda, ldb, ldc = p.m, p.n, p.k, p.lda, p.ldb, p.ldc
    sa, sb, sc = p.stride_a, p.stride_b, p.stride_c

    def head(a, b, c, ws):
        return (m, n, k, 0, a, lda, b, ldb, c, ldc, sa, sb, sc)

    kind = cg.kind_of(p.dtype)
    tiles = (-(-m // spec.bm), -(-n // spec.bn))
    chunks = cg.batch_chunks(p)
    if len(chunks) == 1 and not kind.complex:  # the common call, bound without a helper call
        def bind(ptr, s, ws):
            return (m, n, k, 0, ptr[0], lda, ptr[1], ldb, ptr[2], ldc, sa, sb, sc, s[0], ptr[3], s[1], ptr[4])

        return LaunchPlan(spec.family, [KernelStep(spec, (*tiles, p.batch), spec.threads, bind)])
    steps = [KernelStep(spec, (*tiles, count), spec.threads, cg.simt_bind(kind, head, offsets))
             for _, count, *offsets in chunks]
    return LaunchPlan(spec.family, steps)
