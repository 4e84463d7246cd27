"""The single-pass Stockham transform: one CTA holds ``per_cta`` transforms of length ``n`` in
shared memory and runs every radix pass (8, 4, 2, 3, 5, 7) with register butterflies.

Kernel family ``fft_stockham``; one configuration per (n, dtype). Everything a plan composes a
transform from is a runtime parameter, so one kernel serves plain transforms, the two passes of
a four-step transform and the padded transforms of Bluestein's algorithm:

- batch ``b`` is split as ``b0 = b % c0``, ``b1 = (b / c0) % c1``, ``b2 = b / (c0 c1)``; the
  element ``j`` of transform ``b`` has the axis index ``g = j*A + b1*B`` and lives at
  ``base + b0*d0 + b1*d1 + b2*d2 + g*gs`` (elements, signed), separately for input and output;
- loads with ``g >= in_valid`` read zero (zero padding); stores with ``g >= out_valid`` are
  skipped (truncation);
- the input is multiplied by ``conj`` when ``sign_in`` is -1 and by ``pre[g]`` when ``pre`` is
  not null; the output by the four-step twiddle ``w_N^(b1*k)`` when ``tw_n`` is not 0, by
  ``conj`` when ``sign_out`` is -1, by ``post[g]`` when ``post`` is not null, then by ``scale``.

A forward transform has signs (1, 1), an inverse (-1, -1) (``conj(F(conj x))``). The twiddles
of the passes come from ``tw``, the table ``exp(-2 pi i m / n)`` computed in float64 on the host
and uploaded once per plan; the four-step twiddle from two tables (``lo[m % 4096] *
hi[m / 4096]``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.spec import KernelSpec

#: complex dtype name -> (PTX real type, bytes of one complex element)
COMPLEX_TYPES = {"c64": ("f32", 8), "c128": ("f64", 16)}
#: radices in the order passes use them (largest register butterflies first)
RADICES = (8, 4, 2, 3, 5, 7)
#: the largest single-pass length per dtype: one transform fits 64 KB of shared memory
MAX_SINGLE = {"c64": 8192, "c128": 4096}
#: the four-step twiddle's low table has 2**TW_LO_BITS entries
TW_LO_BITS = 12
#: threads one CTA aims for (several short transforms share a CTA)
CTA_THREADS = 128
#: the most threads one transform uses
MAX_TPT = 256


def radix_plan(n: int) -> tuple[int, ...]:
    """The radices of the passes for length ``n`` (empty for n = 1); ValueError when n has a
    prime factor above 7."""
    m, out = n, []
    for r in RADICES:
        while m % r == 0:
            out.append(r)
            m //= r
    if m != 1:
        raise ValueError(f"fft_stockham: n={n} has a prime factor above 7; allowed radices {RADICES}")
    # one pass of 8 and one of 2 as two of 4 where possible: fewer predicated butterflies
    if out.count(2) == 1 and 8 in out:
        out.remove(8)
        out.remove(2)
        out[:0] = [4, 4]
    return tuple(out)


def is_smooth(n: int) -> bool:
    """True when every prime factor of ``n`` is 2, 3, 5 or 7."""
    for p in (2, 3, 5, 7):
        while n % p == 0:
            n //= p
    return n == 1


def threads_per_transform(n: int) -> int:
    """Threads of one transform: one per butterfly of the widest pass, at most MAX_TPT."""
    radices = radix_plan(n)
    return max(1, min(n // max(radices), MAX_TPT)) if radices else 1


@dataclass(frozen=True)
class StockhamSpec(KernelSpec):
    """A single-pass transform of length ``n`` on ``dtype`` ('c64' or 'c128'), ``per_cta``
    transforms per CTA."""

    family: ClassVar[str] = "fft_stockham"
    n: int = 1
    dtype: str = "c64"
    per_cta: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in COMPLEX_TYPES:
            raise ValueError(f"StockhamSpec: dtype={self.dtype!r}; allowed {tuple(COMPLEX_TYPES)}")
        if not 1 <= self.n <= MAX_SINGLE[self.dtype] or not is_smooth(self.n):
            raise ValueError(f"StockhamSpec: n={self.n}; a 7-smooth length in 1..{MAX_SINGLE[self.dtype]}")
        if self.per_cta < 1 or self.threads > 1024:
            raise ValueError(f"StockhamSpec: per_cta={self.per_cta}; 1.. with at most 1024 threads")

    @property
    def tpt(self) -> int:
        return threads_per_transform(self.n)

    @property
    def threads(self) -> int:
        return self.tpt * self.per_cta

    @property
    def shared_bytes(self) -> int:
        return self.per_cta * self.n * COMPLEX_TYPES[self.dtype][1] if self.n > 1 else 0


def default_per_cta(n: int, dtype: str) -> int:
    """Transforms per CTA: enough for CTA_THREADS threads, within 48 KB of shared memory."""
    tpt = threads_per_transform(n)
    esize = COMPLEX_TYPES[dtype][1]
    return max(1, min(CTA_THREADS // tpt, (48 * 1024) // (n * esize)))


# -- complex arithmetic on (re, im) register pairs -------------------------------------------------
Cx = tuple[Value, Value]


def cmul(kb: KernelBuilder, a: Cx, w: Cx) -> Cx:
    """a * w with two fused multiply-adds."""
    re = kb.fma(a[0], w[0], kb.neg(kb.mul(a[1], w[1])))
    im = kb.fma(a[0], w[1], kb.mul(a[1], w[0]))
    return re, im


def cadd(kb: KernelBuilder, a: Cx, b: Cx) -> Cx:
    return kb.add(a[0], b[0]), kb.add(a[1], b[1])


def csub(kb: KernelBuilder, a: Cx, b: Cx) -> Cx:
    return kb.sub(a[0], b[0]), kb.sub(a[1], b[1])


def mul_neg_i(a: Cx, kb: KernelBuilder) -> Cx:
    """-i * a = (a.im, -a.re)."""
    return a[1], kb.neg(a[0])


def dft(kb: KernelBuilder, a: list[Cx]) -> list[Cx]:
    """The forward DFT of ``len(a)`` (2, 3, 4, 5, 7, 8) values."""
    r = len(a)
    if r == 2:
        return [cadd(kb, a[0], a[1]), csub(kb, a[0], a[1])]
    if r == 4:
        s02, d02 = cadd(kb, a[0], a[2]), csub(kb, a[0], a[2])
        s13, d13 = cadd(kb, a[1], a[3]), mul_neg_i(csub(kb, a[1], a[3]), kb)
        return [cadd(kb, s02, s13), cadd(kb, d02, d13), csub(kb, s02, s13), csub(kb, d02, d13)]
    if r == 8:
        even = dft(kb, a[0::2])
        odd = dft(kb, a[1::2])
        h = math.sqrt(0.5)
        o1 = (kb.mul(kb.add(odd[1][0], odd[1][1]), h), kb.mul(kb.sub(odd[1][1], odd[1][0]), h))
        o2 = mul_neg_i(odd[2], kb)
        o3 = (kb.mul(kb.sub(odd[3][1], odd[3][0]), h), kb.neg(kb.mul(kb.add(odd[3][0], odd[3][1]), h)))
        tw = [odd[0], o1, o2, o3]
        return [cadd(kb, even[k], tw[k]) for k in range(4)] + [csub(kb, even[k], tw[k]) for k in range(4)]
    h = (r - 1) // 2
    s = [cadd(kb, a[t], a[r - t]) for t in range(1, h + 1)]
    d = [csub(kb, a[t], a[r - t]) for t in range(1, h + 1)]
    y0 = a[0]
    for v in s:
        y0 = cadd(kb, y0, v)
    out: list[Cx | None] = [y0] + [None] * (r - 1)
    for k in range(1, h + 1):
        are, aim, bre, bim = a[0][0], a[0][1], None, None
        for t in range(1, h + 1):
            c = math.cos(2 * math.pi * t * k / r)
            sn = math.sin(2 * math.pi * t * k / r)
            are = kb.fma(s[t - 1][0], c, are)
            aim = kb.fma(s[t - 1][1], c, aim)
            bre = kb.mul(d[t - 1][0], sn) if bre is None else kb.fma(d[t - 1][0], sn, bre)
            bim = kb.mul(d[t - 1][1], sn) if bim is None else kb.fma(d[t - 1][1], sn, bim)
        out[k] = (kb.add(are, bim), kb.sub(aim, bre))
        out[r - k] = (kb.sub(are, bim), kb.add(aim, bre))
    return out  # type: ignore[return-value]


# -- the kernel ------------------------------------------------------------------------------------
PARAMS = ("src", "dst", "tw", "pre", "post", "tw_lo", "tw_hi", "batch", "c0", "c1",
          "id0", "id1", "id2", "igs", "ia", "ib", "in_valid",
          "od0", "od1", "od2", "ogs", "oa", "ob", "out_valid", "tw_n", "sign_in", "sign_out", "scale")


class _Side:
    """The address pieces of one side (input or output) of a transform, per thread."""

    def __init__(self, kb: KernelBuilder, prefix: str, b0: Value, b1: Value, b2: Value) -> None:
        d0, d1, d2 = (kb.param(f"{prefix}d{i}", "s32") for i in range(3))
        self.gs = kb.param(f"{prefix}gs", "s32")
        self.a = kb.param(f"{prefix}a", "u32")
        bb = kb.param(f"{prefix}b", "u32")
        self.valid = kb.param("in_valid" if prefix == "i" else "out_valid", "u32")
        s = lambda v: kb.bitcast(v, "s32")
        off = kb.mul(s(b0), d0, mode="wide")
        off = kb.add(off, kb.mul(s(b1), d1, mode="wide"))
        self.base = kb.add(off, kb.mul(s(b2), d2, mode="wide"))
        self.g0 = kb.mul(b1, bb)

    def g(self, kb: KernelBuilder, j: int | Value) -> Value:
        """The axis index of element ``j`` (a Python int or a u32 register)."""
        return kb.mad(j, self.a, self.g0, type_="u32") if isinstance(j, Value) else \
            kb.mad(self.a, j, self.g0)

    def address(self, kb: KernelBuilder, ptr: Value, g: Value, esize: int) -> Value:
        off = kb.add(self.base, kb.mul(kb.bitcast(g, "s32"), self.gs, mode="wide"))
        return kb.add(ptr, kb.mul(kb.bitcast(off, "u64"), esize))


def generate_stockham(spec: StockhamSpec) -> str:
    """PTX of one single-pass transform kernel (parameters: ``PARAMS`` in order)."""
    ft, esize = COMPLEX_TYPES[spec.dtype]
    n, tpt, radices = spec.n, spec.tpt, radix_plan(spec.n)
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(spec.threads)
    src, dst, tw, pre, post, tw_lo, tw_hi = (kb.param_ptr(p) for p in PARAMS[:7])
    batch, c0, c1 = (kb.param(p, "u32") for p in ("batch", "c0", "c1"))
    tid = kb.tid()
    slot = kb.div(tid, tpt) if spec.per_cta > 1 else kb.mov(0, "u32")
    lt = kb.sub(tid, kb.mul(slot, tpt)) if spec.per_cta > 1 else tid
    b = kb.mad(kb.ctaid(), spec.per_cta, slot)
    live = kb.setp("lt", b, batch)
    bl = kb.min(b, kb.sub(batch, 1))
    q0 = kb.div(bl, c0)
    b0 = kb.sub(bl, kb.mul(q0, c0))
    b2 = kb.div(q0, c1)
    b1 = kb.sub(q0, kb.mul(b2, c1))
    ins = _Side(kb, "i", b0, b1, b2)
    outs = _Side(kb, "o", b0, b1, b2)
    tw_n = kb.param("tw_n", "u32")
    sign_in, sign_out, scale = (kb.param(p, ft) for p in ("sign_in", "sign_out", "scale"))
    has_pre = kb.setp("ne", pre, 0)
    has_post = kb.setp("ne", post, 0)
    has_tw = kb.setp("ne", tw_n, 0)
    zero = kb.mov(0.0, ft)

    def load(j: int | Value) -> Cx:
        g = ins.g(kb, j)
        ok = kb.setp("lt", g, ins.valid)
        g = kb.selp(g, 0, ok)
        re, im = kb.ld("global", ft, ins.address(kb, src, g, esize), vec=2)
        re, im = kb.selp(re, zero, ok), kb.mul(kb.selp(im, zero, ok), sign_in)
        with kb.if_(has_pre):
            p = kb.ld("global", ft, kb.addr(pre, g, esize), vec=2, nc=True)
            r2, i2 = cmul(kb, (re, im), p)
            kb.assign(re, r2)
            kb.assign(im, i2)
        return re, im

    def store(k: Value, v: Cx) -> None:
        re, im = kb.mov(v[0]), kb.mov(v[1])
        with kb.if_(has_tw):
            m = kb.mul(b1, k)
            lo = kb.ld("global", ft, kb.addr(tw_lo, kb.and_(m, (1 << TW_LO_BITS) - 1), esize), vec=2, nc=True)
            hi = kb.ld("global", ft, kb.addr(tw_hi, kb.shr(m, TW_LO_BITS), esize), vec=2, nc=True)
            r2, i2 = cmul(kb, (re, im), cmul(kb, lo, hi))
            kb.assign(re, r2)
            kb.assign(im, i2)
        kb.mul(im, sign_out, out=im)
        g = outs.g(kb, k)
        with kb.if_(has_post):
            p = kb.ld("global", ft, kb.addr(post, kb.min(g, kb.sub(outs.valid, 1)), esize), vec=2, nc=True)
            r2, i2 = cmul(kb, (re, im), p)
            kb.assign(re, r2)
            kb.assign(im, i2)
        ok = kb.and_(live, kb.setp("lt", g, outs.valid))
        with kb.if_(ok):
            kb.st("global", outs.address(kb, dst, g, esize), [kb.mul(re, scale), kb.mul(im, scale)])

    if not radices:
        store(kb.mov(0, "u32"), load(0))
        return kb.ptx()

    smem = kb.dynamic_shared("smem", spec.shared_bytes)
    sbase = kb.shared_addr(smem, kb.mul(slot, n * esize))

    def sh_addr(e: Value) -> Value:
        return kb.mad(e, esize, sbase, type_="u32")

    ns = 1
    for p, r in enumerate(radices):
        first, last = p == 0, p == len(radices) - 1
        m = n // r
        groups = -(-m // tpt)
        pending: list[tuple[Value | None, list[Value], list[Cx]]] = []
        for u in range(groups):
            i = kb.add(lt, u * tpt) if u else lt
            guard = kb.setp("lt", i, m) if (u + 1) * tpt > m else None
            vals: list[Cx] = []
            outs_idx: list[Value] = []
            block = kb.if_(guard) if guard is not None else None
            if block is not None:
                block.__enter__()
            regs = [(kb.reg(ft), kb.reg(ft)) for _ in range(r)]
            qd = kb.div(i, ns) if ns > 1 else None
            k = kb.sub(i, kb.mul(qd, ns)) if qd is not None else None
            for t in range(r):
                e = kb.add(i, t * m) if t else i
                if first:
                    v = load(e)
                else:
                    v = kb.ld("shared", ft, sh_addr(e), vec=2)
                if k is not None and t:
                    idx = kb.mul(k, t * (n // (ns * r)))
                    w = kb.ld("global", ft, kb.addr(tw, idx, esize), vec=2, nc=True)
                    v = cmul(kb, v, w)
                vals.append(v)
            y = dft(kb, vals)
            jbase = kb.mul(qd, ns * r) if qd is not None else kb.mul(i, r)
            if k is not None:
                jbase = kb.add(jbase, k)
            for t in range(r):
                kb.assign(regs[t][0], y[t][0])
                kb.assign(regs[t][1], y[t][1])
                outs_idx.append(kb.add(jbase, t * ns) if t else jbase)
            if last:
                for t in range(r):
                    store(outs_idx[t], regs[t])
            if block is not None:
                block.__exit__(None, None, None)
            pending.append((guard, outs_idx, regs))
        if not last:
            if not first:
                kb.bar_sync()
            for guard, idx, regs in pending:
                block = kb.if_(guard) if guard is not None else None
                if block is not None:
                    block.__enter__()
                for t, v in enumerate(regs):
                    kb.st("shared", sh_addr(idx[t]), [v[0], v[1]])
                if block is not None:
                    block.__exit__(None, None, None)
            kb.bar_sync()
        ns *= r
    return kb.ptx()


def stockham_configurations(arch: str) -> list[StockhamSpec]:
    """Every (n, dtype) a plan can launch: each 7-smooth length up to MAX_SINGLE, with the
    per-CTA count ``default_per_cta`` gives."""
    specs = []
    for dtype, top in MAX_SINGLE.items():
        for n in range(1, top + 1):
            if is_smooth(n):
                specs.append(StockhamSpec(arch=arch, n=n, dtype=dtype, per_cta=default_per_cta(n, dtype)))
    return specs


registry.register_family(StockhamSpec.family, StockhamSpec, generate_stockham, stockham_configurations)
