"""``oxicuda.elementwise(func)``: a scalar Python function mapped over broadcast arrays.

``ek = oxicuda.elementwise(lambda x, y: x * 2 + y)`` (a ``def`` works too; the body is the
``@oxicuda.kernel`` language, typed from the argument dtypes), then
``ek(*args, out=None, dtype=None, stream=None) -> DeviceArray``. Arrays broadcast with numpy's
rules, Python scalars are weak (see ``oxicuda.jit.operands``); the result is cast to
``out.dtype``, else ``dtype``, else it has the body's result type. ``out`` may be an input
exactly (in place), never a partial overlap (ValueError).

Kernel family ``jit_elementwise`` (``ElementwiseSpec``): one kernel per (function digest,
argument types with array/scalar kind, out dtype, layout, ndim, index width, arch, math mode).
Layouts: ``contig`` (every array C-contiguous with the output's shape: one flat index, a
grid-stride loop) and ``strided`` (the simplified broadcast shape and per-operand element
strides, 0 on broadcast axes and negative allowed, as parameters).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from oxicuda.memory.copy_kernels import simplify
from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from oxicuda.ptx.spec import KernelSpec

from . import ops
from . import types as T
from .frontend import CompileError, FunctionInfo
from .lower import MAX_ROUNDS, ArrayVal, Lower
from .operands import body_result, broadcast_strides, call_body, check_alias, gather
from .ops import Val

THREADS = 256
_SOURCES: dict[str, FunctionInfo] = {}
_PLANS = PlanCache("jit_elementwise", maxsize=2048)
_SEEN: set = set()


@dataclass(frozen=True)
class ElementwiseSpec(KernelSpec):
    """One generated elementwise kernel (see the module docstring)."""

    family: ClassVar[str] = "jit_elementwise"
    name: str = "elementwise"
    digest: str = ""
    args: tuple = ()          # (ScalarType, is_array) per argument
    out: T.ScalarType = T.f32
    layout: str = "contig"
    ndim: int = 1
    wide: bool = False
    vec: int = 1              # contig: elements per vector access (16 bytes at most)

    def kernel_name(self) -> str:
        return f"oxi_jit_elementwise_{self.name}_{self.short_digest()}"


def generate_elementwise(spec: ElementwiseSpec) -> str:
    """PTX of one spec. Parameters: ``out``, then per argument a pointer or a scalar; ``n``
    (elements); for ``strided``: the shape (outermost first) and per array and out the element
    strides."""
    slot_types: dict = {}
    for _ in range(MAX_ROUNDS):
        text, restart = _generate_once(spec, slot_types)
        if not restart:
            return text
    raise CompileError(f"{spec.name}: the types of its variables did not settle")


def _generate_once(spec: ElementwiseSpec, slot_types: dict) -> tuple[str, bool]:
    info = _SOURCES[spec.digest]
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(THREADS)
    lw = Lower(kb, checks=False, slot_types=slot_types, err_ptr=None)
    idx = "u64" if spec.wide else "u32"
    out_ptr = kb.param_ptr("out")
    params = []
    for k, (st, is_array) in enumerate(spec.args):
        if is_array:
            params.append(kb.param_ptr(f"a{k}"))
        else:
            mem = "u8" if st.kind == "b" else st.mem
            v = kb.param(f"a{k}", mem)
            if st.kind == "b":
                v = kb.setp("ne", v, 0, type_="u32")
            elif st.mem in ("s16", "u16"):
                v = kb.cvt(v, st.reg)
            params.append(Val(st, v))
    n = kb.param("n", idx)
    shape, strides = [], []
    if spec.layout == "strided":
        shape = [kb.param(f"n{d}", idx) for d in range(spec.ndim)]
        for k in range(len(spec.args) + 1):
            if k == len(spec.args) or spec.args[k][1]:
                strides.append([kb.param(f"s{k}_{d}", "s64") for d in range(spec.ndim)])
            else:
                strides.append(None)
    if spec.wide:
        i = kb.mad(kb.ctaid(), kb.ntid(), kb.cvt(kb.tid(), "u64"), mode="wide")
        step = kb.mul(kb.ntid(), kb.nctaid(), mode="wide")
    else:
        i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
        step = kb.mul(kb.ntid(), kb.nctaid())
    if spec.vec > 1:
        _vector_loop(kb, lw, info, spec, params, out_ptr, i, step, idx)
    top = kb.label("ew_loop")
    kb.bra("$L_ew_end", kb.setp("ge", i, n))
    if spec.layout == "strided":
        offs = [kb.mov(0, "s64") if s is not None else None for s in strides]
        rem = i
        for d in range(spec.ndim - 1, -1, -1):
            if d:
                q = kb.div(rem, shape[d])
                r = kb.sub(rem, kb.mul(q, shape[d]))
            else:
                q, r = None, rem
            r64 = kb.cvt(r, "s64") if idx == "u32" else kb.bitcast(r, "s64")
            for k, s in enumerate(strides):
                if s is not None:
                    kb.mad(r64, s[d], offs[k], out=offs[k])
            rem = q
    args = []
    for k, (st, is_array) in enumerate(spec.args):
        if not is_array:
            args.append(params[k])
            continue
        if spec.layout == "strided":
            addr = kb.addr(params[k], offs[k], st.itemsize)
        else:
            addr = kb.addr(params[k], i, st.itemsize)
        arr = ArrayVal(T.ArrayType(st, 1, "C", "in"), "global", params[k], (), ())
        args.append(lw.load_element(arr, ("reg", addr, 0)))
    r = call_body(lw, info, args)
    oaddr = kb.addr(out_ptr, offs[-1] if spec.layout == "strided" else i, spec.out.itemsize)
    out_arr = ArrayVal(T.ArrayType(spec.out, 1, "C", "out"), "global", out_ptr, (), ())
    lw.store_element(out_arr, ("reg", oaddr, 0), r)
    kb.add(i, step, out=i)
    kb.bra(top)
    kb.label("ew_end")
    return kb.ptx(), lw.restart


def _vector_loop(kb, lw, info, spec, params, out_ptr, i, step, idx) -> None:
    """The aligned body of a contiguous call, ``vec`` elements per thread and access; leaves
    ``i`` at the first element of the scalar tail."""
    v = spec.vec
    nv = kb.param("nv", idx)
    iv = kb.mov(i, idx)
    top = kb.label("ew_vloop")
    kb.bra("$L_ew_vend", kb.setp("ge", iv, nv))
    lanes: list[list] = [[] for _ in range(v)]
    for k, (st, is_array) in enumerate(spec.args):
        if not is_array:
            for lane in lanes:
                lane.append(params[k])
            continue
        addr = kb.addr(params[k], iv, v * st.itemsize)
        regs = kb.ld("global", "u8" if st.kind == "b" else st.mem, addr, vec=v, nc=True)
        for j, r in enumerate(regs):
            if st.kind == "b":
                lanes[j].append(Val(st, kb.setp("ne", r, 0, type_="u32")))
            elif st.mem in ("s16", "u16"):
                lanes[j].append(Val(st, kb.cvt(r, st.reg)))
            else:
                lanes[j].append(Val(st, r))
    out_t = spec.out
    values = []
    for lane in lanes:
        c = ops.cast(kb, call_body(lw, info, lane), out_t)
        if out_t.kind == "b":
            values.append(kb.selp(1, 0, ops.materialize(kb, c), type_="u32"))
        elif c.const:
            values.append(kb.mov(ops.operand(kb, c, out_t), out_t.reg)
                          if out_t.bits != 16 or out_t.kind != "f" else ops.materialize(kb, c))
        elif out_t.mem in ("s16", "u16"):
            values.append(kb.cvt(c.v, out_t.mem))
        else:
            values.append(c.v)
    kb.st("global", kb.addr(out_ptr, iv, v * out_t.itemsize), tuple(values),
          type_="u8" if out_t.kind == "b" else out_t.mem)
    kb.add(iv, step, out=iv)
    kb.bra(top)
    kb.label("ew_vend")
    kb.add(i, kb.mul(nv, v, type_=idx), out=i)


def _configurations(arch: str) -> list[ElementwiseSpec]:
    from .examples import elementwise_configurations

    seen = elementwise_configurations(arch)
    return seen + [s for s in list(_SEEN) if s.arch == arch and s not in seen]


registry.register_family(ElementwiseSpec.family, ElementwiseSpec, generate_elementwise,
                         _configurations)


def _grid(n: int, facts) -> int:
    return max(1, min(-(-n // THREADS), facts.sm_count * 8))


class ElementwiseKernel:
    """A scalar function mapped over broadcast arrays (see the module docstring)."""

    def __init__(self, func, *, name: str | None = None, math: str = "precise") -> None:
        from .kernel import DeviceFunction

        fn = func.__wrapped__ if isinstance(func, DeviceFunction) else func
        if math not in ("precise", "fast"):
            raise ValueError(f"elementwise: math={math!r}; allowed 'precise', 'fast'")
        self.info = FunctionInfo(fn)
        self.name = _ident(name or fn.__name__)
        self.math = math
        _SOURCES[self.info.digest()] = self.info

    def result_type(self, *types: T.ScalarType, arch: str = "sm_86") -> T.ScalarType:
        """The body's result type for argument types ``types``."""
        return body_result(self.info, tuple(types), self.math, arch)

    def __call__(self, *args, out=None, dtype=None, stream=None):
        from oxicuda.driver.facts import device_facts
        from oxicuda.memory.array import DeviceArray, empty
        from oxicuda.ptx.target import device_arch

        nparams = len(self.info.params)
        if len(args) != nparams:
            raise TypeError(f"{self.name}() takes {nparams} arguments "
                            f"({', '.join(self.info.params)}), {len(args)} given")
        if out is not None and not isinstance(out, DeviceArray):
            raise TypeError(f"{self.name}: out must be a DeviceArray, got {type(out).__name__}")
        if stream is None and out is not None:
            stream = out.stream or None
        opnds = gather(self.name, args, stream)
        facts = device_facts()
        arch = device_arch(facts.ordinal)
        shape = opnds.shape
        if out is not None:
            try:
                full = np.broadcast_shapes(shape, out.shape)
            except ValueError:
                full = None
            if full != tuple(out.shape):
                raise ValueError(f"{self.name}: out has shape {out.shape}; the operands broadcast "
                                 f"to {shape}")
            shape = tuple(out.shape)
            if out.readonly:
                raise ValueError(f"{self.name}: out is read-only")
            out_t = T.scalar_type(out.dtype)
        elif dtype is not None:
            out_t = T.scalar_type(np.dtype(dtype) if not isinstance(dtype, T.ScalarType) else dtype)
        else:
            out_t = body_result(self.info, opnds.types, self.math, arch)
        if out is None:
            out = empty(shape, out_t.dtype, stream=stream)
        else:
            check_alias(self.name, out, opnds.arrays, shape)
        size = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if size == 0:
            return out
        self._launch(opnds, out, out_t, shape, size, facts, arch, stream)
        return out

    def _launch(self, opnds, out, out_t, shape, size, facts, arch, stream) -> None:
        arrays = [a for a in opnds.arrays if a is not None]
        contig = out.is_c_contiguous and all(a.is_c_contiguous and tuple(a.shape) == tuple(shape)
                                             for a in arrays)
        wide = size >= 2**31
        sig = tuple((t, a is not None) for t, a in zip(opnds.types, opnds.arrays))
        vec = 1
        if contig:
            layout, dims, strides = "contig", (), ()
            sizes = {a.itemsize for a in arrays} | {out.itemsize}
            if len(sizes) == 1:
                (item,) = sizes
                v = min(4, 16 // item) if item <= 8 else 1
                if v > 1 and size >= v * THREADS and all(
                        p % (v * item) == 0 for p in [out.ptr, *(a.ptr for a in arrays)]):
                    vec = v
        else:
            bstrides = [broadcast_strides(a, shape) for a in arrays]
            ostr = tuple(s // out.itemsize for s in out.strides)
            dims, *strides = simplify(tuple(shape), *bstrides, ostr)
            layout = "strided"
        spec = ElementwiseSpec(arch=arch, math=self.math, name=self.name, digest=self.info.digest(),
                               args=sig, out=out_t, layout=layout, ndim=max(1, len(dims)), wide=wide,
                               vec=vec)
        grid = _grid(size, facts)
        plan = _PLANS.get_or_build((facts.ordinal, spec, grid), lambda: _plan(spec, grid))
        _SEEN.add(spec)
        idx = np.uint64 if wide else np.uint32
        packed: list = [out.ptr]
        it = iter(opnds.scalars)
        for a in opnds.arrays:
            packed.append(a.ptr if a is not None else next(it))
        packed.append(idx(size))
        if vec > 1:
            packed.append(idx(size // vec))
        if layout == "strided":
            packed.extend(idx(d) for d in dims)
            for s in strides[:-1]:
                packed.extend(np.int64(x) for x in s)
            packed.extend(np.int64(x) for x in strides[-1])
        plan.run((), packed, stream)


def _plan(spec: ElementwiseSpec, grid: int) -> LaunchPlan:
    step = KernelStep(spec, grid, THREADS, lambda p, s, ws: s)
    return LaunchPlan(f"jit_elementwise {spec.name}", [step])


def _ident(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else f"f_{out}"


def elementwise(func, *, name: str | None = None, math: str = "precise") -> ElementwiseKernel:
    """An ElementwiseKernel of the scalar function ``func`` (see the module docstring)."""
    return ElementwiseKernel(func, name=name, math=math)


__all__ = ["ElementwiseKernel", "ElementwiseSpec", "elementwise", "generate_elementwise"]
_ = ops
