"""Conversions, approximate transcendentals and 64-bit-safe addresses for ``KernelBuilder``."""

from __future__ import annotations

from . import ir
from .builder_arith import ArithMixin
from .builder_base import Operandish, Value
from .types import ptx_type

LOG2_E = 1.4426950408889634
LN_2 = 0.6931471805599453

_FLOAT_ROUNDING = ("rn", "rz", "rm", "rp", "rna")
_INT_ROUNDING = ("rni", "rzi", "rmi", "rpi")


class ConvertMixin(ArithMixin):
    # -- conversion -----------------------------------------------------------------------------
    def cvt(
        self,
        x: Operandish,
        to: str,
        rnd: str | None = None,
        sat: bool = False,
        ftz: bool = False,
        type_: str | None = None,
        out: Value | None = None,
    ) -> Value:
        """Convert ``x`` to type ``to``. Rounding defaults: float narrowing and int->float ``rn``,
        float->int ``rzi`` (C truncation), float->same float with ``rnd`` in rni/rzi/rmi/rpi rounds
        to an integral value (``floor`` is ``cvt.rmi``). ``sat`` clamps to the destination range."""
        src = self._infer_type("cvt", x, type_=type_)
        st, dt = ptx_type(src), ptx_type(to)
        if st.kind in ("b", "pred") or dt.kind in ("b", "pred"):
            raise TypeError(f"cvt: .{src} -> .{to}; cvt needs typed operands: use bitcast or selp")
        mods: list[str] = []
        if dt.name == "tf32":
            self._require("cvt.rna.tf32.f32", 80, ptx="7.0")
            if src != "f32":
                raise TypeError(f"cvt: tf32 converts from f32 only, got .{src}")
            rnd = rnd or "rna"
        elif st.kind == "f" and dt.kind == "f":
            if st.name == dt.name:
                if rnd not in _INT_ROUNDING:
                    raise ValueError(
                        f"cvt .{src} -> .{to}: same type needs rnd in {_INT_ROUNDING}, got {rnd!r}"
                    )
            elif dt.bits < st.bits:
                rnd = rnd or "rn"
                if rnd not in _FLOAT_ROUNDING:
                    raise ValueError(
                        f"cvt narrowing .{src} -> .{to}: rnd={rnd!r}; allowed {_FLOAT_ROUNDING}"
                    )
                if dt.name == "bf16" or st.name == "bf16":
                    self._require(f"cvt .{src} -> .{to}", 80, ptx="7.0")
            elif rnd is not None:
                raise ValueError(
                    f"cvt widening .{src} -> .{to} is exact; rounding {rnd!r} is not allowed"
                )
        elif st.kind == "f":
            rnd = rnd or "rzi"
            if rnd not in _INT_ROUNDING:
                raise ValueError(f"cvt .{src} -> .{to}: rnd={rnd!r}; allowed {_INT_ROUNDING}")
        elif dt.kind == "f":
            rnd = rnd or "rn"
            if rnd not in ("rn", "rz", "rm", "rp"):
                raise ValueError(f"cvt .{src} -> .{to}: rnd={rnd!r}; allowed rn rz rm rp")
        elif rnd is not None:
            raise ValueError(f"cvt int .{src} -> int .{to} takes no rounding (got {rnd!r})")
        if rnd:
            mods.append(rnd)
        if ftz:
            mods.append("ftz")
        if sat:
            mods.append("sat")
        s = self._src(x, src, "cvt")
        d = self._dst(dt.name, out, "cvt")
        self._emit("cvt", (*mods, dt.name, src), (d.reg, s))
        return d

    def floor(self, x: Value, out: Value | None = None) -> Value:
        """Round toward minus infinity (``cvt.rmi``; PTX has no floor instruction)."""
        return self.cvt(x, x.type, rnd="rmi", out=out)

    def ceil(self, x: Value, out: Value | None = None) -> Value:
        """Round toward plus infinity (``cvt.rpi``)."""
        return self.cvt(x, x.type, rnd="rpi", out=out)

    def trunc(self, x: Value, out: Value | None = None) -> Value:
        """Round toward zero (``cvt.rzi``)."""
        return self.cvt(x, x.type, rnd="rzi", out=out)

    def round(self, x: Value, out: Value | None = None) -> Value:
        """Round to nearest even (``cvt.rni``)."""
        return self.cvt(x, x.type, rnd="rni", out=out)

    def cvt_pack(
        self, hi: Operandish, lo: Operandish, to: str = "f16x2", out: Value | None = None
    ) -> Value:
        """Two f32 values packed into one f16x2/bf16x2 register (``cvt.rn``; ``hi`` in bits 16-31)."""
        if to not in ("f16x2", "bf16x2"):
            raise ValueError(f"cvt_pack: to={to!r}; allowed f16x2, bf16x2")
        self._require(f"cvt.rn.{to}.f32", 80, ptx="7.0")
        sa, sb = self._src(hi, "f32", "cvt_pack"), self._src(lo, "f32", "cvt_pack")
        d = self._dst(to, out, "cvt_pack")
        self._emit("cvt", ("rn", to, "f32"), (d.reg, sa, sb))
        return d

    def pack(self, lo: Value, hi: Value, to: str | None = None) -> Value:
        """Two 16-bit values as one 32-bit register (``mov.b32 d, {lo, hi}``); f16 -> f16x2."""
        self._check_value(lo, "pack")
        self._check_value(hi, "pack")
        if lo.ptype.bits != 16 or hi.ptype.bits != 16:
            raise TypeError(f"pack: {lo!r} and {hi!r} must both be 16-bit")
        to = to or {"f16": "f16x2", "bf16": "bf16x2"}.get(lo.type, "b32")
        d = self._dst(to, None, "pack")
        self._emit("mov", ("b32",), (d.reg, ir.Vec((lo.reg, hi.reg))))
        return d

    def unpack(self, v: Value) -> tuple[Value, Value]:
        """``(lo, hi)`` 16-bit halves of a 32-bit register; f16x2 -> two f16."""
        self._check_value(v, "unpack")
        if v.ptype.bits != 32:
            raise TypeError(f"unpack: {v!r} must be 32-bit")
        half = {"f16x2": "f16", "bf16x2": "bf16"}.get(v.type, "b16")
        lo, hi = self._dst(half, None, "unpack"), self._dst(half, None, "unpack")
        self._emit("mov", ("b32",), (ir.Vec((lo.reg, hi.reg)), v.reg))
        return lo, hi

    # -- transcendentals (approximate, f32 only: PTX has no f64 forms) --------------------------
    def _approx(self, op: str, x: Operandish, out: Value | None, type_: str | None) -> Value:
        t = self._infer_type(op, x, type_=type_)
        if t != "f32":
            raise TypeError(
                f"{op}.approx exists for .f32 only, got .{t}; compute f64 {op} with a polynomial"
            )
        mods = ("approx", "ftz") if self.math == "fast" else ("approx",)
        return self._unary(op, mods, x, t, out)

    def ex2(self, x: Operandish, type_: str | None = None, out: Value | None = None) -> Value:
        """``2 ** x`` (``ex2.approx.f32``). For ``e ** x`` use ``exp``."""
        return self._approx("ex2", x, out, type_)

    def lg2(self, x: Operandish, type_: str | None = None, out: Value | None = None) -> Value:
        """``log2(x)`` (``lg2.approx.f32``). For the natural log use ``log``."""
        return self._approx("lg2", x, out, type_)

    def sin(self, x: Operandish, type_: str | None = None, out: Value | None = None) -> Value:
        """``sin(x)`` (``sin.approx.f32``)."""
        return self._approx("sin", x, out, type_)

    def cos(self, x: Operandish, type_: str | None = None, out: Value | None = None) -> Value:
        """``cos(x)`` (``cos.approx.f32``; there is no cos.approx.f64)."""
        return self._approx("cos", x, out, type_)

    def exp(self, x: Value, out: Value | None = None) -> Value:
        """``e ** x`` = ``ex2(x * log2(e))`` (f32)."""
        if x.type != "f32":
            raise TypeError(f"exp: {x!r} must be f32 (ex2.approx is f32 only)")
        return self.ex2(self.mul(x, LOG2_E), out=out)

    def log(self, x: Value, out: Value | None = None) -> Value:
        """Natural log = ``lg2(x) * ln(2)`` (f32)."""
        if x.type != "f32":
            raise TypeError(f"log: {x!r} must be f32 (lg2.approx is f32 only)")
        return self.mul(self.lg2(x), LN_2, out=out)

    # -- addresses ------------------------------------------------------------------------------
    def addr(self, base: Value, index: Operandish, elem_size: int) -> Value:
        """``base + index * elem_size`` without 32-bit overflow: a u64 base takes ``mul.wide`` of a
        32-bit index (or ``mul.lo.u64`` of a 64-bit one) and ``add.u64``; a u32 (shared) base
        takes ``mad.lo.u32``."""
        if not isinstance(elem_size, int) or elem_size <= 0:
            raise ValueError(f"addr: elem_size={elem_size!r}; must be a positive int")
        self._check_value(base, "addr")
        if base.ptype.bits == 32:
            idx = index if isinstance(index, int) else self._as_u32(index)
            return (
                self.mad(idx, elem_size, base, type_="u32")
                if not isinstance(idx, int)
                else self.add(base, idx * elem_size)
            )
        if base.ptype.bits != 64 or base.ptype.kind == "f":
            raise TypeError(
                f"addr: base {base!r} must be a u64 (global/generic) or u32 (shared) address"
            )
        base64 = base if base.type == "u64" else self.bitcast(base, "u64")
        if isinstance(index, int):
            return self.add(base64, index * elem_size)
        if index.ptype.bits == 64:
            off = self.mul(self.bitcast(index, "u64") if index.type != "s64" else index, elem_size)
            off = off if off.type == "u64" else self.bitcast(off, "u64")
        else:
            kind = "s32" if index.type == "s32" else "u32"
            off = self.mul(
                index if index.type == kind else self.bitcast(index, kind), elem_size, mode="wide"
            )
            off = off if off.type == "u64" else self.bitcast(off, "u64")
        return self.add(base64, off)

    def _as_u32(self, v: Operandish) -> Value:
        if not isinstance(v, Value) or v.ptype.bits != 32 or v.ptype.kind == "f":
            raise TypeError(f"expected a 32-bit integer Value, got {v!r}")
        return v if v.type == "u32" else self.bitcast(v, "u32")


__all__ = ["LN_2", "LOG2_E", "ConvertMixin"]
