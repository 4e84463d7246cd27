"""The single-pass Stockham transform: one CTA holds ``per_cta`` transforms of length ``n`` in
shared memory and runs every radix pass (8, 4, 2, 3, 5, 7) with register butterflies.

Kernel family ``fft_stockham``; two configurations per (n, dtype): the default, whose CTAs hold
enough transforms for staged (column) accesses, and, where it differs, an unstaged variant with
one thread per butterfly of the widest pass (``wide_spec``: fewer values and registers per
thread, more CTAs per SM) that plans launch when neither side is staged. Everything a plan composes a
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
from oxicuda.ptx.builder_base import SHARED_OPTIN_LIMIT
from oxicuda.ptx.spec import KernelSpec

#: complex dtype name -> (PTX real type, bytes of one complex element)
COMPLEX_TYPES = {"c64": ("f32", 8), "c128": ("f64", 16)}
#: radices in the order passes use them (largest register butterflies first)
RADICES = (8, 4, 2, 3, 5, 7)
#: the longest single-pass length per dtype where the shared memory allows (128 KB per
#: transform: sm_80 and sm_90); on smaller opt-in limits ``max_single`` halves it
MAX_SINGLE = {"c64": 16384, "c128": 8192}
#: the four-step twiddle's low table has 2**TW_LO_BITS entries
TW_LO_BITS = 12
#: threads one CTA aims for (several short transforms share a CTA), and the most it takes (so
#: that up to 255 registers per thread fit the register file)
CTA_THREADS = 128
CTA_MAX_THREADS = 256
#: shared memory one CTA's transforms may use (fits every target's opt-in limit)
CTA_SMEM = 64 * 1024
#: transforms a CTA holds at least, where memory allows: staged (column) accesses then cover
#: STAGE_COLUMNS neighbouring transforms (64 B rows of complex64)
STAGE_COLUMNS = 8
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


def max_single(dtype: str, smem_optin: int) -> int:
    """The longest single-pass length for ``dtype`` with ``smem_optin`` bytes of opt-in shared
    memory per block (a power of two whose transform fits)."""
    top = MAX_SINGLE[dtype]
    while top * COMPLEX_TYPES[dtype][1] > smem_optin:
        top //= 2
    return top


def arch_smem_optin(arch: str) -> int:
    """The opt-in shared memory per block of ``arch`` (the code generator's table)."""
    sm = int(arch[3:].rstrip("a"))
    return SHARED_OPTIN_LIMIT.get(sm, SHARED_OPTIN_LIMIT[max(k for k in SHARED_OPTIN_LIMIT if k <= sm)])


def is_smooth(n: int) -> bool:
    """True when every prime factor of ``n`` is 2, 3, 5 or 7."""
    for p in (2, 3, 5, 7):
        while n % p == 0:
            n //= p
    return n == 1


def threads_per_transform(n: int, dtype: str) -> int:
    """Threads of one transform: one per butterfly of the widest pass, at most MAX_TPT, and few
    enough that a CTA of ``CTA_MAX_THREADS`` holds the transforms ``stage_target`` asks for."""
    radices = radix_plan(n)
    if not radices:
        return 1
    return max(1, min(n // max(radices), MAX_TPT, CTA_MAX_THREADS // stage_target(n, dtype)))


def stage_target(n: int, dtype: str) -> int:
    """Transforms a CTA should hold so that staged (column) accesses cover STAGE_COLUMNS
    neighbouring transforms, where CTA_SMEM allows."""
    return max(1, min(STAGE_COLUMNS, CTA_SMEM // (n * COMPLEX_TYPES[dtype][1])))


@dataclass(frozen=True)
class StockhamSpec(KernelSpec):
    """A single-pass transform of length ``n`` on ``dtype`` ('c64' or 'c128'), ``per_cta``
    transforms per CTA."""

    family: ClassVar[str] = "fft_stockham"
    n: int = 1
    dtype: str = "c64"
    per_cta: int = 1
    #: threads per transform (0: ``threads_per_transform``, the staged-path default); plans of
    #: unstaged (contiguous) transforms take ``wide_tpt``: fewer values and registers per thread
    tpt_hint: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in COMPLEX_TYPES:
            raise ValueError(f"StockhamSpec: dtype={self.dtype!r}; allowed {tuple(COMPLEX_TYPES)}")
        top = max_single(self.dtype, arch_smem_optin(self.arch))
        if not 1 <= self.n <= top or not is_smooth(self.n):
            raise ValueError(f"StockhamSpec: n={self.n}; a 7-smooth length in 1..{top} on {self.arch}")
        if self.tpt_hint < 0 or self.tpt_hint > MAX_TPT:
            raise ValueError(f"StockhamSpec: tpt_hint={self.tpt_hint}; 0 (default) or 1..{MAX_TPT}")
        if self.per_cta < 1 or self.threads > 1024:
            raise ValueError(f"StockhamSpec: per_cta={self.per_cta}; 1.. with at most 1024 threads")

    @property
    def tpt(self) -> int:
        return self.tpt_hint or threads_per_transform(self.n, self.dtype)

    @property
    def threads(self) -> int:
        return self.tpt * self.per_cta

    @property
    def shared_bytes(self) -> int:
        return self.per_cta * self.slot_elements * COMPLEX_TYPES[self.dtype][1] if self.n > 1 else 0

    @property
    def slot_elements(self) -> int:
        """Shared elements per transform: n, plus one when a CTA holds several, so that the
        staged (column) accesses of neighbouring transforms fall in different banks."""
        return self.n + (1 if self.per_cta > 1 else 0)


def wide_tpt(n: int) -> int:
    """Threads per transform of the unstaged variant: one per butterfly of the widest pass, at
    most MAX_TPT (a 1024-point transform: 128 threads of 8 values, not 32 of 32)."""
    radices = radix_plan(n)
    return max(1, min(n // max(radices), MAX_TPT)) if radices else 1


def wide_per_cta(n: int, dtype: str) -> int:
    """Transforms per CTA of the unstaged variant: CTA_MAX_THREADS threads where CTA_SMEM allows."""
    return max(1, min(CTA_MAX_THREADS // wide_tpt(n), CTA_SMEM // (n * COMPLEX_TYPES[dtype][1])))


def wide_spec(arch: str, n: int, dtype: str) -> StockhamSpec | None:
    """The unstaged variant of length ``n``, or None where it is the default configuration."""
    tpt = wide_tpt(n)
    if tpt == threads_per_transform(n, dtype):
        return None
    return StockhamSpec(arch=arch, n=n, dtype=dtype, per_cta=wide_per_cta(n, dtype), tpt_hint=tpt)


def default_per_cta(n: int, dtype: str) -> int:
    """Transforms per CTA: ``stage_target`` of them, or more for CTA_THREADS threads, within
    CTA_SMEM bytes of shared memory and CTA_MAX_THREADS threads."""
    tpt = threads_per_transform(n, dtype)
    want = max(CTA_THREADS // tpt, stage_target(n, dtype))
    return max(1, min(want, CTA_MAX_THREADS // tpt, CTA_SMEM // (n * COMPLEX_TYPES[dtype][1])))


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
          "od0", "od1", "od2", "ogs", "oa", "ob", "out_valid", "tw_n", "stage_in", "stage_out",
          "sign_in", "sign_out", "scale")


class _SideParams:
    """The layout parameters of one side (input or output)."""

    def __init__(self, kb: KernelBuilder, prefix: str) -> None:
        self.d = tuple(kb.param(f"{prefix}d{i}", "s32") for i in range(3))
        self.gs = kb.param(f"{prefix}gs", "s32")
        self.a = kb.param(f"{prefix}a", "u32")
        self.b = kb.param(f"{prefix}b", "u32")
        self.valid = kb.param("in_valid" if prefix == "i" else "out_valid", "u32")


class _Side:
    """One side's address pieces for the transform (b0, b1, b2) a thread works on."""

    def __init__(self, kb: KernelBuilder, sp: _SideParams, b0: Value, b1: Value, b2: Value) -> None:
        def s(v: Value) -> Value:
            return kb.bitcast(v, "s32")

        off = kb.mul(s(b0), sp.d[0], mode="wide")
        off = kb.add(off, kb.mul(s(b1), sp.d[1], mode="wide"))
        self.base = kb.add(off, kb.mul(s(b2), sp.d[2], mode="wide"))
        self.g0 = kb.mul(b1, sp.b)
        self.sp = sp

    def g(self, kb: KernelBuilder, j: Value) -> Value:
        """The axis index of element ``j`` (a u32 register)."""
        return kb.mad(j, self.sp.a, self.g0, type_="u32")

    def address(self, kb: KernelBuilder, ptr: Value, g: Value, esize: int) -> Value:
        off = kb.add(self.base, kb.mul(kb.bitcast(g, "s32"), self.sp.gs, mode="wide"))
        return kb.add(ptr, kb.mul(kb.bitcast(off, "u64"), esize))


class _Slot:
    """The transform of one thread mapping: batch index split, liveness and both sides."""

    def __init__(self, kb: KernelBuilder, slot: Value, per_cta: int, batch: Value, c0: Value, c1: Value,
                 ins: _SideParams, outs: _SideParams) -> None:
        b = kb.mad(kb.ctaid(), per_cta, slot)
        self.live = kb.setp("lt", b, batch)
        bl = kb.min(b, kb.sub(batch, 1))
        q0 = kb.div(bl, c0)
        b0 = kb.sub(bl, kb.mul(q0, c0))
        b2 = kb.div(q0, c1)
        self.b1 = kb.sub(q0, kb.mul(b2, c1))
        self.ins = _Side(kb, ins, b0, self.b1, b2)
        self.outs = _Side(kb, outs, b0, self.b1, b2)


def generate_stockham(spec: StockhamSpec) -> str:
    """PTX of one single-pass transform kernel (parameters: ``PARAMS`` in order).

    Two thread mappings: by rows (thread ``lt`` of transform ``tid / tpt``: the butterflies read
    and write global memory directly, coalesced when the axis is contiguous) and, when
    ``stage_in``/``stage_out`` is set and a CTA holds several transforms, by columns (transform
    ``tid % per_cta``, element ``tid / per_cta``: neighbouring threads touch neighbouring
    transforms, coalesced when the transforms are adjacent and the axis is strided); the staged
    side goes through shared memory, which is how four-step passes and strided axes read and
    write whole cache lines without a transpose kernel."""
    ft, esize = COMPLEX_TYPES[spec.dtype]
    n, tpt, radices, per = spec.n, spec.tpt, radix_plan(spec.n), spec.per_cta
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(spec.threads)
    src, dst, tw, pre, post, tw_lo, tw_hi = (kb.param_ptr(p) for p in PARAMS[:7])
    batch, c0, c1 = (kb.param(p, "u32") for p in ("batch", "c0", "c1"))
    ip, op = _SideParams(kb, "i"), _SideParams(kb, "o")
    tw_n = kb.param("tw_n", "u32")
    stage_in, stage_out = kb.param("stage_in", "u32"), kb.param("stage_out", "u32")
    sign_in, sign_out, scale = (kb.param(p, ft) for p in ("sign_in", "sign_out", "scale"))
    tid = kb.tid()
    slot = kb.div(tid, tpt) if per > 1 else kb.mov(0, "u32")
    lt = kb.sub(tid, kb.mul(slot, tpt)) if per > 1 else tid
    row = _Slot(kb, slot, per, batch, c0, c1, ip, op)
    has_pre = kb.setp("ne", pre, 0)
    has_post = kb.setp("ne", post, 0)
    has_tw = kb.setp("ne", tw_n, 0)
    zero = kb.mov(0.0, ft)

    # Loads and stores come in batches: every global load of a batch is issued before any of
    # its results is used or a branch is taken, so their latencies overlap.
    def load_many(js: list[Value], side: _Side) -> list[Cx]:
        gs, oks = [], []
        for j in js:
            g = side.g(kb, j)
            ok = kb.setp("lt", g, ip.valid)
            gs.append(kb.selp(g, 0, ok))
            oks.append(ok)
        raws = [kb.ld("global", ft, side.address(kb, src, g, esize), vec=2) for g in gs]
        out = []
        for (re, im), ok in zip(raws, oks):
            out.append((kb.selp(re, zero, ok), kb.mul(kb.selp(im, zero, ok), sign_in)))
        with kb.if_(has_pre):
            ps = [kb.ld("global", ft, kb.addr(pre, g, esize), vec=2, nc=True) for g in gs]
            for v, pv in zip(out, ps):
                r2, i2 = cmul(kb, v, pv)
                kb.assign(v[0], r2)
                kb.assign(v[1], i2)
        return out

    def store_many(ks: list[Value], vals: list[Cx], who: _Slot, guards: list | None = None) -> None:
        regs = [(kb.mov(v[0]), kb.mov(v[1])) for v in vals]
        with kb.if_(has_tw):
            ms = [kb.mul(who.b1, k) for k in ks]
            los = [kb.ld("global", ft, kb.addr(tw_lo, kb.and_(m, (1 << TW_LO_BITS) - 1), esize), vec=2, nc=True)
                   for m in ms]
            his = [kb.ld("global", ft, kb.addr(tw_hi, kb.shr(m, TW_LO_BITS), esize), vec=2, nc=True) for m in ms]
            for v, lo, hi in zip(regs, los, his):
                r2, i2 = cmul(kb, v, cmul(kb, lo, hi))
                kb.assign(v[0], r2)
                kb.assign(v[1], i2)
        for v in regs:
            kb.mul(v[1], sign_out, out=v[1])
        gs = [who.outs.g(kb, k) for k in ks]
        with kb.if_(has_post):
            last = kb.sub(op.valid, 1)
            ps = [kb.ld("global", ft, kb.addr(post, kb.min(g, last), esize), vec=2, nc=True) for g in gs]
            for v, pv in zip(regs, ps):
                r2, i2 = cmul(kb, v, pv)
                kb.assign(v[0], r2)
                kb.assign(v[1], i2)
        for n_, (g, v) in enumerate(zip(gs, regs)):
            ok = kb.and_(who.live, kb.setp("lt", g, op.valid))
            if guards is not None and guards[n_] is not None:
                ok = kb.and_(ok, guards[n_])
            with kb.if_(ok):
                kb.st("global", who.outs.address(kb, dst, g, esize), [kb.mul(v[0], scale), kb.mul(v[1], scale)])

    if not radices:
        z0 = kb.mov(0, "u32")
        store_many([z0], load_many([z0], row.ins), row)
        return kb.ptx()

    smem = kb.dynamic_shared("smem", spec.shared_bytes)
    sbase = kb.shared_addr(smem, kb.mul(slot, spec.slot_elements * esize))

    def sh_addr(e: Value, base: Value = sbase) -> Value:
        return kb.mad(e, esize, base, type_="u32")

    staged = per > 1
    if staged:
        cslot = kb.sub(tid, kb.mul(kb.div(tid, per), per))
        ce = kb.div(tid, per)
        col = _Slot(kb, cslot, per, batch, c0, c1, ip, op)
        cbase = kb.shared_addr(smem, kb.mul(cslot, spec.slot_elements * esize))
        p_in, p_out = kb.setp("ne", stage_in, 0), kb.setp("ne", stage_out, 0)

        def staged_elements():
            for idx in range(-(-n // tpt)):
                e = kb.add(ce, idx * tpt) if idx else ce
                guard = kb.setp("lt", e, n) if (idx + 1) * tpt > n else None
                yield e, guard

        with kb.if_(p_in):
            elems = list(staged_elements())
            last_e = n - 1
            vs = load_many([kb.min(e, last_e) if g is not None else e for e, g in elems], col.ins)
            for (e, guard), v in zip(elems, vs):
                block = kb.if_(guard) if guard is not None else None
                if block is not None:
                    block.__enter__()
                kb.st("shared", sh_addr(e, cbase), [v[0], v[1]])
                if block is not None:
                    block.__exit__(None, None, None)
            kb.bar_sync()

    # The first pass's inputs of every butterfly group come in one batch of loads (all in flight
    # at once, not one group's r loads at a time). Elements of a group past the pass's end
    # (i >= m, guarded below) have g >= in_valid or an in-range g, so loading them is safe.
    r0 = radices[0]
    m0 = n // r0
    first_es = [[kb.add(kb.add(lt, u * tpt) if u else lt, t * m0) if t else (kb.add(lt, u * tpt) if u else lt)
                 for t in range(r0)] for u in range(-(-m0 // tpt))]
    first_got = [[(kb.reg(ft), kb.reg(ft)) for _ in range(r0)] for _ in first_es]

    def first_from_global() -> None:
        flat = [e for es_ in first_es for e in es_]
        vals = load_many(flat, row.ins)
        for v, gv in zip([v for g_ in first_got for v in g_], vals):
            kb.assign(v[0], gv[0])
            kb.assign(v[1], gv[1])

    if staged:
        with kb.if_(p_in):
            for es_, got_ in zip(first_es, first_got):
                for v, e in zip(got_, es_):
                    sre, sim = kb.ld("shared", ft, sh_addr(kb.min(e, n - 1)), vec=2)
                    kb.assign(v[0], sre)
                    kb.assign(v[1], sim)
        with kb.else_():
            first_from_global()
    else:
        first_from_global()

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
            es = [kb.add(i, t * m) if t else i for t in range(r)]
            if first:
                got = first_got[u]
            else:
                got = [kb.ld("shared", ft, sh_addr(e), vec=2) for e in es]
            ws = [kb.ld("global", ft, kb.addr(tw, kb.mul(k, t * (n // (ns * r))), esize), vec=2, nc=True)
                  if k is not None and t else None for t in range(r)]
            for v, w in zip(got, ws):
                vals.append(cmul(kb, v, w) if w is not None else v)
            y = dft(kb, vals)
            jbase = kb.mul(qd, ns * r) if qd is not None else kb.mul(i, r)
            if k is not None:
                jbase = kb.add(jbase, k)
            for t in range(r):
                kb.assign(regs[t][0], y[t][0])
                kb.assign(regs[t][1], y[t][1])
                outs_idx.append(kb.add(jbase, t * ns) if t else jbase)
            if block is not None:
                block.__exit__(None, None, None)
            pending.append((guard, outs_idx, regs))

        def to_shared(pending: list = pending, barrier_first: bool = not first) -> None:
            if barrier_first:
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

        def direct_store(pending: list = pending) -> None:
            for guard, idx, regs in pending:
                block = kb.if_(guard) if guard is not None else None
                if block is not None:
                    block.__enter__()
                store_many(idx, regs, row)
                if block is not None:
                    block.__exit__(None, None, None)

        if not last:
            to_shared()
        elif staged:
            with kb.if_(p_out):
                # the staged store reuses shared memory this pass read: barrier first
                to_shared(barrier_first=True)
                elems = list(staged_elements())
                ks = [kb.min(e, n - 1) if g is not None else e for e, g in elems]
                vs = [kb.ld("shared", ft, sh_addr(k_, cbase), vec=2) for k_ in ks]
                store_many(ks, vs, col, guards=[g for _, g in elems])
            with kb.else_():
                direct_store()
        else:
            direct_store()
        ns *= r
    return kb.ptx()


def stockham_configurations(arch: str) -> list[StockhamSpec]:
    """Every (n, dtype) a plan can launch on ``arch``: each 7-smooth length up to ``max_single``
    of the arch's shared memory, with the per-CTA count ``default_per_cta`` gives, and its
    unstaged variant (``wide_spec``) where that differs."""
    specs = []
    for dtype in MAX_SINGLE:
        for n in range(1, max_single(dtype, arch_smem_optin(arch)) + 1):
            if is_smooth(n):
                specs.append(StockhamSpec(arch=arch, n=n, dtype=dtype, per_cta=default_per_cta(n, dtype)))
                wide = wide_spec(arch, n, dtype)
                if wide is not None:
                    specs.append(wide)
    return specs


registry.register_family(StockhamSpec.family, StockhamSpec, generate_stockham, stockham_configurations)
