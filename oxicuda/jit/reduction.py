"""``oxicuda.reduction(map, reduce, identity, post=None)``: generated reduction kernels.

``rk = oxicuda.reduction(lambda x: x * x, lambda a, b: a + b, 0, post=lambda s, n: s / n)``, then
``rk(*args, axis=None, keepdims=False, out=None, dtype=None, stream=None) -> DeviceArray``.
``map`` takes the N (broadcast) arguments and returns a scalar; ``reduce`` is an associative and
commutative binary function; ``identity`` its neutral element (what an empty reduction gives);
``post(value, count)`` is applied to each result (``count``: the number of reduced elements, of
the accumulator's type when that is a float, else i64).

Types: the accumulator is ``dtype`` if given, else the type ``reduce`` returns for two map
results; map results are cast to it. The result has post's type (or the accumulator's), cast
to ``out.dtype`` when ``out`` is given. ``axis`` is an int, a tuple or None (numpy's rules,
negative axes included); ``keepdims`` keeps reduced axes as size 1.

Kernel family ``jit_reduction`` (``ReductionSpec``), three kinds:
- ``partial``: a grid-stride loop per thread, a warp-shuffle butterfly, a shared-memory step
  across the block's warps, one partial per block into the workspace;
- ``final``: one block reduces the partials and applies ``post`` (with ``partial``: a
  device-wide reduction, no host arithmetic);
- ``rows``: one block per output element (grid-stride over them), threads striding over the
  reduced elements (the last axes after moving the reduced axes there), the same block tree;
- ``cols``: one thread per output element and a serial loop over the reduced elements, for
  reductions over leading axes (outputs contiguous in the input: coalesced reads) and short
  reductions, when there are at least 256 outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from oxicuda.memory.copy_kernels import simplify
from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder, Value
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from oxicuda.ptx.spec import KernelSpec

from . import ops
from . import types as T
from .calls import _shfl
from .elementwise import _ident
from .frontend import CompileError, FunctionInfo
from .lower import MAX_ROUNDS, ArrayVal, Lower
from .operands import body_result, broadcast_strides, call_body, check_alias, gather
from .ops import Val

THREADS = 256
WARPS = THREADS // 32
_SOURCES: dict[str, FunctionInfo] = {}
_PLANS = PlanCache("jit_reduction", maxsize=2048)
_SEEN: set = set()


@dataclass(frozen=True)
class ReductionSpec(KernelSpec):
    """One generated reduction kernel (see the module docstring)."""

    family: ClassVar[str] = "jit_reduction"
    name: str = "reduction"
    map: str = ""
    reduce: str = ""
    post: str = ""
    identity: object = 0
    args: tuple = ()        # (ScalarType, is_array) per argument
    acc: T.ScalarType = T.f32
    out: T.ScalarType = T.f32
    kind: str = "partial"   # partial, final, rows, cols
    ndim: int = 1           # partial: input dims; rows: reduced dims
    kept: int = 1           # rows: kept dims
    wide: bool = False

    def kernel_name(self) -> str:
        return f"oxi_jit_reduction_{self.name}_{self.kind}_{self.short_digest()}"


# -- generator ----------------------------------------------------------------------------------
class _Gen:
    def __init__(self, spec: ReductionSpec, slot_types: dict) -> None:
        self.spec = spec
        self.kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
        self.kb.maxntid(THREADS)
        self.lw = Lower(self.kb, checks=False, slot_types=slot_types, err_ptr=None)
        self.idx = "u64" if spec.wide else "u32"

    def reduce(self, a: Val, b: Val) -> Val:
        r = call_body(self.lw, _SOURCES[self.spec.reduce], [a, b])
        return ops.cast(self.kb, r, self.spec.acc)

    def identity(self) -> Val:
        return ops.cast(self.kb, ops.const(self.spec.identity), self.spec.acc)

    def acc_var(self) -> Value:
        kb = self.kb
        reg = kb.reg(self.spec.acc.reg)
        self.lw._write(reg, self.identity())
        return reg

    def accumulate(self, acc: Value, v: Val) -> None:
        self.lw._write(acc, self.reduce(Val(self.spec.acc, acc), ops.cast(self.kb, v, self.spec.acc)))

    def block_reduce(self, acc: Value) -> Val:
        """The block's reduction of every thread's ``acc``; valid in thread 0."""
        kb, st = self.kb, self.spec.acc
        cur = Val(st, acc)
        for d in (16, 8, 4, 2, 1):
            cur = self.reduce(cur, _shfl(kb, "bfly", cur, d, 0xFFFFFFFF))
        decl = f"b{st.bits}" if st.kind != "b" else "u8"
        smem = kb.shared("jit_red_smem", decl, WARPS, align=16)
        sarr = ArrayVal(T.ArrayType(st, 1, "C"), "shared", smem, (), ())
        tid = kb.tid()
        lane = kb.and_(tid, 31)
        warp = kb.shr(tid, 5)
        with kb.if_(kb.setp("eq", lane, 0)):
            self.lw.store_element(sarr, ("reg", kb.mad(warp, st.itemsize, kb.shared_addr(smem)), 0), cur)
        kb.bar_sync(0)
        res = self.acc_var()
        with kb.if_(kb.setp("lt", tid, 32)):
            with kb.if_(kb.setp("lt", tid, WARPS)):
                v = self.lw.load_element(sarr, ("reg", kb.mad(tid, st.itemsize, kb.shared_addr(smem)), 0))
                self.lw._write(res, v)
            cur = Val(st, res)
            d = WARPS // 2
            while d >= 1:
                cur = self.reduce(cur, _shfl(kb, "bfly", cur, d, 0xFFFFFFFF))
                d //= 2
            self.lw._write(res, cur)
        return Val(st, res)

    def params(self):
        kb, spec = self.kb, self.spec
        out = []
        for k, (st, is_array) in enumerate(spec.args):
            if is_array:
                out.append(kb.param_ptr(f"a{k}"))
            else:
                mem = "u8" if st.kind == "b" else st.mem
                v = kb.param(f"a{k}", mem)
                if st.kind == "b":
                    v = kb.setp("ne", v, 0, type_="u32")
                elif st.mem in ("s16", "u16"):
                    v = kb.cvt(v, st.reg)
                out.append(Val(st, v))
        return out

    def map_at(self, params, offs) -> Val:
        kb, spec = self.kb, self.spec
        args = []
        for k, (st, is_array) in enumerate(spec.args):
            if not is_array:
                args.append(params[k])
                continue
            addr = kb.addr(params[k], offs[k], st.itemsize)
            arr = ArrayVal(T.ArrayType(st, 1, "C", "in"), "global", params[k], (), ())
            args.append(self.lw.load_element(arr, ("reg", addr, 0)))
        return call_body(self.lw, _SOURCES[spec.map], args)

    def unravel(self, i: Value, shape: list, strides: list, offs: list) -> None:
        """offs[k] += the element offset of flat index ``i`` over ``shape`` for strides[k]."""
        kb = self.kb
        rem = i
        for d in range(len(shape) - 1, -1, -1):
            if d:
                q = kb.div(rem, shape[d])
                r = kb.sub(rem, kb.mul(q, shape[d]))
            else:
                q, r = None, rem
            r64 = kb.cvt(r, "s64") if self.idx == "u32" else kb.bitcast(r, "s64")
            for k, s in enumerate(strides):
                if s is not None:
                    kb.mad(r64, s[d], offs[k], out=offs[k])
            rem = q

    def strided_loop(self, start: Value, stop: Value, step: object, body) -> None:
        kb = self.kb
        i = kb.mov(start, self.idx)
        top = kb.label(self.lw.fresh("rloop"))
        end = "$L_" + self.lw.fresh("rend")
        kb.bra(end, kb.setp("ge", i, stop))
        body(i)
        kb.add(i, step, out=i)
        kb.bra(top)
        kb.label(end)

    def finish(self, value: Val, count: Value, out_addr: Value) -> None:
        kb, spec = self.kb, self.spec
        if spec.post:
            ct = spec.acc if spec.acc.kind == "f" else T.i64
            c = ops.cast(kb, Val(T.i64, count), ct)
            value = call_body(self.lw, _SOURCES[spec.post], [value, c])
        arr = ArrayVal(T.ArrayType(spec.out, 1, "C", "out"), "global", out_addr, (), ())
        self.lw.store_element(arr, ("reg", out_addr, 0), value)


def generate_reduction(spec: ReductionSpec) -> str:
    """PTX of one spec (see the module docstring for the three kinds)."""
    slot_types: dict = {}
    for _ in range(MAX_ROUNDS):
        g = _Gen(spec, slot_types)
        text = _generate_once(g)
        if not g.lw.restart:
            return text
    raise CompileError(f"{spec.name}: the types of its variables did not settle")


def _generate_once(g: _Gen) -> str:
    spec, kb = g.spec, g.kb
    if spec.kind == "final":
        out = kb.param_ptr("out")
        part = kb.param_ptr("partials")
        n = kb.param("n", "u32")
        count = kb.param("count", "s64")
        acc = g.acc_var()

        def body(i):
            arr = ArrayVal(T.ArrayType(spec.acc, 1, "C", "in"), "global", part, (), ())
            g.accumulate(acc, g.lw.load_element(arr, ("reg", kb.addr(part, i, spec.acc.itemsize), 0)))

        g.idx = "u32"
        g.strided_loop(kb.tid(), n, THREADS, body)
        total = g.block_reduce(acc)
        with kb.if_(kb.setp("eq", kb.tid(), 0)):
            g.finish(total, count, out)
        return kb.ptx()
    if spec.kind == "partial":
        part = kb.param_ptr("partials")
        params = g.params()
        n = kb.param("n", g.idx)
        shape = [kb.param(f"n{d}", g.idx) for d in range(spec.ndim)]
        strides = [[kb.param(f"s{k}_{d}", "s64") for d in range(spec.ndim)] if is_array else None
                   for k, (_, is_array) in enumerate(spec.args)]
        if spec.wide:
            start = kb.mad(kb.ctaid(), kb.ntid(), kb.cvt(kb.tid(), "u64"), mode="wide")
            step = kb.mul(kb.ntid(), kb.nctaid(), mode="wide")
        else:
            start = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
            step = kb.mul(kb.ntid(), kb.nctaid())
        acc = g.acc_var()

        def body(i):
            offs = [kb.mov(0, "s64") if s is not None else None for s in strides]
            g.unravel(i, shape, strides, offs)
            g.accumulate(acc, g.map_at(params, offs))

        g.strided_loop(start, n, step, body)
        total = g.block_reduce(acc)
        with kb.if_(kb.setp("eq", kb.tid(), 0)):
            arr = ArrayVal(T.ArrayType(spec.acc, 1, "C", "out"), "global", part, (), ())
            g.lw.store_element(arr, ("reg", kb.addr(part, kb.ctaid(), spec.acc.itemsize), 0), total)
        return kb.ptx()
    # rows
    out = kb.param_ptr("out")
    params = g.params()
    m = kb.param("m", g.idx)
    kdim = kb.param("k", g.idx)
    kshape = [kb.param(f"m{d}", g.idx) for d in range(spec.kept)]
    rshape = [kb.param(f"k{d}", g.idx) for d in range(spec.ndim)]
    nargs = len(spec.args)
    kstr = [[kb.param(f"ks{k}_{d}", "s64") for d in range(spec.kept)]
            if (k == nargs or spec.args[k][1]) else None for k in range(nargs + 1)]
    rstr = [[kb.param(f"rs{k}_{d}", "s64") for d in range(spec.ndim)] if is_array else None
            for k, (_, is_array) in enumerate(spec.args)]
    count = kb.param("count", "s64")
    if spec.kind == "cols":
        # one thread per output element, a serial loop over the reduced elements: neighbouring
        # threads read neighbouring elements when the kept innermost axis is contiguous
        if g.idx == "u32":
            first = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
            step = kb.mul(kb.ntid(), kb.nctaid())
        else:
            first = kb.mad(kb.ctaid(), kb.ntid(), kb.cvt(kb.tid(), "u64"), mode="wide")
            step = kb.mul(kb.ntid(), kb.nctaid(), mode="wide")

        def column(r):
            base = [kb.mov(0, "s64") if s is not None else None for s in kstr]
            g.unravel(r, kshape, kstr, base)
            acc = g.acc_var()

            def elem(i):
                offs = [kb.mov(base[k], "s64") if s is not None else None for k, s in enumerate(rstr)]
                g.unravel(i, rshape, rstr, offs)
                g.accumulate(acc, g.map_at(params, offs))

            g.strided_loop(kb.mov(0, g.idx), kdim, 1, elem)
            g.finish(Val(spec.acc, acc), count, kb.addr(out, base[-1], spec.out.itemsize))

        g.strided_loop(first, m, step, column)
        return kb.ptx()
    row0 = kb.ctaid() if g.idx == "u32" else kb.cvt(kb.ctaid(), "u64")
    rstep = kb.nctaid() if g.idx == "u32" else kb.cvt(kb.nctaid(), "u64")
    tid = kb.tid() if g.idx == "u32" else kb.cvt(kb.tid(), "u64")

    def row(r):
        base = [kb.mov(0, "s64") if s is not None else None for s in kstr]
        g.unravel(r, kshape, kstr, base)
        acc = g.acc_var()

        def elem(i):
            offs = [kb.mov(base[k], "s64") if s is not None else None for k, s in enumerate(rstr)]
            g.unravel(i, rshape, rstr, offs)
            g.accumulate(acc, g.map_at(params, offs))

        g.strided_loop(tid, kdim, THREADS, elem)
        total = g.block_reduce(acc)
        with kb.if_(kb.setp("eq", kb.tid(), 0)):
            g.finish(total, count, kb.addr(out, base[-1], spec.out.itemsize))
        kb.bar_sync(0)  # the shared partials are reused by the next row

    g.strided_loop(row0, m, rstep, row)
    return kb.ptx()


def _configurations(arch: str) -> list[ReductionSpec]:
    from .examples import reduction_configurations

    seen = reduction_configurations(arch)
    return seen + [s for s in list(_SEEN) if s.arch == arch and s not in seen]


registry.register_family(ReductionSpec.family, ReductionSpec, generate_reduction,
                         _configurations)


# -- host side ----------------------------------------------------------------------------------
def _info(func) -> FunctionInfo:
    from .kernel import DeviceFunction

    fn = func.__wrapped__ if isinstance(func, DeviceFunction) else func
    info = FunctionInfo(fn)
    _SOURCES[info.digest()] = info
    return info


def normalize_axis(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


class ReductionKernel:
    """A generated reduction (see the module docstring)."""

    def __init__(self, map, reduce, identity, *, post=None, name: str | None = None,
                 math: str = "precise") -> None:
        if not isinstance(identity, (bool, int, float, np.generic)):
            raise TypeError(f"reduction: identity={identity!r} must be a real scalar")
        self.map = _info(map)
        self.reduce = _info(reduce)
        self.post = _info(post) if post is not None else None
        self.identity = identity.item() if isinstance(identity, np.generic) else identity
        self.name = _ident(name or getattr(reduce, "__name__", "reduction"))
        self.math = math

    def types(self, arg_types: tuple, dtype, arch: str) -> tuple[T.ScalarType, T.ScalarType]:
        """(accumulator type, result type) for argument types ``arg_types``."""
        t_map = body_result(self.map, arg_types, self.math, arch)
        t0 = T.scalar_type(dtype) if dtype is not None else t_map
        acc = body_result(self.reduce, (t0, t0), self.math, arch) if dtype is None else t0
        if self.post is None:
            return acc, acc
        ct = acc if acc.kind == "f" else T.i64
        return acc, body_result(self.post, (acc, ct), self.math, arch)

    def __call__(self, *args, axis=None, keepdims: bool = False, out=None, dtype=None, stream=None):
        from oxicuda.driver.facts import device_facts
        from oxicuda.memory.array import DeviceArray, empty
        from oxicuda.ptx.target import device_arch

        n = len(self.map.params)
        if len(args) != n:
            raise TypeError(f"{self.name}() takes {n} arguments ({', '.join(self.map.params)}), "
                            f"{len(args)} given")
        if out is not None and not isinstance(out, DeviceArray):
            raise TypeError(f"{self.name}: out must be a DeviceArray, got {type(out).__name__}")
        if dtype is not None and not isinstance(dtype, T.ScalarType):
            dtype = np.dtype(dtype)
        opnds = gather(self.name, args, stream)
        facts = device_facts()
        arch = device_arch(facts.ordinal)
        shape = opnds.shape
        axes = normalize_axis(axis, len(shape))
        kept = [d for d in range(len(shape)) if d not in axes]
        res_shape = tuple(1 if d in axes else shape[d] for d in range(len(shape))) if keepdims \
            else tuple(shape[d] for d in kept)
        acc_t, res_t = self.types(opnds.types, dtype, arch)
        if out is not None:
            if tuple(out.shape) != res_shape:
                raise ValueError(f"{self.name}: out has shape {out.shape}; the result has shape {res_shape}")
            out_t = T.scalar_type(out.dtype)
            check_alias(self.name, out, opnds.arrays, shape)
        else:
            out_t = res_t
            out = empty(res_shape, out_t.dtype, stream=stream)
        m = int(np.prod([shape[d] for d in kept], dtype=np.int64)) if kept else 1
        k = int(np.prod([shape[d] for d in axes], dtype=np.int64)) if axes else 1
        if m == 0:
            return out
        arrays = [a for a in opnds.arrays if a is not None]
        bstr = [broadcast_strides(a, shape) for a in arrays]
        wide = m * max(k, 1) >= 2**31
        sig = tuple((t, a is not None) for t, a in zip(opnds.types, opnds.arrays))
        common = {"arch": arch, "math": self.math, "name": self.name, "map": self.map.digest(),
                      "reduce": self.reduce.digest(), "post": self.post.digest() if self.post else "",
                      "identity": self.identity, "args": sig, "acc": acc_t, "out": out_t, "wide": wide}
        if not kept:
            self._full(common, opnds, shape, bstr, k, out, facts, stream)
        else:
            self._rows(common, opnds, shape, bstr, kept, axes, m, k, out, keepdims, facts, stream)
        return out

    def _scalars_and_ptrs(self, opnds) -> list:
        it = iter(opnds.scalars)
        return [a.ptr if a is not None else next(it) for a in opnds.arrays]

    def _full(self, common, opnds, shape, bstr, k, out, facts, stream) -> None:
        dims, *strides = simplify(tuple(shape), *bstr) if shape else ((1,),) + tuple((0,) for _ in bstr)
        spec1 = ReductionSpec(kind="partial", ndim=len(dims), kept=0, **common)
        spec2 = ReductionSpec(kind="final", ndim=1, kept=0, **{**common, "wide": False})
        grid = max(1, min(-(-k // THREADS), facts.sm_count * 4))
        key = (facts.ordinal, spec1, grid)
        plan = _PLANS.get_or_build(key, lambda: _full_plan(spec1, spec2, grid))
        _SEEN.update((spec1, spec2))
        idx = np.uint64 if common["wide"] else np.uint32
        a1 = self._scalars_and_ptrs(opnds) + [idx(k)] + [idx(d) for d in dims]
        for s in strides:
            a1.extend(np.int64(x) for x in s)
        a2 = [out.ptr, np.uint32(grid), np.int64(k)]
        plan.run((), (tuple(a1), tuple(a2)), stream)

    def _rows(self, common, opnds, shape, bstr, kept, axes, m, k, out, keepdims, facts, stream) -> None:
        kshape = tuple(shape[d] for d in kept)
        rshape = tuple(shape[d] for d in axes)
        ostr = [s // out.itemsize for s in out.strides]
        if keepdims:
            ostr = [ostr[d] for d in kept]
        kparts = [tuple(s[d] for d in kept) for s in bstr] + [tuple(ostr)]
        rparts = [tuple(s[d] for d in axes) for s in bstr]
        kd, *kstrides = simplify(kshape, *kparts)
        if rshape:
            rd, *rstrides = simplify(rshape, *rparts)
        else:
            rd, rstrides = (1,), [(0,) for _ in rparts]
        # a block per output when the reduced elements are contiguous and many; a thread per
        # output when the outputs are contiguous in the inputs (reductions over leading axes)
        # or there are few elements to reduce
        inner_kept = all(s[-1] in (0, 1) for s in kstrides[:-1])
        inner_red = all(s[-1] in (0, 1) for s in rstrides)
        kind = "cols" if (k < 64 or (inner_kept and not inner_red)) and m >= 256 else "rows"
        spec = ReductionSpec(kind=kind, ndim=len(rd), kept=len(kd), **common)
        grid = (max(1, min(-(-m // THREADS), facts.sm_count * 8)) if kind == "cols"
                else max(1, min(m, facts.sm_count * 16)))
        plan = _PLANS.get_or_build((facts.ordinal, spec, grid), lambda: _rows_plan(spec, grid))
        _SEEN.add(spec)
        idx = np.uint64 if common["wide"] else np.uint32
        packed = [out.ptr] + self._scalars_and_ptrs(opnds) + [idx(m), idx(k)]
        packed += [idx(d) for d in kd] + [idx(d) for d in rd]
        for s in kstrides:
            packed.extend(np.int64(x) for x in s)
        for s in rstrides:
            packed.extend(np.int64(x) for x in s)
        packed.append(np.int64(k))
        plan.run((), packed, stream)


def _full_plan(spec1: ReductionSpec, spec2: ReductionSpec, grid: int) -> LaunchPlan:
    nbytes = -(-grid * spec1.acc.itemsize // 256) * 256
    s1 = KernelStep(spec1, grid, THREADS, lambda p, s, ws: (ws, *s[0]))
    s2 = KernelStep(spec2, 1, THREADS, lambda p, s, ws: (s[1][0], ws, *s[1][1:]))
    return LaunchPlan(f"jit_reduction {spec1.name}", [s1, s2], workspace_bytes=nbytes)


def _rows_plan(spec: ReductionSpec, grid: int) -> LaunchPlan:
    return LaunchPlan(f"jit_reduction {spec.name} rows",
                      [KernelStep(spec, grid, THREADS, lambda p, s, ws: s)])


def reduction(map, reduce, identity, *, post=None, name: str | None = None,
              math: str = "precise") -> ReductionKernel:
    """A ReductionKernel (see the module docstring)."""
    return ReductionKernel(map, reduce, identity, post=post, name=name, math=math)


__all__ = ["ReductionKernel", "ReductionSpec", "generate_reduction", "normalize_axis", "reduction"]
