"""Parameters, loads and stores, shared memory and address-space conversion for ``KernelBuilder``."""

from __future__ import annotations

from collections.abc import Sequence

from . import ir
from .builder_base import (
    _IDENT,
    SHARED_OPTIN_LIMIT,
    STATIC_SHARED_LIMIT,
    Address,
    BuilderBase,
    Operandish,
    ParamArray,
    SharedArray,
    Value,
)
from .types import ptx_type

SPACES = ("global", "shared", "local", "param", "const")
LOAD_CACHE_OPS = ("ca", "cg", "cs", "lu", "cv")
STORE_CACHE_OPS = ("wb", "cg", "cs", "wt")
# memory-model orderings of ld/st (sm_70, PTX 6.0). A cache operator is only a hint on a weak
# access: ptxas may delete a spin loop over ``ld.cv`` whose value feeds nothing but the loop's
# branch (it did, in the SpTRSV wait on the H200). Flags other CTAs write need one of these.
LOAD_SEMS = ("volatile", "relaxed", "acquire")
STORE_SEMS = ("volatile", "relaxed", "release")
SCOPES = ("cta", "cluster", "gpu", "sys")
# sub-word loads land widened in a 32-bit register (PTX zero/sign-extends them)
_WIDENED = {"u8": "u32", "s8": "s32", "b8": "u32"}
# ld/st have no half, packed-half or tf32 types: they move those as bits
_MEMORY_TYPE = {"f16": "b16", "bf16": "b16", "f16x2": "b32", "bf16x2": "b32", "tf32": "b32"}


class MemoryMixin(BuilderBase):
    # -- parameters -----------------------------------------------------------------------------
    def _add_param(self, p: ir.Param) -> None:
        if not _IDENT.match(p.name):
            raise ValueError(f"param name {p.name!r} is not a PTX identifier")
        if p.name in self._param_names:
            raise ValueError(f"param {p.name!r} declared twice in kernel {self.name!r}")
        self._param_names.add(p.name)
        self._params.append(p)

    def param(self, name: str, type_: str) -> Value:
        """Declare a by-value scalar parameter and return its value (``ld.param``)."""
        t = ptx_type(type_)
        if t.kind == "pred" or t.bits < 8 or t.name in ("tf32",):
            raise TypeError(f"param {name!r}: .{t.name} cannot be a kernel parameter")
        self._add_param(ir.Param(t.name, name))
        d = self._dst(_WIDENED.get(t.name, t.name), None, "param")
        self._emit(
            "ld", ("param", _MEMORY_TYPE.get(t.name, t.name)), (d.reg, ir.Addr(ir.Sym(name)))
        )
        return d

    def param_ptr(self, name: str) -> Value:
        """Declare a pointer parameter (``.u64``) and return it as a global address (u64)."""
        raw = self.param(name, "u64")
        d = self._dst("u64", None, "param_ptr")
        self._emit("cvta", ("to", "global", "u64"), (d.reg, raw.reg))
        return d

    def param_array(self, name: str, size: int = 128, align: int = 64) -> ParamArray:
        """Declare a by-value ``.b8`` array parameter (a 128-byte, 64-aligned CUtensorMap)."""
        if size <= 0 or align <= 0 or align & (align - 1):
            raise ValueError(
                f"param_array {name!r}: size={size}, align={align}; need size > 0, align a power of 2"
            )
        self._add_param(ir.Param("b8", name, align=align, size=size))
        return ParamArray(name, size, align)

    def param_address(self, p: ParamArray) -> Value:
        """The generic (u64) address of a by-value array parameter (``cvta.param``, PTX 7.7)."""
        self._require("cvta.param", 70, ptx="7.7")
        raw = self._dst("u64", None, "param_address")
        self._emit("mov", ("u64",), (raw.reg, ir.Sym(p.name)))
        d = self._dst("u64", None, "param_address")
        self._emit("cvta", ("param", "u64"), (d.reg, raw.reg))
        return d

    # -- shared memory --------------------------------------------------------------------------
    def shared(self, name: str, type_: str, count: int, align: int = 16) -> SharedArray:
        """A static ``.shared`` array of ``count`` elements; total static shared must fit 48 KB."""
        t = ptx_type(type_)
        if not _IDENT.match(name):
            raise ValueError(f"shared array name {name!r} is not a PTX identifier")
        if count <= 0:
            raise ValueError(f"shared {name!r}: count={count}; must be positive")
        if align < t.nbytes or align & (align - 1):
            raise ValueError(f"shared {name!r}: align={align}; a power of 2 >= {t.nbytes}")
        arr = SharedArray(name, t.name, count, align)
        static = sum(a.nbytes for a in self._shared) + arr.nbytes
        if static > STATIC_SHARED_LIMIT:
            raise ValueError(
                f"shared {name!r}: static shared memory would be {static} bytes; the limit is "
                f"{STATIC_SHARED_LIMIT} (48 KB); use dynamic_shared for more"
            )
        self._check_shared_total(static, self._dynamic_shared_bytes, name)
        self._shared.append(arr)
        return arr

    def dynamic_shared(self, name: str, max_bytes: int, align: int = 16) -> SharedArray:
        """The kernel's one ``.extern .shared`` array; ``max_bytes`` is what launches will ask for
        and is checked against the arch's opt-in limit (sm_86: 101376, sm_90: 232448)."""
        if self._dynamic_shared is not None:
            raise ValueError(
                f"dynamic_shared {name!r}: kernel already has {self._dynamic_shared.name!r}"
            )
        if not _IDENT.match(name):
            raise ValueError(f"dynamic shared name {name!r} is not a PTX identifier")
        static = sum(a.nbytes for a in self._shared)
        self._check_shared_total(static, max_bytes, name)
        self._dynamic_shared = SharedArray(name, "b8", 0, align, dynamic=True)
        self._dynamic_shared_bytes = max_bytes
        return self._dynamic_shared

    def _check_shared_total(self, static: int, dynamic: int, name: str) -> None:
        limit = SHARED_OPTIN_LIMIT.get(
            self.sm, SHARED_OPTIN_LIMIT[max(k for k in SHARED_OPTIN_LIMIT if k <= self.sm)]
        )
        if static + dynamic > limit:
            raise ValueError(
                f"shared {name!r}: {static} static + {dynamic} dynamic = {static + dynamic} bytes of shared "
                f"memory; {self.arch} allows at most {limit} per block"
            )

    @property
    def shared_bytes(self) -> int:
        """Static plus declared dynamic shared memory of the kernel, in bytes."""
        return sum(a.nbytes for a in self._shared) + self._dynamic_shared_bytes

    def shared_addr(self, arr: SharedArray, byte_offset: Operandish = 0) -> Value:
        """The ``.shared``-window address (u32) of ``arr`` plus ``byte_offset``."""
        d = self._dst("u32", None, "shared_addr")
        self._emit("mov", ("u32",), (d.reg, ir.Sym(arr.name)))
        if isinstance(byte_offset, int) and byte_offset == 0:
            return d
        return self.add(d, byte_offset, type_="u32")

    def cvta(self, space: str, v: Value, to_generic: bool = True) -> Value:
        """Convert between a ``space`` address and a generic one. Shared-window addresses are u32
        on our side: ``cvta.to.shared`` returns u32, ``cvta.shared`` takes u32 or u64."""
        if space not in ("global", "shared", "local", "const", "param"):
            raise ValueError(f"cvta: space={space!r}")
        self._check_value(v, "cvta")
        if to_generic:
            src = v if v.ptype.bits == 64 else self.cvt(v, "u64", type_="u32")
            d = self._dst("u64", None, "cvta")
            self._emit("cvta", (space, "u64"), (d.reg, self._src(src, "u64", "cvta")))
            return d
        d = self._dst("u64", None, "cvta")
        self._emit("cvta", ("to", space, "u64"), (d.reg, self._src(v, "u64", "cvta")))
        if space == "shared":
            return self.cvt(d, "u32")
        return d

    # -- loads and stores -----------------------------------------------------------------------
    def _address(self, space: str, addr: Address, offset: int, what: str) -> ir.Addr:
        if space not in SPACES:
            raise ValueError(f"{what}: space={space!r}; allowed: {SPACES}")
        if not isinstance(offset, int):
            raise TypeError(f"{what}: offset={offset!r} must be an int byte count")
        if isinstance(addr, SharedArray):
            if space != "shared":
                raise ValueError(f"{what}: {addr.name!r} is a shared array but space={space!r}")
            return ir.Addr(ir.Sym(addr.name), offset)
        if isinstance(addr, ParamArray):
            if space != "param":
                raise ValueError(f"{what}: {addr.name!r} is a param array but space={space!r}")
            return ir.Addr(ir.Sym(addr.name), offset)
        if not isinstance(addr, Value):
            raise TypeError(f"{what}: address {addr!r} must be a Value, SharedArray or ParamArray")
        self._check_value(addr, what)
        pt = addr.ptype
        if pt.kind == "f" or pt.kind == "pred":
            raise TypeError(f"{what}: address {addr!r} must be an integer register")
        if pt.bits == 32 and space != "shared":
            raise TypeError(
                f"{what}: a 32-bit address {addr!r} is only valid for space='shared', got {space!r}"
            )
        if pt.bits not in (32, 64):
            raise TypeError(f"{what}: address {addr!r} must be 32 or 64 bits")
        return ir.Addr(addr.reg, offset)

    def ld(
        self,
        space: str,
        type_: str,
        addr: Address,
        offset: int = 0,
        vec: int = 1,
        nc: bool = False,
        cache: str | None = None,
        sem: str | None = None,
        scope: str = "gpu",
    ) -> Value | tuple[Value, ...]:
        """Load ``vec`` (1, 2 or 4) elements of ``type_`` from ``[addr+offset]`` in ``space``.
        ``nc`` reads through the non-coherent (read-only) path; ``cache`` is a cache operator
        (ca cg cs lu cv); ``sem`` a strong ordering (volatile, relaxed or acquire at ``scope``),
        what a load of a flag written by another CTA needs. Returns one Value, or a tuple for
        vec > 1. u8/s8 load into u32/s32."""
        t = ptx_type(type_)
        if vec not in (1, 2, 4):
            raise ValueError(f"ld: vec={vec}; allowed 1, 2, 4")
        if t.kind == "pred":
            raise TypeError("ld: predicates cannot be loaded")
        if vec * t.nbytes > 16:
            raise ValueError(f"ld: vec={vec} of .{t.name} is {vec * t.nbytes} bytes; at most 16")
        if offset % (vec * t.nbytes):
            raise ValueError(
                f"ld: offset {offset} is not a multiple of the access size {vec * t.nbytes}"
            )
        if nc and space != "global":
            raise ValueError(f"ld: nc=True needs space='global', got {space!r}")
        if cache is not None and cache not in LOAD_CACHE_OPS:
            raise ValueError(f"ld: cache={cache!r}; allowed: {LOAD_CACHE_OPS}")
        order = self._ordering("ld", sem, scope, LOAD_SEMS, space, cache, nc)
        a = self._address(space, addr, offset, "ld")
        rtype = _WIDENED.get(t.name, t.name)
        outs = tuple(self._dst(rtype, None, "ld") for _ in range(vec))
        mods = (
            order
            + [space]
            + ([cache] if cache else [])
            + (["nc"] if nc else [])
            + ([f"v{vec}"] if vec > 1 else [])
        )
        dst = outs[0].reg if vec == 1 else ir.Vec(tuple(o.reg for o in outs))
        self._emit("ld", (*mods, _MEMORY_TYPE.get(t.name, t.name)), (dst, a))
        return outs[0] if vec == 1 else outs

    def st(
        self,
        space: str,
        addr: Address,
        values: Operandish | Sequence[Operandish],
        offset: int = 0,
        type_: str | None = None,
        cache: str | None = None,
        sem: str | None = None,
        scope: str = "gpu",
    ) -> None:
        """Store one value or a 2/4-vector to ``[addr+offset]`` in ``space``. ``type_`` defaults to
        the values' type (give it for immediates or to narrow, e.g. ``u8``). ``sem``: a strong
        ordering (volatile, relaxed or release at ``scope``), e.g. the release of a ready flag."""
        vals = tuple(values) if isinstance(values, (tuple, list)) else (values,)
        if len(vals) not in (1, 2, 4):
            raise ValueError(f"st: {len(vals)} values; allowed 1, 2 or 4")
        if space in ("param", "const"):
            raise ValueError(f"st: space={space!r} is read-only")
        if cache is not None and cache not in STORE_CACHE_OPS:
            raise ValueError(f"st: cache={cache!r}; allowed: {STORE_CACHE_OPS}")
        order = self._ordering("st", sem, scope, STORE_SEMS, space, cache, False)
        t = ptx_type(self._infer_type("st", *vals, type_=type_))
        if t.kind == "pred":
            raise TypeError("st: predicates cannot be stored; selp them to an integer first")
        if offset % (len(vals) * t.nbytes):
            raise ValueError(
                f"st: offset {offset} is not a multiple of the access size {len(vals) * t.nbytes}"
            )
        a = self._address(space, addr, offset, "st")
        ops = []
        for v in vals:
            if isinstance(v, Value) and t.name in _WIDENED and v.type == _WIDENED[t.name]:
                self._check_value(v, "st")
                ops.append(v.reg)
            else:
                ops.append(self._src(v, t.name, "st"))
        src = ops[0] if len(ops) == 1 else ir.Vec(tuple(ops))
        mods = order + [space] + ([cache] if cache else []) + ([f"v{len(vals)}"] if len(vals) > 1 else [])
        self._emit("st", (*mods, _MEMORY_TYPE.get(t.name, t.name)), (a, src))

    def _ordering(self, op: str, sem: str | None, scope: str, allowed: tuple[str, ...], space: str,
                  cache: str | None, nc: bool) -> list[str]:
        """The memory-order modifiers of a strong ld/st (empty for a weak one)."""
        if sem is None:
            return []
        if sem not in allowed:
            raise ValueError(f"{op}: sem={sem!r}; allowed: {allowed}")
        if space not in ("global", "shared"):
            raise ValueError(f"{op}: sem={sem!r} needs space 'global' or 'shared', got {space!r}")
        if cache is not None or nc:
            raise ValueError(f"{op}: sem={sem!r} takes no cache operator or nc (they are hints of weak accesses)")
        self._require(f"{op}.{sem}", 70, ptx="6.0")
        if sem == "volatile":
            return ["volatile"]
        if scope not in SCOPES:
            raise ValueError(f"{op}: scope={scope!r}; allowed: {SCOPES}")
        if scope == "cluster":
            self._require(f"{op}.{sem}.cluster", 90, ptx="7.8")
        return [sem, scope]

    # -- performance directives -----------------------------------------------------------------
    def _directive(self, name: str, values: tuple[int, ...]) -> None:
        if any((not isinstance(v, int)) or v <= 0 for v in values):
            raise ValueError(f".{name}: values {values} must be positive ints")
        self._directives[name] = values

    def maxntid(self, x: int, y: int = 1, z: int = 1) -> None:
        """``.maxntid x, y, z``: the most threads per block any launch will use."""
        self._directive("maxntid", (x, y, z))

    def reqntid(self, x: int, y: int = 1, z: int = 1) -> None:
        """``.reqntid x, y, z``: the exact block shape every launch must use."""
        self._directive("reqntid", (x, y, z))

    def minnctapersm(self, n: int) -> None:
        """``.minnctapersm n``: ask ptxas to fit n blocks per SM (bounds registers)."""
        self._directive("minnctapersm", (n,))

    def maxnreg(self, n: int) -> None:
        """``.maxnreg n``: cap registers per thread."""
        self._directive("maxnreg", (n,))
