"""The element-wise kernels around the transforms (family ``fft_aux``): one thread per element.

- ``nd_copy``: ``dst[i] = src[(i + shift) mod shape]`` over up to ``MAX_DIMS`` dimensions with
  any source and destination strides: fftshift/ifftshift (shift = ceil(n/2) /
  floor(n/2)), and the contiguous copy of an input whose layout the passes cannot address
  (shift 0);
- ``gather_real``: a strided real line into a contiguous real or (``widen``) complex line, zero
  padded past the valid length;
- ``r2c_post``: the r2c spectrum ``X[k], k = 0..h`` from the half-length transform ``Z`` of the
  real line read as complex pairs: ``X[k] = (Z[k] + conj Z[h-k]) / 2 - i W^k (Z[k] - conj Z[h-k]) / 2``;
- ``c2r_pre``: the inverse of that, ``Z[k] = (X[k] + conj X[h-k] + i conj(W^k) (X[k] - conj X[h-k])) / 2``,
  with the imaginary parts of X[0] and X[h] ignored as a c2r transform does;
- ``hermitian``: the full Hermitian line ``Y[k] = X[k]`` (k <= n/2), ``conj X[n-k]`` above;
- ``scatter_real``: every ``step``-th real of a contiguous line into a strided real line;
- ``freq``: fftfreq/rfftfreq's sample frequencies ``(i < split ? i : i - n) * scale`` (float64).

Lines: ``batch`` lines of ``length`` elements; the batch index splits as in ``fft_stockham``
(``b0 = b % c0``, ``b1 = (b / c0) % c1``, ``b2``), the strided side of an element ``j`` lives at
``b0*d0 + b1*d1 + b2*d2 + j*gs``, the contiguous side at ``b*clen + j``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.spec import KernelSpec

from .stockham import cmul

OPS = ("nd_copy", "gather_real", "r2c_post", "c2r_pre", "hermitian", "scatter_real", "freq")
#: real type per precision, and the byte sizes of a real and a complex element
PRECISIONS = {"single": ("f32", 4, 8), "double": ("f64", 8, 16)}
#: nd_copy moves raw elements of 4, 8 or 16 bytes
COPY_ITEMS = {4: ("u32", 1), 8: ("u64", 1), 16: ("u64", 2)}
MAX_DIMS = 8
THREADS = 256


@dataclass(frozen=True)
class AuxSpec(KernelSpec):
    """One element-wise kernel: ``op`` in ``precision`` ('single'/'double'); for ``nd_copy``
    ``itemsize`` (4, 8, 16) instead; ``widen`` for gather_real."""

    family: ClassVar[str] = "fft_aux"
    op: str = "nd_copy"
    precision: str = "single"
    itemsize: int = 8
    widen: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.op not in OPS:
            raise ValueError(f"AuxSpec: op={self.op!r}; allowed {OPS}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"AuxSpec: precision={self.precision!r}; allowed {tuple(PRECISIONS)}")
        if self.itemsize not in COPY_ITEMS:
            raise ValueError(f"AuxSpec: itemsize={self.itemsize}; allowed {tuple(COPY_ITEMS)}")


def _strided_offset(kb: KernelBuilder, b: Value, prefix: str = "") -> tuple[Value, Value]:
    """(element offset of the strided side's line start (s64), its axis stride gs (s32))."""
    c0, c1 = kb.param(f"{prefix}c0", "u32"), kb.param(f"{prefix}c1", "u32")
    d0, d1, d2, gs = (kb.param(f"{prefix}{p}", "s32") for p in ("d0", "d1", "d2", "gs"))
    q0 = kb.div(b, c0)
    b0 = kb.sub(b, kb.mul(q0, c0))
    b2 = kb.div(q0, c1)
    b1 = kb.sub(q0, kb.mul(b2, c1))
    s = lambda v: kb.bitcast(v, "s32")
    off = kb.add(kb.mul(s(b0), d0, mode="wide"), kb.mul(s(b1), d1, mode="wide"))
    return kb.add(off, kb.mul(s(b2), d2, mode="wide")), gs


def _at(kb: KernelBuilder, ptr: Value, base: Value, j: Value, gs: Value, esize: int) -> Value:
    off = kb.add(base, kb.mul(kb.bitcast(j, "s32"), gs, mode="wide"))
    return kb.add(ptr, kb.mul(kb.bitcast(off, "u64"), esize))


def generate_aux(spec: AuxSpec) -> str:
    """PTX of one element-wise kernel (parameters per op: see ``aux_params``)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(THREADS)
    src, dst = kb.param_ptr("src"), kb.param_ptr("dst")
    total = kb.param("total", "u32")
    t = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    kb.ret(kb.setp("ge", t, total))
    if spec.op == "nd_copy":
        _nd_copy(kb, spec, src, dst, t)
        return kb.ptx()
    if spec.op == "freq":
        n, split, scale = kb.param("n", "u32"), kb.param("split", "u32"), kb.param("scale", "f64")
        i = kb.cvt(t, "f64")
        v = kb.selp(i, kb.sub(i, kb.cvt(n, "f64")), kb.setp("lt", t, split))
        kb.st("global", kb.addr(dst, t, 8), kb.mul(v, scale))
        return kb.ptx()
    ft, rsize, csize = PRECISIONS[spec.precision]
    length, clen, valid = kb.param("length", "u32"), kb.param("clen", "u32"), kb.param("valid", "u32")
    b = kb.div(t, length)
    j = kb.sub(t, kb.mul(b, length))
    base, gs = _strided_offset(kb, b)
    cidx = kb.mad(b, clen, j)
    zero = kb.mov(0.0, ft)
    if spec.op == "gather_real":
        ok = kb.setp("lt", j, valid)
        v = kb.ld("global", ft, _at(kb, src, base, kb.selp(j, 0, ok), gs, rsize))
        v = kb.selp(v, zero, ok)
        if spec.widen:
            kb.st("global", kb.addr(dst, cidx, csize), [v, zero])
        else:
            kb.st("global", kb.addr(dst, cidx, rsize), v)
    elif spec.op == "scatter_real":
        step = kb.param("step", "u32")
        v = kb.ld("global", ft, kb.addr(src, kb.mul(cidx, step), rsize))
        kb.st("global", _at(kb, dst, base, j, gs, rsize), v)
    elif spec.op == "hermitian":
        n, sign = kb.param("n", "u32"), kb.param("sign", ft)
        upper = kb.setp("gt", kb.add(j, j), n)
        k = kb.selp(kb.sub(n, j), j, upper)
        ok = kb.setp("lt", k, valid)
        re, im = kb.ld("global", ft, _at(kb, src, base, kb.selp(k, 0, ok), gs, csize), vec=2)
        im = kb.mul(kb.selp(kb.neg(im), im, upper), sign)
        im = kb.selp(zero, im, kb.setp("eq", j, 0))
        kb.st("global", kb.addr(dst, cidx, csize), [kb.selp(re, zero, ok), kb.selp(im, zero, ok)])
    elif spec.op == "r2c_post":
        tw, h = kb.param_ptr("tw"), kb.param("h", "u32")
        sign, scale = kb.param("sign", ft), kb.param("scale", ft)
        zb = kb.mul(b, h)
        kk = kb.selp(0, j, kb.setp("eq", j, h))
        mk = kb.selp(0, kb.sub(h, j), kb.setp("eq", j, 0))
        a = kb.ld("global", ft, kb.addr(src, kb.add(zb, kk), csize), vec=2)
        c = kb.ld("global", ft, kb.addr(src, kb.add(zb, mk), csize), vec=2)
        # e = (Z[k] + conj Z[h-k]) / 2, o = (Z[k] - conj Z[h-k]) / 2; X = e - i W^k o
        e = (kb.mul(kb.add(a[0], c[0]), 0.5), kb.mul(kb.sub(a[1], c[1]), 0.5))
        o = (kb.mul(kb.sub(a[0], c[0]), 0.5), kb.mul(kb.add(a[1], c[1]), 0.5))
        w = kb.ld("global", ft, kb.addr(tw, j, csize), vec=2, nc=True)
        wo = cmul(kb, w, o)
        re, im = kb.add(e[0], wo[1]), kb.sub(e[1], wo[0])
        kb.st("global", _at(kb, dst, base, j, gs, csize), [kb.mul(re, scale), kb.mul(kb.mul(im, sign), scale)])
    elif spec.op == "c2r_pre":
        tw, h, sign = kb.param_ptr("tw"), kb.param("h", "u32"), kb.param("sign", ft)
        mk = kb.sub(h, j)

        def load(k: Value) -> tuple[Value, Value]:
            ok = kb.setp("lt", k, valid)
            re, im = kb.ld("global", ft, _at(kb, src, base, kb.selp(k, 0, ok), gs, csize), vec=2)
            edge = kb.or_(kb.setp("eq", k, 0), kb.setp("eq", k, h))
            im = kb.selp(zero, kb.mul(im, sign), edge)
            return kb.selp(re, zero, ok), kb.selp(im, zero, ok)

        a, c = load(j), load(mk)
        e = (kb.add(a[0], c[0]), kb.sub(a[1], c[1]))
        o = (kb.sub(a[0], c[0]), kb.add(a[1], c[1]))
        w = kb.ld("global", ft, kb.addr(tw, j, csize), vec=2, nc=True)
        wo = cmul(kb, (w[0], kb.neg(w[1])), o)
        re, im = kb.sub(e[0], wo[1]), kb.add(e[1], wo[0])
        kb.st("global", kb.addr(dst, cidx, csize), [kb.mul(re, 0.5), kb.mul(im, 0.5)])
    return kb.ptx()


def _nd_copy(kb: KernelBuilder, spec: AuxSpec, src: Value, dst: Value, t: Value) -> None:
    word, words = COPY_ITEMS[spec.itemsize]
    rem = kb.mov(t)
    off = kb.mov(0, "s64")
    doff = kb.mov(0, "s64")
    for d in reversed(range(MAX_DIMS)):
        shape, shift = kb.param(f"shape{d}", "u32"), kb.param(f"shift{d}", "u32")
        stride, dstride = kb.param(f"stride{d}", "s32"), kb.param(f"dstride{d}", "s32")
        q = kb.div(rem, shape)
        i = kb.sub(rem, kb.mul(q, shape))
        kb.add(doff, kb.mul(kb.bitcast(i, "s32"), dstride, mode="wide"), out=doff)
        i = kb.add(i, shift)
        i = kb.selp(kb.sub(i, shape), i, kb.setp("ge", i, shape))
        kb.add(off, kb.mul(kb.bitcast(i, "s32"), stride, mode="wide"), out=off)
        kb.assign(rem, q)
    sp = kb.add(src, kb.mul(kb.bitcast(off, "u64"), spec.itemsize))
    v = kb.ld("global", word, sp, vec=words) if words > 1 else kb.ld("global", word, sp)
    dp = kb.add(dst, kb.mul(kb.bitcast(doff, "u64"), spec.itemsize))
    kb.st("global", dp, list(v) if words > 1 else v)


def aux_configurations(arch: str) -> list[AuxSpec]:
    """Every element-wise kernel a plan can launch."""
    specs = [AuxSpec(arch=arch, op="nd_copy", itemsize=s) for s in COPY_ITEMS]
    specs.append(AuxSpec(arch=arch, op="freq", precision="double"))
    for prec in PRECISIONS:
        specs.append(AuxSpec(arch=arch, op="gather_real", precision=prec, widen=False))
        specs.append(AuxSpec(arch=arch, op="gather_real", precision=prec, widen=True))
        for op in ("r2c_post", "c2r_pre", "hermitian", "scatter_real"):
            specs.append(AuxSpec(arch=arch, op=op, precision=prec))
    return specs


registry.register_family(AuxSpec.family, AuxSpec, generate_aux, aux_configurations)
