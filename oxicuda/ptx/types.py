"""PTX scalar types as data: size, kind, register bank, and immediate-literal text.

One table (``PTX_TYPES``) says, for every type the builder handles, how many bits it has, what
kind of value it is (unsigned, signed, float, bits, predicate), which register bank holds it and
how that bank is declared. Banks are per type family, never shared between f32 and f64, and no
bank prefix can form a special register's name (``%tid``, ``%ntid``, ``%clock``...).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class PtxType:
    """One PTX scalar (or packed) type: ``name`` without the dot, ``bits``, ``kind`` in
    u/s/f/b/pred, and the register ``bank`` prefix with its declared register type."""

    name: str
    bits: int
    kind: str
    bank: str
    decl: str

    @property
    def nbytes(self) -> int:
        return max(1, self.bits // 8)

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def bits_name(self) -> str:
        """The bit-size type of the same width: ``b32`` for f32, ``pred`` for pred."""
        return "pred" if self.kind == "pred" else f"b{self.bits}"


def _t(name: str, bits: int, kind: str, bank: str, decl: str) -> PtxType:
    return PtxType(name, bits, kind, bank, decl)


PTX_TYPES: dict[str, PtxType] = {
    t.name: t
    for t in (
        _t("pred", 1, "pred", "%p", "pred"),
        _t("u8", 8, "u", "%rs", "b16"),  # loads of bytes land in 16-bit registers
        _t("s8", 8, "s", "%rs", "b16"),
        _t("b8", 8, "b", "%rs", "b16"),
        _t("u16", 16, "u", "%rs", "b16"),
        _t("s16", 16, "s", "%rs", "b16"),
        _t("b16", 16, "b", "%rs", "b16"),
        _t("f16", 16, "f", "%h", "b16"),
        _t("bf16", 16, "f", "%hb", "b16"),
        _t("u32", 32, "u", "%r", "b32"),
        _t("s32", 32, "s", "%r", "b32"),
        _t("b32", 32, "b", "%r", "b32"),
        _t("f16x2", 32, "f", "%hh", "b32"),
        _t("bf16x2", 32, "f", "%hbb", "b32"),
        _t("tf32", 32, "f", "%r", "b32"),
        _t("f32", 32, "f", "%f", "f32"),
        _t("u64", 64, "u", "%rd", "b64"),
        _t("s64", 64, "s", "%rd", "b64"),
        _t("b64", 64, "b", "%rd", "b64"),
        _t("f64", 64, "f", "%fd", "f64"),
    )
}

#: Special registers (prefixes); no virtual register name may start like one of these.
SPECIAL_REGISTERS = (
    "%tid",
    "%ntid",
    "%ctaid",
    "%nctaid",
    "%laneid",
    "%warpid",
    "%nwarpid",
    "%smid",
    "%nsmid",
    "%gridid",
    "%clock",
    "%clock64",
    "%lanemask",
    "%pm",
    "%envreg",
    "%globaltimer",
    "%dynamic_smem_size",
    "%total_smem_size",
    "%cluster",
    "%is_explicit_cluster",
)

_BANKS = {t.bank for t in PTX_TYPES.values()}
# Virtual registers are a bank prefix plus digits; specials are all letters after '%', so a
# bank can only collide by being a special itself.
assert not _BANKS & set(SPECIAL_REGISTERS), _BANKS & set(SPECIAL_REGISTERS)


def ptx_type(name: str) -> PtxType:
    """The ``PtxType`` named ``name`` (with or without the leading dot); raises on unknown."""
    key = name.lstrip(".")
    try:
        return PTX_TYPES[key]
    except KeyError:
        raise ValueError(f"unknown PTX type {name!r}; known: {sorted(PTX_TYPES)}") from None


def f32_literal(value: float) -> str:
    """``0fXXXXXXXX``: the exact IEEE single bits of ``value`` (rounded to nearest)."""
    return f"0f{struct.unpack('>I', struct.pack('>f', float(value)))[0]:08X}"


def f64_literal(value: float) -> str:
    """``0dXXXXXXXXXXXXXXXX``: the exact IEEE double bits of ``value``."""
    return f"0d{struct.unpack('>Q', struct.pack('>d', float(value)))[0]:016X}"


def f16_bits(value: float) -> int:
    """The IEEE half bits of ``value`` (numpy-free: struct's 'e' format rounds to nearest)."""
    return struct.unpack(">H", struct.pack(">e", float(value)))[0]


def bf16_bits(value: float) -> int:
    """The bfloat16 bits of ``value``, rounded to nearest even from the f32 bits."""
    bits = struct.unpack(">I", struct.pack(">f", float(value)))[0]
    if math.isnan(value):
        return 0x7FC0
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16) & 0xFFFF


def immediate_text(value: float | bool, t: PtxType) -> str:
    """PTX literal text of a Python number for an operand of type ``t``.

    Floats become exact hex literals (0f.. for f32, 0d.. for f64: never an f32 literal in f64
    code); ints are checked against the type's range. Raises ValueError/TypeError otherwise.
    """
    if t.kind == "pred":
        raise TypeError(f"a predicate operand cannot be an immediate ({value!r}); use setp")
    if t.name == "f32" or t.name == "tf32":
        return f32_literal(value)
    if t.name == "f64":
        return f64_literal(value)
    if t.name in ("f16", "bf16", "f16x2", "bf16x2"):
        raise TypeError(
            f"PTX has no {t.name} immediates for arithmetic ({value!r}); materialize the value with "
            f"kb.mov({value!r}, '{t.name}') first"
        )
    if isinstance(value, float):
        if not value.is_integer():
            raise TypeError(f"float immediate {value!r} for integer type {t.name}")
        value = int(value)
    value = int(value)
    lo, hi = int_range(t)
    if not lo <= value <= hi:
        raise ValueError(f"immediate {value} out of range for .{t.name}; allowed [{lo}, {hi}]")
    return str(value)


def int_range(t: PtxType) -> tuple[int, int]:
    """The accepted literal range of an integer/bits type (bits types accept signed or unsigned)."""
    if t.kind == "u":
        return 0, (1 << t.bits) - 1
    if t.kind == "s":
        return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    return -(1 << (t.bits - 1)), (1 << t.bits) - 1
