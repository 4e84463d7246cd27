"""The strided copy, cast and fill kernels behind ``DeviceArray.copy``, ``astype``, ``fill``,
``get``/``set`` of strided views and ``__setitem__``: every layout change runs on the device.

Kernel family ``array_copy`` (one thread per element, 256 threads per CTA), three kinds:

- copy (``src == dst``, a byte width ``x1 x2 x4 x8 x16``): ``dst[i] = src[i]`` over an n-d index
  space with any byte strides on either side (negative and zero included); ``ndim`` is 1, 2, 4
  or 8 (shorter layouts pad with size-1 axes; longer ones launch once per leading index);
  ``wide`` selects 64-bit index arithmetic for more than 2**32 - 1 elements (1-d always is);
- fill (``src == "fill"``): every element of a strided destination gets the bit pattern passed
  as a kernel parameter (no host buffer, no upload);
- cast (``src != dst``, element types ``b1 s8 ... c128``): a 1-d strided conversion with
  numpy's rules (floats to ints truncate toward zero and wrap to the width, ints to floats and
  float narrowing round to nearest even, bfloat16 and float16 from float64 round once, complex to
  real keeps the real part, anything to bool is "not zero", NaN included; negative floats to
unsigned ints wrap, as numpy does on x86, where C leaves it undefined). A cast whose layout
  is not 1-d runs as a layout copy into a packed buffer followed by a 1-d cast.

Layouts are simplified before planning (size-1 axes dropped, axes merged where both sides are
contiguous across them), so C-to-F transposes are 2-d and most views 1- or 2-d.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..driver.facts import device_facts
from ..ptx import registry
from ..ptx.builder import KernelBuilder, Value
from ..ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from ..ptx.spec import KernelSpec
from ..ptx.target import device_arch
from .dtypes import dtype_name

THREADS = 256
NDIMS = (1, 2, 4, 8)
WIDTHS = {1: "x1", 2: "x2", 4: "x4", 8: "x8", 16: "x16"}
#: oxicuda dtype name -> element code of a cast
ELEMENTS = {
    "bool": "b1", "int8": "s8", "int16": "s16", "int32": "s32", "int64": "s64", "uint8": "u8",
    "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16", "bfloat16": "bf16",
    "float32": "f32", "float64": "f64", "complex64": "c64", "complex128": "c128",
}
_CODES = tuple(ELEMENTS.values())
_RAW_TYPE = {"x1": "u8", "x2": "u16", "x4": "u32", "x8": "u64"}
_INT_BITS = {"b1": 8, "s8": 8, "s16": 16, "s32": 32, "s64": 64, "u8": 8, "u16": 16, "u32": 32,
             "u64": 64}
_U32_LIMIT = (1 << 32) - 1


@dataclass(frozen=True)
class ArrayCopySpec(KernelSpec):
    """One copy, fill or cast kernel (see the module docstring)."""

    family: ClassVar[str] = "array_copy"
    src: str = "x4"
    dst: str = "x4"
    ndim: int = 1
    wide: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        raw = self.dst in _RAW_WIDTHS
        if raw and self.src not in (self.dst, "fill"):
            raise ValueError(f"ArrayCopySpec: src={self.src!r} with dst={self.dst!r}; a copy has "
                             "src == dst and a fill has src='fill'")
        if not raw and (self.src not in _CODES or self.dst not in _CODES or self.src == self.dst):
            raise ValueError(f"ArrayCopySpec: a cast of {self.src!r} to {self.dst!r}; allowed two "
                             f"different element codes of {_CODES}")
        if self.ndim not in NDIMS or (not raw and self.ndim != 1):
            raise ValueError(f"ArrayCopySpec: ndim={self.ndim}; allowed {NDIMS} (1 for casts)")
        if self.wide and self.ndim == 1:
            raise ValueError("ArrayCopySpec: wide=True applies to ndim > 1 (1-d is always 64-bit)")


_RAW_WIDTHS = tuple(WIDTHS.values())


# -- the generator ------------------------------------------------------------------------------
def generate_array_copy(spec: ArrayCopySpec) -> str:
    """PTX of one kernel. Parameters: ``dst``, then ``src`` (copy, cast) or the value as
    ``lo, hi`` u64 words (fill), then ``n`` and per axis (outermost first) ``shape_k``,
    ``dstride_k``, ``sstride_k`` (bytes, signed; a fill has no source strides)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(THREADS)
    fill = spec.src == "fill"
    idx = "u64" if spec.wide or spec.ndim == 1 else "u32"
    dst = kb.param_ptr("dst")
    if fill:
        lo, hi = kb.param("lo", "u64"), kb.param("hi", "u64")
    else:
        src = kb.param_ptr("src")
    n = kb.param("n", idx)
    axes = []
    for k in range(spec.ndim):
        shape = kb.param(f"shape{k}", idx)
        dstride = kb.param(f"dstride{k}", "s64")
        sstride = None if fill else kb.param(f"sstride{k}", "s64")
        axes.append((shape, dstride, sstride))
    if idx == "u64":
        i = kb.add(kb.mul(kb.cvt(kb.ctaid(), "u64"), THREADS), kb.cvt(kb.tid(), "u64"))
    else:
        i = kb.mad(kb.ctaid(), THREADS, kb.tid())
    kb.ret(kb.setp("ge", i, n))
    doff = kb.mov(0, "s64")
    soff = None if fill else kb.mov(0, "s64")
    rem = i
    for k in range(spec.ndim - 1, -1, -1):
        shape, dstride, sstride = axes[k]
        if k:
            q = kb.div(rem, shape)
            r = kb.sub(rem, kb.mul(q, shape))
        else:
            q, r = None, rem
        r64 = kb.cvt(r, "s64") if idx == "u32" else kb.bitcast(r, "s64")
        kb.mad(r64, dstride, doff, out=doff)
        if not fill:
            kb.mad(r64, sstride, soff, out=soff)
        rem = q
    daddr = kb.add(dst, kb.bitcast(doff, "u64"))
    if fill:
        _store_raw(kb, spec.dst, daddr, (lo, hi))
    elif spec.src == spec.dst:
        saddr = kb.add(src, kb.bitcast(soff, "u64"))
        _store_raw(kb, spec.dst, daddr, _load_raw(kb, spec.src, saddr))
    else:
        saddr = kb.add(src, kb.bitcast(soff, "u64"))
        _store_element(kb, spec.dst, daddr, _load_element(kb, spec.src, saddr))
    return kb.ptx()


def _load_raw(kb: KernelBuilder, width: str, addr: Value) -> tuple[Value, ...]:
    if width == "x16":
        return kb.ld("global", "u64", addr), kb.ld("global", "u64", addr, offset=8)
    return (kb.ld("global", _RAW_TYPE[width], addr),)


def _store_raw(kb: KernelBuilder, width: str, addr: Value, words: tuple[Value, ...]) -> None:
    if width == "x16":
        kb.st("global", addr, words[0], type_="u64")
        kb.st("global", addr, words[1], offset=8, type_="u64")
        return
    word = words[0]
    t = _RAW_TYPE[width]
    if word.type == "u64" and t != "u64":  # a fill pattern: its low bits
        word = kb.cvt(word, "u32")
        if t == "u16":
            word = kb.cvt(word, "u16")
    kb.st("global", addr, word, type_=t)


# A loaded element in one of three forms: ("int", value as s64/u64), ("float", value as f32 or
# f64), ("complex", (re, im) as f32 or f64 pairs).
def _load_element(kb: KernelBuilder, code: str, addr: Value) -> tuple[str, object]:
    if code == "b1":
        v = kb.ld("global", "u8", addr)
        return "int", kb.selp(1, 0, kb.setp("ne", v, 0), type_="u64")
    if code in _INT_BITS:
        v = kb.ld("global", code, addr)
        return "int", kb.cvt(v, "s64" if code[0] == "s" else "u64")
    if code == "f16":
        return "float", kb.cvt(kb.bitcast(kb.ld("global", "u16", addr), "f16"), "f32")
    if code == "bf16":
        return "float", _bf16_bits_to_f32(kb, kb.ld("global", "u16", addr))
    if code in ("f32", "f64"):
        return "float", kb.ld("global", code, addr)
    part = "f32" if code == "c64" else "f64"
    size = 4 if code == "c64" else 8
    return "complex", (kb.ld("global", part, addr), kb.ld("global", part, addr, offset=size))


def _bf16_bits_to_f32(kb: KernelBuilder, bits: Value) -> Value:
    return kb.bitcast(kb.shl(kb.cvt(bits, "u32"), 16), "f32")


def _to_float(kb: KernelBuilder, form: str, value: object, to: str) -> Value:
    """The element as a float of type ``to`` (f16, bf16, f32, f64), rounded once."""
    if form == "complex":
        form, value = "float", value[0]
    if form == "int":
        value = kb.cvt(value, "f64")  # exact below 2**53, as numpy's own path through double
    src = value.type
    if to == src:
        return value
    if to == "bf16":
        if src == "f64":  # round to odd into f32, then once to bf16: a single correct rounding
            t = kb.cvt(value, "f32", rnd="rz")
            inexact = kb.setp("neu", kb.cvt(t, "f64"), value)
            value = kb.bitcast(kb.or_(kb.bitcast(t, "u32"), kb.selp(1, 0, inexact, type_="u32")), "f32")
        return kb.cvt(value, "bf16")
    return kb.cvt(value, to)


def _as_u64(kb: KernelBuilder, value: Value) -> Value:
    return value if value.type == "u64" else kb.bitcast(value, "u64")


def _nonzero(kb: KernelBuilder, form: str, value: object) -> Value:
    if form == "int":
        return kb.setp("ne", value, 0)
    if form == "float":
        return kb.setp("neu", value, 0.0)
    return kb.or_(kb.setp("neu", value[0], 0.0), kb.setp("neu", value[1], 0.0))


def _store_element(kb: KernelBuilder, code: str, addr: Value, loaded: tuple[str, object]) -> None:
    form, value = loaded
    if code == "b1":
        kb.st("global", addr, kb.selp(1, 0, _nonzero(kb, form, value), type_="u32"), type_="u8")
        return
    if code in _INT_BITS:
        bits = _INT_BITS[code]
        if form == "complex":
            form, value = "float", value[0]
        if form == "float":  # truncation toward zero, then wrapping to the width, as numpy
            signed = kb.cvt(value, "s64")
            if code == "u64":  # values past 2**63 need the unsigned conversion
                big = kb.bitcast(kb.cvt(value, "u64"), "s64")
                signed = kb.selp(big, signed, kb.setp("ge", value, 2.0**63), type_="s64")
            value = signed
        if bits == 64:
            kb.st("global", addr, value if value.type == code else kb.bitcast(value, code), type_=code)
            return
        low = kb.cvt(_as_u64(kb, value), "u32")  # wraps to the width, as numpy
        if bits == 16:
            low = kb.cvt(low, "u16")
        kb.st("global", addr, low, type_={8: "u8", 16: "u16", 32: "u32"}[bits])
        return
    if code in ("f16", "bf16", "f32", "f64"):
        v = _to_float(kb, form, value, code)
        kb.st("global", addr, v)
        return
    part = "f32" if code == "c64" else "f64"
    size = 4 if code == "c64" else 8
    if form == "complex":
        re, im = (_to_float(kb, "float", p, part) for p in value)
    else:
        re, im = _to_float(kb, form, value, part), kb.mov(0.0, part)
    kb.st("global", addr, re)
    kb.st("global", addr, im, offset=size)


def array_copy_configurations(arch: str) -> list[ArrayCopySpec]:
    """Every configuration a public call can launch: copies and fills of each byte width and
    index space, and the 1-d cast of every ordered pair of different element types."""
    specs = []
    for width in _RAW_WIDTHS:
        for src in (width, "fill"):
            for ndim in NDIMS:
                for wide in ((False,) if ndim == 1 else (False, True)):
                    specs.append(ArrayCopySpec(arch=arch, src=src, dst=width, ndim=ndim, wide=wide))
    for s in _CODES:
        for d in _CODES:
            if s != d:
                specs.append(ArrayCopySpec(arch=arch, src=s, dst=d))
    return specs


registry.register_family(ArrayCopySpec.family, ArrayCopySpec, generate_array_copy,
                         array_copy_configurations)


# -- layouts and plans --------------------------------------------------------------------------
def simplify(shape: tuple[int, ...], *strides: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """(shape, *strides) with size-1 axes dropped and neighbours merged where every side steps
    across them as one axis; an empty shape becomes (1,) (one element)."""
    axes = [(n, *(s[k] for s in strides)) for k, n in enumerate(shape) if n != 1]
    merged: list[list[int]] = []
    for ax in axes:
        if merged:
            prev = merged[-1]
            if all(prev[1 + j] == ax[1 + j] * ax[0] for j in range(len(strides))):
                prev[0] *= ax[0]
                for j in range(len(strides)):
                    prev[1 + j] = ax[1 + j]
                continue
        merged.append(list(ax))
    if not merged:
        merged = [[1, *(0 for _ in strides)]]
    return tuple(tuple(ax[j] for ax in merged) for j in range(1 + len(strides)))


_PLANS = PlanCache("array_copy", maxsize=1024)
_PACK = {"u32": np.uint32, "u64": np.uint64}


def _plan(problem: tuple, facts: object) -> LaunchPlan:
    """The plan of one simplified problem ``(src, dst, shape, dstrides, sstrides)`` (``src`` a
    width, "fill" or an element code; sstrides None for a fill)."""
    src, dst, shape, dstrides, sstrides = problem
    size = int(np.prod(shape, dtype=object))
    ndim = next(k for k in NDIMS if k >= len(shape))
    pad = ndim - len(shape)
    shape = (1,) * pad + shape
    dstrides = (0,) * pad + dstrides
    wide = ndim > 1 and size > _U32_LIMIT
    spec = ArrayCopySpec(arch=device_arch(facts.ordinal), src=src, dst=dst, ndim=ndim, wide=wide)
    idx = _PACK["u64" if wide or ndim == 1 else "u32"]
    tail: list[object] = [idx(size)]
    if src == "fill":
        for n, d in zip(shape, dstrides):
            tail += [idx(n), np.int64(d)]
        fixed = tuple(tail)

        def bind(p, s, ws):
            return (p[0], s[0], s[1], *fixed)
    else:
        sstrides = (0,) * pad + sstrides
        for n, d, s_ in zip(shape, dstrides, sstrides):
            tail += [idx(n), np.int64(d), np.int64(s_)]
        fixed = tuple(tail)

        def bind(p, s, ws):
            return (p[0], p[1], *fixed)
    step = KernelStep(spec, -(-size // THREADS), THREADS, bind)
    return LaunchPlan(f"array_copy {src}->{dst} {shape}", [step])


def _run(src: str, dst: str, shape: tuple[int, ...], dptr: int, dstrides: tuple[int, ...],
         sptr: int, sstrides: tuple[int, ...] | None, scalars: tuple, stream: int) -> None:
    """Launch one simplified problem; more than 8 axes run once per index of the leading ones."""
    if len(shape) > NDIMS[-1]:
        lead = len(shape) - NDIMS[-1]
        for index in np.ndindex(*shape[:lead]):
            doff = sum(i * s for i, s in zip(index, dstrides))
            soff = 0 if sstrides is None else sum(i * s for i, s in zip(index, sstrides))
            _run(src, dst, shape[lead:], dptr + doff, dstrides[lead:], sptr + soff,
                 None if sstrides is None else sstrides[lead:], scalars, stream)
        return
    facts = device_facts()
    problem = (src, dst, shape, dstrides, sstrides)
    plan = _PLANS.get_or_build((facts.ordinal, problem), lambda: _plan(problem, facts))
    plan.run((dptr, sptr), scalars, stream or None)


def copy_array(dst, src) -> None:
    """``dst[...] = src`` on the device: same shape, any layouts, any two supported dtypes."""
    if dst.size == 0:
        return
    dptr, sptr = dst.ptr, src.ptr
    stream = dst.stream
    if dst.dtype == src.dtype:
        shape, dstr, sstr = simplify(dst.shape, dst.strides, src.strides)
        width = WIDTHS[dst.itemsize]
        _run(width, width, shape, dptr, dstr, sptr, sstr, (), stream)
        return
    scode, dcode = ELEMENTS[dtype_name(src.dtype)], ELEMENTS[dtype_name(dst.dtype)]
    shape, dstr, sstr = simplify(dst.shape, dst.strides, src.strides)
    if len(shape) == 1:
        _run(scode, dcode, shape, dptr, dstr, sptr, sstr, (), stream)
        return
    # a cast across layouts: in the destination's axis order (largest strides first), pack the
    # source if it is not packed, cast packed to packed (1-d), then lay the result out
    from .array import DeviceArray

    order = tuple(int(k) for k in np.argsort([-abs(s) for s in dst.strides], kind="stable"))
    src_t, dst_t = src.transpose(order), dst.transpose(order)
    if not src_t.is_c_contiguous:
        packed = DeviceArray(src_t.shape, src.dtype, stream=stream)
        copy_array(packed, src_t)
        src_t = packed
    if dst_t.is_c_contiguous:
        copy_array(dst_t, src_t)
        return
    cast = DeviceArray(dst_t.shape, dst.dtype, stream=stream)
    copy_array(cast, src_t)
    copy_array(dst_t, cast)


def fill_array(dst, pattern: bytes) -> None:
    """Every element of ``dst`` set to the element bit pattern ``pattern`` (itemsize bytes)."""
    if dst.size == 0:
        return
    raw = pattern.ljust(16, b"\0")
    lo, hi = struct.unpack("<QQ", raw)
    shape, dstr = simplify(dst.shape, dst.strides)
    width = WIDTHS[dst.itemsize]
    _run("fill", width, shape, dst.ptr, dstr, 0, None, (np.uint64(lo), np.uint64(hi)), dst.stream)
