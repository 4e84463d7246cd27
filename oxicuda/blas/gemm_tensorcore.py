"""Tensor-core GEMM for sm_80+: ``mma.sync`` + ``ldmatrix`` + a multistage ``cp.async`` pipeline.

Column-major, cuBLAS semantics: ``C = alpha * op(A) @ op(B) + beta * C`` with f16/bf16 data and
f32 accumulation, or f32 data multiplied as tf32 (``compute="tf32"``); C has the data's dtype.
``beta == 0`` never reads C. Batched launches use grid.z and element strides.

Shared-memory tiles keep each operand as it lies in global memory: "K-major" when op(X) is
contiguous along K (A transposed, B not), else "MN-major"; fragments come out of K-major tiles
with ``ldmatrix`` and out of MN-major half tiles with ``ldmatrix.trans`` (tf32 MN-major tiles use
scalar ``ld.shared``). Which 8x8 matrix feeds which register is derived from the fragment tables
of ``oxicuda.ptx.fragments`` and checked against ``ldmatrix``'s lane mapping at import.
Tails are zero-filled by ``cp.async`` with a short ``src-size``; the epilogue predicates stores.

Interface used by ``gemm_core``/``gemm_dispatch``: ``supports(problem)``, ``plan(problem, device)``
(a LaunchPlan), ``launch(problem, alpha, a_ptr, lda, b_ptr, ldb, beta, c_ptr, ldc, ...)``, ``ALGO``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from oxicuda.driver.facts import device_facts
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.fragment_plans import accumulator_plan, operand_plan, quad_select
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from oxicuda.ptx.registry import register_family
from oxicuda.ptx.spec import KernelSpec

from .gemm_problem import GemmProblem, column_major_problem

ALGO = "tensor_core"
FAMILY = "gemm_tensor_core"
#: this family writes a float32 C over float16/bfloat16 data (GemmProblem.c_dtype="float32")
MIXED_C = True

#: data dtype name -> (mma input type, element bytes)
DATA_TYPES = {"float16": ("f16", 2), "bfloat16": ("bf16", 2), "float32": ("tf32", 4)}
#: mma input type -> (mma shape, K per instruction)
MMA_FOR = {"f16": ("m16n8k16", 16), "bf16": ("m16n8k16", 16), "tf32": ("m16n8k8", 8)}
ARCHS = ("sm_80", "sm_86", "sm_90")
COPY_BYTES = 16  # one cp.async per 16-byte chunk: pointers and leading dims need 16-byte alignment


# -- the problem ---------------------------------------------------------------------------------
def as_problem(problem: object) -> GemmProblem:
    """``problem`` as the one GemmProblem: itself, or a mapping of ``column_major_problem``'s
    fields (m, n, k, dtype, compute, transa, transb, lda, ldb, ldc, alignment, arch, c_dtype)."""
    if isinstance(problem, GemmProblem):
        return problem
    if isinstance(problem, Mapping):
        return column_major_problem(**{k: v for k, v in problem.items() if v is not None})
    raise TypeError(f"gemm: problem {problem!r} ({type(problem).__name__}); a GemmProblem is required")


# -- the spec ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GemmTensorCoreSpec(KernelSpec):
    """One mma.sync GEMM kernel: input type (f16, bf16 or tf32 on f32 data), operand layouts in
    shared memory (``a_kmajor``: op(A) contiguous along K, i.e. transa; ``b_kmajor``: op(B)
    contiguous along K, i.e. not transb), CTA tile, warp grid and pipeline depth."""

    family: ClassVar[str] = FAMILY
    dtype: str = "f16"
    a_kmajor: bool = False
    b_kmajor: bool = True
    block_m: int = 128
    block_n: int = 128
    block_k: int = 32
    warps_m: int = 2
    warps_n: int = 2
    stages: int = 3
    c_f32: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in MMA_FOR:
            raise ValueError(f"GemmTensorCoreSpec: dtype={self.dtype!r}; allowed {tuple(MMA_FOR)}")
        if self.c_f32 and self.dtype == "tf32":
            raise ValueError("GemmTensorCoreSpec: c_f32 is for f16/bf16 data (tf32 data already has f32 C)")
        if self.sm < 80:
            raise ValueError(f"GemmTensorCoreSpec: arch={self.arch!r}; mma.sync bf16/tf32 needs sm_80+")
        kstep = MMA_FOR[self.dtype][1]
        wm, wn = self.block_m // self.warps_m, self.block_n // self.warps_n
        if (self.block_m % (16 * self.warps_m) or self.block_n % (16 * self.warps_n)
                or self.block_k % kstep or self.stages < 2):
            raise ValueError(f"GemmTensorCoreSpec: tile {self.block_m}x{self.block_n}x{self.block_k} with "
                             f"{self.warps_m}x{self.warps_n} warps, {self.stages} stages: warp tiles must be "
                             f"multiples of 16x16, block_k a multiple of {kstep}, stages >= 2")
        for rows, inner in ((self.block_m, self.block_k), (self.block_n, self.block_k)):
            for outer, contiguous in ((rows, inner), (inner, rows)):
                cpr = contiguous * self.elem_bytes // COPY_BYTES
                if cpr == 0 or self.threads % cpr or (outer * cpr) % self.threads:
                    raise ValueError(f"GemmTensorCoreSpec: a {outer}x{contiguous} tile does not split into "
                                     f"16-byte copies evenly over {self.threads} threads")
        del wm, wn

    @property
    def elem_bytes(self) -> int:
        return 4 if self.dtype == "tf32" else 2

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    def tile_layout(self, operand: str) -> tuple[int, int, int]:
        """(outer rows, contiguous elements, row stride in bytes) of the A or B shared tile."""
        mn = self.block_m if operand == "a" else self.block_n
        kmajor = self.a_kmajor if operand == "a" else self.b_kmajor
        outer, inner = (mn, self.block_k) if kmajor else (self.block_k, mn)
        return outer, inner, inner * self.elem_bytes + 16  # 16 bytes of padding: conflict-free ldmatrix

    @property
    def stage_bytes(self) -> int:
        return sum(o * rs for o, _, rs in (self.tile_layout("a"), self.tile_layout("b")))

    @property
    def shared_bytes(self) -> int:
        return self.stages * self.stage_bytes


# -- fragment plans: oxicuda.ptx.fragment_plans (shared with the conv and attention kernels) --------
PLANS = {(d, op): operand_plan(d, op) for d in MMA_FOR for op in ("a", "b")}
ACC_PLAN = accumulator_plan()


def warp_coords(kb: KernelBuilder, spec, tid: Value) -> tuple[Value, ...]:
    """Thread ``tid``'s place in an mma.sync CTA of ``spec.warps_m x spec.warps_n`` warps (warps
    run down M first): (wm0, wn0, g, t, quad, r8) = the warp tile's row and column origin in the
    CTA tile, the lane's mma group and thread-in-group, and its ldmatrix matrix index and row.
    Shared with the tensor-core conv kernel."""
    warp, lane = kb.shr(tid, 5), kb.and_(tid, 31)
    warp_n = kb.div(warp, spec.warps_m)
    wm0 = kb.mul(kb.sub(warp, kb.mul(warp_n, spec.warps_m)), spec.block_m // spec.warps_m)
    wn0 = kb.mul(warp_n, spec.block_n // spec.warps_n)
    return wm0, wn0, kb.shr(lane, 2), kb.and_(lane, 3), kb.shr(lane, 3), kb.and_(lane, 7)


# -- shared generator pieces (also used by gemm_wgmma) -------------------------------------------
def kernel_params(kb: KernelBuilder) -> dict[str, Value]:
    """The parameter list every tensor-core GEMM kernel takes, in launch order (see launch_args)."""
    p = {name: kb.param_ptr(name) for name in ("a", "b", "c")}
    for name in ("m", "n", "k", "lda", "ldb", "ldc"):
        p[name] = kb.param(name, "u32")
    p["alpha"], p["beta"] = kb.param("alpha", "f32"), kb.param("beta", "f32")
    p["alpha_ptr"], p["beta_ptr"] = kb.param("alpha_ptr", "u64"), kb.param("beta_ptr", "u64")
    for name in ("stride_a", "stride_b", "stride_c"):
        p[name] = kb.param(name, "u64")
    return p


def launch_args(a_ptr: int, b_ptr: int, c_ptr: int, m: int, n: int, k: int, lda: int, ldb: int, ldc: int,
                alpha: float, beta: float, alpha_ptr: int, beta_ptr: int, stride_a: int, stride_b: int,
                stride_c: int) -> list[object]:
    """The argument list matching ``kernel_params``."""
    return [a_ptr, b_ptr, c_ptr, m, n, k, lda, ldb, ldc, np.float32(alpha), np.float32(beta),
            alpha_ptr, beta_ptr, stride_a, stride_b, stride_c]


def load_scalars(kb: KernelBuilder, p: dict[str, Value]) -> tuple[Value, Value]:
    """alpha and beta: the by-value parameters, or the f32 at alpha_ptr/beta_ptr when nonzero."""
    out = []
    for name in ("alpha", "beta"):
        v = kb.mov(p[name])
        raw = p[f"{name}_ptr"]
        with kb.if_(kb.setp("ne", raw, 0, type_="u64")):
            kb.assign(v, kb.ld("global", "f32", kb.cvta("global", raw, to_generic=False)))
        out.append(v)
    return out[0], out[1]


def offset_ptr(kb: KernelBuilder, base: Value, index: Value, scale: int) -> Value:
    """base + index * scale with a u32 or u64 index, in 64 bits."""
    if index.ptype.bits == 32:
        return kb.add(base, kb.mul(index, scale, mode="wide", type_="u32"))
    return kb.add(base, kb.mul(index, scale, type_="u64"))


def col_major_ptr(kb: KernelBuilder, base: Value, row: Value, col: Value, ld: Value, es: int) -> Value:
    """&X[row, col] of a column-major X: base + (row + col * ld) * es, in 64 bits."""
    idx = kb.add(kb.mul(col, ld, mode="wide", type_="u32"), kb.cvt(row, "u64"))
    return offset_ptr(kb, base, idx, es)


def batch_pointers(kb: KernelBuilder, p: dict[str, Value], es: int, c_es: int | None = None
                   ) -> tuple[Value, Value, Value]:
    """A, B and C of batch ctaid.z (element strides; C's elements are ``c_es`` bytes, default ``es``)."""
    z = kb.cvt(kb.ctaid("z"), "u64")
    sizes = {"a": es, "b": es, "c": es if c_es is None else c_es}
    return tuple(offset_ptr(kb, p[x], kb.mul(z, p[f"stride_{x}"], type_="u64"), sizes[x]) for x in ("a", "b", "c"))


def _load_as_f32(kb: KernelBuilder, ctype: str, addr: Value) -> Value:
    if ctype == "bf16":  # exact widening by bits (cvt.f32.bf16 needs PTX 7.1, above sm_80's 7.0)
        bits = kb.ld("global", "u16", addr)
        return kb.bitcast(kb.shl(kb.cvt(bits, "u32"), 16), "f32")
    old = kb.ld("global", ctype, addr)
    return old if ctype == "f32" else kb.cvt(old, "f32")


def write_c(kb: KernelBuilder, dtype: str, c: Value, ldc: Value, m: Value, n: Value, alpha: Value, beta: Value,
            rows: list[Value], cols: list[Value], values: list[tuple[int, int, Value]]) -> None:
    """The epilogue: C[rows[ri], cols[ci]] = alpha * v (+ beta * C when beta != 0) for each
    (ri, ci, v) in ``values``; cells outside m x n are skipped, and beta == 0 never reads C.
    ``dtype`` is the C element type: f16, bf16 or f32 (for tf32 inputs)."""
    es = 4 if dtype in ("f32", "tf32") else 2
    ctype = "f32" if es == 4 else dtype
    row_ok = [kb.setp("lt", r, m) for r in rows]
    row_off = [kb.mul(r, es, mode="wide", type_="u32") for r in rows]
    beta_zero = kb.setp("eq", beta, 0.0)
    by_col: dict[int, list[tuple[int, Value]]] = {}
    for ri, ci, v in values:
        by_col.setdefault(ci, []).append((ri, v))
    for read_c in (False, True):
        with kb.if_(beta_zero, negate=read_c):
            for ci, cells in by_col.items():  # column pointers live only while their column is written
                with kb.if_(kb.setp("lt", cols[ci], n)):
                    col_ptr = offset_ptr(kb, c, kb.mul(cols[ci], ldc, mode="wide", type_="u32"), es)
                    for ri, v in cells:
                        with kb.if_(row_ok[ri]):
                            addr = kb.add(col_ptr, row_off[ri])
                            out = kb.mul(alpha, v)
                            if read_c:
                                out = kb.fma(beta, _load_as_f32(kb, ctype, addr), out)
                            kb.st("global", addr, out if ctype == "f32" else kb.cvt(out, ctype))


# -- the mma.sync generator ----------------------------------------------------------------------
def _clamp_bytes(kb: KernelBuilder, limit: Value, pos: Value, vec: int, es: int) -> Value:
    """min(max(limit - pos, 0), vec) * es as u32: the in-bounds bytes of one 16-byte chunk."""
    d = kb.sub(kb.bitcast(limit, "s32"), kb.bitcast(pos, "s32"))
    d = kb.min(kb.max(d, 0), vec)
    return kb.mul(kb.bitcast(d, "u32"), es)


def generate(spec: GemmTensorCoreSpec) -> str:
    """PTX of one mma.sync GEMM kernel (see the module docstring)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    T, es, S = spec.threads, spec.elem_bytes, spec.stages
    kb.reqntid(T)
    shape, kstep = MMA_FOR[spec.dtype]
    p = kernel_params(kb)
    smem = kb.dynamic_shared("smem", spec.shared_bytes, align=128)
    alpha, beta = load_scalars(kb, p)
    a_g, b_g, c_g = batch_pointers(kb, p, es, 4 if spec.c_f32 else es)
    m0 = kb.mul(kb.ctaid("x"), spec.block_m)
    n0 = kb.mul(kb.ctaid("y"), spec.block_n)
    tid = kb.tid()
    wm, wn = spec.block_m // spec.warps_m, spec.block_n // spec.warps_n
    wm0, wn0, g, t, quad, r8 = warp_coords(kb, spec, tid)
    smem0 = kb.shared_addr(smem)
    a_outer = spec.tile_layout("a")
    region = {"a": 0, "b": a_outer[0] * a_outer[2]}

    # global -> shared copy plan per operand
    copies = {}
    for x, base, mn0, mn_lim, ld in (("a", a_g, m0, p["m"], p["lda"]), ("b", b_g, n0, p["n"], p["ldb"])):
        outer, inner, rs = spec.tile_layout(x)
        kmajor = spec.a_kmajor if x == "a" else spec.b_kmajor
        cpr, vec = inner * es // COPY_BYTES, COPY_BYTES // es
        rpp, passes = T // cpr, outer * cpr // T
        o0 = kb.div(tid, cpr)
        icol = kb.mul(kb.sub(tid, kb.mul(o0, cpr)), vec)
        dst = kb.add(kb.mad(o0, rs, kb.mul(icol, es)), region[x])
        step = kb.mul(ld, rpp * es, mode="wide", type_="u32")  # bytes between passes (u64)
        if kmajor:
            thr = col_major_ptr(kb, base, icol, kb.add(mn0, o0), ld, es)
            fixed = [kb.setp("lt", kb.add(mn0, o0 if j == 0 else kb.add(o0, j * rpp)), mn_lim) for j in range(passes)]
            copies[x] = (kmajor, thr, dst, step, rpp, passes, rs, fixed, None, icol, vec, o0)
        else:
            thr = col_major_ptr(kb, base, kb.add(mn0, icol), o0, ld, es)
            nbytes = _clamp_bytes(kb, mn_lim, kb.add(mn0, icol), vec, es)
            copies[x] = (kmajor, thr, dst, step, rpp, passes, rs, None, nbytes, icol, vec, o0)

    def load_tile(stage_off: Value, k0: Value) -> None:
        for x, (kmajor, thr, dst, step, rpp, passes, rs, fixed, nbytes, icol, vec, o0) in copies.items():
            ld = p["lda"] if x == "a" else p["ldb"]
            base = a_g if x == "a" else b_g
            if kmajor:
                ptr = offset_ptr(kb, thr, k0, es)
                chunk = _clamp_bytes(kb, p["k"], kb.add(k0, icol), vec, es)
            else:
                ptr = kb.add(thr, kb.mul(kb.mul(k0, ld, mode="wide", type_="u32"), es, type_="u64"))
            d = kb.add(dst, stage_off)
            for j in range(passes):
                pj = ptr if j == 0 else kb.add(ptr, kb.mul(step, j, type_="u64"))
                ok = fixed[j] if kmajor else kb.setp("lt", kb.add(k0, kb.add(o0, j * rpp)), p["k"])
                size = kb.selp(chunk if kmajor else nbytes, 0, ok, type_="u32")
                src = kb.selp(pj, base, kb.setp("ne", size, 0), type_="u64")
                kb.cp_async(kb.add(d, smem0), src, 16, "cg", src_size=size, dst_offset=j * rpp * rs)

    # per-lane fragment addresses (relative to the stage base)
    frag_off = {}
    for x, w0 in (("a", wm0), ("b", wn0)):
        plan = PLANS[(spec.dtype, x)]
        kmajor = spec.a_kmajor if x == "a" else spec.b_kmajor
        rs = spec.tile_layout(x)[2]
        if kmajor or es == 2:
            if x == "a":
                org = list(plan.origins)
            else:  # x4 loads two n8 tiles: matrices (tile 0: regs 0, 1), (tile 1: regs 0, 1)
                org = [(plan.origins[j & 1][0] + 8 * (j >> 1), plan.origins[j & 1][1]) for j in range(4)]
            mn_sel = quad_select(kb, quad, [o[0] for o in org])
            k_sel = quad_select(kb, quad, [o[1] for o in org])
            if kmajor:
                off = kb.add(kb.mul(kb.add(kb.add(w0, mn_sel), r8), rs), kb.mul(k_sel, es))
            else:
                off = kb.add(kb.mul(kb.add(k_sel, r8), rs), kb.mul(kb.add(w0, mn_sel), es))
        else:  # tf32 MN-major: scalar loads at lane-affine positions
            lmn = kb.add(kb.mad(g, plan.lane_mn[0], w0), kb.mul(t, plan.lane_mn[1]))
            lk = kb.add(kb.mul(g, plan.lane_k[0]), kb.mul(t, plan.lane_k[1]))
            off = kb.mad(lk, rs, kb.mul(lmn, es))
        frag_off[x] = kb.add(kb.add(off, region[x]), smem0)

    MT, NT = wm // 16, wn // 8
    acc = [[[kb.mov(0.0, "f32") for _ in range(4)] for _ in range(NT)] for _ in range(MT)]

    def fragments_of(x: str, stage: Value, ks: int) -> list[tuple[Value, ...]]:
        plan = PLANS[(spec.dtype, x)]
        kmajor = spec.a_kmajor if x == "a" else spec.b_kmajor
        rs = spec.tile_layout(x)[2]
        base = kb.add(frag_off[x], stage)
        kofs = ks * kstep
        out: list[tuple[Value, ...]] = []
        if x == "a" and (kmajor or es == 2):
            for mt in range(MT):
                c = mt * 16 * rs + kofs * es if kmajor else kofs * rs + mt * 16 * es
                out.append(kb.ldmatrix(4, base, trans=not kmajor, offset=c))
        elif kmajor or es == 2:
            for npair in range(NT // 2):
                c = npair * 16 * rs + kofs * es if kmajor else kofs * rs + npair * 16 * es
                regs = kb.ldmatrix(4, base, trans=not kmajor, offset=c)
                out += [regs[0:2], regs[2:4]]
        else:
            tiles, span = (MT, 16) if x == "a" else (NT, 8)
            for tile in range(tiles):
                out.append(tuple(kb.ld("shared", "b32", base, offset=(kofs + ek) * rs + (tile * span + emn) * es)
                                 for emn, ek in plan.elems))
        return out

    rd, wr = kb.mov(0, "u32"), kb.mov((S - 1) * spec.stage_bytes, "u32")
    ktiles = kb.div(kb.add(p["k"], spec.block_k - 1), spec.block_k)
    for s in range(S - 1):
        with kb.if_(kb.setp("lt", kb.mov(s, "u32"), ktiles)):
            load_tile(kb.mov(s * spec.stage_bytes, "u32"), kb.mov(s * spec.block_k, "u32"))
        kb.cp_async_commit()
    kload = kb.mov((S - 1) * spec.block_k, "u32")
    wrap = S * spec.stage_bytes
    with kb.loop(0, ktiles, 1, type_="u32") as kt:
        kb.cp_async_wait(S - 2)
        kb.bar_sync()
        with kb.if_(kb.setp("lt", kb.add(kt, S - 1), ktiles)):
            load_tile(wr, kload)
        kb.cp_async_commit()
        for ks in range(spec.block_k // kstep):
            af, bf = fragments_of("a", rd, ks), fragments_of("b", rd, ks)
            for mt in range(MT):
                for nt in range(NT):
                    kb.mma_sync(shape, spec.dtype, spec.dtype, "f32", af[mt], bf[nt], acc[mt][nt], d=acc[mt][nt])
        for off in (rd, wr):
            kb.add(off, spec.stage_bytes, out=off)
            kb.selp(0, off, kb.setp("ge", off, wrap), out=off)
        kb.add(kload, spec.block_k, out=kload)
    kb.cp_async_wait(0)

    (lane0, (rg, rt), (cg, ct)) = ACC_PLAN
    row_base = kb.add(kb.add(m0, wm0), kb.add(kb.mul(g, rg), kb.mul(t, rt)))
    col_base = kb.add(kb.add(n0, wn0), kb.add(kb.mul(g, cg), kb.mul(t, ct)))
    row_consts = sorted({mt * 16 + rc[0] for mt in range(MT) for rc in lane0})
    col_consts = sorted({nt * 8 + rc[1] for nt in range(NT) for rc in lane0})
    rows = [kb.add(row_base, c) for c in row_consts]
    cols = [kb.add(col_base, c) for c in col_consts]
    values = [(row_consts.index(mt * 16 + lane0[i][0]), col_consts.index(nt * 8 + lane0[i][1]), acc[mt][nt][i])
              for mt in range(MT) for nt in range(NT) for i in range(4)]
    write_c(kb, "f32" if spec.dtype == "tf32" or spec.c_f32 else spec.dtype, c_g, p["ldc"], p["m"], p["n"], alpha,
            beta, rows, cols, values)
    return kb.ptx()


# -- configurations, dispatch within the family, launch ------------------------------------------
#: (block_m, block_n, block_k, warps_m, warps_n, stages) per input type; the first is for large
#: problems, the second for small ones. Provisional until measured on the H200 / RTX A4000.
TILES = {
    "f16": ((128, 128, 32, 2, 2, 4), (64, 64, 32, 2, 2, 3)),
    "bf16": ((128, 128, 32, 2, 2, 4), (64, 64, 32, 2, 2, 3)),
    "tf32": ((128, 128, 16, 2, 2, 4), (64, 64, 16, 2, 2, 3)),
}
#: below this many output elements per CTA of the large tile a problem uses the small tile
SMALL_PROBLEM_MN = 256 * 256


def configurations(arch: str) -> list[GemmTensorCoreSpec]:
    """Every kernel the family can produce for ``arch``: dtypes x layouts x tiles (x float32 C
    for f16/bf16 data)."""
    out = []
    for dtype, tiles in TILES.items():
        for a_kmajor in (False, True):
            for b_kmajor in (False, True):
                for bm, bn, bk, wm, wn, st in tiles:
                    for c_f32 in ((False, True) if dtype != "tf32" else (False,)):
                        out.append(GemmTensorCoreSpec(arch=arch, dtype=dtype, a_kmajor=a_kmajor, b_kmajor=b_kmajor,
                                                      block_m=bm, block_n=bn, block_k=bk, warps_m=wm, warps_n=wn,
                                                      stages=st, c_f32=c_f32))
    return out


register_family(FAMILY, GemmTensorCoreSpec, generate, configurations, archs=ARCHS)


def _input_type(p: GemmProblem) -> str | None:
    if p.dtype in ("float16", "bfloat16") and p.compute == "f32":
        return DATA_TYPES[p.dtype][0]
    if p.dtype == "float32" and p.compute == "tf32":
        return "tf32"
    return None


def _spec_arch(sm: int) -> str:
    return "sm_90" if sm >= 90 else "sm_86" if sm >= 86 else "sm_80"


def supports(problem: object) -> bool:
    """True when this family computes ``problem`` exactly as cuBLAS would: f16/bf16 data with f32
    compute or f32 data with tf32 compute, any transposes, sm_80+, 16-byte alignment of pointers
    and leading dimensions, sizes below 2**31."""
    p = as_problem(problem)
    if _input_type(p) is None or p.sm < 80 or p.alignment < COPY_BYTES or p.pointer_array:
        return False
    if max(p.m, p.n, p.k, p.lda, p.ldb, p.ldc) >= 2**31:
        return False
    rows_a, rows_b = (p.k if p.a_transposed else p.m), (p.n if p.b_transposed else p.k)
    return p.lda >= max(1, rows_a) and p.ldb >= max(1, rows_b) and p.ldc >= max(1, p.m)


def choose_spec(problem: object) -> GemmTensorCoreSpec:
    """The kernel for ``problem`` (a pure function of it): layouts from the transposes, the large
    tile unless the output is small."""
    p = as_problem(problem)
    dtype = _input_type(p)
    if dtype is None:
        raise ValueError(f"tensor_core gemm: dtype={p.dtype!r} with compute={p.compute!r} is not supported; "
                         "allowed float16/bfloat16 with compute 'f32', float32 with compute 'tf32'")
    large, small = TILES[dtype]
    bm, bn, bk, wm, wn, st = small if p.m * p.n < SMALL_PROBLEM_MN else large
    return GemmTensorCoreSpec(arch=_spec_arch(p.sm), dtype=dtype, a_kmajor=p.a_transposed,
                              b_kmajor=not p.b_transposed, block_m=bm, block_n=bn, block_k=bk, warps_m=wm,
                              warps_n=wn, stages=st, c_f32=p.c_dtype == "float32" and dtype != "tf32")


def check_launch(p: GemmProblem, grid: tuple[int, int, int], name: str) -> None:
    """Raise ValueError for a problem the family does not take, or a grid over the limits."""
    if not supports(p):
        raise ValueError(f"{name} gemm does not support {p}; check supports(problem) first "
                         "(f16/bf16 with compute f32 or f32 with tf32, sm_80+, 16-byte alignment)")
    if grid[1] > 65535 or grid[2] > 65535:
        raise ValueError(f"{name} gemm: grid {grid} exceeds 65535 CTAs in y or z "
                         f"(n={p.n}, batch={p.batch}); split the problem")


def gemm_bind(m: int, n: int, k: int, lda: int, ldb: int, ldc: int, sa: int, sb: int, sc: int, extra=()):
    """The ``bind`` of a tensor-core GEMM step: ``kernel_params``' order from the call's
    (a, b, c, alpha_ptr, beta_ptr) pointers and (alpha, beta) scalars, ``extra`` appended."""
    def bind(ptr, s, ws):
        return (ptr[0], ptr[1], ptr[2], m, n, k, lda, ldb, ldc, s[0], s[1], ptr[3], ptr[4], sa, sb, sc, *extra)

    return bind


def plan(problem: object, device: object, spec: GemmTensorCoreSpec | None = None) -> LaunchPlan:
    """The launch plan of ``problem`` (batch and strides included) on mma.sync tensor cores:
    ``spec`` (default ``choose_spec``) over a (M tiles, N tiles, batch) grid. Its ``run`` takes
    pointers (a, b, c, alpha_ptr, beta_ptr) and scalars (alpha, beta). Raises ValueError for
    unsupported problems and batch strides that are not multiples of 16 bytes, before any launch."""
    p = as_problem(problem)
    spec = spec or choose_spec(p)
    grid = (-(-p.m // spec.block_m), -(-p.n // spec.block_n), p.batch)
    check_launch(p, grid, ALGO)
    es = spec.elem_bytes
    if p.batch > 1 and any((s * es) % COPY_BYTES for s in (p.stride_a, p.stride_b)):
        raise ValueError(f"tensor_core gemm: batch strides ({p.stride_a}, {p.stride_b}) elements of {es} bytes; "
                         f"A and B strides must be multiples of {COPY_BYTES} bytes")
    if p.m == 0 or p.n == 0 or p.batch == 0:
        return LaunchPlan(ALGO, ())
    bind = gemm_bind(p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.stride_a, p.stride_b, p.stride_c)
    return LaunchPlan(ALGO, [KernelStep(spec, grid, spec.threads, bind, spec.shared_bytes)])


def launch(problem: object, alpha: float, a_ptr: int, lda: int, b_ptr: int, ldb: int, beta: float, c_ptr: int,
           ldc: int, *, batch: int = 1, stride_a: int = 0, stride_b: int = 0, stride_c: int = 0,
           alpha_ptr: int = 0, beta_ptr: int = 0, stream: object = None) -> None:
    """C = alpha * op(A) @ op(B) + beta * C, column-major, on tensor cores (mma.sync): ``plan``
    for ``problem`` with these leading dimensions, batch and strides, then its ``run``.

    Pointers are device addresses (ints) of the first element of batch 0; ``stride_*`` are
    element strides between batches. ``alpha_ptr``/``beta_ptr``: when nonzero, device addresses
    of float32 scalars read instead of ``alpha``/``beta``. Asynchronous on ``stream``. Raises
    ValueError for unsupported problems."""
    p = with_call_layout(as_problem(problem), lda, ldb, ldc, batch, stride_a, stride_b, stride_c)
    device = device_facts()
    launch_plan = LAUNCH_PLANS.get_or_build((p, device.ordinal), lambda: plan(p, device))
    launch_plan.run((a_ptr, b_ptr, c_ptr, alpha_ptr, beta_ptr), (alpha, beta), stream)


#: plans of ``launch`` by (problem, device ordinal)
LAUNCH_PLANS = PlanCache(FAMILY, maxsize=256)


def with_call_layout(p: GemmProblem, lda: int, ldb: int, ldc: int, batch: int, stride_a: int, stride_b: int,
                     stride_c: int) -> GemmProblem:
    """``p`` with a launch call's leading dimensions, batch and strides (ValueError for a bad batch)."""
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 0:
        raise ValueError(f"gemm: batch={batch!r}; a non-negative int")
    return dataclasses.replace(p, lda=int(lda), ldb=int(ldb), ldc=int(ldc), batch=int(batch),
                               stride_a=int(stride_a), stride_b=int(stride_b), stride_c=int(stride_c))
