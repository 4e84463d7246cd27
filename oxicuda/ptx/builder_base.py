"""The state under a ``KernelBuilder``: typed virtual registers, operands, arch gating, records.

``KernelBuilder`` (``oxicuda.ptx.builder``) composes this base with the instruction mixins. Only
the names documented on ``KernelBuilder`` are public; the helpers here are shared by the mixins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from oxicuda.driver.facts import SHARED_OPTIN_BY_CC

from . import ir
from .target import ptx_version_for, version_tuple
from .types import PtxType, immediate_text, ptx_type

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MATH_MODES = ("precise", "fast")

# dynamic (opt-in) shared memory per block by arch number (86 for sm_86), from the device facts;
# static shared is limited to 48 KB everywhere
SHARED_OPTIN_LIMIT = {cc[0] * 10 + cc[1]: limit for cc, limit in SHARED_OPTIN_BY_CC.items()}
STATIC_SHARED_LIMIT = 48 * 1024


class Value:
    """A typed virtual register made by a builder: ``.type`` (a PtxType name) and ``.name``."""

    __slots__ = ("_owner", "name", "type")

    def __init__(self, owner: BuilderBase, type_: str, name: str) -> None:
        self.type = type_
        self.name = name
        self._owner = owner

    @property
    def ptype(self) -> PtxType:
        return ptx_type(self.type)

    @property
    def reg(self) -> ir.Reg:
        return ir.Reg(self.name)

    def __repr__(self) -> str:
        return f"Value({self.name}: .{self.type})"


@dataclass(frozen=True)
class SharedArray:
    """A ``.shared`` array: static (``count`` elements) or the one dynamic extern array."""

    name: str
    type: str
    count: int
    align: int
    dynamic: bool = False

    @property
    def nbytes(self) -> int:
        return self.count * ptx_type(self.type).nbytes


@dataclass(frozen=True)
class ParamArray:
    """A by-value ``.b8`` array parameter (a CUtensorMap): use it through its symbol."""

    name: str
    size: int
    align: int


Operandish = Value | int | float | bool
Address = Value | SharedArray | ParamArray


class BuilderBase:
    """Registers, statements, structure stack and arch/version gates shared by the mixins."""

    def __init__(
        self, name: str, arch: str, math: str = "precise", ptx_version: str | None = None
    ) -> None:
        if not _IDENT.match(name):
            raise ValueError(
                f"kernel name {name!r} is not a PTX identifier ([A-Za-z_][A-Za-z0-9_]*)"
            )
        if math not in MATH_MODES:
            raise ValueError(f"math={math!r}; allowed: {MATH_MODES}")
        self.name = name
        self.arch = arch
        self.math = math
        self.sm = int(arch[3:].rstrip("a")) if arch.startswith("sm_") else -1
        if self.sm < 0:
            raise ValueError(f"arch={arch!r}; expected like 'sm_86' or 'sm_90a'")
        self._base_version = ptx_version or ptx_version_for(arch)
        self._explicit_version = ptx_version is not None
        self._needed_version = self._base_version
        self._counters: dict[str, int] = {}
        self._bank_decl: dict[str, str] = {}
        self._written: set[str] = set()
        self._body: list[ir.Statement] = []
        self._params: list[ir.Param] = []
        self._param_names: set[str] = set()
        self._shared: list[SharedArray] = []
        self._dynamic_shared: SharedArray | None = None
        self._dynamic_shared_bytes = 0
        self._directives: dict[str, tuple[int, ...]] = {}
        self._structure: list[tuple[str, int]] = []
        self._label_counter = 0
        self._last_closed_if: int | None = None

    # -- registers ------------------------------------------------------------------------------
    def reg(self, type_: str) -> Value:
        """A fresh, not yet written register of ``type_`` (use as ``out=`` or with ``assign``)."""
        t = ptx_type(type_)
        n = self._counters.get(t.bank, 0) + 1
        self._counters[t.bank] = n
        self._bank_decl[t.bank] = t.decl
        return Value(self, t.name, f"{t.bank}{n}")

    def _check_value(self, v: Value, what: str) -> None:
        if v._owner is not self:
            raise ValueError(f"{what}: {v!r} belongs to another KernelBuilder")
        if v.name not in self._written:
            raise ValueError(f"{what}: {v!r} is read before anything was written to it")

    def _dst(self, type_: str, out: Value | None, what: str) -> Value:
        if out is None:
            v = self.reg(type_)
        else:
            if out._owner is not self:
                raise ValueError(f"{what}: out={out!r} belongs to another KernelBuilder")
            if (
                ptx_type(out.type).bank != ptx_type(type_).bank
                or ptx_type(out.type).bits != ptx_type(type_).bits
            ):
                raise TypeError(f"{what}: out={out!r} cannot hold a .{type_} result")
            v = out
        self._written.add(v.name)
        return v

    def _src(self, x: Operandish, type_: str, what: str, *, bits_ok: bool = False) -> ir.Operand:
        """An operand of instruction type ``type_``: a Value of that type or a Python number."""
        t = ptx_type(type_)
        if isinstance(x, Value):
            self._check_value(x, what)
            xt = x.ptype
            same = x.type == t.name
            compatible_bits = (bits_ok or t.kind == "b" or xt.kind == "b") and xt.bits == t.bits
            if not (same or compatible_bits):
                raise TypeError(
                    f"{what}: operand {x!r} is .{x.type} but the instruction type is .{t.name}; "
                    f"convert with kb.cvt(...) or reinterpret with kb.bitcast(...)"
                )
            return x.reg
        if isinstance(x, (bool, int, float)):
            return ir.Imm(immediate_text(x, t))
        raise TypeError(f"{what}: {x!r} is not a Value or a Python number")

    @staticmethod
    def _infer_type(what: str, *xs: object, type_: str | None = None) -> str:
        types = {x.type for x in xs if isinstance(x, Value)}
        if type_ is not None:
            return ptx_type(type_).name
        if len(types) == 1:
            return types.pop()
        if not types:
            raise TypeError(
                f"{what}: all operands are Python numbers; pass type_= to say the PTX type"
            )
        listing = ", ".join(f"{x!r}" for x in xs if isinstance(x, Value))
        raise TypeError(
            f"{what}: operand types differ ({listing}); convert one with kb.cvt(...) first"
        )

    # -- statements -----------------------------------------------------------------------------
    def _emit(
        self,
        opcode: str,
        mods: Iterable[str],
        operands: Sequence[ir.Operand],
        pred: ir.Pred | None = None,
    ) -> None:
        self._body.append(ir.Instr(opcode, tuple(mods), tuple(operands), pred))

    def instr(
        self,
        opcode: str,
        mods: Sequence[str] = (),
        operands: Sequence[ir.Operand] = (),
        pred: Value | None = None,
    ) -> None:
        """Record one raw instruction (an escape hatch; no type checks)."""
        guard = ir.Pred(pred.reg) if pred is not None else None
        self._body.append(ir.Instr(opcode, tuple(mods), tuple(operands), guard))

    def _guard(self, pred: Value | None, negated: bool = False) -> ir.Pred | None:
        if pred is None:
            return None
        if pred.type != "pred":
            raise TypeError(f"guard {pred!r} is not a predicate")
        self._check_value(pred, "guard")
        return ir.Pred(pred.reg, negated)

    def _new_label(self, kind: str) -> str:
        self._label_counter += 1
        return f"$L_{kind}_{self._label_counter}"

    # -- gates ----------------------------------------------------------------------------------
    def _require(
        self, what: str, min_sm: int, *, arch_a: bool = False, ptx: str | None = None
    ) -> None:
        if arch_a and not (self.arch.endswith("a") and self.sm == min_sm):
            raise NotImplementedError(
                f"{what} needs sm_{min_sm}a (arch-specific features); this builder targets {self.arch}"
            )
        if self.sm < min_sm:
            raise NotImplementedError(
                f"{what} needs sm_{min_sm} or newer; this builder targets {self.arch}"
            )
        if ptx is not None and version_tuple(ptx) > version_tuple(self._needed_version):
            self._needed_version = ptx

    @property
    def ptx_version(self) -> str:
        """The PTX ISA version the module will declare (raised by instructions that need more)."""
        if self._explicit_version and version_tuple(self._needed_version) > version_tuple(
            self._base_version
        ):
            raise ValueError(
                f"ptx_version={self._base_version} was given but the kernel uses instructions that "
                f"need PTX {self._needed_version}"
            )
        return self._needed_version
