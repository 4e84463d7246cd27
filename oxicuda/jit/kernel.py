"""``@oxicuda.kernel`` and ``@oxicuda.device``: Python functions compiled to PTX and launched.

A ``Kernel`` specializes per call signature (parameter types; for arrays dtype, ndim and order),
compiles each signature once through the kernel cache (``JitKernelSpec``: source digest,
signature, arch, math mode and checks are the key; with the package version in the disk key),
and launches with

    kern[grid, block](*args, shared_mem=0, stream=None)
    kern(*args, grid=..., block=..., shared_mem=0, stream=None)
    kern.forall(n)(*args)            # one thread per element, block size from occupancy

Arguments are checked against the signature before launch (TypeError/ValueError naming the
parameter); ``requires="len(a) == len(out)"`` is evaluated on the host over the arguments before
every launch. With checks on (``bounds_check=True``, the default), array indexing, integer
division by zero and ``assert`` record the first failure in a small device buffer; it is raised
as ``KernelError`` (Python file and line, thread, block, index and bound) by ``kern.check()``,
which synchronizes; on the emulator every launch checks at once (its launches are synchronous).
The failing thread returns; the context stays usable.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from oxicuda.memory.array import DeviceArray
from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.spec import KernelSpec

from . import intrinsics as I
from . import ops
from . import types as T
from .frontend import CompileError, FunctionInfo
from .lower import MAX_ROUNDS, ArrayVal, Lower, Site
from .ops import Val

ERR_BYTES = 48
_SOURCES: dict[str, FunctionInfo] = {}
_COMPILED: dict[KernelSpec, tuple[Site, ...]] = {}
_lock = threading.Lock()


class KernelError(RuntimeError):
    """A failure inside a checked kernel: ``kind``, ``filename``, ``line``, ``thread``,
    ``block``, ``index``, ``bound`` (the last two None where they do not apply)."""

    def __init__(self, kernel: str, kind: str, filename: str, line: int, text: str, thread: tuple, block: tuple,
                 index=None, bound=None) -> None:
        self.kernel = kernel
        self.kind = kind
        self.filename = filename
        self.line = line
        self.text = text
        self.thread = thread
        self.block = block
        self.index = index
        self.bound = bound
        extra = f": index {index}, bound {bound}" if bound is not None else ""
        super().__init__(f"{filename}:{line}: {kind}{extra} in kernel {kernel} "
                         f"(thread {thread}, block {block}) at `{text}`")

    def __reduce__(self):  # rebuilt from its fields (the default would call cls(message))
        return (type(self), (self.kernel, self.kind, self.filename, self.line, self.text, self.thread, self.block,
                             self.index, self.bound))


@dataclass(frozen=True)
class JitKernelSpec(KernelSpec):
    """One specialization of a Python kernel: function digest, parameter types, checks."""

    family: ClassVar[str] = "jit_kernel"
    name: str = "kernel"
    digest: str = ""
    signature: tuple = ()
    bounds_check: bool = True

    def kernel_name(self) -> str:
        return f"oxi_jit_{self.name}_{self.short_digest()}"


def declare_params(kb: KernelBuilder, lw: Lower, signature: tuple) -> list[object]:
    """The kernel parameters of ``signature`` declared on ``kb``: Vals for scalars and
    ArrayVals (pointer, shape, strides) for arrays, in order."""
    args: list[object] = []
    for k, t in enumerate(signature):
        if isinstance(t, T.ArrayType):
            ptr = kb.param_ptr(f"p{k}")
            shape = tuple(Val(T.i64, kb.param(f"p{k}_n{j}", "s64")) for j in range(t.ndim))
            if t.order == "C":
                strides = [ops.const(1)]
                for j in range(t.ndim - 1, 0, -1):
                    strides.append(ops.binary(lw, "*", strides[-1], shape[j]))
                strides = tuple(reversed(strides))
            else:
                strides = tuple(Val(T.i64, kb.param(f"p{k}_s{j}", "s64")) for j in range(t.ndim))
            args.append(ArrayVal(t, "global", ptr, shape, strides))
        else:
            mem = "u8" if t.kind == "b" else t.mem
            v = kb.param(f"p{k}", mem)
            if t.kind == "b":
                args.append(Val(t, kb.setp("ne", v, 0, type_="u32")))
            elif t.mem in ("s16", "u16"):
                args.append(Val(t, kb.cvt(v, t.reg)))
            else:
                args.append(Val(t, v))
    return args


def lower_kernel(info: FunctionInfo, spec: JitKernelSpec, body=None) -> tuple[str, tuple[Site, ...]]:
    """PTX of ``info`` for ``spec`` and its failure sites. ``body(lw, args)`` replaces the plain
    lowering of the function (the elementwise and reduction generators use it)."""
    slot_types: dict = {}
    for _ in range(MAX_ROUNDS):
        kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
        lw = Lower(kb, checks=spec.bounds_check, slot_types=slot_types, err_ptr=None)
        lw.scope = None
        args = declare_params(kb, lw, spec.signature)
        if spec.bounds_check:
            lw.err_ptr = kb.param_ptr("err")
        if body is None:
            lw.run_function(info, args)
        else:
            body(lw, args)
        lw.emit_failure_handlers()
        if not lw.restart:
            return kb.ptx(), tuple(lw.sites)
    raise CompileError(f"{info.filename}: {info.qualname}: the types of its variables did not settle "
                       f"after {MAX_ROUNDS} rounds; give the variables types (x = f32(0))")


def _generate(spec: JitKernelSpec) -> str:
    info = _SOURCES.get(spec.digest)
    if info is None:
        raise KeyError(f"jit kernel {spec.name} ({spec.digest}) is not defined in this process")
    text, sites = lower_kernel(info, spec)
    _COMPILED[spec] = sites
    return text


def _configurations(arch: str) -> list[JitKernelSpec]:
    """The example kernel's specialization and every one compiled in this process."""
    from .examples import kernel_configurations

    seen = kernel_configurations(arch)
    seen += [s for s in list(_COMPILED) if s.arch == arch and isinstance(s, JitKernelSpec)
             and s not in seen]
    return seen


registry.register_family(JitKernelSpec.family, JitKernelSpec, _generate, _configurations)


def sites_of(spec: KernelSpec, regenerate) -> tuple[Site, ...]:
    """The failure sites of a compiled spec (regenerated when its PTX came from the disk cache)."""
    sites = _COMPILED.get(spec)
    if sites is None:
        regenerate()
        sites = _COMPILED.get(spec, ())
    return sites


class ErrorBuffer:
    """The device record of the first failure of a checked kernel (``ERR_BYTES`` bytes)."""

    def __init__(self) -> None:
        from oxicuda.memory.array import zeros

        self.array = zeros(ERR_BYTES // 4, np.int32)
        self.ptr = self.array.ptr

    def take(self) -> np.ndarray | None:
        """The record if a failure happened (and the buffer cleared), else None."""
        raw = self.array.get()
        if raw[0] == 0:
            return None
        self.array.fill(0)
        return raw


def raise_failure(kernel: str, raw: np.ndarray, sites: tuple[Site, ...]) -> None:
    site_id = int(raw[1])
    site = sites[site_id - 1] if 0 < site_id <= len(sites) else Site("?", 0, "failure", "?")
    words = raw.view(np.int64)
    index, bound = int(words[4]), int(words[5])
    thread = tuple(int(x) for x in raw[2:5])
    block = tuple(int(x) for x in raw[5:8])
    if bound == -1 and index == -1:
        index = bound = None
    raise KernelError(kernel, site.kind, site.filename, site.line, site.text, thread, block, index, bound)


# -- argument signature -------------------------------------------------------------------------
def _arg_type(name: str, ann: object, value: object, kernel: str) -> object:
    from oxicuda.memory.array import DeviceArray

    if isinstance(ann, T.ArrayType) or (ann is None and isinstance(value, DeviceArray)):
        if not isinstance(value, DeviceArray):
            hint = " (copy it with oxicuda.asarray first)" if isinstance(value, np.ndarray) else ""
            raise TypeError(f"{kernel}: argument {name!r} must be a device array, got "
                            f"{type(value).__name__}{hint}")
        st = T.scalar_type(value.dtype) if value.dtype.kind != "c" else None
        if st is None:
            raise TypeError(f"{kernel}: argument {name!r} has dtype {value.dtype}; kernels take "
                            "real and bool dtypes")
        if isinstance(ann, T.ArrayType):
            if st is not ann.dtype:
                raise TypeError(f"{kernel}: argument {name!r} has dtype {value.dtype}; the kernel "
                                f"declares {ann!r} ({ann.dtype.dtype})")
            if ann.ndim is not None and ann.ndim != value.ndim:
                raise ValueError(f"{kernel}: argument {name!r} has {value.ndim} dimensions; the "
                                 f"kernel declares {ann.ndim}")
            access = ann.access
        else:
            access = "rw"
        if value.ndim == 0:
            raise ValueError(f"{kernel}: argument {name!r} is a 0-d array; pass a scalar or reshape(1)")
        order = "C" if value.is_c_contiguous else "A"
        if isinstance(ann, T.ArrayType) and ann.order == "C" and order != "C":
            raise ValueError(f"{kernel}: argument {name!r} must be C-contiguous (declared order 'C')")
        if isinstance(ann, T.ArrayType) and ann.order == "A":
            order = "A"
        if any(s % value.itemsize for s in value.strides):
            raise ValueError(f"{kernel}: argument {name!r} has strides {value.strides} that are not "
                             f"multiples of its itemsize {value.itemsize}")
        return T.ArrayType(st, value.ndim, order, access)
    if isinstance(value, DeviceArray):
        raise TypeError(f"{kernel}: argument {name!r} is a device array; the kernel declares {ann!r}")
    if ann is not None:
        st = T.scalar_type(ann)
        if isinstance(value, (bool, int, float, np.generic)):
            if st.kind in "iu" and isinstance(value, (float, np.floating)):
                raise TypeError(f"{kernel}: argument {name!r} = {value!r} is a float; the kernel "
                                f"declares {st.name}")
            if st.kind in "iu" and not isinstance(value, (bool, np.bool_)):
                info = np.iinfo(st.dtype)
                if not info.min <= int(value) <= info.max:
                    raise ValueError(f"{kernel}: argument {name!r} = {value} is out of range for "
                                     f"{st.name} ({info.min}..{info.max})")
            return st
        raise TypeError(f"{kernel}: argument {name!r} = {value!r} is not a scalar ({st.name})")
    if isinstance(value, (bool, np.bool_)):
        return T.bool_
    if isinstance(value, int):
        return T.i64
    if isinstance(value, float):
        return T.f64
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return T.scalar_type(value.dtype)
    raise TypeError(f"{kernel}: argument {name!r} of type {type(value).__name__} is not a device "
                    "array or a real scalar")


def make_packer(signature: tuple, err_ptr: int | None):
    """``pack(values) -> list`` of the launch arguments of ``signature`` (built once per
    specialization: the hot path is one loop over precomputed kinds; the driver's packer converts
    and range-checks the numbers)."""
    kinds = tuple((1 if t.order == "C" else 2) if isinstance(t, T.ArrayType)
                  else (3 if t.kind == "b" else 0) for t in signature)
    tail = [err_ptr] if err_ptr is not None else []

    def pack(values: tuple) -> list[object]:
        out: list[object] = []
        for kind, v in zip(kinds, values):
            if kind == 0:
                out.append(v)
            elif kind == 1:
                out.append(v.ptr)
                out.extend(v.shape)
            elif kind == 2:
                out.append(v.ptr)
                out.extend(v.shape)
                item = v.itemsize
                out.extend(s // item for s in v.strides)
            else:
                out.append(1 if v else 0)
        out.extend(tail)
        return out

    return pack


def pack_args(signature: tuple, values: tuple) -> list[object]:
    """The launch arguments of ``values`` for ``signature`` (without the error buffer)."""
    return make_packer(signature, None)(values)


class Specialization:
    """One compiled signature: the loaded function, its spec, its error buffer."""

    __slots__ = ("errors", "function", "pack", "regenerate", "signature", "sites", "spec",
                 "sync_check")

    def __init__(self, spec: JitKernelSpec, signature: tuple, regenerate) -> None:
        from oxicuda.ptx.cache import load

        self.spec = spec
        self.signature = signature
        self.function = load(spec)
        self.errors = ErrorBuffer() if spec.bounds_check else None
        self.sites = None
        self.regenerate = regenerate
        self.pack = make_packer(signature, self.errors.ptr if self.errors is not None else None)
        # the emulator's launches are synchronous: check each one at once
        self.sync_check = self.errors is not None and _backend_is_emulator()

    def check(self, name: str) -> None:
        if self.errors is None:
            return
        raw = self.errors.take()
        if raw is not None:
            if self.sites is None:
                self.sites = sites_of(self.spec, self.regenerate)
            raise_failure(name, raw, self.sites)


def _backend_is_emulator() -> bool:
    from oxicuda.driver.backend import get_backend

    return get_backend() == "emulator"


class Kernel:
    """A Python function compiled to PTX per signature (see the module docstring)."""

    def __init__(self, fn, *, math: str = "precise", bounds_check: bool = True,
                 requires: str | None = None, name: str | None = None) -> None:
        if math not in ("precise", "fast"):
            raise ValueError(f"@kernel: math={math!r}; allowed 'precise', 'fast'")
        self.info = FunctionInfo(fn)
        self.__wrapped__ = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.math = math
        self.bounds_check = bool(bounds_check)
        self.name = name or fn.__name__
        self.requires = requires
        self._requires_code = compile(requires, f"<requires of {self.name}>", "eval") if requires else None
        self._annotations = {p: _annotation(self.info, p, a) for p, a in self.info.annotations().items()}
        self._specs: dict[tuple, Specialization] = {}
        self._launchers: dict[tuple, _Launcher] = {}
        self._last: list[Specialization] = []
        _SOURCES[self.info.digest()] = self.info
        _ALL_KERNELS.add(self)

    # -- compilation ----------------------------------------------------------------------------
    def signature_of(self, args: tuple) -> tuple:
        params = self.info.params
        if len(args) != len(params):
            raise TypeError(f"{self.name}() takes {len(params)} arguments ({', '.join(params)}), "
                            f"{len(args)} given")
        return tuple(_arg_type(p, self._annotations[p], a, self.name) for p, a in zip(params, args))

    def specialize(self, signature: tuple, arch: str | None = None) -> JitKernelSpec:
        from oxicuda.driver.facts import device_facts
        from oxicuda.ptx.target import device_arch

        if arch is None:
            arch = device_arch(device_facts().ordinal)
        return JitKernelSpec(arch=arch, math=self.math, name=self.name, digest=self.info.digest(),
                             signature=signature, bounds_check=self.bounds_check)

    def ptx(self, *args: object, signature: tuple | None = None, arch: str | None = None) -> str:
        """The PTX text of the specialization for ``args`` (or an explicit ``signature``)."""
        sig = signature if signature is not None else self.signature_of(args)
        spec = self.specialize(sig, arch)
        text, sites = lower_kernel(self.info, spec)
        _COMPILED[spec] = sites
        return text

    def _specialization(self, args: tuple) -> Specialization:
        key = tuple(_fast_key(a) for a in args)
        sp = self._specs.get(key)
        if sp is None:
            sig = self.signature_of(args)
            spec = self.specialize(sig)
            sp = Specialization(spec, sig, lambda: _generate(spec))
            self._specs[key] = sp
        return sp

    # -- launch ---------------------------------------------------------------------------------
    def __getitem__(self, config: tuple) -> _Launcher:
        launcher = self._launchers.get(config)
        if launcher is None:
            if not (isinstance(config, tuple) and len(config) in (2, 3, 4)):
                raise TypeError(f"{self.name}[grid, block] (or [grid, block, stream, shared_mem]), "
                                f"got [{config!r}]")
            launcher = _Launcher(self, *config)
            self._launchers[config] = launcher
        return launcher

    def __call__(self, *args: object, grid=None, block=None, shared_mem: int = 0, stream=None) -> None:
        if grid is None or block is None:
            raise TypeError(f"{self.name}(...) needs grid= and block= (or kern[grid, block](...), "
                            "or kern.forall(n)(...))")
        self.launch(grid, block, args, shared_mem, stream)

    def forall(self, n: int, stream=None) -> _Launcher:
        """A launcher of ``ceil(n / block)`` blocks, the block size from occupancy (the largest
        of 256 and 128 that fits a full SM)."""
        n = int(n)
        if n < 0:
            raise ValueError(f"{self.name}.forall(n): n={n} must be >= 0")
        return _ForAll(self, n, stream)

    def launch(self, grid, block, args: tuple, shared_mem: int = 0, stream=None) -> None:
        sp = self._specialization(args)
        if self._requires_code is not None:
            self._check_requires(args)
        sp.function(grid, block, sp.pack(args), shared_mem, stream)
        if sp.errors is not None:
            if sp.sync_check:
                sp.check(self.name)
            elif sp not in self._last:
                self._last.append(sp)

    def _check_requires(self, args: tuple) -> None:
        env = dict(zip(self.info.params, args))
        try:
            ok = eval(self._requires_code, {"__builtins__": _REQUIRES_BUILTINS}, env)
        except Exception as exc:  # the user's expression may raise anything
            raise ValueError(f"{self.name}: precondition `{self.requires}` could not be evaluated: "
                             f"{type(exc).__name__}: {exc}") from None
        if not ok:
            shapes = ", ".join(f"{p}.shape={getattr(a, 'shape', None)}" if hasattr(a, "shape")
                               else f"{p}={a!r}" for p, a in env.items())
            raise ValueError(f"{self.name}: precondition `{self.requires}` failed ({shapes})")

    def check(self) -> None:
        """Synchronize and raise KernelError if a checked launch of this kernel failed."""
        from oxicuda.driver.device import synchronize

        synchronize()
        pending, self._last = self._last, []
        for sp in pending or list(self._specs.values()):
            sp.check(self.name)

    @property
    def specializations(self) -> list[JitKernelSpec]:
        return [sp.spec for sp in self._specs.values()]

    def __repr__(self) -> str:
        return f"<oxicuda.kernel {self.info.qualname} ({len(self._specs)} specializations)>"


_REQUIRES_BUILTINS = {"len": len, "min": min, "max": max, "abs": abs, "all": all, "any": any,
                      "isinstance": isinstance, "int": int, "float": float}


def _fast_key(a: object) -> object:
    t = type(a)
    if t is int or t is float or t is bool:
        return t
    if isinstance(a, DeviceArray):
        return (a.dtype, a.ndim, a.is_c_contiguous, a.device)
    if isinstance(a, np.generic):
        return a.dtype
    return (t, id(a))


def _annotation(info: FunctionInfo, name: str, ann: object) -> object:
    if ann is None:
        return None
    if isinstance(ann, T.ArrayType):
        return ann
    try:
        return T.scalar_type(ann)
    except TypeError:
        raise CompileError(f"{info.filename}: parameter {name!r} of {info.qualname} has annotation "
                           f"{ann!r}; use a scalar type (f32, i64, ...) or Array/In/Out[...]") from None


class _Launcher:
    __slots__ = ("block", "grid", "kernel", "shared_mem", "stream")

    def __init__(self, kernel: Kernel, grid, block, stream=None, shared_mem: int = 0) -> None:
        self.kernel = kernel
        self.grid = grid
        self.block = block
        self.stream = stream
        self.shared_mem = shared_mem

    def __call__(self, *args: object, shared_mem: int | None = None, stream=None) -> None:
        self.kernel.launch(self.grid, self.block, args,
                           self.shared_mem if shared_mem is None else shared_mem,
                           self.stream if stream is None else stream)


class _ForAll:
    def __init__(self, kernel: Kernel, n: int, stream) -> None:
        self.kernel, self.n, self.stream = kernel, n, stream

    def __call__(self, *args: object) -> None:
        if self.n == 0:
            return
        sp = self.kernel._specialization(args)
        block = 256
        try:
            if sp.function.max_active_blocks_per_sm(256) < 1:
                block = 128
        except Exception:  # occupancy is advice; 256 is always valid
            block = 256
        self.kernel.launch(-(-self.n // block), block, args, 0, self.stream)


class DeviceFunction:
    """A function inlined into the kernels that call it; callable from Python as itself."""

    def __init__(self, fn) -> None:
        self.info = FunctionInfo(fn)
        self.__wrapped__ = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    def __call__(self, *args: object) -> object:
        return self.__wrapped__(*args)

    def __repr__(self) -> str:
        return f"<oxicuda.device {self.info.qualname}>"


class KernelDecorator:
    """``@oxicuda.kernel`` / ``@oxicuda.kernel(math="fast", bounds_check=False, requires=...)``;
    ``oxicuda.kernel.grid(ndim)`` and ``.gridsize(ndim)`` inside kernels."""

    grid = I.grid
    gridsize = I.gridsize

    def __call__(self, fn=None, **options):
        if fn is None:
            return lambda f: Kernel(f, **options)
        return Kernel(fn, **options)

    def __repr__(self) -> str:
        return "<oxicuda.kernel decorator>"


kernel = KernelDecorator()


def device(fn):
    """``@oxicuda.device``: a helper inlined into kernels (and plain Python outside them)."""
    return DeviceFunction(fn)


def check() -> None:
    """Synchronize and raise the first KernelError of any checked launch not yet checked."""
    from oxicuda.driver.device import synchronize

    synchronize()
    for k in _ALL_KERNELS:
        k.check()


_ALL_KERNELS: weakref.WeakSet = weakref.WeakSet()
_ = ops
