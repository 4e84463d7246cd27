"""Flag, compact, run bounds, histogram and gather kernels.

- ``prim_flag``: ``s[i] = 1`` where element i is selected, else 0 (u32): ``pred`` is a comparison
  of ``x[i]`` with a scalar (``nonzero`` for flags), or ``head`` (``i == 0 or x[i] != x[i-1]``, the
  run heads of run-length encoding and reduce-by-key). An inclusive scan of ``s`` in place then
  numbers the selected elements from 1.
- ``prim_compact``: where the scanned ``s`` steps up at i, ``out[s[i] - 1] = x[i]`` (and, with
  ``with_index``, ``idx[s[i] - 1] = i`` as int32).
- ``prim_runs``: ``counts[r] = starts[r + 1] - starts[r]`` for the runs whose starts a compact
  wrote, and ``starts[runs] = n`` (the offsets a segmented reduce takes).
- ``prim_histogram``: even bins over ``[lower, upper)``: samples outside are ignored (CUB's
  HistogramEven), ``bin = floor((x - lower) * bins / (upper - lower))`` in float64.
- ``prim_gather``: ``out[i] = src[index[i]]`` for elements of 1..16 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.spec import KernelSpec

from . import common as C

THREADS = 256
#: every element type the flag/compare kernels read (bool and 8/16-bit ints as flags)
FLAG_DTYPES = {"bool": "u8", "int8": "s8", "uint8": "u8", "int16": "s16", "uint16": "u16",
               **C.PTX}
PREDS = ("nonzero", "eq", "ne", "lt", "le", "gt", "ge", "head")
ELEMENT_BYTES = (1, 2, 4, 8, 16)
INDEX_TYPES = {"int32": "s32", "int64": "s64"}


@dataclass(frozen=True)
class FlagSpec(KernelSpec):
    family: ClassVar[str] = "prim_flag"
    dtype: str = "int32"
    pred: str = "nonzero"

    def __post_init__(self) -> None:
        super().__post_init__()
        compares = self.pred not in ("nonzero", "head")
        if self.dtype not in FLAG_DTYPES or self.pred not in PREDS or (compares and self.dtype not in C.PTX):
            raise ValueError(f"FlagSpec: dtype={self.dtype!r} pred={self.pred!r}; comparisons take "
                             f"{tuple(C.PTX)}, nonzero/head every one of {tuple(FLAG_DTYPES)}")


@dataclass(frozen=True)
class CompactSpec(KernelSpec):
    family: ClassVar[str] = "prim_compact"
    value_bytes: int = 4
    with_index: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.value_bytes not in (0, *ELEMENT_BYTES) or not (self.value_bytes or self.with_index):
            raise ValueError(f"CompactSpec: value_bytes={self.value_bytes}, with_index={self.with_index}; "
                             f"allowed value_bytes 0 (index only, with_index=True) or {ELEMENT_BYTES}")


@dataclass(frozen=True)
class RunsSpec(KernelSpec):
    family: ClassVar[str] = "prim_runs"


@dataclass(frozen=True)
class HistogramSpec(KernelSpec):
    family: ClassVar[str] = "prim_histogram"
    dtype: str = "float32"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in C.PTX:
            raise ValueError(f"HistogramSpec: dtype={self.dtype!r}; allowed {tuple(C.PTX)}")


@dataclass(frozen=True)
class GatherSpec(KernelSpec):
    family: ClassVar[str] = "prim_gather"
    value_bytes: int = 4
    index: str = "int32"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.value_bytes not in ELEMENT_BYTES or self.index not in INDEX_TYPES:
            raise ValueError(f"GatherSpec: value_bytes={self.value_bytes} index={self.index!r}")


def _start(kb: KernelBuilder, threads: int) -> tuple[Value, Value]:
    kb.maxntid(threads)
    return kb.mad(kb.ctaid(), kb.ntid(), kb.tid()), kb.tid()


def _move(kb: KernelBuilder, nbytes: int, src: Value, dst: Value) -> None:
    """Copy one element of ``nbytes`` (16: two u64 halves) from global ``src`` to ``dst``."""
    if nbytes == 16:
        lo, hi = kb.ld("global", "u64", src, vec=2)
        kb.st("global", dst, [lo, hi])
        return
    t = {1: "u8", 2: "u16", 4: "u32", 8: "u64"}[nbytes]
    kb.st("global", dst, kb.ld("global", t, src), type_=t)


def generate_flag(spec: FlagSpec) -> str:
    """Params (x, s, n, value): value has x's type (unused for nonzero/head)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    mt = FLAG_DTYPES[spec.dtype]
    size = np.dtype(spec.dtype).itemsize
    x, s, n = kb.param_ptr("x"), kb.param_ptr("s"), kb.param("n", "u32")
    value = kb.param("value", mt)
    i, _ = _start(kb, THREADS)
    kb.ret(kb.setp("ge", i, n))
    v = kb.ld("global", mt, kb.addr(x, i, size))
    rt = v.type
    if spec.pred == "head":
        first = kb.setp("eq", i, 0)
        prev = kb.mov(v)
        with kb.if_(first, negate=True):
            kb.assign(prev, kb.ld("global", mt, kb.addr(x, kb.sub(i, 1), size)))
        p = kb.or_(first, kb.setp("ne", v, prev) if rt not in ("f32", "f64") else kb.setp("neu", v, prev))
    elif spec.pred == "nonzero":
        p = kb.setp("ne", v, 0.0 if rt in ("f32", "f64") else 0, type_=rt)
    else:
        cmp = value if value.type == rt else kb.cvt(value, rt)
        p = kb.setp(spec.pred, v, cmp)
    kb.st("global", kb.addr(s, i, 4), kb.selp(1, 0, p, type_="u32"))
    return kb.ptx()


def generate_compact(spec: CompactSpec) -> str:
    """Params (x, s, out, idx, n)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    x, s, out, idx = (kb.param_ptr(k) for k in ("x", "s", "out", "idx"))
    n = kb.param("n", "u32")
    i, _ = _start(kb, THREADS)
    kb.ret(kb.setp("ge", i, n))
    here = kb.ld("global", "u32", kb.addr(s, i, 4))
    before = kb.mov(0, "u32")
    with kb.if_(kb.setp("gt", i, 0)):
        kb.assign(before, kb.ld("global", "u32", kb.addr(s, kb.sub(i, 1), 4)))
    with kb.if_(kb.setp("gt", here, before)):
        slot = kb.sub(here, 1)
        vb = spec.value_bytes
        if vb:
            _move(kb, vb, kb.addr(x, i, vb), kb.addr(out, slot, vb))
        if spec.with_index:
            kb.st("global", kb.addr(idx, slot, 4), i)
    return kb.ptx()


def generate_runs(spec: RunsSpec) -> str:
    """Params (starts, counts, runs, n): starts and counts int32."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    starts, counts = kb.param_ptr("starts"), kb.param_ptr("counts")
    runs, n = kb.param("runs", "u32"), kb.param("n", "u32")
    i, _ = _start(kb, THREADS)
    kb.ret(kb.setp("ge", i, runs))
    nxt = kb.mov(n)
    j = kb.add(i, 1)
    with kb.if_(kb.setp("lt", j, runs)):
        kb.assign(nxt, kb.ld("global", "u32", kb.addr(starts, j, 4)))
    kb.st("global", kb.addr(counts, i, 4), kb.sub(nxt, kb.ld("global", "u32", kb.addr(starts, i, 4))))
    with kb.if_(kb.setp("eq", i, 0)):
        kb.st("global", kb.addr(starts, runs, 4), n)
    return kb.ptx()


def generate_histogram(spec: HistogramSpec) -> str:
    """Params (x, n, hist, bins, lower, upper, scale): hist u32[bins], zeroed by the caller."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    t, size = C.PTX[spec.dtype], C.BYTES[spec.dtype]
    x, n, hist = kb.param_ptr("x"), kb.param("n", "u32"), kb.param_ptr("hist")
    bins = kb.param("bins", "u32")
    lower, upper, scale = kb.param("lower", "f64"), kb.param("upper", "f64"), kb.param("scale", "f64")
    i, _ = _start(kb, THREADS)
    kb.ret(kb.setp("ge", i, n))
    v = kb.ld("global", t, kb.addr(x, i, size))
    f = v if t == "f64" else kb.cvt(v, "f64")
    inside = kb.and_(kb.setp("ge", f, lower), kb.setp("lt", f, upper))
    with kb.if_(inside):
        b = kb.cvt(kb.mul(kb.sub(f, lower), scale), "u32", rnd="rmi")
        b = kb.min(b, kb.sub(bins, 1))
        kb.red("global", "add", "u32", kb.addr(hist, b, 4), 1)
    return kb.ptx()


def generate_gather(spec: GatherSpec) -> str:
    """Params (src, index, out, n)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    src, index, out = kb.param_ptr("src"), kb.param_ptr("index"), kb.param_ptr("out")
    n = kb.param("n", "u32")
    i, _ = _start(kb, THREADS)
    kb.ret(kb.setp("ge", i, n))
    it = INDEX_TYPES[spec.index]
    j = kb.ld("global", it, kb.addr(index, i, 4 if it == "s32" else 8))
    vb = spec.value_bytes
    _move(kb, vb, kb.addr(src, j, vb), kb.addr(out, i, vb))
    return kb.ptx()


registry.register_family(FlagSpec.family, FlagSpec, generate_flag,
                         lambda arch: [FlagSpec(arch=arch, dtype=d, pred=p) for d in FLAG_DTYPES for p in PREDS
                                       if p in ("nonzero", "head") or d in C.PTX])
registry.register_family(CompactSpec.family, CompactSpec, generate_compact,
                         lambda arch: [CompactSpec(arch=arch, value_bytes=b, with_index=w)
                                       for b in (0, *ELEMENT_BYTES) for w in (False, True)
                                       if (b or w) and not (w and b == 16)])
registry.register_family(RunsSpec.family, RunsSpec, generate_runs, lambda arch: [RunsSpec(arch=arch)])
registry.register_family(HistogramSpec.family, HistogramSpec, generate_histogram,
                         lambda arch: [HistogramSpec(arch=arch, dtype=d) for d in C.PTX])
registry.register_family(GatherSpec.family, GatherSpec, generate_gather,
                         lambda arch: [GatherSpec(arch=arch, value_bytes=b, index=i)
                                       for b in ELEMENT_BYTES for i in INDEX_TYPES])


@dataclass(frozen=True)
class IotaSpec(KernelSpec):
    """``out[i] = i`` (int32 or int64)."""

    family: ClassVar[str] = "prim_iota"
    index: str = "int32"


def generate_iota(spec: IotaSpec) -> str:
    """Params (out, n)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    out, n = kb.param_ptr("out"), kb.param("n", "u32")
    i, _ = _start(kb, THREADS)
    kb.ret(kb.setp("ge", i, n))
    if spec.index == "int32":
        kb.st("global", kb.addr(out, i, 4), i)
    else:
        kb.st("global", kb.addr(out, i, 8), kb.cvt(i, "u64"))
    return kb.ptx()


registry.register_family(IotaSpec.family, IotaSpec, generate_iota, lambda arch: [IotaSpec(arch=arch)])
