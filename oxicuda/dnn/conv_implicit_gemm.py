"""Implicit-GEMM convolution kernels (SIMT, f32 accumulation): forward, backward data, backward
filter, as one tiled GEMM skeleton with three pairs of operand gathers.

The GEMM each mode computes (per group ``g = ctaid.z``; ``Cg``/``Kg`` channels per group):

- ``fwd``:        Y[pixel(n,oh,ow), kout]   = sum_{(c,r,s)} X[n, c, oh*st-pad+r*dil, ...] W[kout, c, r, s]
- ``bwd_data``:   dX[pixel(n,ih,iw), c]     = sum_{(kout,r,s)} dY[n, kout, (ih+pad-r*dil)/st, ...] W[kout, c, r, s]
                  (terms whose division is inexact or out of range are zero)
- ``bwd_filter``: dW[kout, (c,r,s)]         = sum_{pixel(n,oh,ow)} dY[n, kout, oh, ow] X[n, c, oh*st-pad+r*dil, ...]

Every tensor is addressed through element strides passed at launch, so one kernel serves NCHW
and NHWC; the spec's ``layout`` only orders the reduction index ((c, r, s) for NCHW, (r, s, c)
for NHWC, so that consecutive k are adjacent in memory). A CTA of 256 threads computes a
``bm x bn`` tile, ``bk`` reduction steps at a time through shared memory; each thread holds a
``bm/16 x bn/16`` accumulator block. Launch: grid (ceil(M/bm), ceil(N/bn), groups), block 256.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.spec import KernelSpec

from ._common import ELEMENT_BYTES, load_f32, store_f32
from .conv_epilogue import ACTIVATIONS, emit_activation

FAMILY = "conv_implicit_gemm"
MODES = ("fwd", "bwd_data", "bwd_filter")
LAYOUTS = ("NCHW", "NHWC")
THREADS = 256
#: kernel parameters after the four pointers (x, w, y, bias), all u32, in launch order
SCALAR_PARAMS = ("gm", "gn", "gk", "nb", "cg", "h", "w", "kg", "r", "s", "oh", "ow",
                 "st_h", "st_w", "pad_h", "pad_w", "dil_h", "dil_w",
                 "xs_n", "xs_c", "xs_h", "xs_w", "ws_k", "ws_c", "ws_r", "ws_s",
                 "ys_n", "ys_c", "ys_h", "ys_w")


@dataclass(frozen=True)
class ConvImplicitGemmSpec(KernelSpec):
    """One implicit-GEMM conv kernel: mode, element type, layout (reduction order), fused
    epilogue (forward only) and tile."""

    family: ClassVar[str] = FAMILY
    mode: str = "fwd"
    dtype: str = "f32"
    layout: str = "NCHW"
    activation: str = "none"
    bias: bool = False
    bm: int = 64
    bn: int = 64
    bk: int = 8

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.mode not in MODES:
            raise ValueError(f"ConvImplicitGemmSpec: mode={self.mode!r}; allowed {MODES}")
        if self.dtype not in ELEMENT_BYTES:
            raise ValueError(f"ConvImplicitGemmSpec: dtype={self.dtype!r}; allowed {tuple(ELEMENT_BYTES)}")
        if self.layout not in LAYOUTS:
            raise ValueError(f"ConvImplicitGemmSpec: layout={self.layout!r}; allowed {LAYOUTS}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"ConvImplicitGemmSpec: activation={self.activation!r}; allowed {ACTIVATIONS}")
        if self.mode != "fwd" and (self.bias or self.activation != "none"):
            raise ValueError("ConvImplicitGemmSpec: bias/activation are fused into the forward kernel only")
        for name, v in (("bm", self.bm), ("bn", self.bn)):
            if v not in (16, 32, 64, 128):
                raise ValueError(f"ConvImplicitGemmSpec: {name}={v}; allowed 16, 32, 64, 128")
        if self.bk not in (4, 8, 16) or (self.bk * self.bm) % THREADS or (self.bk * self.bn) % THREADS:
            raise ValueError(f"ConvImplicitGemmSpec: bk={self.bk} with bm={self.bm}, bn={self.bn}; "
                             f"bk in (4, 8, 16) and bk*bm, bk*bn multiples of {THREADS}")

    @property
    def tm(self) -> int:
        return self.bm // 16

    @property
    def tn(self) -> int:
        return self.bn // 16


class _Params:
    """The launch parameters as registers (names as in SCALAR_PARAMS)."""

    def __init__(self, kb: KernelBuilder) -> None:
        self.x_ptr, self.w_ptr, self.y_ptr, self.bias_ptr = (kb.param_ptr(n) for n in ("x", "wt", "y", "bias"))
        for name in SCALAR_PARAMS:
            setattr(self, name, kb.param(name, "u32"))


def _divmod(kb: KernelBuilder, a: Value, d: Value) -> tuple[Value, Value]:
    q = kb.div(a, d)
    return q, kb.sub(a, kb.mul(q, d))


def _split_reduction(kb: KernelBuilder, spec: ConvImplicitGemmSpec, p: _Params, k: Value,
                     channels: Value) -> tuple[Value, Value, Value]:
    """(channel, r, s) of a reduction index over (channels, R, S) in the layout's order."""
    if spec.layout == "NHWC":
        rs, c = _divmod(kb, k, channels)
        r, s = _divmod(kb, rs, p.s)
    else:
        c, rs = _divmod(kb, k, kb.mul(p.r, p.s))
        r, s = _divmod(kb, rs, p.s)
    return c, r, s


def _split_pixel(kb: KernelBuilder, m: Value, rows: Value, cols: Value) -> tuple[Value, Value, Value]:
    """(n, row, col) of a flat pixel index over (N, rows, cols)."""
    n, rc = _divmod(kb, m, kb.mul(rows, cols))
    row, col = _divmod(kb, rc, cols)
    return n, row, col


def _in_box(kb: KernelBuilder, ih: Value, iw: Value, h: Value, w: Value) -> Value:
    """ih < H and iw < W as unsigned compares (negative values wrapped to huge u32 fail)."""
    return kb.and_(kb.setp("lo", ih, h), kb.setp("lo", iw, w))


class _Gathers:
    """The operand gathers of one mode: ``prepare_a(row)``/``load_a(ctx, k)`` and the same for B;
    a load returns (predicate, u32 element offset from its base pointer)."""

    def __init__(self, kb: KernelBuilder, spec: ConvImplicitGemmSpec, p: _Params) -> None:
        self.kb, self.spec, self.p = kb, spec, p

    # forward ----------------------------------------------------------------------------------
    def fwd_a(self, m: Value):
        kb, p = self.kb, self.p
        n, oh, ow = _split_pixel(kb, m, p.oh, p.ow)
        ih0 = kb.sub(kb.mul(oh, p.st_h), p.pad_h)
        iw0 = kb.sub(kb.mul(ow, p.st_w), p.pad_w)
        return kb.setp("lo", m, p.gm), kb.mul(n, p.xs_n), ih0, iw0

    def fwd_a_load(self, ctx, k: Value):
        kb, p = self.kb, self.p
        ok, base, ih0, iw0 = ctx
        c, r, s = _split_reduction(kb, self.spec, p, k, p.cg)
        ih, iw = kb.mad(r, p.dil_h, ih0), kb.mad(s, p.dil_w, iw0)
        pred = kb.and_(ok, _in_box(kb, ih, iw, p.h, p.w))
        off = kb.mad(iw, p.xs_w, kb.mad(ih, p.xs_h, kb.mad(c, p.xs_c, base)))
        return pred, off

    def fwd_b(self, col: Value):
        kb, p = self.kb, self.p
        return kb.setp("lo", col, p.gn), kb.mul(col, p.ws_k)

    def fwd_b_load(self, ctx, k: Value):
        kb, p = self.kb, self.p
        ok, base = ctx
        c, r, s = _split_reduction(kb, self.spec, p, k, p.cg)
        return ok, kb.mad(s, p.ws_s, kb.mad(r, p.ws_r, kb.mad(c, p.ws_c, base)))

    # backward data ----------------------------------------------------------------------------
    def bwd_data_a(self, m: Value):
        kb, p = self.kb, self.p
        n, ih, iw = _split_pixel(kb, m, p.h, p.w)
        return kb.setp("lo", m, p.gm), kb.mul(n, p.ys_n), kb.add(ih, p.pad_h), kb.add(iw, p.pad_w)

    def _source_index(self, t: Value, tap: Value, dil: Value, st: Value, size: Value) -> tuple[Value, Value]:
        """(valid, o) with o = (t - tap*dil) / st when that is a non-negative exact quotient < size."""
        kb = self.kb
        num = kb.sub(t, kb.mul(tap, dil))
        o = kb.div(num, st)
        nonneg = kb.setp("ge", kb.bitcast(num, "s32"), 0)
        exact = kb.setp("eq", kb.mul(o, st), num)
        return kb.and_(kb.and_(nonneg, exact), kb.setp("lo", o, size)), o

    def bwd_data_a_load(self, ctx, k: Value):
        kb, p = self.kb, self.p
        ok, base, th, tw = ctx
        kout, r, s = _split_reduction(kb, self.spec, p, k, p.kg)
        vh, oh = self._source_index(th, r, p.dil_h, p.st_h, p.oh)
        vw, ow = self._source_index(tw, s, p.dil_w, p.st_w, p.ow)
        pred = kb.and_(ok, kb.and_(vh, vw))
        off = kb.mad(ow, p.ys_w, kb.mad(oh, p.ys_h, kb.mad(kout, p.ys_c, base)))
        return pred, off

    def bwd_data_b(self, col: Value):
        kb, p = self.kb, self.p
        return kb.setp("lo", col, p.gn), kb.mul(col, p.ws_c)

    def bwd_data_b_load(self, ctx, k: Value):
        kb, p = self.kb, self.p
        ok, base = ctx
        kout, r, s = _split_reduction(kb, self.spec, p, k, p.kg)
        return ok, kb.mad(s, p.ws_s, kb.mad(r, p.ws_r, kb.mad(kout, p.ws_k, base)))

    # backward filter --------------------------------------------------------------------------
    def bwd_filter_a(self, row: Value):
        kb, p = self.kb, self.p
        return kb.setp("lo", row, p.gm), kb.mul(row, p.ys_c)

    def bwd_filter_a_load(self, ctx, k: Value):
        kb, p = self.kb, self.p
        ok, base = ctx
        n, oh, ow = _split_pixel(kb, k, p.oh, p.ow)
        return ok, kb.mad(ow, p.ys_w, kb.mad(oh, p.ys_h, kb.mad(n, p.ys_n, base)))

    def bwd_filter_b(self, col: Value):
        kb, p = self.kb, self.p
        c, r, s = _split_reduction(kb, self.spec, p, col, p.cg)
        dh = kb.sub(kb.mul(r, p.dil_h), p.pad_h)
        dw = kb.sub(kb.mul(s, p.dil_w), p.pad_w)
        return kb.setp("lo", col, p.gn), kb.mul(c, p.xs_c), dh, dw

    def bwd_filter_b_load(self, ctx, k: Value):
        kb, p = self.kb, self.p
        ok, base, dh, dw = ctx
        n, oh, ow = _split_pixel(kb, k, p.oh, p.ow)
        ih, iw = kb.mad(oh, p.st_h, dh), kb.mad(ow, p.st_w, dw)
        pred = kb.and_(ok, _in_box(kb, ih, iw, p.h, p.w))
        off = kb.mad(iw, p.xs_w, kb.mad(ih, p.xs_h, kb.mad(n, p.xs_n, base)))
        return pred, off


def _load_tile(kb: KernelBuilder, spec: ConvImplicitGemmSpec, base: Value, ctx, load, k0: Value,
               gk: Value, kk0: Value, rows_per_iter: int, iters: int) -> list[Value]:
    """This thread's share of one operand tile, as f32 registers (0 outside the operand)."""
    esize = ELEMENT_BYTES[spec.dtype]
    vals = []
    for i in range(iters):
        k = kb.add(k0, kb.add(kk0, i * rows_per_iter))
        pred, off = load(ctx, k)
        pred = kb.and_(pred, kb.setp("lo", k, gk))
        v = kb.mov(0.0, "f32")
        with kb.if_(pred):
            kb.assign(v, load_f32(kb, spec.dtype, kb.addr(base, off, esize))[0])
        vals.append(v)
    return vals


def generate(spec: ConvImplicitGemmSpec) -> str:
    """PTX of one implicit-GEMM conv kernel (see the module docstring for the parameters)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    p = _Params(kb)
    kb.reqntid(THREADS)
    g = _Gathers(kb, spec, p)
    bm, bn, bk, tm, tn = spec.bm, spec.bn, spec.bk, spec.tm, spec.tn
    esize = ELEMENT_BYTES[spec.dtype]
    a_sh = kb.shared("a_tile", "f32", bk * bm)
    b_sh = kb.shared("b_tile", "f32", bk * bn)

    grp = kb.ctaid("z")
    # per-group base pointers of the three tensors and the bias
    xb = kb.addr(p.x_ptr, kb.mul(grp, kb.mul(p.cg, p.xs_c)), esize)
    wb = kb.addr(p.w_ptr, kb.mul(grp, kb.mul(p.kg, p.ws_k)), esize)
    yb = kb.addr(p.y_ptr, kb.mul(grp, kb.mul(p.kg, p.ys_c)), esize)
    a_src, b_src, out = {"fwd": (xb, wb, yb), "bwd_data": (yb, wb, xb), "bwd_filter": (yb, xb, wb)}[spec.mode]
    prep_a, load_a = getattr(g, f"{spec.mode}_a"), getattr(g, f"{spec.mode}_a_load")
    prep_b, load_b = getattr(g, f"{spec.mode}_b"), getattr(g, f"{spec.mode}_b_load")

    t = kb.tid()
    tx, ty = kb.and_(t, 15), kb.shr(t, 4)
    m0 = kb.mul(kb.ctaid("x"), bm)
    n0 = kb.mul(kb.ctaid("y"), bn)
    a_mm, a_kk0 = kb.and_(t, bm - 1), kb.div(t, bm)
    b_nn, b_kk0 = kb.and_(t, bn - 1), kb.div(t, bn)
    a_ctx = prep_a(kb.add(m0, a_mm))
    b_ctx = prep_b(kb.add(n0, b_nn))
    a_st = kb.shared_addr(a_sh, kb.mul(kb.mad(a_kk0, bm, a_mm), 4))
    b_st = kb.shared_addr(b_sh, kb.mul(kb.mad(b_kk0, bn, b_nn), 4))
    a_ld = kb.shared_addr(a_sh, kb.mul(ty, tm * 4))
    b_ld = kb.shared_addr(b_sh, kb.mul(tx, tn * 4))
    acc = [[kb.mov(0.0, "f32") for _ in range(tn)] for _ in range(tm)]

    with kb.loop(0, p.gk, bk, type_="u32") as k0:
        a_vals = _load_tile(kb, spec, a_src, a_ctx, load_a, k0, p.gk, a_kk0, THREADS // bm, bk * bm // THREADS)
        b_vals = _load_tile(kb, spec, b_src, b_ctx, load_b, k0, p.gk, b_kk0, THREADS // bn, bk * bn // THREADS)
        for i, v in enumerate(a_vals):
            kb.st("shared", a_st, v, offset=i * (THREADS // bm) * bm * 4)
        for i, v in enumerate(b_vals):
            kb.st("shared", b_st, v, offset=i * (THREADS // bn) * bn * 4)
        kb.bar_sync(0)
        for kk in range(bk):
            av = _ld_shared_row(kb, a_ld, kk * bm * 4, tm)
            bv = _ld_shared_row(kb, b_ld, kk * bn * 4, tn)
            for i in range(tm):
                for j in range(tn):
                    kb.fma(av[i], bv[j], acc[i][j], out=acc[i][j])
        kb.bar_sync(0)

    _epilogue(kb, spec, p, out, acc, kb.mad(ty, tm, m0), kb.mad(tx, tn, n0), grp)
    return kb.ptx()


def _ld_shared_row(kb: KernelBuilder, base: Value, offset: int, count: int) -> list[Value]:
    if count % 4 == 0:
        vals: list[Value] = []
        for q in range(count // 4):
            vals.extend(kb.ld("shared", "f32", base, offset=offset + 16 * q, vec=4))
        return vals
    if count == 2:
        return list(kb.ld("shared", "f32", base, offset=offset, vec=2))
    return [kb.ld("shared", "f32", base, offset=offset + 4 * i) for i in range(count)]


def _epilogue(kb: KernelBuilder, spec: ConvImplicitGemmSpec, p: _Params, out: Value, acc, row0: Value,
              col0: Value, grp: Value) -> None:
    esize = ELEMENT_BYTES[spec.dtype]
    cols = [kb.add(col0, j) for j in range(spec.tn)]
    col_ok = [kb.setp("lo", c, p.gn) for c in cols]
    if spec.mode == "fwd":
        col_off = [kb.mul(c, p.ys_c) for c in cols]
        bias = None
        if spec.bias:
            bias_base = kb.addr(p.bias_ptr, kb.mul(grp, p.kg), esize)
            bias = []
            for j in range(spec.tn):
                b = kb.mov(0.0, "f32")
                with kb.if_(col_ok[j]):
                    kb.assign(b, load_f32(kb, spec.dtype, kb.addr(bias_base, cols[j], esize))[0])
                bias.append(b)
    elif spec.mode == "bwd_data":
        col_off = [kb.mul(c, p.xs_c) for c in cols]
    else:
        col_off = []
        for c in cols:
            ch, r, s = _split_reduction(kb, spec, p, c, p.cg)
            col_off.append(kb.mad(s, p.ws_s, kb.mad(r, p.ws_r, kb.mul(ch, p.ws_c))))
    for i in range(spec.tm):
        row = kb.add(row0, i)
        row_ok = kb.setp("lo", row, p.gm)
        if spec.mode == "fwd":
            n, oh, ow = _split_pixel(kb, row, p.oh, p.ow)
            row_off = kb.mad(ow, p.ys_w, kb.mad(oh, p.ys_h, kb.mul(n, p.ys_n)))
        elif spec.mode == "bwd_data":
            n, ih, iw = _split_pixel(kb, row, p.h, p.w)
            row_off = kb.mad(iw, p.xs_w, kb.mad(ih, p.xs_h, kb.mul(n, p.xs_n)))
        else:
            row_off = kb.mul(row, p.ws_k)
        for j in range(spec.tn):
            v = acc[i][j]
            if spec.mode == "fwd":
                if spec.bias:
                    v = kb.add(v, bias[j])
                v = emit_activation(kb, v, spec.activation)
            with kb.if_(kb.and_(row_ok, col_ok[j])):
                store_f32(kb, spec.dtype, kb.addr(out, kb.add(row_off, col_off[j]), esize), [v])


def configurations(arch: str) -> list[ConvImplicitGemmSpec]:
    """Every kernel a call launches: the half types forward in each layout with each fused
    epilogue (float32 forward runs ``conv_implicit_gemm_f32``), and both backward passes in every
    dtype and layout (no epilogue)."""
    out = [ConvImplicitGemmSpec(arch=arch, dtype=d, layout=lay, activation=a, bias=b)
           for d in ("f16", "bf16") for lay in LAYOUTS for a in ACTIVATIONS for b in (False, True)]
    out += [ConvImplicitGemmSpec(arch=arch, mode=m, dtype=d, layout=lay)
            for m in MODES if m != "fwd" for d in ("f32", "f16", "bf16") for lay in LAYOUTS]
    return out


registry.register_family(FAMILY, ConvImplicitGemmSpec, generate, configurations)
