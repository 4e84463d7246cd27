"""Structured control flow, barriers, fences, atomics and warp collectives for ``KernelBuilder``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from . import ir
from .builder_base import Address, BuilderBase, Operandish, Value
from .types import ptx_type

ATOM_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas")
SHFL_MODES = ("up", "down", "bfly", "idx")
VOTE_MODES = ("any", "all", "uni", "ballot")
REDUX_OPS = ("add", "min", "max", "and", "or", "xor")
FULL_MASK = 0xFFFFFFFF


class FlowMixin(BuilderBase):
    # -- structure ------------------------------------------------------------------------------
    def _push(self, kind: str, n: int) -> None:
        self._structure.append((kind, n))

    def _pop(self, kind: str, n: int) -> None:
        if not self._structure or self._structure[-1] != (kind, n):
            raise RuntimeError(
                f"unbalanced structure: closing {kind} #{n} but the innermost open block is "
                f"{self._structure[-1] if self._structure else 'none'}"
            )
        self._structure.pop()

    @contextmanager
    def if_(self, pred: Value, negate: bool = False) -> Iterator[None]:
        """``with kb.if_(p):`` runs the body where ``p`` holds (``negate``: where it does not).
        May be followed directly by ``with kb.else_():``."""
        if not isinstance(pred, Value) or pred.type != "pred":
            raise TypeError(f"if_: condition {pred!r} must be a predicate Value (from setp)")
        self._label_counter += 1
        n = self._label_counter
        self._emit("bra", (), (ir.Sym(f"$L_else_{n}"),), self._guard(pred, negated=not negate))
        self._push("if", n)
        self._last_closed_if = None
        yield
        self._pop("if", n)
        self._body.append(ir.Label(f"$L_else_{n}"))
        self._last_closed_if = n

    @contextmanager
    def else_(self) -> Iterator[None]:
        """The else branch of the ``if_`` block that closed immediately before."""
        n = self._last_closed_if
        if n is None or self._body[-1] != ir.Label(f"$L_else_{n}"):
            raise RuntimeError("else_ must directly follow a closed `with kb.if_(...)` block")
        self._body.insert(
            len(self._body) - 1, ir.Instr("bra", ("uni",), (ir.Sym(f"$L_endif_{n}"),))
        )
        self._last_closed_if = None
        self._push("else", n)
        yield
        self._pop("else", n)
        self._body.append(ir.Label(f"$L_endif_{n}"))

    @contextmanager
    def loop(
        self, start: Operandish, stop: Operandish, step: int = 1, type_: str | None = None
    ) -> Iterator[Value]:
        """``with kb.loop(start, stop, step) as i:`` a runtime loop ``for i in range(start, stop,
        step)`` (step a nonzero Python int; zero trips when the range is empty)."""
        if not isinstance(step, int) or step == 0:
            raise ValueError(f"loop: step={step!r}; must be a nonzero Python int")
        t = (
            self._infer_type("loop", start, stop, type_=type_)
            if any(isinstance(x, Value) for x in (start, stop)) or type_
            else "s32"
        )
        if ptx_type(t).kind not in "us":
            raise TypeError(f"loop: the counter type .{t} must be an integer type")
        self._label_counter += 1
        n = self._label_counter
        i = self.mov(start, t)
        stop_op = self._src(stop, t, "loop")
        done = self._dst("pred", None, "loop")
        self._emit("setp", ("ge" if step > 0 else "le", t), (done.reg, i.reg, stop_op))
        self._emit("bra", (), (ir.Sym(f"$L_loopend_{n}"),), ir.Pred(done.reg))
        self._body.append(ir.Label(f"$L_loop_{n}"))
        self._push("loop", n)
        self._last_closed_if = None
        yield i
        self._pop("loop", n)
        self._emit("add", (t,), (i.reg, i.reg, ir.Imm(str(step))))
        again = self._dst("pred", None, "loop")
        self._emit("setp", ("lt" if step > 0 else "gt", t), (again.reg, i.reg, stop_op))
        self._emit("bra", (), (ir.Sym(f"$L_loop_{n}"),), ir.Pred(again.reg))
        self._body.append(ir.Label(f"$L_loopend_{n}"))
        self._last_closed_if = None

    def unroll(self, n: int) -> range:
        """Compile-time repetition: plain ``range(n)`` (Python loops emit n copies)."""
        return range(n)

    def label(self, name: str) -> str:
        """Place a label here. ``name`` gets the ``$`` sigil if it lacks one; returns it."""
        full = name if name.startswith("$") else f"$L_{name}"
        self._body.append(ir.Label(full))
        self._last_closed_if = None
        return full

    def bra(self, label: str, pred: Value | None = None, negate: bool = False) -> None:
        """Branch to ``label`` (which must carry the ``$`` sigil), optionally under a predicate."""
        if not label.startswith("$"):
            raise ValueError(
                f"bra: label {label!r} lacks the '$' sigil; use the name kb.label() returned"
            )
        self._emit("bra", (), (ir.Sym(label),), self._guard(pred, negate))

    def ret(self, pred: Value | None = None) -> None:
        """Return (exit the thread), optionally under a predicate."""
        self._emit("ret", (), (), self._guard(pred))

    # -- barriers and fences --------------------------------------------------------------------
    def bar_sync(self, id: int = 0, count: int | None = None) -> None:
        """``bar.sync id[, count]``: wait for all threads of the block (or ``count`` of them)."""
        if not 0 <= id <= 15:
            raise ValueError(f"bar_sync: id={id}; allowed 0..15")
        ops: tuple[ir.Operand, ...] = (ir.Imm(str(id)),)
        if count is not None:
            if count <= 0 or count % 32:
                raise ValueError(f"bar_sync: count={count}; must be a positive multiple of 32")
            ops += (ir.Imm(str(count)),)
        self._emit("bar", ("sync",), ops)

    def membar(self, level: str = "gl") -> None:
        """``membar.{cta,gl,sys}``."""
        if level not in ("cta", "gl", "sys"):
            raise ValueError(f"membar: level={level!r}; allowed cta, gl, sys")
        self._emit("membar", (level,), ())

    def fence(self, sem: str = "acq_rel", scope: str = "gpu") -> None:
        """``fence.{sc,acq_rel}.{cta,cluster,gpu,sys}`` (sm_70)."""
        if sem not in ("sc", "acq_rel") or scope not in ("cta", "cluster", "gpu", "sys"):
            raise ValueError(f"fence: sem={sem!r} scope={scope!r}")
        self._require(
            "fence", 90 if scope == "cluster" else 70, ptx="7.8" if scope == "cluster" else "6.0"
        )
        self._emit("fence", (sem, scope), ())

    def fence_proxy_async(self, space: str = "shared::cta") -> None:
        """``fence.proxy.async.<space>``: order generic-proxy writes before async-proxy reads
        (TMA, wgmma) (sm_90, PTX 8.0)."""
        if space not in ("shared::cta", "shared::cluster", "global", ""):
            raise ValueError(f"fence_proxy_async: space={space!r}")
        self._require("fence.proxy.async", 90, ptx="8.0")
        self._emit("fence", ("proxy", "async", space) if space else ("proxy", "async"), ())

    # -- atomics --------------------------------------------------------------------------------
    def _atom_type(self, op: str, type_: str) -> str:
        t = ptx_type(type_)
        if op not in ATOM_OPS:
            raise ValueError(f"atom: op={op!r}; allowed: {ATOM_OPS}")
        if op in ("and", "or", "xor", "cas", "exch") and t.kind != "b":
            return f"b{t.bits}"
        if op == "add" and t.name == "f64":
            self._require("atom.add.f64", 60)
        if op in ("inc", "dec") and t.name != "u32":
            raise TypeError(f"atom.{op} exists for .u32 only, got .{t.name}")
        if op in ("min", "max") and t.kind not in "us":
            raise TypeError(
                f"atom.{op}: .{t.name}; allowed integer types (float min/max needs sm_90 f16/bf16 forms)"
            )
        return t.name

    def atom(
        self,
        space: str,
        op: str,
        type_: str,
        addr: Address,
        value: Operandish,
        compare: Operandish | None = None,
        offset: int = 0,
    ) -> Value:
        """Atomic read-modify-write; returns the old value. ``cas`` takes ``compare`` (the expected
        value) and ``value`` (the new one)."""
        if space not in ("global", "shared"):
            raise ValueError(f"atom: space={space!r}; allowed global, shared")
        it = self._atom_type(op, type_)
        a = self._address(space, addr, offset, "atom")
        ops = [self._src(value, it, "atom", bits_ok=True)]
        if op == "cas":
            if compare is None:
                raise ValueError("atom cas needs compare=")
            ops.insert(0, self._src(compare, it, "atom", bits_ok=True))
        d = self._dst(ptx_type(type_).name, None, "atom")
        self._emit("atom", (space, op, it), (d.reg, a, *ops))
        return d

    def red(
        self, space: str, op: str, type_: str, addr: Address, value: Operandish, offset: int = 0
    ) -> None:
        """Atomic reduction without a result (``red``)."""
        if space not in ("global", "shared"):
            raise ValueError(f"red: space={space!r}; allowed global, shared")
        if op in ("cas", "exch"):
            raise ValueError(f"red: op={op!r} has no reduction form; use atom")
        it = self._atom_type(op, type_)
        a = self._address(space, addr, offset, "red")
        self._emit("red", (space, op, it), (a, self._src(value, it, "red", bits_ok=True)))

    # -- warp collectives -----------------------------------------------------------------------
    def shfl_sync(
        self,
        mode: str,
        value: Value,
        b: Operandish,
        c: Operandish | None = None,
        mask: Operandish = FULL_MASK,
    ) -> Value:
        """``shfl.sync.<mode>.b32``: ``value`` from another lane (32-bit values). ``b`` is the lane
        delta/mask/index; ``c`` the clamp (default 31, or 0 for ``up``)."""
        if mode not in SHFL_MODES:
            raise ValueError(f"shfl_sync: mode={mode!r}; allowed {SHFL_MODES}")
        if not isinstance(value, Value) or value.ptype.bits != 32:
            raise TypeError(
                f"shfl_sync: value {value!r} must be a 32-bit Value; split wider values"
            )
        c = (0 if mode == "up" else 31) if c is None else c
        ops = (
            self._src(value, "b32", "shfl_sync", bits_ok=True),
            self._src(b, "b32", "shfl_sync"),
            self._src(c, "b32", "shfl_sync"),
            self._src(_mask(mask), "b32", "shfl_sync"),
        )
        d = self._dst(value.type, None, "shfl_sync")
        self._emit("shfl", ("sync", mode, "b32"), (d.reg, *ops))
        return d

    def vote_sync(self, mode: str, pred: Value, mask: Operandish = FULL_MASK) -> Value:
        """``vote.sync``: any/all/uni return a predicate, ballot a u32 bit mask of lanes."""
        if mode not in VOTE_MODES:
            raise ValueError(f"vote_sync: mode={mode!r}; allowed {VOTE_MODES}")
        p = self._src(pred, "pred", "vote_sync")
        m = self._src(_mask(mask), "b32", "vote_sync")
        if mode == "ballot":
            d = self._dst("u32", None, "vote_sync")
            self._emit("vote", ("sync", "ballot", "b32"), (d.reg, p, m))
        else:
            d = self._dst("pred", None, "vote_sync")
            self._emit("vote", ("sync", mode, "pred"), (d.reg, p, m))
        return d

    def redux_sync(self, op: str, value: Value, mask: Operandish = FULL_MASK) -> Value:
        """``redux.sync``: a warp-wide reduction of a 32-bit integer (sm_80)."""
        if op not in REDUX_OPS:
            raise ValueError(f"redux_sync: op={op!r}; allowed {REDUX_OPS}")
        self._require("redux.sync", 80, ptx="7.0")
        if value.type not in ("u32", "s32", "b32"):
            raise TypeError(f"redux_sync: {value!r} must be u32/s32 (f32 forms need sm_100a)")
        it = "b32" if op in ("and", "or", "xor") else ("u32" if value.type == "b32" else value.type)
        s = self._src(value, it, "redux_sync", bits_ok=True)
        d = self._dst(value.type, None, "redux_sync")
        self._emit(
            "redux", ("sync", op, it), (d.reg, s, self._src(_mask(mask), "b32", "redux_sync"))
        )
        return d


def _mask(mask: Operandish) -> Operandish:
    """Membermasks as signed literals (``-1``) so ptxas accepts them for .b32."""
    if isinstance(mask, int) and mask >= 1 << 31:
        return mask - (1 << 32)
    return mask
