"""Arithmetic, logic, comparison, conversion and special registers for ``KernelBuilder``.

Every method records one instruction (``exp``/``log``/``addr`` record two or three), checks operand
types against each other, and returns a fresh ``Value`` (or writes ``out=``).
"""

from __future__ import annotations

from . import ir
from .builder_base import BuilderBase, Operandish, Value
from .types import bf16_bits, f16_bits, ptx_type

LOG2_E = 1.4426950408889634
LN_2 = 0.6931471805599453

_COMPARISONS = (
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "lo",
    "ls",
    "hi",
    "hs",
    "equ",
    "neu",
    "ltu",
    "leu",
    "gtu",
    "geu",
    "num",
    "nan",
)
_FLOAT_ROUNDING = ("rn", "rz", "rm", "rp", "rna")
_INT_ROUNDING = ("rni", "rzi", "rmi", "rpi")
_SPECIAL_DIMS = ("x", "y", "z")


class ArithMixin(BuilderBase):
    # -- helpers --------------------------------------------------------------------------------
    def _binary(
        self,
        op: str,
        a: Operandish,
        b: Operandish,
        mods: tuple[str, ...],
        type_: str | None,
        out: Value | None,
        *,
        allow: str = "usf",
    ) -> Value:
        t = self._infer_type(op, a, b, type_=type_)
        pt = ptx_type(t)
        if pt.kind not in allow:
            raise TypeError(f"{op}: .{t} operands are not allowed; {op} takes kinds {tuple(allow)}")
        sa, sb = self._src(a, t, op), self._src(b, t, op)
        d = self._dst(t, out, op)
        self._emit(op, (*mods, t), (d.reg, sa, sb))
        return d

    def _float_round(self, t: str) -> tuple[str, ...]:
        """``.rn`` in precise mode so ptxas does not contract mul+add into fma; none in fast."""
        if ptx_type(t).kind != "f":
            return ()
        if t in ("bf16", "bf16x2"):
            self._require(f"{t} add/sub/mul", 90, ptx="7.8")
        return ("rn",) if self.math == "precise" else ()

    # -- moves ----------------------------------------------------------------------------------
    def mov(self, src: Operandish, type_: str | None = None, out: Value | None = None) -> Value:
        """A copy of ``src`` (a Value or a Python number) in a fresh register of its type."""
        t = self._infer_type("mov", src, type_=type_)
        pt = ptx_type(t)
        if pt.kind == "pred":
            raise TypeError("mov: predicates are made with setp; copy one with kb.and_(p, p)")
        if t in ("f16", "bf16") and not isinstance(src, Value):
            bits = f16_bits(src) if t == "f16" else bf16_bits(src)
            d = self._dst(t, out, "mov")
            self._emit("mov", ("b16",), (d.reg, ir.Imm(f"0x{bits:04X}")))
            return d
        s = self._src(src, t, "mov")
        d = self._dst(t, out, "mov")
        mov_type = t if t in ("u32", "s32", "u64", "s64", "f32", "f64") else pt.bits_name
        self._emit("mov", (mov_type,), (d.reg, s))
        return d

    def assign(self, dst: Value, src: Operandish) -> Value:
        """``dst = src``: overwrite an existing register (loop accumulators)."""
        return self.mov(src, dst.type, out=dst)

    def bitcast(self, v: Value, type_: str) -> Value:
        """The same bits as ``type_``: free when both share a bank, else one ``mov.bN``."""
        t = ptx_type(type_)
        self._check_value(v, "bitcast")
        if v.ptype.bits != t.bits:
            raise TypeError(f"bitcast: {v!r} has {v.ptype.bits} bits; .{t.name} has {t.bits}")
        if v.ptype.bank == t.bank:
            return Value(self, t.name, v.name)
        d = self._dst(t.name, None, "bitcast")
        self._emit("mov", (t.bits_name,), (d.reg, v.reg))
        return d

    # -- special registers ----------------------------------------------------------------------
    def _special(self, name: str) -> Value:
        d = self._dst("u32", None, name)
        self._emit("mov", ("u32",), (d.reg, ir.Reg(name)))
        return d

    def _dim(self, base: str, dim: str) -> Value:
        if dim not in _SPECIAL_DIMS:
            raise ValueError(f"{base}: dim={dim!r}; allowed: {_SPECIAL_DIMS}")
        return self._special(f"%{base}.{dim}")

    def tid(self, dim: str = "x") -> Value:
        """``%tid.<dim>`` as a fresh u32."""
        return self._dim("tid", dim)

    def ntid(self, dim: str = "x") -> Value:
        """``%ntid.<dim>`` (block size) as a fresh u32."""
        return self._dim("ntid", dim)

    def ctaid(self, dim: str = "x") -> Value:
        """``%ctaid.<dim>`` (block index) as a fresh u32."""
        return self._dim("ctaid", dim)

    def nctaid(self, dim: str = "x") -> Value:
        """``%nctaid.<dim>`` (grid size) as a fresh u32."""
        return self._dim("nctaid", dim)

    def laneid(self) -> Value:
        """``%laneid`` as a fresh u32."""
        return self._special("%laneid")

    def warpid(self) -> Value:
        """``%warpid`` as a fresh u32 (a hint only: it may change under preemption)."""
        return self._special("%warpid")

    # -- integer and float arithmetic -----------------------------------------------------------
    def add(
        self, a: Operandish, b: Operandish, type_: str | None = None, out: Value | None = None
    ) -> Value:
        """``a + b`` (``add.rn`` for floats in precise mode)."""
        t = self._infer_type("add", a, b, type_=type_)
        return self._binary("add", a, b, self._float_round(t), t, out)

    def sub(
        self, a: Operandish, b: Operandish, type_: str | None = None, out: Value | None = None
    ) -> Value:
        """``a - b`` (``sub.rn`` for floats in precise mode)."""
        t = self._infer_type("sub", a, b, type_=type_)
        return self._binary("sub", a, b, self._float_round(t), t, out)

    def mul(
        self,
        a: Operandish,
        b: Operandish,
        mode: str = "lo",
        type_: str | None = None,
        out: Value | None = None,
    ) -> Value:
        """``a * b``. Integers: ``mode`` lo (low half), hi (high half) or wide (double-width result,
        e.g. u32*u32 -> u64). Floats: ``mul.rn`` in precise mode."""
        t = self._infer_type("mul", a, b, type_=type_)
        pt = ptx_type(t)
        if pt.kind == "f":
            return self._binary("mul", a, b, self._float_round(t), t, out)
        if mode not in ("lo", "hi", "wide"):
            raise ValueError(f"mul: mode={mode!r}; allowed: lo, hi, wide")
        if pt.kind not in "us":
            raise TypeError(f"mul: .{t} is not an integer or float type")
        if mode != "wide":
            return self._binary("mul", a, b, (mode,), t, out)
        if pt.bits not in (16, 32):
            raise TypeError(f"mul.wide: operands must be 16 or 32 bits, got .{t}")
        wide = f"{pt.kind}{pt.bits * 2}"
        sa, sb = self._src(a, t, "mul.wide"), self._src(b, t, "mul.wide")
        d = self._dst(wide, out, "mul.wide")
        self._emit("mul", ("wide", t), (d.reg, sa, sb))
        return d

    def mad(
        self,
        a: Operandish,
        b: Operandish,
        c: Operandish,
        mode: str = "lo",
        type_: str | None = None,
        out: Value | None = None,
    ) -> Value:
        """``a * b + c`` for integers (``mode`` lo or wide: c and the result are double width).
        For floats this is ``fma.rn`` (PTX's float mad is the same fused operation)."""
        t = self._infer_type("mad", a, b, type_=type_)
        pt = ptx_type(t)
        if pt.kind == "f":
            return self.fma(a, b, c, type_=t, out=out)
        if pt.kind not in "us":
            raise TypeError(f"mad: .{t} is not an integer type")
        if mode == "lo":
            ops = [self._src(x, t, "mad") for x in (a, b, c)]
            d = self._dst(t, out, "mad")
            self._emit("mad", ("lo", t), (d.reg, *ops))
            return d
        if mode == "wide":
            wide = f"{pt.kind}{pt.bits * 2}"
            ops = [
                self._src(a, t, "mad.wide"),
                self._src(b, t, "mad.wide"),
                self._src(c, wide, "mad.wide"),
            ]
            d = self._dst(wide, out, "mad.wide")
            self._emit("mad", ("wide", t), (d.reg, *ops))
            return d
        raise ValueError(f"mad: mode={mode!r}; allowed: lo, wide")

    def fma(
        self,
        a: Operandish,
        b: Operandish,
        c: Operandish,
        type_: str | None = None,
        out: Value | None = None,
    ) -> Value:
        """``fma.rn``: ``a * b + c`` rounded once (floats only)."""
        t = self._infer_type("fma", a, b, c, type_=type_)
        if ptx_type(t).kind != "f":
            raise TypeError(f"fma: .{t} is not a float type; use mad for integers")
        if t in ("bf16", "bf16x2"):
            self._require("fma.rn.bf16", 80, ptx="7.0")
        ops = [self._src(x, t, "fma") for x in (a, b, c)]
        d = self._dst(t, out, "fma")
        self._emit("fma", ("rn", t), (d.reg, *ops))
        return d

    def div(
        self, a: Operandish, b: Operandish, type_: str | None = None, out: Value | None = None
    ) -> Value:
        """``a / b``: integers truncate; f32 is IEEE ``div.rn`` in precise mode and ``div.full``
        (about 2 ulp) in fast mode; f64 is always ``div.rn``."""
        t = self._infer_type("div", a, b, type_=type_)
        pt = ptx_type(t)
        if pt.kind in "us":
            return self._binary("div", a, b, (), t, out)
        if t == "f32":
            return self._binary(
                "div", a, b, ("rn",) if self.math == "precise" else ("full",), t, out
            )
        if t == "f64":
            return self._binary("div", a, b, ("rn",), t, out)
        raise TypeError(f"div: .{t} is not supported; allowed: integers, f32, f64")

    def _unary(
        self, op: str, mods: tuple[str, ...], x: Operandish, t: str, out: Value | None
    ) -> Value:
        s = self._src(x, t, op)
        d = self._dst(t, out, op)
        self._emit(op, (*mods, t), (d.reg, s))
        return d

    def _float_unary_type(
        self, op: str, x: Operandish, type_: str | None, allowed: tuple[str, ...]
    ) -> str:
        t = self._infer_type(op, x, type_=type_)
        if t not in allowed:
            raise TypeError(f"{op}: .{t} is not supported; PTX has {op} for {allowed} only")
        return t

    def rcp(self, x: Operandish, type_: str | None = None, out: Value | None = None) -> Value:
        """``1 / x``: ``rcp.rn`` (IEEE) in precise mode, ``rcp.approx.ftz.f32`` in fast mode."""
        t = self._float_unary_type("rcp", x, type_, ("f32", "f64"))
        mods = ("approx", "ftz") if (self.math == "fast" and t == "f32") else ("rn",)
        return self._unary("rcp", mods, x, t, out)

    def sqrt(self, x: Operandish, type_: str | None = None, out: Value | None = None) -> Value:
        """Square root: ``sqrt.rn`` in precise mode, ``sqrt.approx.f32`` in fast mode."""
        t = self._float_unary_type("sqrt", x, type_, ("f32", "f64"))
        mods = ("approx",) if (self.math == "fast" and t == "f32") else ("rn",)
        return self._unary("sqrt", mods, x, t, out)

    def rsqrt(self, x: Operandish, type_: str | None = None, out: Value | None = None) -> Value:
        """``1 / sqrt(x)``: PTX only has ``rsqrt.approx``. In precise mode this is ``sqrt.rn``
        then ``div.rn`` (correctly rounded steps); in fast mode ``rsqrt.approx``."""
        t = self._float_unary_type("rsqrt", x, type_, ("f32", "f64"))
        if self.math == "precise":
            s = self.sqrt(x, type_=t)
            return self.div(1.0, s, type_=t, out=out)
        mods = ("approx", "ftz") if t == "f64" else ("approx",)
        return self._unary("rsqrt", mods, x, t, out)

    def min(
        self, a: Operandish, b: Operandish, type_: str | None = None, out: Value | None = None
    ) -> Value:
        """``min(a, b)`` (floats: the non-NaN operand if one is NaN)."""
        return self._binary("min", a, b, (), type_, out)

    def max(
        self, a: Operandish, b: Operandish, type_: str | None = None, out: Value | None = None
    ) -> Value:
        """``max(a, b)`` (floats: the non-NaN operand if one is NaN)."""
        return self._binary("max", a, b, (), type_, out)

    def abs(self, x: Operandish, type_: str | None = None, out: Value | None = None) -> Value:
        """``|x|`` for signed integers and floats."""
        t = self._infer_type("abs", x, type_=type_)
        if ptx_type(t).kind not in "sf":
            raise TypeError(f"abs: .{t} must be signed integer or float")
        return self._unary("abs", (), x, t, out)

    def neg(self, x: Operandish, type_: str | None = None, out: Value | None = None) -> Value:
        """``-x`` for signed integers and floats."""
        t = self._infer_type("neg", x, type_=type_)
        if ptx_type(t).kind not in "sf":
            raise TypeError(f"neg: .{t} must be signed integer or float")
        return self._unary("neg", (), x, t, out)

    # -- bits -----------------------------------------------------------------------------------
    def _logic(
        self, op: str, a: Operandish, b: Operandish, type_: str | None, out: Value | None
    ) -> Value:
        t = self._infer_type(op, a, b, type_=type_)
        pt = ptx_type(t)
        if pt.kind == "f":
            raise TypeError(f"{op}: .{t} is a float; bitcast to .b{pt.bits} first")
        it = pt.bits_name
        sa, sb = self._src(a, it, op, bits_ok=True), self._src(b, it, op, bits_ok=True)
        d = self._dst(t, out, op)
        self._emit(op, (it,), (d.reg, sa, sb))
        return d

    def and_(
        self, a: Operandish, b: Operandish, type_: str | None = None, out: Value | None = None
    ) -> Value:
        """Bitwise (or predicate) and."""
        return self._logic("and", a, b, type_, out)

    def or_(
        self, a: Operandish, b: Operandish, type_: str | None = None, out: Value | None = None
    ) -> Value:
        """Bitwise (or predicate) or."""
        return self._logic("or", a, b, type_, out)

    def xor(
        self, a: Operandish, b: Operandish, type_: str | None = None, out: Value | None = None
    ) -> Value:
        """Bitwise (or predicate) exclusive or."""
        return self._logic("xor", a, b, type_, out)

    def not_(self, a: Value, out: Value | None = None) -> Value:
        """Bitwise (or predicate) complement."""
        pt = a.ptype
        if pt.kind == "f":
            raise TypeError(f"not: {a!r} is a float; bitcast first")
        s = self._src(a, pt.bits_name, "not", bits_ok=True)
        d = self._dst(a.type, out, "not")
        self._emit("not", (pt.bits_name,), (d.reg, s))
        return d

    def shl(
        self, a: Operandish, n: Operandish, type_: str | None = None, out: Value | None = None
    ) -> Value:
        """``a << n`` (n is a u32 count)."""
        t = self._infer_type("shl", a, type_=type_)
        pt = ptx_type(t)
        if pt.kind not in "usb" or pt.bits < 16:
            raise TypeError(f"shl: .{t} must be a 16/32/64-bit integer")
        sa, sn = self._src(a, pt.bits_name, "shl"), self._src(n, "u32", "shl")
        d = self._dst(t, out, "shl")
        self._emit("shl", (pt.bits_name,), (d.reg, sa, sn))
        return d

    def shr(
        self, a: Operandish, n: Operandish, type_: str | None = None, out: Value | None = None
    ) -> Value:
        """``a >> n``: arithmetic for signed types, logical for unsigned and bits types."""
        t = self._infer_type("shr", a, type_=type_)
        pt = ptx_type(t)
        if pt.kind not in "usb" or pt.bits < 16:
            raise TypeError(f"shr: .{t} must be a 16/32/64-bit integer")
        it = t if pt.kind in "us" else f"u{pt.bits}"
        sa, sn = self._src(a, it, "shr"), self._src(n, "u32", "shr")
        d = self._dst(t, out, "shr")
        self._emit("shr", (it,), (d.reg, sa, sn))
        return d

    # -- comparison and selection ---------------------------------------------------------------
    def setp(
        self,
        cmp: str,
        a: Operandish,
        b: Operandish,
        type_: str | None = None,
        out: Value | None = None,
    ) -> Value:
        """A predicate: ``a <cmp> b`` with cmp in eq ne lt le gt ge (and lo ls hi hs for unsigned,
        equ neu ltu leu gtu geu num nan for floats)."""
        if cmp not in _COMPARISONS:
            raise ValueError(f"setp: cmp={cmp!r}; allowed: {_COMPARISONS}")
        t = self._infer_type("setp", a, b, type_=type_)
        sa, sb = self._src(a, t, "setp"), self._src(b, t, "setp")
        d = self._dst("pred", out, "setp")
        self._emit("setp", (cmp, t), (d.reg, sa, sb))
        return d

    def selp(
        self,
        a: Operandish,
        b: Operandish,
        p: Value,
        type_: str | None = None,
        out: Value | None = None,
    ) -> Value:
        """``p ? a : b``."""
        t = self._infer_type("selp", a, b, type_=type_)
        pt = ptx_type(t)
        it = pt.bits_name if pt.bits == 16 or pt.kind == "b" else t
        if p.type != "pred":
            raise TypeError(f"selp: selector {p!r} must be a predicate")
        ops = (self._src(a, it, "selp"), self._src(b, it, "selp"), self._src(p, "pred", "selp"))
        d = self._dst(t, out, "selp")
        self._emit("selp", (it,), (d.reg, *ops))
        return d


__all__ = ["LN_2", "LOG2_E", "ArithMixin"]
