"""Tensor-core implicit-GEMM conv2d forward (sm_80+): ``mma.sync m16n8k16`` with float16/bfloat16
inputs and outputs and f32 accumulation, ``ldmatrix`` fragments, a multistage shared-memory
pipeline fed by ``cp.async``.

The GEMM of group ``g = ctaid.z`` (``Cg``/``Kg`` channels per group, ``RS = R*S``)::

    Y[pixel(n, oh, ow), kout] = sum_kk A[pixel, kk] * B[kk, kout]
    A[pixel, kk] = X[n, c, oh*st_h - pad_h + r*dil_h, ow*st_w - pad_w + s*dil_w]   (0 outside X)
    B[kk, kout]  = W[kout, kk]     (the filter of one output channel is one contiguous row of gk)

with the reduction index ``kk`` over (r, s, c) for NHWC (KRSC filters) and over (c, r, s) for
NCHW (KCRS filters), so that B rows are contiguous in memory in both layouts, and A rows are
contiguous runs of ``Cg`` channels in NHWC.

Both operands sit in shared memory K-major (``BLOCK_K`` = 32 halves per row, 16 bytes of padding
so that ``ldmatrix`` rows fall on distinct banks) and reach the tensor cores through non-transposed
``ldmatrix.x4``; the fragment plans are ``oxicuda.blas.gemm_tensorcore.PLANS`` (derived from the
tables of ``oxicuda.ptx.fragments`` the emulator computes ``mma`` from, and checked at import).

Operand loads, chosen per launch by ``choose_spec`` (part of the spec):

- ``a_async`` (NHWC with ``Cg % 8 == 0`` and a 16-byte aligned x): each 16-byte chunk of 8
  channels of one (pixel, r, s) is one ``cp.async.cg``; a tap in the padding, a pixel past the
  end or a chunk past ``gk`` copies with ``src-size`` 0, which zero-fills. The thread's (c, r, s)
  advances by carries from stage to stage (no divisions in the main loop).
- ``b_async`` (``gk % 8 == 0`` and a 16-byte aligned w): filter rows by ``cp.async`` likewise.
- otherwise (odd channel counts, odd reductions, NCHW x that is not transposed): the slower scalar
  gather. Each thread owns one tile row and a run of consecutive ``kk``; it walks (c, r, s) by
  carries instead of divisions, loads 2-byte elements (masked ones read a safe address and are
  replaced by 0) into registers before the stage's mma and stores them to shared memory after
  it, so the loads' latency overlaps the math.

NCHW problems with ``Cg % 8 == 0`` do not gather: ``conv.prepare_tensor_core`` first transposes x
and w to NHWC in a workspace (``channels_last``) and runs the NHWC kernel, which writes y in NCHW
through its strides (``nchw_via_channels_last``).

The epilogue adds the bias and applies the activation (``conv_epilogue.emit_activation``) in f32,
rounds to the element type and stores through element strides (either layout); ``y_pairs``
stores two adjacent channels per 32-bit store where y is NHWC. When the grid is short of one wave
and the reduction long (``choose_splits``), the kernel runs split-K (``split_k``): grid.z is
groups * splits, each split reduces a run of k-tiles and stores raw f32 sums into its y-shaped
slab of a workspace, and ``conv_tc_split_k`` adds the slabs and applies the epilogue.

Backward data and backward filter for half types stay on the SIMT kernels of
``conv_implicit_gemm`` (f32 accumulation).

Launch: grid (ceil(M / block_m), ceil(Kg / block_n), groups * splits), block
``32 * warps_m * warps_n``, dynamic shared memory ``spec.shared_bytes`` (above 48 KiB through the
opt-in). Tiles, the large-tile and split-K thresholds are provisional until measured on the H200
(``benches/sweep_conv_tc.py``).
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import ClassVar

from oxicuda.blas.gemm_tensorcore import ACC_PLAN, PLANS, warp_coords
from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.fragment_plans import quad_select
from oxicuda.ptx.spec import KernelSpec

from ._common import load_f32, store_f32
from .conv_epilogue import ACTIVATIONS, emit_activation
from .conv_implicit_gemm_tc_loads import BLOCK_K, COPY_BYTES, ROW_BYTES, Loader, Params, divmod_u32

FAMILY = "conv_implicit_gemm_tc"
DTYPES = ("f16", "bf16")
LAYOUTS = ("NCHW", "NHWC")
ARCHS = ("sm_80", "sm_86", "sm_90")
#: (block_m, block_n, warps_m, warps_n, stages): provisional, to be measured on the H200
TILES = {"large": (128, 128, 2, 2, 4), "wide": (128, 64, 2, 2, 4), "small": (64, 64, 2, 2, 3)}
#: a problem whose large-tile grid has fewer CTAs than this many per SM uses the small tile
#: (provisional)
LARGE_MIN_CTAS_PER_SM = 1.0
#: split-K: each split reduces at least this many k-tiles; at most this many splits (provisional)
SPLIT_MIN_KTILES = 8
SPLIT_MAX = 16


@dataclass(frozen=True)
class ConvTensorCoreSpec(KernelSpec):
    """One tensor-core conv forward kernel: element type, layout (reduction order), how each
    operand reaches shared memory (``cp.async`` chunks or the scalar gather), fused epilogue,
    ``y_pairs`` (y has unit channel stride, even K/groups and 4-byte alignment: two adjacent
    channels per 32-bit store), CTA tile, warp grid and pipeline depth."""

    family: ClassVar[str] = FAMILY
    dtype: str = "f16"
    layout: str = "NHWC"
    a_async: bool = True
    b_async: bool = True
    activation: str = "none"
    bias: bool = False
    y_pairs: bool = False
    split_k: bool = False
    block_m: int = 128
    block_n: int = 128
    warps_m: int = 2
    warps_n: int = 2
    stages: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        name = "ConvTensorCoreSpec"
        if self.dtype not in DTYPES:
            raise ValueError(f"{name}: dtype={self.dtype!r}; allowed {DTYPES}")
        if self.layout not in LAYOUTS:
            raise ValueError(f"{name}: layout={self.layout!r}; allowed {LAYOUTS}")
        if self.sm < 80:
            raise ValueError(f"{name}: arch={self.arch!r}; mma.sync bf16 and cp.async need sm_80+")
        if self.a_async and self.layout != "NHWC":
            raise ValueError(f"{name}: a_async needs layout NHWC (NCHW has no contiguous channel runs)")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"{name}: activation={self.activation!r}; allowed {ACTIVATIONS}")
        if self.split_k and (self.bias or self.activation != "none" or self.y_pairs):
            raise ValueError(f"{name}: split-K partials are raw f32 sums (the reduce kernel applies the epilogue)")
        if self.block_m % (16 * self.warps_m) or self.block_n % (16 * self.warps_n) or self.stages < 2:
            raise ValueError(f"{name}: tile {self.block_m}x{self.block_n} with {self.warps_m}x{self.warps_n} "
                             f"warps, {self.stages} stages: warp tiles must be multiples of 16x16, stages >= 2")
        for rows, is_async in ((self.block_m, self.a_async), (self.block_n, self.b_async)):
            if is_async and (rows * (BLOCK_K * 2 // COPY_BYTES)) % self.threads:
                raise ValueError(f"{name}: {rows} rows of 16-byte chunks do not split over {self.threads} threads")
            if not is_async and (self.threads % rows or BLOCK_K // (self.threads // rows) % 8):
                raise ValueError(f"{name}: the scalar gather needs {rows} rows to split {self.threads} threads "
                                 f"into runs of a multiple of 8 halves")

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    @property
    def stage_bytes(self) -> int:
        return (self.block_m + self.block_n) * ROW_BYTES

    @property
    def shared_bytes(self) -> int:
        return self.stages * self.stage_bytes


def generate(spec: ConvTensorCoreSpec) -> str:
    """PTX of one tensor-core conv forward kernel (see the module docstring)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    p = Params(kb)
    T, S, dt = spec.threads, spec.stages, spec.dtype
    kb.reqntid(T)
    smem = kb.dynamic_shared("smem", spec.shared_bytes, align=128)
    smem0 = kb.shared_addr(smem)
    ktiles = kb.div(kb.add(p.gk, BLOCK_K - 1), BLOCK_K)
    if spec.split_k:  # z = split * groups + group; this split reduces k-tiles [split*kt_chunk, ...)
        split = kb.div(kb.ctaid("z"), p.groups)
        grp = kb.sub(kb.ctaid("z"), kb.mul(split, p.groups))
        kt0 = kb.mul(split, p.kt_chunk)
        ktiles = kb.min(kb.sub(ktiles, kt0), p.kt_chunk)  # the host makes every split non-empty
        slab = kb.addr(p.y_ptr, kb.mul(split, p.total, mode="wide", type_="u32"), 4)
        yg = kb.addr(slab, kb.mul(grp, kb.mul(p.kg, p.ys_c)), 4)
        kbase = kb.mul(kt0, BLOCK_K)
    else:
        grp = kb.ctaid("z")
        yg = kb.addr(p.y_ptr, kb.mul(grp, kb.mul(p.kg, p.ys_c)), 2)
        kbase = kb.mov(0, "u32")
    xg = kb.addr(p.x_ptr, kb.mul(grp, kb.mul(p.cg, p.xs_c)), 2)
    wg = kb.addr(p.w_ptr, kb.mul(grp, kb.mul(p.kg, p.gk)), 2)
    m0 = kb.mul(kb.ctaid("x"), spec.block_m)
    n0 = kb.mul(kb.ctaid("y"), spec.block_n)
    tid = kb.tid()
    wm, wn = spec.block_m // spec.warps_m, spec.block_n // spec.warps_n
    wm0, wn0, g, t, quad, r8 = warp_coords(kb, spec, tid)
    b_region = spec.block_m * ROW_BYTES
    loaders = [Loader(kb, spec, p, "a", xg, m0, 0, smem0, tid),
               Loader(kb, spec, p, "b", wg, n0, b_region, smem0, tid)]

    # this lane's ldmatrix row address in each operand tile (relative to the stage)
    frag_base = {}
    for x, w0, region in (("a", wm0, 0), ("b", wn0, b_region)):
        plan = PLANS[(dt, x)]
        if x == "a":
            org = list(plan.origins)
        else:  # one x4 load covers two n8 tiles: (tile 0: regs 0, 1), (tile 1: regs 0, 1)
            org = [(plan.origins[j & 1][0] + 8 * (j >> 1), plan.origins[j & 1][1]) for j in range(4)]
        row = kb.add(kb.add(w0, quad_select(kb, quad, [o[0] for o in org])), r8)
        off = kb.mad(row, ROW_BYTES, kb.mul(quad_select(kb, quad, [o[1] for o in org]), 2))
        frag_base[x] = kb.add(kb.add(off, region), smem0)

    MT, NT = wm // 16, wn // 8
    acc = [[[kb.mov(0.0, "f32") for _ in range(4)] for _ in range(NT)] for _ in range(MT)]

    def load_stage(stage_off: Value, k0: Value, finish_now: bool) -> None:
        for ld in loaders:
            ld.issue(stage_off, k0)
        if finish_now:
            for ld in loaders:
                ld.finish(stage_off)

    for ld in loaders:
        ld.start(kbase)
    for st in range(S - 1):
        with kb.if_(kb.setp("lt", kb.mov(st, "u32"), ktiles)):
            load_stage(kb.mov(st * spec.stage_bytes, "u32"), kb.add(kbase, st * BLOCK_K), True)
        kb.cp_async_commit()
    rd, wr = kb.mov(0, "u32"), kb.mov((S - 1) * spec.stage_bytes, "u32")
    kload = kb.add(kbase, (S - 1) * BLOCK_K)
    wrap = S * spec.stage_bytes
    with kb.loop(0, ktiles, 1, type_="u32") as kt:
        kb.cp_async_wait(S - 2)
        kb.bar_sync(0)
        more = kb.setp("lt", kb.add(kt, S - 1), ktiles)
        with kb.if_(more):
            load_stage(wr, kload, False)
        kb.cp_async_commit()
        for ks in range(BLOCK_K // 16):
            af = [kb.ldmatrix(4, kb.add(frag_base["a"], rd), offset=mt * 16 * ROW_BYTES + ks * 32)
                  for mt in range(MT)]
            bf: list[tuple[Value, ...]] = []
            for pair in range(NT // 2):
                regs = kb.ldmatrix(4, kb.add(frag_base["b"], rd), offset=pair * 16 * ROW_BYTES + ks * 32)
                bf += [regs[0:2], regs[2:4]]
            for mt in range(MT):
                for nt in range(NT):
                    kb.mma_sync("m16n8k16", dt, dt, "f32", af[mt], bf[nt], acc[mt][nt], d=acc[mt][nt])
        if not all(ld.is_async for ld in loaders):
            with kb.if_(more):  # the gathered registers go to shared memory after this stage's math
                for ld in loaders:
                    ld.finish(wr)
        for off in (rd, wr):
            kb.add(off, spec.stage_bytes, out=off)
            kb.selp(0, off, kb.setp("ge", off, wrap), out=off)
        kb.add(kload, BLOCK_K, out=kload)
    kb.cp_async_wait(0)
    _epilogue(kb, spec, p, yg, grp, acc, kb.add(m0, wm0), kb.add(n0, wn0), g, t)
    return kb.ptx()


def _epilogue(kb: KernelBuilder, spec: ConvTensorCoreSpec, p: Params, yg: Value, grp: Value, acc,
              row0: Value, col0: Value, g: Value, t: Value) -> None:
    """y = activation(acc + bias), rounded to the element type, stored where inside the output."""
    lane0, (rg, rt), (cg_, ct) = ACC_PLAN
    MT, NT = len(acc), len(acc[0])
    row_base = kb.add(row0, kb.add(kb.mul(g, rg), kb.mul(t, rt)))
    col_base = kb.add(col0, kb.add(kb.mul(g, cg_), kb.mul(t, ct)))
    row_consts = sorted({mt * 16 + rc[0] for mt in range(MT) for rc in lane0})
    col_consts = sorted({nt * 8 + rc[1] for nt in range(NT) for rc in lane0})
    rows = []
    for c in row_consts:
        m = kb.add(row_base, c)
        n, rest = divmod_u32(kb, m, kb.mul(p.oh, p.ow))
        oh, ow = divmod_u32(kb, rest, p.ow)
        rows.append((kb.setp("lo", m, p.gm), kb.mad(ow, p.ys_w, kb.mad(oh, p.ys_h, kb.mul(n, p.ys_n)))))
    cols = []
    bias_g = kb.addr(p.bias_ptr, kb.mul(grp, p.kg), 2) if spec.bias else None
    # (lo, hi) accumulator elements holding adjacent columns (even first) of one row
    pairs = [(i, j) for i in range(4) for j in range(4)
             if lane0[i][0] == lane0[j][0] and lane0[j][1] == lane0[i][1] + 1 and lane0[i][1] % 2 == 0]
    if spec.y_pairs and sorted(e for pr in pairs for e in pr) != [0, 1, 2, 3]:
        raise AssertionError("conv tc: the accumulator does not pair adjacent even/odd columns per lane")
    for c in col_consts:
        col = kb.add(col_base, c)
        ok = kb.setp("lo", col, p.kg)
        b = None
        if spec.bias:
            b = kb.mov(0.0, "f32")
            with kb.if_(ok):
                kb.assign(b, load_f32(kb, spec.dtype, kb.addr(bias_g, col, 2))[0])
        cols.append((ok, kb.mul(col, p.ys_c), b))

    if spec.split_k:  # raw f32 partial sums into this split's y-shaped slab
        for mt in range(MT):
            for nt in range(NT):
                for i in range(4):
                    row_ok, row_off = rows[row_consts.index(mt * 16 + lane0[i][0])]
                    col_ok, col_off, _ = cols[col_consts.index(nt * 8 + lane0[i][1])]
                    with kb.if_(kb.and_(row_ok, col_ok)):
                        kb.st("global", kb.addr(yg, kb.add(row_off, col_off), 4), acc[mt][nt][i])
        return

    def value(mt: int, nt: int, i: int) -> Value:
        v = acc[mt][nt][i]
        b = cols[col_consts.index(nt * 8 + lane0[i][1])][2]
        return emit_activation(kb, v if b is None else kb.add(v, b), spec.activation)

    for mt in range(MT):
        for nt in range(NT):
            for group in (pairs if spec.y_pairs else [(i,) for i in range(4)]):
                row_ok, row_off = rows[row_consts.index(mt * 16 + lane0[group[0]][0])]
                col_ok, col_off, _ = cols[col_consts.index(nt * 8 + lane0[group[0]][1])]
                vals = [value(mt, nt, i) for i in group]
                with kb.if_(kb.and_(row_ok, col_ok)):  # an even column < K/groups (even): both in
                    addr = kb.addr(yg, kb.add(row_off, col_off), 2)
                    if len(vals) == 1:
                        store_f32(kb, spec.dtype, addr, vals)
                    else:
                        packed = kb.pack(kb.cvt(vals[0], spec.dtype), kb.cvt(vals[1], spec.dtype))
                        kb.st("global", addr, kb.bitcast(packed, "b32"))


# -- configurations, the choice of kernel, launch --------------------------------------------------
def configurations(arch: str) -> list[ConvTensorCoreSpec]:
    """Every kernel ``choose_spec`` can pick for ``arch``: types x layouts x load paths x tiles,
    paired stores where y is NHWC (an NCHW-layout kernel writes NCHW y), each fused epilogue, and
    the split-K partial kernels (no epilogue, no pairs: the reduction finishes them)."""
    out = []
    for dtype, layout in itertools.product(DTYPES, LAYOUTS):
        for a_async, b_async in itertools.product((False, True) if layout == "NHWC" else (False,), (False, True)):
            for tile in _tiles_for(a_async, b_async):
                bm, bn, wm, wn, st = TILES[tile]
                base = ConvTensorCoreSpec(arch=arch, dtype=dtype, layout=layout, a_async=a_async, b_async=b_async,
                                          block_m=bm, block_n=bn, warps_m=wm, warps_n=wn, stages=st)
                out.append(dataclasses.replace(base, split_k=True))
                for y_pairs in (False, True) if layout == "NHWC" else (False,):
                    out += [dataclasses.replace(base, y_pairs=y_pairs, activation=a, bias=b)
                            for a in ACTIVATIONS for b in (False, True)]
    return out


def _tiles_for(a_async: bool, b_async: bool) -> tuple[str, ...]:
    """The tiles a load path may use: the scalar gather keeps to the small tile (its staged
    registers grow with the rows per thread)."""
    return ("large", "wide", "small") if a_async and b_async else ("small",)


registry.register_family(FAMILY, ConvTensorCoreSpec, generate, configurations, archs=ARCHS)


def spec_arch(arch: str) -> str:
    """The family's target for a device arch (sm_80+; sm_90a devices run the sm_90 kernels)."""
    sm = int(arch[3:].rstrip("a"))
    return "sm_90" if sm >= 90 else "sm_86" if sm >= 86 else "sm_80"


def supported(dtype: str, arch: str) -> bool:
    """True when the family runs ``dtype`` ("f16", "bf16") on ``arch``."""
    return dtype in DTYPES and int(arch[3:].rstrip("a")) >= 80


def nchw_via_channels_last(problem, x_aligned: bool, w_aligned: bool) -> bool:
    """True when an NCHW problem should be transposed to NHWC first (``channels_last``) to take
    the cp.async path: channels per group a multiple of 8 and 16-byte aligned inputs. Provisional
    (not yet measured against the scalar gather on the H200): the transpose costs one read and
    one write of x and w; the gather costs ~20 instructions per element of A."""
    return (problem.c // problem.groups) % 8 == 0 and x_aligned and w_aligned


def choose_spec(problem, layout: str, arch: str, x_aligned: bool, w_aligned: bool, activation: str = "none",
                bias: bool = False, y_layout: str | None = None, y_aligned: bool = False, *,
                sm_count: int) -> ConvTensorCoreSpec:
    """The kernel for a conv problem (``conv_dispatch.ConvProblem``), a pure function of it: the
    cp.async paths where layout (of x and w), channel counts and 16-byte alignment allow, paired
    stores where y is NHWC (``y_layout``, default ``layout``) with even K/groups and 4-byte
    alignment (``y_aligned``), the large tile (or the 128x64 one when K/groups <= 64) unless its
    grid would have fewer than ``LARGE_MIN_CTAS_PER_SM`` CTAs per SM of a ``sm_count``-SM device."""
    cg, kg = problem.c // problem.groups, problem.k // problem.groups
    gk, gm = cg * problem.r * problem.s, problem.n * problem.oh * problem.ow
    a_async = layout == "NHWC" and cg % 8 == 0 and x_aligned
    b_async = gk % 8 == 0 and w_aligned
    tile = "small"
    if a_async and b_async:
        tile = "wide" if kg <= 64 else "large"
        bm, bn = TILES[tile][:2]
        if -(-gm // bm) * -(-kg // bn) * problem.groups < LARGE_MIN_CTAS_PER_SM * sm_count:
            tile = "small"
    bm, bn, wm, wn, st = TILES[tile]
    y_pairs = (y_layout or layout) == "NHWC" and kg % 2 == 0 and y_aligned
    return ConvTensorCoreSpec(arch=spec_arch(arch), dtype=problem.dtype, layout=layout, a_async=a_async,
                              b_async=b_async, activation=activation, bias=bias, y_pairs=y_pairs, block_m=bm,
                              block_n=bn, warps_m=wm, warps_n=wn, stages=st)


def choose_splits(problem, spec: ConvTensorCoreSpec, sm_count: int) -> int:
    """Split-K factor for ``spec`` on ``problem``: 1 unless the grid fills less than one wave of
    ``sm_count`` SMs and the reduction is long; then enough splits for about two CTAs per SM,
    each keeping at least ``SPLIT_MIN_KTILES`` k-tiles (provisional, to be measured)."""
    kg = problem.k // problem.groups
    ctas = -(-problem.n * problem.oh * problem.ow // spec.block_m) * -(-kg // spec.block_n) * problem.groups
    ktiles = -(-(problem.c // problem.groups) * problem.r * problem.s // BLOCK_K)
    if ctas >= sm_count or ktiles < 2 * SPLIT_MIN_KTILES:
        return 1
    return max(1, min(-(-2 * sm_count // ctas), ktiles // SPLIT_MIN_KTILES, SPLIT_MAX))
