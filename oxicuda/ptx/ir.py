"""The PTX intermediate representation shared by the builder, the emitter, the parser and the
emulator.

Every node is a frozen dataclass with tuple fields: hashable and comparable by value, so that
``parse(emit(ir)) == ir`` is a plain equality. The IR is opcode-agnostic: an instruction is an
opcode, its dot-modifiers and its operands, so PTX from nvcc or Triton fits as well as ours.

Text form (what ``oxicuda.ptx.emit`` writes, and the parser reads back):

    .version 8.0
    .target sm_90a
    .address_size 64

    .visible .entry name(
    \t.param .u64 a,
    \t.param .align 64 .b8 tmap[128]
    )
    .maxntid 256, 1, 1
    {
    \t.reg .pred %p<3>;
    \t.shared .align 16 .b8 tile[4096];
    \tld.param.u64 %rd1, [a];
    \t@!%p1 bra $L_done_1;
    $L_done_1:
    \tret;
    }
"""

from __future__ import annotations

from dataclasses import dataclass


# -- operands ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reg:
    """A register or special register by its full name: ``%r5``, ``%tid.x``, ``%p1``."""

    name: str


@dataclass(frozen=True)
class Imm:
    """An immediate exactly as written: ``1``, ``-4``, ``0f3F800000``, ``0d3FF0000000000000``."""

    text: str


@dataclass(frozen=True)
class Sym:
    """A symbol used as a value: a label (``$L_loop_3``), a variable or parameter name."""

    name: str


@dataclass(frozen=True)
class Addr:
    """A memory operand ``[base+offset]``; base is a Reg or Sym, offset a byte count.

    ``index`` is the coordinate vector of a tensor-map operand, ``[tmap, {c0, c1}]``
    (``cp.async.bulk.tensor``); None everywhere else.
    """

    base: Reg | Sym
    offset: int = 0
    index: Vec | None = None


@dataclass(frozen=True)
class Vec:
    """A vector operand ``{a, b, c, d}``; ``_`` sinks appear as ``Sym('_')``."""

    items: tuple[Operand, ...]


Operand = Reg | Imm | Sym | Addr | Vec


# -- statements -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pred:
    """A predicate guard ``@%p1`` or ``@!%p1``."""

    reg: Reg
    negated: bool = False


@dataclass(frozen=True)
class Instr:
    """``[@p] opcode.mod1.mod2 operands;`` e.g. opcode ``ld``, mods ``("global", "nc", "v4", "f32")``."""

    opcode: str
    mods: tuple[str, ...] = ()
    operands: tuple[Operand, ...] = ()
    pred: Pred | None = None

    @property
    def full_opcode(self) -> str:
        return ".".join((self.opcode, *self.mods))


@dataclass(frozen=True)
class Label:
    """A branch target; names carry their own sigil (``$L_loop_3``)."""

    name: str


@dataclass(frozen=True)
class RegDecl:
    """``.reg .f32 %f<12>;`` (count given) or ``.reg .pred %p;`` (count None)."""

    type: str  # without the dot: "f32", "pred", "b64"
    name: str
    count: int | None = None


@dataclass(frozen=True)
class VarDecl:
    """A variable in a state space: ``[.extern] .shared .align 16 .b8 tile[4096];``.

    ``size`` is the element count of an array (None: a scalar; 0 with ``extern``: ``name[]``).
    ``linkage`` is "", "visible", "extern" or "weak" for module-level globals.
    """

    space: str  # "shared", "local", "global", "const"
    type: str
    name: str
    align: int | None = None
    size: int | None = None
    linkage: str = ""


@dataclass(frozen=True)
class Directive:
    """A statement-level directive kept verbatim, e.g. ``.pragma "nounroll";`` or ``.loc 1 2 3``."""

    text: str


@dataclass(frozen=True)
class Block:
    """A nested ``{ ... }`` scope inside a body (nvcc emits these around calls)."""

    body: tuple[Statement, ...]


Statement = Instr | Label | RegDecl | VarDecl | Directive | Block


@dataclass(frozen=True)
class Param:
    """``.param [.align A] .type name[size]`` of an entry or function."""

    type: str
    name: str
    align: int | None = None
    size: int | None = None  # array element count for by-value structs (tensor maps)
    ptr_attrs: tuple[str, ...] = ()  # e.g. (".ptr", ".global", ".align 16") as written


@dataclass(frozen=True)
class Function:
    """An ``.entry`` (kernel) or ``.func`` with its parameters, performance directives and body.

    ``directives`` are pairs like ``("maxntid", (256, 1, 1))``, ``("minnctapersm", (2,))``,
    ``("reqntid", ...)``, ``("maxnreg", ...)``. ``returns`` holds a ``.func``'s return params.
    """

    name: str
    params: tuple[Param, ...] = ()
    body: tuple[Statement, ...] = ()
    directives: tuple[tuple[str, tuple[int, ...]], ...] = ()
    is_entry: bool = True
    linkage: str = "visible"  # "visible", "extern", "weak" or "" (internal)
    returns: tuple[Param, ...] = ()


@dataclass(frozen=True)
class Module:
    """A PTX module: header, module-level variables, and functions in order."""

    version: str  # "8.0"
    target: str  # "sm_90a" (may hold extras such as "sm_80, texmode_independent")
    address_size: int = 64
    globals: tuple[VarDecl, ...] = ()
    functions: tuple[Function, ...] = ()

    def function(self, name: str) -> Function:
        for fn in self.functions:
            if fn.name == name:
                return fn
        raise KeyError(f"no function {name!r} in module; it has {[f.name for f in self.functions]}")
