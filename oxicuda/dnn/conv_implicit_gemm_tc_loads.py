"""Global -> shared memory operand loads of the tensor-core conv (``conv_implicit_gemm_tc``): the
kernel parameters as registers, the cp.async chunk copies and the scalar gather (see that
module's docstring for when each runs), and the (c, r, s) walk of the reduction index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oxicuda.ptx.builder import KernelBuilder, Value

if TYPE_CHECKING:
    from .conv_implicit_gemm_tc import ConvTensorCoreSpec

BLOCK_K = 32          # halves of the reduction per pipeline stage
ROW_BYTES = BLOCK_K * 2 + 16
COPY_BYTES = 16
#: kernel parameters after the four pointers (x, wt, y, bias), all u32, in launch order
SCALAR_PARAMS = ("gm", "kg", "gk", "cg", "h", "w", "r", "s", "oh", "ow",
                 "st_h", "st_w", "pad_h", "pad_w", "dil_h", "dil_w",
                 "xs_n", "xs_c", "xs_h", "xs_w", "ys_n", "ys_c", "ys_h", "ys_w",
                 "groups", "kt_chunk", "total")


class Params:
    """The launch parameters as registers (names as in SCALAR_PARAMS)."""

    def __init__(self, kb: KernelBuilder) -> None:
        self.x_ptr, self.w_ptr, self.y_ptr, self.bias_ptr = (kb.param_ptr(n) for n in ("x", "wt", "y", "bias"))
        for name in SCALAR_PARAMS:
            setattr(self, name, kb.param(name, "u32"))


def divmod_u32(kb: KernelBuilder, a: Value, d: Value) -> tuple[Value, Value]:
    """(a / d, a % d) of u32 registers."""
    q = kb.div(a, d)
    return q, kb.sub(a, kb.mul(q, d))


def _digits(spec: ConvTensorCoreSpec, c: Value, r: Value, s: Value, p: Params) -> list[tuple[Value, Value | None]]:
    """(value, limit) of the reduction's digits, fastest first; the slowest has no wrap."""
    if spec.layout == "NHWC":
        return [(c, p.cg), (s, p.s), (r, None)]
    return [(s, p.s), (r, p.r), (c, None)]


def _split_kk(kb: KernelBuilder, spec: ConvTensorCoreSpec, p: Params, kk: Value) -> tuple[Value, Value, Value]:
    """(c, r, s) of a reduction index in the layout's order."""
    if spec.layout == "NHWC":
        rs, c = divmod_u32(kb, kk, p.cg)
    else:
        c, rs = divmod_u32(kb, kk, kb.mul(p.r, p.s))
    r, s = divmod_u32(kb, rs, p.s)
    return c, r, s


class _Pixel:
    """One output pixel row of A: validity, x offset of its image, top-left input coordinates."""

    def __init__(self, kb: KernelBuilder, p: Params, m: Value) -> None:
        n, rest = divmod_u32(kb, m, kb.mul(p.oh, p.ow))
        oh, ow = divmod_u32(kb, rest, p.ow)
        self.ok = kb.setp("lo", m, p.gm)
        self.base = kb.mul(n, p.xs_n)
        self.ih0 = kb.sub(kb.mul(oh, p.st_h), p.pad_h)
        self.iw0 = kb.sub(kb.mul(ow, p.st_w), p.pad_w)

    def tap(self, kb: KernelBuilder, p: Params, c: Value, r: Value, s: Value, k_ok: Value) -> tuple[Value, Value]:
        """(in bounds, x element offset) of tap (c, r, s); unsigned compares reject negative rows."""
        ih, iw = kb.mad(r, p.dil_h, self.ih0), kb.mad(s, p.dil_w, self.iw0)
        ok = kb.and_(kb.and_(self.ok, k_ok), kb.and_(kb.setp("lo", ih, p.h), kb.setp("lo", iw, p.w)))
        off = kb.mad(iw, p.xs_w, kb.mad(ih, p.xs_h, kb.mad(c, p.xs_c, self.base)))
        return ok, off


class Loader:
    """Global -> shared copies of one operand tile (A: ``block_m`` pixels, B: ``block_n`` filter
    rows, ``BLOCK_K`` reduction elements each): ``issue(stage_off, k0)`` starts a stage;
    ``finish(stage_off)`` completes it (the scalar gather's shared stores; nothing for cp.async)."""

    def __init__(self, kb: KernelBuilder, spec: ConvTensorCoreSpec, p: Params, operand: str, base: Value,
                 row0: Value, region: int, smem0: Value, tid: Value) -> None:
        self.kb, self.spec, self.p, self.operand, self.base = kb, spec, p, operand, base
        self.is_async = spec.a_async if operand == "a" else spec.b_async
        rows = spec.block_m if operand == "a" else spec.block_n
        T = spec.threads
        if self.is_async:
            cpr = BLOCK_K * 2 // COPY_BYTES
            self.rpp, self.passes = T // cpr, rows * cpr // T
            o0 = kb.div(tid, cpr)
            self.kcol = kb.mul(kb.and_(tid, cpr - 1), COPY_BYTES // 2)
            self.dst = kb.add(kb.add(kb.mad(o0, ROW_BYTES, kb.mul(self.kcol, 2)), region), smem0)
            mine = [kb.add(row0, o0 if j == 0 else kb.add(o0, j * self.rpp)) for j in range(self.passes)]
        else:
            tpr = T // rows
            self.run = BLOCK_K // tpr
            o0 = kb.div(tid, tpr)
            self.kcol = kb.mul(kb.and_(tid, tpr - 1), self.run)
            self.dst = kb.add(kb.add(kb.mad(o0, ROW_BYTES, kb.mul(self.kcol, 2)), region), smem0)
            mine = [kb.add(row0, o0)]
            self.staged = [kb.mov(0, "u16") for _ in range(self.run)]
        if operand == "a":
            self.rows = [_Pixel(kb, p, m) for m in mine]
        else:
            self.rows = [(kb.setp("lo", n, p.kg), kb.mul(n, p.gk)) for n in mine]

    def start(self, kbase: Value) -> None:
        """Before the first ``issue``: the (c, r, s) of this thread's first chunk of A, which each
        cp.async stage then advances by BLOCK_K with carries instead of two divisions."""
        if self.is_async and self.operand == "a":
            self.crs = _split_kk(self.kb, self.spec, self.p, self.kb.add(kbase, self.kcol))
            self.wraps = 0

    def _advance_crs(self) -> None:
        """(c, r, s) of the chunk BLOCK_K further on (NHWC order: c fastest; C/groups % 8 == 0, so
        a chunk never straddles two taps); c may wrap several times when C/groups < BLOCK_K."""
        kb, p = self.kb, self.p
        c, r, s = self.crs
        kb.add(c, BLOCK_K, out=c)
        self.wraps += 1
        top = kb.label(f"crs_wrap_{self.wraps}")
        done = kb.setp("lo", c, p.cg)
        end = f"$L_crs_done_{self.wraps}"
        kb.bra(end, done)
        kb.sub(c, p.cg, out=c)
        kb.add(s, 1, out=s)
        s_wrap = kb.setp("eq", s, p.s)
        kb.selp(0, s, s_wrap, type_="u32", out=s)
        kb.add(r, kb.selp(1, 0, s_wrap, type_="u32"), out=r)
        kb.bra(top)
        kb.label(end)

    def _async(self, stage_off: Value, k0: Value) -> None:
        kb, p = self.kb, self.p
        kk = kb.add(k0, self.kcol)
        k_ok = kb.setp("lo", kk, p.gk)
        if self.operand == "a":
            c, r, s = self.crs
        dst = kb.add(self.dst, stage_off)
        for j, row in enumerate(self.rows):
            if self.operand == "a":
                ok, off = row.tap(kb, p, c, r, s, k_ok)
            else:
                ok, off = kb.and_(row[0], k_ok), kb.add(row[1], kk)
            src = kb.selp(kb.addr(self.base, off, 2), self.base, ok, type_="u64")
            size = kb.selp(COPY_BYTES, 0, ok, type_="u32")
            kb.cp_async(dst, src, COPY_BYTES, "cg", src_size=size, dst_offset=j * self.rpp * ROW_BYTES)
        if self.operand == "a":
            self._advance_crs()

    def _gather(self, k0: Value) -> None:
        kb, p = self.kb, self.p
        kk = kb.add(k0, self.kcol)
        if self.operand == "a":
            pix = self.rows[0]
            c, r, s = _split_kk(kb, self.spec, p, kk)
            digits = _digits(self.spec, c, r, s, p)
        else:
            n_ok, n_off = self.rows[0]
            off = kb.add(n_off, kk)
        for e in range(self.run):
            k_ok = kb.setp("lo", kk, p.gk)
            if self.operand == "a":
                ok, off_e = pix.tap(kb, p, c, r, s, k_ok)
            else:
                ok, off_e = kb.and_(n_ok, k_ok), off
            addr = kb.selp(kb.addr(self.base, off_e, 2), self.base, ok, type_="u64")
            kb.selp(kb.ld("global", "u16", addr), 0, ok, type_="u16", out=self.staged[e])
            if e + 1 == self.run:
                break
            kb.add(kk, 1, out=kk)
            if self.operand == "b":
                kb.add(off, 1, out=off)
                continue
            carry = None
            for value, limit in digits:  # the next (c, r, s) by carries, fastest digit first
                if carry is None:
                    kb.add(value, 1, out=value)
                else:
                    kb.add(value, kb.selp(1, 0, carry, type_="u32"), out=value)
                if limit is None:
                    break
                carry = kb.setp("eq", value, limit)
                kb.selp(0, value, carry, type_="u32", out=value)

    def issue(self, stage_off: Value, k0: Value) -> None:
        if self.is_async:
            self._async(stage_off, k0)
        else:
            self._gather(k0)

    def finish(self, stage_off: Value) -> None:
        if self.is_async:
            return
        kb = self.kb
        dst = kb.add(self.dst, stage_off)
        words = [kb.pack(self.staged[2 * i], self.staged[2 * i + 1]) for i in range(self.run // 2)]
        for q in range(len(words) // 4):
            kb.st("shared", dst, words[4 * q:4 * q + 4], offset=16 * q)
