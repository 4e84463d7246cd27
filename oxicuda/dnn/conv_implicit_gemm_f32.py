"""The float32 forward implicit-GEMM convolution, built like the tiled SGEMM (``blas/gemm_tiled``).

GEMM view (per group ``g``): ``Y[m, n] = sum_k A[m, k] B[k, n]`` with ``m`` an output pixel
(n, oh, ow), ``n`` an output channel of the group and ``k`` a reduction index over (c, r, s) in
the filter's own order ((c, r, s) for NCHW, (r, s, c) for NHWC), so that ``B`` is the filter read
as a row-major (Kg x Kred) matrix. x, w and y are C-contiguous (``conv2d`` makes them so).

A CTA computes a ``bm x bn`` tile, each thread a ``tm x tn`` register block (rows and columns in
4-wide chunks, as in gemm_tiled, so shared reads are conflict-free 16-byte vectors), ``bk`` of the
reduction at a time through double-buffered shared tiles with one barrier per step.

The gather keeps index math out of the k loop. Each thread decodes its output pixel once into a
base offset and the top-left input corner (ih0, iw0); a per-problem table (``gather_table``, built
on the host and cached on the device) gives for every reduction index k the element offset
``c*xs_c + r*dil_h*xs_h + s*dil_w*xs_w`` and the tap displacement (r*dil_h, s*dil_w). A load is
then ``x[base + delta]`` predicated on ``ih0 + dh < H`` and ``iw0 + dw < W`` (unsigned compares,
so padding is a zero fill). Table rows past the reduction carry an impossible displacement, which
zero-fills the tail tile without a k test. NHWC with channels per group a multiple of 4 reads
x as 16-byte vectors (4 channels of one tap); w is read as 16-byte vectors along k when the
reduction is a multiple of 4; y is written as 16-byte vectors along its contiguous dimension
(pixels for NCHW when OH*OW is a multiple of 4, channels for NHWC when K/groups is).

Split-K (``splits > 1``): grid.z = groups * splits, each z reduces a ``k_chunk`` slice and writes
raw partial sums into a workspace laid out like y, one y-sized slab per split; a second kernel
(``ConvSplitKReduceSpec``) adds the slabs, the bias and the activation.
Launch: block ``threads``, grid (ceil(M/bm), ceil(Kg/bn), groups * splits).
"""

from __future__ import annotations

import contextlib
import itertools
from collections import OrderedDict
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from oxicuda.driver.facts import device_facts
from oxicuda.memory.array import DeviceArray, asarray
from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from oxicuda.ptx.spec import KernelSpec

from ._common import load_kernel
from .conv_epilogue import ACTIVATIONS, emit_activation

FAMILY = "conv_implicit_gemm_f32"
FAMILY_REDUCE = "conv_split_k_reduce"
LAYOUTS = ("NCHW", "NHWC")
W = 4  # accumulator elements per 16-byte shared read / global vector
#: a table displacement no input row reaches (zero-fills reduction indices past the end)
INVALID_TAP = 1 << 30
REDUCE_BLOCK = 256


@dataclass(frozen=True)
class ConvTile:
    """A CTA tile: ``bm x bn`` outputs, ``bk`` reduction per step, ``tm x tn`` per thread."""

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)


#: the tile variants this kernel is generated for (dispatch picks by name; see conv_dispatch)
TILES: dict[str, ConvTile] = {
    "128x128": ConvTile(128, 128, 8, 8, 8),
    "128x64": ConvTile(128, 64, 8, 8, 4),
    "64x128": ConvTile(64, 128, 8, 4, 8),
    "64x64": ConvTile(64, 64, 8, 4, 4),
    "128x128k16": ConvTile(128, 128, 16, 8, 8),
}


@dataclass(frozen=True)
class ConvFpropF32Spec(KernelSpec):
    """One float32 forward implicit-GEMM kernel: layout, tile, vector widths, epilogue, split-K."""

    family: ClassVar[str] = FAMILY
    layout: str = "NCHW"
    bm: int = 128
    bn: int = 128
    bk: int = 8
    tm: int = 8
    tn: int = 8
    vec_a: int = 1
    vec_b: int = 1
    vec_y: int = 1
    activation: str = "none"
    bias: bool = False
    split_k: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        name = type(self).__name__
        if self.layout not in LAYOUTS:
            raise ValueError(f"{name}: layout={self.layout!r}; allowed {LAYOUTS}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"{name}: activation={self.activation!r}; allowed {ACTIVATIONS}")
        if self.split_k and (self.bias or self.activation != "none"):
            raise ValueError(f"{name}: split-K partials carry no epilogue (the reduce kernel applies it)")
        if self.tm % W or self.tn % W or self.bm % self.tm or self.bn % self.tn:
            raise ValueError(f"{name}: tile {self.bm}x{self.bn} with {self.tm}x{self.tn} per thread; "
                             f"tm, tn must be multiples of {W} dividing bm, bn")
        if self.bk not in (8, 16) or self.threads not in (64, 128, 256):
            raise ValueError(f"{name}: bk={self.bk} (allowed 8, 16), {self.threads} threads (allowed 64-256)")
        if self.bm * self.bk < self.threads or self.bn * self.bk < self.threads:
            raise ValueError(f"{name}: the {self.bm}x{self.bk} and {self.bn}x{self.bk} tiles need at least "
                             f"one element per thread ({self.threads})")
        for what, v in (("vec_a", self.vec_a), ("vec_b", self.vec_b), ("vec_y", self.vec_y)):
            if v not in (1, W):
                raise ValueError(f"{name}: {what}={v}; allowed 1, {W}")
        if self.vec_a > 1 and self.layout != "NHWC":
            raise ValueError(f"{name}: vec_a needs NHWC (channels contiguous)")

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)

    @property
    def a_along_k(self) -> bool:
        """x tiles are read along the reduction (NHWC: consecutive channels) or along pixels."""
        return self.layout == "NHWC"


@dataclass(frozen=True)
class ConvSplitKReduceSpec(KernelSpec):
    """y[i] = activation(sum_s ws[s][i] + bias[channel(i)]) over y-shaped float32 slabs."""

    family: ClassVar[str] = FAMILY_REDUCE
    activation: str = "none"
    bias: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"ConvSplitKReduceSpec: activation={self.activation!r}; allowed {ACTIVATIONS}")


#: kernel parameters after the five pointers (x, w, y, bias, table), all u32, in launch order
SCALAR_PARAMS = ("gm", "gn", "gk", "ohw", "ow", "h", "w", "st_h", "st_w", "pad_h", "pad_w",
                 "xs_n", "xs_h", "xs_w", "x_group", "k_total", "splits", "k_chunk", "slab")


class _Loader:
    """Global -> registers -> shared copy of one operand tile (``X`` rows of M or N by ``bk``)."""

    def __init__(self, kb: KernelBuilder, spec: ConvFpropF32Spec, X: int, along_k: bool, vec: int,
                 smem_row: int, smem_offset: int) -> None:
        self.kb, self.X, self.along_k, self.vec = kb, X, along_k, vec
        self.smem_row = smem_row  # bytes between consecutive k rows of the shared tile
        tid, nt, bk = kb.tid(), spec.threads, spec.bk
        per_row = (bk if along_k else X) // vec
        self.slots = []
        shared_lane = None
        nvec = X * bk // vec
        for r in range(-(-nvec // nt)):
            vid = kb.add(tid, r * nt) if r else tid
            # fewer vectors than threads: the threads past the tile sit the copy out
            live = kb.setp("lo", vid, nvec) if (r + 1) * nt > nvec else None
            # when the thread count is a multiple of the row, every slot has the same lane
            if shared_lane is None or nt % per_row:
                shared_lane = kb.and_(vid, per_row - 1)
            lane = shared_lane
            row = kb.shr(vid, per_row.bit_length() - 1) if per_row > 1 else vid
            lane = kb.mul(lane, vec) if vec > 1 else lane
            p, x = (lane, row) if along_k else (row, lane)
            sm = kb.add(kb.mad(p, smem_row, kb.mul(x, 4)), smem_offset)
            regs = tuple(kb.mov(0.0, "f32") for _ in range(vec))
            self.slots.append({"p": p, "x": x, "sm": sm, "regs": regs, "live": live})

    def store(self, buf: Value) -> None:
        kb = self.kb
        for slot in self.slots:
            addr = kb.add(slot["sm"], buf)
            with self.when_live(slot):
                if self.along_k:
                    for e, reg in enumerate(slot["regs"]):
                        kb.st("shared", addr, reg, offset=e * self.smem_row)
                else:
                    kb.st("shared", addr, slot["regs"][0])

    def when_live(self, slot: dict):
        """A block that runs only in threads holding part of the tile (all of them, mostly)."""
        return self.kb.if_(slot["live"]) if slot["live"] is not None else contextlib.nullcontext()


def _gather_a(kb: KernelBuilder, spec: ConvFpropF32Spec, loader: _Loader, prm: dict[str, Value],
              x_ptr: Value, table: Value, grp: Value, m0: Value, kbeg: Value) -> None:
    """Per slot: the output pixel's base offset and corner, and a table pointer at its first k."""
    cache: dict[int, tuple[Value, Value, Value]] = {}
    group_off = kb.mul(grp, prm["x_group"])
    for slot in loader.slots:
        key = id(slot["x"])
        if key not in cache:
            m = kb.add(m0, slot["x"])
            n = kb.div(m, prm["ohw"])
            pix = kb.sub(m, kb.mul(n, prm["ohw"]))
            oh = kb.div(pix, prm["ow"])
            ow = kb.sub(pix, kb.mul(oh, prm["ow"]))
            ih0 = kb.sub(kb.mul(oh, prm["st_h"]), prm["pad_h"])
            iw0 = kb.sub(kb.mul(ow, prm["st_w"]), prm["pad_w"])
            # a pixel past M never passes the bounds test
            ih0 = kb.selp(ih0, INVALID_TAP, kb.setp("lo", m, prm["gm"]))
            base = kb.mad(n, prm["xs_n"], group_off)
            base = kb.mad(iw0, prm["xs_w"], kb.mad(ih0, prm["xs_h"], base))
            cache[key] = (base, ih0, iw0)
        slot["base"], slot["ih0"], slot["iw0"] = cache[key]
        slot["tbl"] = kb.addr(table, kb.add(kbeg, slot["p"]), 16)
    loader.fetch = lambda: _fetch_a(kb, loader, prm, x_ptr)
    loader.advance = lambda: [kb.add(s["tbl"], spec.bk * 16, out=s["tbl"]) for s in loader.slots]


def _fetch_a(kb: KernelBuilder, loader: _Loader, prm: dict[str, Value], x_ptr: Value) -> None:
    for slot in loader.slots:
        delta, dh, dw, _ = kb.ld("global", "u32", slot["tbl"], vec=4, nc=True)
        ok = kb.and_(kb.setp("lo", kb.add(slot["ih0"], dh), prm["h"]),
                     kb.setp("lo", kb.add(slot["iw0"], dw), prm["w"]))
        ok = kb.and_(ok, slot["live"]) if slot["live"] is not None else ok
        for reg in slot["regs"]:
            kb.assign(reg, 0.0)
        with kb.if_(ok):
            addr = kb.addr(x_ptr, kb.add(slot["base"], delta), 4)
            got = kb.ld("global", "f32", addr, vec=loader.vec)
            got = got if isinstance(got, tuple) else (got,)
            for reg, v in zip(slot["regs"], got):
                kb.assign(reg, v)


def _gather_b(kb: KernelBuilder, spec: ConvFpropF32Spec, loader: _Loader, prm: dict[str, Value],
              w_ptr: Value, grp: Value, n0: Value, kbeg: Value) -> None:
    """Per slot: a pointer into the filter row of its output channel at its first k."""
    wg = kb.addr(w_ptr, kb.mul(kb.mul(grp, prm["gn"]), prm["gk"]), 4)
    for slot in loader.slots:
        col = kb.add(n0, slot["x"])
        slot["col_ok"] = kb.setp("lo", col, prm["gn"])
        slot["k"] = kb.add(kbeg, slot["p"])
        slot["ptr"] = kb.addr(wg, kb.mad(col, prm["gk"], slot["k"]), 4)

    def fetch() -> None:
        for slot in loader.slots:
            ok = kb.and_(slot["col_ok"], kb.setp("lo", slot["k"], prm["gk"]))
            ok = kb.and_(ok, slot["live"]) if slot["live"] is not None else ok
            for reg in slot["regs"]:
                kb.assign(reg, 0.0)
            with kb.if_(ok):
                got = kb.ld("global", "f32", slot["ptr"], vec=loader.vec)
                got = got if isinstance(got, tuple) else (got,)
                for reg, v in zip(slot["regs"], got):
                    kb.assign(reg, v)

    def advance() -> None:
        for slot in loader.slots:
            kb.add(slot["k"], spec.bk, out=slot["k"])
            kb.add(slot["ptr"], spec.bk * 4, out=slot["ptr"])

    loader.fetch, loader.advance = fetch, advance


def generate(spec: ConvFpropF32Spec) -> str:
    """PTX of one float32 forward implicit-GEMM kernel. Parameters: x, w, y, bias, table (u64),
    then SCALAR_PARAMS (u32). ``y`` is the output (or the split-K workspace)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    x_ptr, w_ptr, y_ptr, bias_ptr, table = (kb.param_ptr(n) for n in ("x", "wt", "y", "bias", "table"))
    prm = {name: kb.param(name, "u32") for name in SCALAR_PARAMS}
    bm, bn, bk, tm, tn, nt = spec.bm, spec.bn, spec.bk, spec.tm, spec.tn, spec.threads
    kb.reqntid(nt)
    pad_a = W if spec.a_along_k else 0
    a_row, b_row = (bm + pad_a) * 4, (bn + W) * 4
    stage = bk * (a_row + b_row)
    smem = kb.shared("tiles", "f32", 2 * stage // 4, align=16)

    z = kb.ctaid("z")
    grp = kb.div(z, prm["splits"])
    split = kb.sub(z, kb.mul(grp, prm["splits"]))
    kbeg = kb.mul(split, prm["k_chunk"])
    kend = kb.min(prm["gk"], kb.add(kbeg, prm["k_chunk"]))
    m0 = kb.mul(kb.ctaid("x"), bm)
    n0 = kb.mul(kb.ctaid("y"), bn)

    load_a = _Loader(kb, spec, bm, spec.a_along_k, spec.vec_a, a_row, 0)
    load_b = _Loader(kb, spec, bn, True, spec.vec_b, b_row, bk * a_row)
    _gather_a(kb, spec, load_a, prm, x_ptr, table, grp, m0, kbeg)
    _gather_b(kb, spec, load_b, prm, w_ptr, grp, n0, kbeg)

    base = kb.shared_addr(smem)
    buf = kb.mov(0, "u32")
    load_a.fetch()
    load_b.fetch()
    load_a.store(base)
    load_b.store(base)
    kb.bar_sync()

    nx = bn // tn
    tid = kb.tid()
    tx = kb.and_(tid, nx - 1)
    ty = kb.shr(tid, nx.bit_length() - 1)
    a_frag = kb.mul(ty, W * 4)
    b_frag = kb.add(kb.mul(tx, W * 4), bk * a_row)
    acc = [[kb.mov(0.0, "f32") for _ in range(tn)] for _ in range(tm)]
    ntiles = kb.div(kb.add(kb.sub(kend, kbeg), bk - 1), bk)
    with kb.loop(0, ntiles, 1, type_="u32"):
        load_a.advance()
        load_b.advance()
        load_a.fetch()
        load_b.fetch()
        cur = kb.add(base, buf)
        pa, pb = kb.add(cur, a_frag), kb.add(cur, b_frag)
        for p in kb.unroll(bk):
            av = _frag(kb, pa, p * a_row, tm, (bm // tm) * W * 4)
            bv = _frag(kb, pb, p * b_row, tn, (bn // tn) * W * 4)
            for r in range(tm):
                for q in range(tn):
                    kb.fma(av[r], bv[q], acc[r][q], out=acc[r][q])
        kb.xor(buf, stage, out=buf)
        nxt = kb.add(base, buf)
        load_a.store(nxt)
        load_b.store(nxt)
        kb.bar_sync()

    rows = [kb.add(kb.add(m0, (r // W) * (bm // tm) * W + r % W), kb.mul(ty, W)) for r in range(tm)]
    cols = [kb.add(kb.add(n0, (q // W) * (bn // tn) * W + q % W), kb.mul(tx, W)) for q in range(tn)]
    _epilogue(kb, spec, prm, y_ptr, bias_ptr, acc, rows, cols, grp, split)
    return kb.ptx()


def _frag(kb: KernelBuilder, base: Value, offset: int, count: int, chunk_stride: int) -> list[Value]:
    out: list[Value] = []
    for ci in range(count // W):
        out.extend(kb.ld("shared", "f32", base, offset=offset + ci * chunk_stride, vec=W))
    return out


def _epilogue(kb: KernelBuilder, spec: ConvFpropF32Spec, prm: dict[str, Value], y_ptr: Value,
              bias_ptr: Value, acc, rows: list[Value], cols: list[Value], grp: Value, split: Value) -> None:
    """Bias, activation and the store of the accumulators into y (or this split's slab)."""
    tm, tn = spec.tm, spec.tn
    nchw = spec.layout == "NCHW"
    out = kb.addr(y_ptr, kb.mul(split, prm["slab"]), 4) if spec.split_k else y_ptr
    kglob = [kb.mad(grp, prm["gn"], c) for c in cols]
    col_ok = [kb.setp("lo", c, prm["gn"]) for c in cols]
    row_ok = [kb.setp("lo", r, prm["gm"]) for r in rows]
    ys_n = kb.mul(prm["k_total"], prm["ohw"])
    if nchw:
        col_off = [kb.mul(kg, prm["ohw"]) for kg in kglob]
        row_off = []
        for r in rows:
            n = kb.div(r, prm["ohw"])
            row_off.append(kb.mad(n, ys_n, kb.sub(r, kb.mul(n, prm["ohw"]))))
    else:
        col_off = kglob
        row_off = [kb.mul(r, prm["k_total"]) for r in rows]
    bias = [None] * tn
    if spec.bias:
        for q in range(tn):
            b = kb.mov(0.0, "f32")
            with kb.if_(col_ok[q]):
                kb.assign(b, kb.ld("global", "f32", kb.addr(bias_ptr, kglob[q], 4)))
            bias[q] = b

    def value(r: int, q: int) -> Value:
        v = acc[r][q] if bias[q] is None else kb.add(acc[r][q], bias[q])
        return emit_activation(kb, v, spec.activation)

    if spec.vec_y > 1 and nchw:
        # 4 consecutive pixels of one channel (a row chunk starts at a multiple of 4; OH*OW is too)
        for r in range(0, tm, W):
            for q in range(tn):
                with kb.if_(kb.and_(row_ok[r], col_ok[q])):
                    addr = kb.addr(out, kb.add(row_off[r], col_off[q]), 4)
                    kb.st("global", addr, [value(r + e, q) for e in range(W)])
    elif spec.vec_y > 1:
        for r in range(tm):
            for q in range(0, tn, W):
                with kb.if_(kb.and_(row_ok[r], col_ok[q])):
                    addr = kb.addr(out, kb.add(row_off[r], col_off[q]), 4)
                    kb.st("global", addr, [value(r, q + e) for e in range(W)])
    else:
        for r in range(tm):
            for q in range(tn):
                with kb.if_(kb.and_(row_ok[r], col_ok[q])):
                    kb.st("global", kb.addr(out, kb.add(row_off[r], col_off[q]), 4), value(r, q))


def generate_reduce(spec: ConvSplitKReduceSpec) -> str:
    """y[i] = activation(sum over s < splits of ws[s * total + i] + bias[(i / inner) % k]).
    Parameters: ws, y, bias (u64); total, splits, inner, k (u32). One thread per element."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    ws, y, bias = (kb.param_ptr(n) for n in ("ws", "y", "bias"))
    total, splits, inner, k = (kb.param(n, "u32") for n in ("total", "splits", "inner", "k"))
    kb.maxntid(REDUCE_BLOCK)
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lo", i, total)):
        ptr = kb.addr(ws, i, 4)
        step = kb.mul(kb.cvt(total, "u64"), 4)
        acc = kb.ld("global", "f32", ptr)
        with kb.loop(1, splits, 1, type_="u32"):
            kb.add(ptr, step, out=ptr)
            kb.add(acc, kb.ld("global", "f32", ptr), out=acc)
        if spec.bias:
            q = kb.div(i, inner)
            ch = kb.sub(q, kb.mul(kb.div(q, k), k))
            kb.add(acc, kb.ld("global", "f32", kb.addr(bias, ch, 4)), out=acc)
        kb.st("global", kb.addr(y, i, 4), emit_activation(kb, acc, spec.activation))
    return kb.ptx()


# -- host side ------------------------------------------------------------------------------------
_TABLES: OrderedDict[tuple, DeviceArray] = OrderedDict()
_MAX_TABLES = 64


def gather_table(layout: str, c: int, cg: int, h: int, w: int, r: int, s: int, dil: tuple[int, int],
                 rows: int) -> np.ndarray:
    """The (rows, 4) int32 gather table: per reduction index k, (offset of tap (c, r, s) from the
    pixel's corner, r*dil_h, s*dil_w, 0); rows past C/groups*R*S get an unreachable displacement."""
    kk = np.arange(cg * r * s)
    if layout == "NHWC":
        rs, ch = np.divmod(kk, cg)
        xs_c, xs_h, xs_w = 1, w * c, c
    else:
        ch, rs = np.divmod(kk, r * s)
        xs_c, xs_h, xs_w = h * w, w, 1
    rr, ss = np.divmod(rs, s)
    table = np.zeros((rows, 4), np.int64)
    table[:, 1] = INVALID_TAP
    dh, dw = rr * dil[0], ss * dil[1]
    table[:kk.size, 0] = ch * xs_c + dh * xs_h + dw * xs_w
    table[:kk.size, 1] = dh
    table[:kk.size, 2] = dw
    return (table & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _device_table(args: tuple) -> DeviceArray:
    """The gather table of ``args`` (gather_table's arguments) on the current device, cached."""
    from oxicuda.driver.context import current_device_ordinal

    key = (current_device_ordinal(), *args)
    arr = _TABLES.get(key)
    if arr is None:
        arr = asarray(gather_table(*args))
        _TABLES[key] = arr
        while len(_TABLES) > _MAX_TABLES:
            _TABLES.popitem(last=False)
    else:
        _TABLES.move_to_end(key)
    return arr


def plan_vectors(geo, x_ptr: int, w_ptr: int, y_ptr: int) -> tuple[int, int, int]:
    """(vec_a, vec_b, vec_y): 4 where the layout, sizes and 16-byte pointer alignment allow."""
    p = geo.problem
    cg, kg = p.c // p.groups, p.k // p.groups
    vec_a = W if geo.layout == "NHWC" and cg % W == 0 and x_ptr % 16 == 0 else 1
    vec_b = W if (cg * p.r * p.s) % W == 0 and w_ptr % 16 == 0 else 1
    inner_ok = (p.oh * p.ow) % W == 0 if geo.layout == "NCHW" else kg % W == 0
    vec_y = W if inner_ok and y_ptr % 16 == 0 else 1
    return vec_a, vec_b, vec_y


@dataclass(frozen=True)
class IgemmLaunch:
    """The kernels, geometry, device table and scalar parameters of one implicit-GEMM
    configuration, all but the pointers (built once per problem): what the conv and Winograd
    launch plans make their ``KernelStep``s from."""

    fn: object
    grid: tuple[int, int, int]
    threads: int
    table: DeviceArray
    tail: tuple[int, ...]  # the scalar parameters
    reduce_fn: object | None
    reduce_grid: tuple[int]
    reduce_tail: tuple[int, ...]
    workspace_count: int


_LAUNCHES = PlanCache("conv_igemm_f32_launch", maxsize=256)


def _make_plan(geo, tile: str, splits: int, vecs: tuple[int, int, int], has_bias: bool, activation: str) -> IgemmLaunch:
    p = geo.problem
    cg, kg = p.c // p.groups, p.k // p.groups
    gm, gk = p.n * p.oh * p.ow, cg * p.r * p.s
    cfg = TILES[tile]
    k_chunk = -(-gk // splits)
    k_chunk = -(-k_chunk // cfg.bk) * cfg.bk
    splits = -(-gk // k_chunk)
    rows = (-(-gk // cfg.bk) + 1) * cfg.bk
    table = _device_table((geo.layout, p.c, cg, p.h, p.w, p.r, p.s, p.dilation, rows))
    arch = device_facts().arch
    split_k = splits > 1
    spec = ConvFpropF32Spec(arch=arch, layout=geo.layout, bm=cfg.bm, bn=cfg.bn, bk=cfg.bk, tm=cfg.tm,
                            tn=cfg.tn, vec_a=vecs[0], vec_b=vecs[1], vec_y=vecs[2],
                            activation="none" if split_k else activation, bias=has_bias and not split_k,
                            split_k=split_k)
    total = gm * p.k
    if geo.layout == "NCHW":
        xs = (p.c * p.h * p.w, p.w, 1, cg * p.h * p.w)
    else:
        xs = (p.h * p.w * p.c, p.w * p.c, p.c, cg)
    tail = (gm, kg, gk, p.oh * p.ow, p.ow, p.h, p.w, p.stride[0], p.stride[1], p.padding[0], p.padding[1], *xs,
            p.k, splits, k_chunk, total)
    grid = (-(-gm // cfg.bm), -(-kg // cfg.bn), p.groups * splits)
    reduce_fn, reduce_grid, reduce_tail = None, (0,), ()
    if split_k:
        reduce_fn = load_kernel(ConvSplitKReduceSpec(arch=arch, activation=activation, bias=has_bias))
        reduce_grid = (-(-total // REDUCE_BLOCK),)
        reduce_tail = (total, splits, p.oh * p.ow if geo.layout == "NCHW" else 1, p.k)
    return IgemmLaunch(load_kernel(spec), grid, cfg.threads, table, tail, reduce_fn, reduce_grid, reduce_tail,
                 splits * total if split_k else 0)


def igemm_plan(geo, ptrs: tuple[int, int, int], has_bias: bool, activation: str, tile: str,
               splits: int) -> IgemmLaunch:
    """The launch ingredients for ``geo`` with x, w, y at ``ptrs`` (their alignment picks the vector
    paths), tile and split count from the caller (``conv_dispatch.choose_igemm_tile``). Cached
    per problem and context. ``plan.workspace_count``: float32 elements of split-K partials (0: none)."""
    from oxicuda.driver.context import ensure_context

    if tile not in TILES:
        raise ValueError(f"conv2d: tile={tile!r}; allowed {tuple(TILES)}")
    vecs = plan_vectors(geo, *ptrs)
    key = (ensure_context(), geo, tile, splits, vecs, has_bias, activation)
    return _LAUNCHES.get_or_build(key, lambda: _make_plan(geo, tile, splits, vecs, has_bias, activation))


def prepare_implicit_gemm_f32(geo, ptrs: tuple[int, int, int], has_bias: bool, activation: str, tile: str,
                              splits: int) -> LaunchPlan:
    """The launch plan of ``geo`` for pointers of the alignment of ``ptrs``; ``run`` takes pointers
    (x, w, y, bias or 0). Split-K writes float32 partials to the plan's workspace, then the
    reduction applies bias and activation into y."""
    plan = igemm_plan(geo, ptrs, has_bias, activation, tile, splits)
    table, tail = plan.table.ptr, plan.tail
    if plan.reduce_fn is None:
        def bind(ptr, s, ws):
            return (ptr[0], ptr[1], ptr[2], ptr[3], table, *tail)

        step = KernelStep(plan.fn.spec, plan.grid, plan.threads, bind, function=plan.fn)
        return LaunchPlan("conv2d_igemm_f32", [step], keep=(plan.table,))
    reduce_tail = plan.reduce_tail

    def bind_partials(ptr, s, ws):
        return (ptr[0], ptr[1], ws, 0, table, *tail)

    def bind_reduce(ptr, s, ws):
        return (ws, ptr[2], ptr[3], *reduce_tail)

    steps = [KernelStep(plan.fn.spec, plan.grid, plan.threads, bind_partials, function=plan.fn),
             KernelStep(plan.reduce_fn.spec, plan.reduce_grid, REDUCE_BLOCK, bind_reduce, function=plan.reduce_fn)]
    return LaunchPlan("conv2d_igemm_f32", steps, 4 * plan.workspace_count, keep=(plan.table,))


def configurations(arch: str) -> list[ConvFpropF32Spec]:
    """Every kernel a call launches: each tile and layout, each operand's load width as
    ``plan_vectors`` picks it (x vectors in NHWC only), each fused epilogue, and the split-K
    partial kernels (whose epilogue runs in the reduction)."""
    out = []
    epilogues = [(a, b, False) for a in ACTIVATIONS for b in (False, True)] + [("none", False, True)]
    for cfg in TILES.values():
        t = {"bm": cfg.bm, "bn": cfg.bn, "bk": cfg.bk, "tm": cfg.tm, "tn": cfg.tn}
        for layout in LAYOUTS:
            for va, vb, vy in itertools.product((1, W) if layout == "NHWC" else (1,), (1, W), (1, W)):
                out += [ConvFpropF32Spec(arch=arch, layout=layout, vec_a=va, vec_b=vb, vec_y=vy, activation=a,
                                         bias=b, split_k=sk, **t) for a, b, sk in epilogues]
    return out


def _reduce_configurations(arch: str) -> list[ConvSplitKReduceSpec]:
    return [ConvSplitKReduceSpec(arch=arch, activation=a, bias=b) for a in ACTIVATIONS for b in (False, True)]


registry.register_family(FAMILY, ConvFpropF32Spec, generate, configurations)
registry.register_family(FAMILY_REDUCE, ConvSplitKReduceSpec, generate_reduce, _reduce_configurations)
