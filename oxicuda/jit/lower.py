"""Lowering: the typed AST walk that records ``KernelBuilder`` calls.

Every expression is typed as it is lowered (``ops.Val``: a type and a register or constant), so
the typed form of the program is the sequence of builder calls itself. Variable types are found
by unification over the whole function: a variable takes the type of its first assignment; a
later assignment of another type records numpy's common type for that variable and the function
is lowered again from the start (at most a few rounds), so ``acc = 0`` followed by
``acc += x[i]`` with f32 ``x`` makes ``acc`` an f64 from the start (as numba does; write
``acc = f32(0)`` for an f32 accumulator).

Statements: assignment (names, tuples, subscripts), augmented assignment, annotated assignment,
``if/elif/else``, ``while``, ``for ... in range(...)`` (``unroll(...)`` or ``range(...,
unroll=True)`` with constant bounds repeats the body), ``break``, ``continue``, ``return``,
``pass``, ``assert``, and calls as statements. Loop variables of ``range`` loops are not
re-read from the range: assigning to one changes the iteration. Negative indices are not wrapped
(with checks on they raise KernelError as out of bounds).
"""

from __future__ import annotations

import ast
import math as pymath
from dataclasses import dataclass

import numpy as np

from oxicuda.ptx.builder import KernelBuilder, SharedArray, Value

from . import intrinsics as I
from . import mathlib, ops
from . import types as T
from .frontend import CompileError, FunctionInfo
from .ops import LoweringError, Val

MAX_ROUNDS = 6


@dataclass
class ArrayVal:
    """An array in a kernel: element type, space (global/shared/local), base address, shape and
    strides as i64 Vals (elements)."""

    t: T.ArrayType
    space: str
    base: object  # Value (u64 global / u32 shared or local window) or SharedArray
    shape: tuple[Val, ...]
    strides: tuple[Val, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)


@dataclass
class Site:
    """One place that can report a failure: for the KernelError message."""

    filename: str
    line: int
    kind: str
    text: str


class _Restart(Exception):
    pass


class Scope:
    """The variables of one (inlined) function body."""

    def __init__(self, info: FunctionInfo, prefix: str) -> None:
        self.info = info
        self.prefix = prefix
        self.vars: dict[str, object] = {}


class Lower:
    """Lowers one kernel (and the device functions it calls) onto a KernelBuilder."""

    def __init__(self, kb: KernelBuilder, *, checks: bool, slot_types: dict, err_ptr: Value | None):
        self.kb = kb
        self.checks = checks
        self.slot_types = slot_types
        self.err_ptr = err_ptr
        self.sites: list[Site] = []
        self.scope: Scope | None = None
        self.loops: list[tuple[str, str]] = []
        self.returns: list[dict] = []
        self.restart = False
        self.kernel_level = 1  # the depth of `returns` at which `return` ends the kernel
        self._labels = 0
        self._inline = 0
        self._node: ast.AST | None = None
        self.shared_count = 0
        self.dynamic_shared: SharedArray | None = None
        self.dynamic_shared_max = 0
        self._stubs: list[tuple[str, int, object, object]] = []

    # -- helpers --------------------------------------------------------------------------------
    def fresh(self, kind: str) -> str:
        self._labels += 1
        return f"jit_{kind}_{self._labels}"

    def error(self, node: ast.AST, msg: str) -> CompileError:
        info = self.scope.info
        return CompileError(f"{info.where(node)}: {msg} (in {info.qualname}: `{_short(info.text_of(node))}`)")

    def check(self, pred: Value, kind: str, index: object, bound: object) -> None:
        """Record a failure (the first one wins) and end the thread where ``pred`` holds."""
        if not self.checks or self.err_ptr is None:
            return
        if not isinstance(pred, Value):
            if not pred:
                return
            pred = self.kb.setp("eq", 0, 0, type_="s32")
        kb = self.kb
        node = self._node
        info = self.scope.info
        self.sites.append(Site(info.filename, info.line_of(node) if node is not None else 0, kind,
                               _short(info.text_of(node)) if node is not None else ""))
        site = len(self.sites)
        vals = []
        for v in (index, bound):
            if isinstance(v, Val) and not v.const:
                v = ops.materialize(kb, ops.cast(kb, v, T.i64))
            elif isinstance(v, Val):
                v = int(v.v)
            vals.append(-1 if v is None else v)
        label = "$L_" + self.fresh("fail")
        kb.bra(label, pred)
        self._stubs.append((label, site, vals[0], vals[1]))

    def emit_failure_handlers(self) -> None:
        """The out-of-line blocks the checks branch to: one stub per site that sets the site,
        index and bound, and one shared block that records the first failure and returns."""
        if not self._stubs:
            return
        kb = self.kb
        kb.ret()
        site_r, idx_r, bnd_r = kb.reg("u32"), kb.reg("s64"), kb.reg("s64")
        common = "$L_" + self.fresh("record")
        for label, site, index, bound in self._stubs:
            kb.label(label)
            kb.mov(site, "u32", out=site_r)
            kb.mov(index, "s64", out=idx_r)
            kb.mov(bound, "s64", out=bnd_r)
            kb.bra(common)
        kb.label(common)
        old = kb.atom("global", "cas", "b32", self.err_ptr, 1, compare=0)
        with kb.if_(kb.setp("eq", old, 0, type_="b32")):
            kb.st("global", self.err_ptr, site_r, offset=4)
            for k, d in enumerate("xyz"):
                kb.st("global", self.err_ptr, kb.tid(d), offset=8 + 4 * k)
                kb.st("global", self.err_ptr, kb.ctaid(d), offset=20 + 4 * k)
            kb.st("global", self.err_ptr, idx_r, offset=32)
            kb.st("global", self.err_ptr, bnd_r, offset=40)
            kb.membar("gl")
        kb.ret()

    # -- entry points ---------------------------------------------------------------------------
    def run_function(self, info: FunctionInfo, args: list[object], prefix: str = "") -> object:
        """Lower ``info``'s body with its parameters bound to ``args``; returns the returned
        value (None, a Val, an ArrayVal or a tuple) of an inlined function."""
        outer = self.scope
        self.scope = Scope(info, prefix)
        ret = {"label": "$L_" + self.fresh("ret"), "key": prefix + "#ret", "var": None}
        self.returns.append(ret)
        try:
            for name, value in zip(info.params, args):
                self.bind(name, value)
            self.block(info.node.body)
        finally:
            self.returns.pop()
            self.scope = outer
        self.kb.label(ret["label"])
        return ret["var"]

    def inline(self, fn, args: list[object], node: ast.AST) -> object:
        from .kernel import DeviceFunction

        assert isinstance(fn, DeviceFunction)
        info = fn.info
        if len(args) != len(info.params):
            raise self.error(node, f"{info.qualname}() takes {len(info.params)} arguments, "
                                   f"{len(args)} given")
        if len(self.returns) > 32:
            raise self.error(node, f"{info.qualname}: recursion is not supported (device functions "
                                   "are inlined)")
        self._inline += 1
        return self.run_function(info, args, prefix=f"{self.scope.prefix}{info.qualname}@{self._inline}/")

    # -- variables ------------------------------------------------------------------------------
    def bind(self, name: str, value: object) -> None:
        """Bind a parameter: constants and arrays as they are, registers copied."""
        if isinstance(value, Val) and not value.const:
            self.assign_var(name, value)
        else:
            self.scope.vars[name] = value

    def _slot_type(self, key: str, v: Val) -> tuple[T.ScalarType, bool]:
        """(type, weak) of a variable: what unification settled on, else its first value's (a
        variable first assigned a Python literal stays weak, as the literal would in Python)."""
        return self.slot_types.get(key, (v.t, v.weak))

    def assign_var(self, name: str, value: object) -> None:
        scope = self.scope
        key = scope.prefix + name
        old = scope.vars.get(name)
        if isinstance(value, tuple):
            if isinstance(old, tuple) and len(old) == len(value):
                for k, v in enumerate(value):
                    self._assign_scalar(f"{key}#{k}", old[k], v)
                return
            scope.vars[name] = tuple(self._new_var(f"{key}#{k}", v) for k, v in enumerate(value))
            return
        if isinstance(value, ArrayVal) or value is None:
            scope.vars[name] = value
            return
        if isinstance(old, Val) and not old.const and getattr(old, "_var", False):
            self._assign_scalar(key, old, value)
            return
        scope.vars[name] = self._new_var(key, value)

    def _new_var(self, key: str, v: object) -> object:
        if not isinstance(v, Val):
            return v
        t, weak = self._slot_type(key, v)
        c = ops.cast(self.kb, v, t)
        reg = self.kb.reg(t.reg)
        self._write(reg, c)
        out = Val(t, reg, weak)
        out._var = True
        out._key = key
        return out

    def _assign_scalar(self, key: str, var: object, v: object) -> None:
        if not isinstance(var, Val) or not isinstance(v, Val):
            raise LoweringError("a tuple element changes between a scalar and an array")
        unified = self._unify(var, v)
        if unified != (var.t, var.weak):
            self.slot_types[key] = unified
            self.restart = True
        self._write(var.v, ops.cast(self.kb, v, var.t))

    def _unify(self, var: Val, v: Val) -> tuple[T.ScalarType, bool]:
        """numpy's common type of a variable and a value assigned to it (weak: NEP 50)."""
        t = var.t
        if var.weak and v.weak:
            if t.kind == v.t.kind or v.t.kind == "b":
                return (t, True)
            return ((T.f64, True) if "f" in (t.kind, v.t.kind) else (T.i64, True))
        if var.weak:
            r = np.result_type(v.t.dtype, ops.PY_ZERO[t.kind]) if v.t is not T.bf16 else v.t.dtype
            return (T.scalar_type(r), False)
        if v.t is t:
            return (t, False)
        if v.weak:
            try:
                return (T.scalar_type(np.result_type(t.dtype, ops.PY_ZERO[v.t.kind])), False)
            except (TypeError, ValueError, OverflowError):
                return (t, False)
        if t is T.bf16 or v.t is T.bf16:
            other = v.t if t is T.bf16 else t
            return (T.bf16 if other is T.bf16 else T.f32 if other.bits <= 16 else T.f64
                    if other.kind != "f" or other.bits == 64 else T.f32, False)
        return (T.scalar_type(np.result_type(t.dtype, v.t.dtype)), False)

    def _write(self, reg: Value, v: Val) -> None:
        kb = self.kb
        if v.t.kind == "b":
            src = ops.materialize(kb, v)
            kb.or_(src, src, out=reg)
            return
        if v.const:
            kb.mov(ops._py(v.t.dtype.type(v.v), v.t), reg.type, out=reg)
        else:
            kb.mov(v.v, reg.type, out=reg)

    # -- statements -----------------------------------------------------------------------------
    def block(self, body: list[ast.stmt]) -> None:
        for st in body:
            self.stmt(st)

    def stmt(self, node: ast.stmt) -> None:
        self._node = node
        try:
            method = getattr(self, "s_" + type(node).__name__, None)
            if method is None:
                raise self.error(node, f"unsupported statement {type(node).__name__}")
            method(node)
        except (LoweringError, ValueError, TypeError, NotImplementedError) as exc:
            # the builder's refusals (shared memory over the limit, an instruction the arch
            # lacks) are reported at the Python line that asked for them
            raise self.error(node, str(exc)) from None

    def s_Pass(self, node):
        pass

    def s_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.expr(node.value)

    def s_Assign(self, node):
        value = self.expr(node.value)
        for target in node.targets:
            self.store(target, value)

    def s_AnnAssign(self, node):
        if node.value is None:
            return
        ann = self.resolve_static(node.annotation)
        value = self.expr(node.value)
        if isinstance(ann, (T.ScalarType, type)) and isinstance(value, Val):
            st = T.scalar_type(ann)
            if isinstance(node.target, ast.Name):
                self.slot_types.setdefault(self.scope.prefix + node.target.id, (st, False))
            value = ops.cast(self.kb, value, st)
        self.store(node.target, value)

    def s_AugAssign(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"unsupported operator {type(node.op).__name__}")
        target = node.target
        if isinstance(target, ast.Name):
            cur = self.load_name(target)
            self.store(target, ops.binary(self, op, cur, self.expr(node.value)))
            return
        if isinstance(target, ast.Subscript):
            arr = self.expr(target.value)
            if not isinstance(arr, ArrayVal):
                raise self.error(node, "augmented assignment to an element of a non-array")
            idx = self.indices(target.slice)
            addr = self.element_address(arr, idx)
            cur = self.load_element(arr, addr)
            self.store_element(arr, addr, ops.binary(self, op, cur, self.expr(node.value)))
            return
        raise self.error(node, f"unsupported augmented assignment target {type(target).__name__}")

    def store(self, target: ast.expr, value: object) -> None:
        if isinstance(target, ast.Name):
            self.assign_var(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                n = len(value) if isinstance(value, tuple) else 1
                raise self.error(target, f"cannot unpack {n} value(s) into {len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self.store(t, v)
        elif isinstance(target, ast.Subscript):
            arr = self.expr(target.value)
            if not isinstance(arr, ArrayVal):
                raise self.error(target, "item assignment to a value that is not an array")
            if arr.t.access == "in":
                raise self.error(target, "assignment to an element of an In[...] (read-only) array")
            idx = self.indices(target.slice)
            if not isinstance(value, Val):
                raise self.error(target, "only scalars can be stored into array elements")
            self.store_element(arr, self.element_address(arr, idx), value)
        else:
            raise self.error(target, f"unsupported assignment target {type(target).__name__}")

    def s_If(self, node):
        cond = ops.to_bool(self, self.scalar(node.test))
        kb = self.kb
        if cond.const:
            self.block(node.body if cond.v else node.orelse)
            return
        with kb.if_(cond.v):
            self.block(node.body)
        if node.orelse:
            with kb.else_():
                self.block(node.orelse)

    def s_While(self, node):
        if node.orelse:
            raise self.error(node, "while ... else is not supported")
        kb = self.kb
        head, end = self.fresh("while"), "$L_" + self.fresh("wend")
        head = kb.label(head)
        cond = ops.to_bool(self, self.scalar(node.test))
        if cond.const:
            if not cond.v:
                kb.label(end)
                return
        else:
            kb.bra(end, cond.v, negate=True)
        self.loops.append((head, end))
        self.block(node.body)
        self.loops.pop()
        kb.bra(head)
        kb.label(end)

    def s_For(self, node):
        if node.orelse:
            raise self.error(node, "for ... else is not supported")
        it = node.iter
        if not isinstance(it, ast.Call):
            values = self.expr(it)
            if not isinstance(values, tuple):
                raise self.error(it, "for loops iterate over range(...), unroll(...) or a tuple")
            end = "$L_" + self.fresh("tend")
            for v in values:  # a tuple: the body repeated per element
                cont = "$L_" + self.fresh("tcont")
                if isinstance(node.target, ast.Name) and isinstance(v, Val) and v.const:
                    self.scope.vars[node.target.id] = v
                else:
                    self.store(node.target, v)
                self.loops.append((cont, end))
                self.block(node.body)
                self.loops.pop()
                self.kb.label(cont)
            self.kb.label(end)
            return
        fn = self.resolve_static(it.func)
        unroll = False
        if fn is I.unroll:
            unroll = True
        elif fn is not range:
            raise self.error(it, "for loops iterate over range(...) or unroll(...) only")
        for kw in it.keywords:
            if kw.arg == "unroll":
                u = self.scalar(kw.value)
                unroll = bool(u.v) if u.const else True
            else:
                raise self.error(it, f"range() got an unexpected keyword {kw.arg!r}")
        args = [self.scalar(a) for a in it.args]
        if not 1 <= len(args) <= 3:
            raise self.error(it, "range() takes 1 to 3 arguments")
        if len(args) == 1:
            start, stop, step = ops.const(0), args[0], ops.const(1)
        elif len(args) == 2:
            start, stop, step = args[0], args[1], ops.const(1)
        else:
            start, stop, step = args
        for a in (start, stop, step):
            if a.t.kind not in "iu" and not (a.weak and isinstance(a.v, int)):
                raise self.error(it, f"range() bounds must be integers, got {a.t.name}")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a plain name")
        if unroll:
            if not (start.const and stop.const and step.const):
                raise self.error(it, "unroll needs constant range bounds")
            values = list(range(int(start.v), int(stop.v), int(step.v)))
            if len(values) > 1024:
                raise self.error(it, f"unroll of {len(values)} iterations; at most 1024")
            end = "$L_" + self.fresh("uend")
            for v in values:
                cont = "$L_" + self.fresh("ucont")
                self.scope.vars[node.target.id] = ops.const(v)
                self.loops.append((cont, end))
                self.block(node.body)
                self.loops.pop()
                self.kb.label(cont)
            self.kb.label(end)
            return
        if step.const and int(step.v) == 0:
            raise self.error(it, "range() step must not be zero")
        kb = self.kb
        name = node.target.id
        (ti, _), _ = ops.resolve(np.add, start, stop) if not (start.weak and stop.weak) else ((T.i64, T.i64), T.i64)
        if not step.const:
            (ti, _), _ = ops.resolve(np.add, Val(ti, 0), step)
        self.assign_var(name, ops.cast(kb, start, ti) if not start.weak else start)
        var = self.scope.vars[name]
        lt = var.t
        stop_v = ops.cast(kb, stop, lt)
        stop_v = stop_v if stop_v.const else self._copy(stop_v)
        step_v = ops.cast(kb, step, lt)
        step_v = step_v if step_v.const else self._copy(step_v)
        head = kb.label(self.fresh("for"))
        cont, end = "$L_" + self.fresh("fcont"), "$L_" + self.fresh("fend")
        cur = self.scope.vars[name]
        if step_v.const:
            more = ops.compare(self, "<" if int(step_v.v) > 0 else ">", cur, stop_v)
        else:
            up = ops.compare(self, "<", cur, stop_v)
            down = ops.compare(self, ">", cur, stop_v)
            pos = ops.compare(self, ">", step_v, ops.const(0))
            more = Val(T.bool_, kb.or_(kb.and_(pos.v, up.v), kb.and_(kb.not_(pos.v), down.v)))
        kb.bra(end, more.v, negate=True)
        self.loops.append((cont, end))
        self.block(node.body)
        self.loops.pop()
        kb.label(cont)
        cur = self.scope.vars[name]
        self.assign_var(name, ops.binary(self, "+", cur, step_v))
        kb.bra(head)
        kb.label(end)

    def _copy(self, v: Val) -> Val:
        reg = self.kb.reg(v.t.reg)
        self._write(reg, v)
        return Val(v.t, reg)

    def s_Break(self, node):
        if not self.loops:
            raise self.error(node, "break outside a loop")
        self.kb.bra(self.loops[-1][1])

    def s_Continue(self, node):
        if not self.loops:
            raise self.error(node, "continue outside a loop")
        self.kb.bra(self.loops[-1][0])

    def s_Return(self, node):
        ret = self.returns[-1]
        if len(self.returns) == self.kernel_level:  # the kernel itself
            if node.value is not None:
                raise self.error(node, "a kernel cannot return a value; write results to an array")
            self.kb.ret()
            return
        value = self.expr(node.value) if node.value is not None else None
        if ret["var"] is None:
            ret["var"] = self._new_ret(ret["key"], value)
        else:
            self._assign_ret(ret["key"], ret["var"], value)
        self.kb.bra(ret["label"])

    def _new_ret(self, key: str, value: object) -> object:
        if isinstance(value, tuple):
            return tuple(self._new_ret(f"{key}#{k}", v) for k, v in enumerate(value))
        if isinstance(value, Val):
            return self._new_var(key, value)
        return value

    def _assign_ret(self, key: str, var: object, value: object) -> None:
        if isinstance(var, tuple):
            if not isinstance(value, tuple) or len(value) != len(var):
                raise LoweringError("the returns of a device function differ in shape")
            for k, (a, b) in enumerate(zip(var, value)):
                self._assign_ret(f"{key}#{k}", a, b)
            return
        if isinstance(var, Val) and isinstance(value, Val):
            self._assign_scalar(key, var, value)
            return
        if var is not value:
            raise LoweringError("a device function returns different arrays or None on different paths")

    def s_Assert(self, node):
        cond = ops.to_bool(self, self.scalar(node.test))
        msg = ""
        if node.msg is not None:
            if not (isinstance(node.msg, ast.Constant) and isinstance(node.msg.value, str)):
                raise self.error(node, "an assert message must be a string literal")
            msg = node.msg.value
        kind = f"assertion failed: {msg}" if msg else "assertion failed"
        if cond.const:
            if not cond.v:
                self.check(True, kind, None, None)
            return
        self.check(self.kb.not_(cond.v), kind, None, None)

    # -- expressions ----------------------------------------------------------------------------
    def scalar(self, node: ast.expr) -> Val:
        v = self.expr(node)
        if not isinstance(v, Val):
            raise self.error(node, f"expected a scalar, got {_kind(v)}")
        return v

    def expr(self, node: ast.expr) -> object:
        prev = self._node
        self._node = node
        try:
            method = getattr(self, "e_" + type(node).__name__, None)
            if method is None:
                raise self.error(node, f"unsupported expression {type(node).__name__}")
            return method(node)
        except (LoweringError, ValueError, TypeError, NotImplementedError) as exc:
            # the builder's refusals (shared memory over the limit, an instruction the arch
            # lacks) are reported at the Python line that asked for them
            raise self.error(node, str(exc)) from None
        finally:
            self._node = prev

    def e_Constant(self, node):
        if isinstance(node.value, (bool, int, float)):
            return ops.const(node.value)
        raise self.error(node, f"unsupported constant {node.value!r} ({type(node.value).__name__})")

    def e_Name(self, node):
        return self.load_name(node)

    def load_name(self, node: ast.Name) -> object:
        name = node.id
        if name in self.scope.vars:
            return self.scope.vars[name]
        obj = self.scope.info.lookup(name)
        if obj is FunctionInfo._MISSING:
            if name in I.BY_NAME:
                return self.static_value(I.BY_NAME[name], node)
            raise self.error(node, f"name {name!r} is not defined")
        return self.static_value(obj, node)

    def static_value(self, obj: object, node: ast.AST) -> object:
        if isinstance(obj, (bool, int, float, np.generic)):
            return ops.const(obj)
        if isinstance(obj, tuple) and all(isinstance(v, (bool, int, float)) for v in obj):
            return tuple(ops.const(v) for v in obj)
        return _Static(obj)

    def resolve_static(self, node: ast.expr) -> object:
        v = self.expr(node)
        return v.obj if isinstance(v, _Static) else v

    def e_Attribute(self, node):
        base = self.expr(node.value)
        attr = node.attr
        if isinstance(base, _Static):
            obj = base.obj
            if isinstance(obj, I.Dim3):
                if attr not in ("x", "y", "z"):
                    raise self.error(node, f"{obj.name} has .x, .y and .z only")
                v = getattr(self.kb, obj.special)(attr)
                return Val(T.i32, self.kb.bitcast(v, "s32"))
            if not hasattr(obj, attr):
                raise self.error(node, f"{obj!r} has no attribute {attr!r}")
            return self.static_value(getattr(obj, attr), node)
        if isinstance(base, ArrayVal):
            if attr == "shape":
                return base.shape
            if attr == "ndim":
                return ops.const(base.ndim)
            if attr == "size":
                return self._product(base.shape)
            if attr == "dtype":
                return _Static(base.t.dtype)
            raise self.error(node, f"arrays have .shape, .ndim, .size and .dtype in kernels, not .{attr}")
        if isinstance(base, Val) and attr in ("real",):
            return base
        raise self.error(node, f"unsupported attribute .{attr} of {_kind(base)}")

    def _product(self, vals) -> Val:
        out = ops.const(1)
        for v in vals:
            out = ops.binary(self, "*", out, v)
        return out

    def e_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    def e_BinOp(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"unsupported operator {type(node.op).__name__}")
        a, b = self.scalar(node.left), self.scalar(node.right)
        return ops.binary(self, op, a, b)

    def e_UnaryOp(self, node):
        x = self.scalar(node.operand)
        if isinstance(node.op, ast.USub):
            return ops.negate(self, x)
        if isinstance(node.op, ast.UAdd):
            return x
        if isinstance(node.op, ast.Invert):
            return ops.invert(self, x)
        return ops.logical_not(self, x)

    def e_Compare(self, node):
        kb = self.kb
        left = self.scalar(node.left)
        result: Val | None = None
        for op, comp in zip(node.ops, node.comparators):
            sym = _CMPOPS.get(type(op))
            if sym is None:
                raise self.error(node, f"unsupported comparison {type(op).__name__}")
            right = self.scalar(comp)
            r = ops.compare(self, sym, left, right)
            if result is None:
                result = r
            elif result.const or r.const:
                result = r if (result.const and result.v) else result if (r.const and r.v) else Val(T.bool_, False)
            else:
                result = Val(T.bool_, kb.and_(result.v, r.v))
            left = right
        return result

    def e_BoolOp(self, node):
        kb = self.kb
        is_and = isinstance(node.op, ast.And)
        first = ops.to_bool(self, self.scalar(node.values[0]))
        if first.const:
            if first.v != is_and:  # False and ... / True or ...
                return Val(T.bool_, first.v)
            if len(node.values) == 1:
                return first
            return self.e_BoolOp(ast.BoolOp(op=node.op, values=node.values[1:]))
        res = kb.reg("pred")
        kb.or_(first.v, first.v, out=res)
        end = "$L_" + self.fresh("bool")
        for v in node.values[1:]:
            kb.bra(end, res, negate=is_and)
            nxt = ops.to_bool(self, self.scalar(v))
            self._write(res, nxt)
        kb.label(end)
        return Val(T.bool_, res)

    def e_IfExp(self, node):
        kb = self.kb
        cond = ops.to_bool(self, self.scalar(node.test))
        if cond.const:
            return self.expr(node.body if cond.v else node.orelse)
        key = self.scope.prefix + f"#ifexp{node.lineno}:{node.col_offset}"
        with kb.if_(cond.v):
            a = self.scalar(node.body)
            var = self._new_var(key, a)
        with kb.else_():
            b = self.scalar(node.orelse)
            self._assign_scalar(key, var, b)
        return Val(var.t, var.v)

    def e_Subscript(self, node):
        base = self.expr(node.value)
        if isinstance(base, tuple):
            idx = self.scalar(node.slice)
            if not idx.const:
                raise self.error(node, "tuples are indexed by constants only")
            try:
                return base[int(idx.v)]
            except IndexError:
                raise self.error(node, f"tuple index {idx.v} out of range (length {len(base)})") from None
        if isinstance(base, ArrayVal):
            idx = self.indices(node.slice)
            return self.load_element(base, self.element_address(base, idx))
        raise self.error(node, f"cannot index {_kind(base)}")

    def e_Call(self, node):
        from .calls import call

        return call(self, node)

    # -- arrays ---------------------------------------------------------------------------------
    def indices(self, node: ast.expr) -> list[Val]:
        if isinstance(node, ast.Slice):
            raise self.error(node, "slices are not supported in kernels; index elements")
        v = self.expr(node)
        vals = list(v) if isinstance(v, tuple) else [v]
        for x in vals:
            if not isinstance(x, Val) or x.t.kind not in "iu":
                raise self.error(node, f"array indices must be integers, got {_kind(x)}")
        return vals

    def element_address(self, arr: ArrayVal, idx: list[Val]) -> object:
        kb = self.kb
        if len(idx) != arr.ndim:
            raise LoweringError(f"a {arr.ndim}-d array indexed with {len(idx)} indices")
        off: Val | None = None
        for k, (i, n, s) in enumerate(zip(idx, arr.shape, arr.strides)):
            i64 = ops.cast(kb, i, T.i64)
            if self.checks:
                if i64.const and n.const:
                    if not 0 <= int(i64.v) < int(n.v):
                        raise LoweringError(f"constant index {i64.v} out of bounds for axis {k} "
                                            f"of size {n.v}")
                else:
                    iv = ops.materialize(kb, i64)
                    nv = n.v if not n.const else int(n.v)
                    bad = kb.setp("hs", kb.bitcast(iv, "u64"),
                                  kb.bitcast(nv, "u64") if isinstance(nv, Value) else nv, type_="u64")
                    self.check(bad, f"index out of bounds for axis {k}", i64, n)
            term = ops.binary(self, "*", i64, s) if not (s.const and int(s.v) == 1) else i64
            off = term if off is None else ops.binary(self, "+", off, term)
        if arr.space == "shared" and isinstance(arr.base, SharedArray):
            if off.const:
                return ("sym", arr.base, int(off.v) * arr.t.dtype.itemsize)
            o32 = kb.cvt(ops.materialize(kb, off), "u32")
            return ("reg", kb.add(kb.shared_addr(arr.base), kb.mul(o32, arr.t.dtype.itemsize)), 0)
        if arr.space == "shared":
            o32 = kb.cvt(ops.materialize(kb, off), "u32") if not off.const else int(off.v)
            if isinstance(o32, int):
                return ("reg", arr.base, o32 * arr.t.dtype.itemsize)
            return ("reg", kb.mad(o32, arr.t.dtype.itemsize, arr.base), 0)
        if off.const:
            return ("reg", arr.base, int(off.v) * arr.t.dtype.itemsize)
        return ("reg", kb.addr(arr.base, ops.materialize(kb, off), arr.t.dtype.itemsize), 0)

    def load_element(self, arr: ArrayVal, addr) -> Val:
        kb = self.kb
        _, base, offset = addr
        st = arr.t.dtype
        nc = arr.t.access == "in" and arr.space == "global"
        if st.kind == "b":
            raw = kb.ld(arr.space, "u8", base, offset=offset, nc=nc)
            return Val(T.bool_, kb.setp("ne", raw, 0, type_="u32"))
        v = kb.ld(arr.space, st.mem, base, offset=offset, nc=nc)
        if st.mem in ("s16", "u16"):
            v = kb.cvt(v, st.reg)
        return Val(st, v)

    def store_element(self, arr: ArrayVal, addr, value: Val) -> None:
        kb = self.kb
        _, base, offset = addr
        st = arr.t.dtype
        v = ops.cast(kb, value, st)
        if st.kind == "b":
            kb.st(arr.space, base, ops.materialize(kb, Val(T.u32, kb.selp(1, 0, ops.materialize(kb, v), type_="u32"))),
                  offset=offset, type_="u8")
            return
        if v.const:
            kb.st(arr.space, base, ops.operand(kb, v, st) if st.bits != 16 or st.kind != "f" else ops.materialize(kb, v),
                  offset=offset, type_=st.mem)
            return
        r = v.v
        if st.mem in ("s16", "u16"):
            r = kb.cvt(r, st.mem)
        kb.st(arr.space, base, r, offset=offset, type_=st.mem)


class _Static:
    """A compile-time Python object met in an expression (a module, a function, a type)."""

    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        self.obj = obj


def _kind(v: object) -> str:
    if isinstance(v, Val):
        return f"a {v.t.name} scalar"
    if isinstance(v, ArrayVal):
        return f"a {v.ndim}-d {v.t.dtype.name} array"
    if isinstance(v, tuple):
        return f"a tuple of {len(v)}"
    if isinstance(v, _Static):
        return repr(v.obj)
    return repr(v)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
           ast.LShift: "<<", ast.RShift: ">>"}
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}

_ = (pymath, mathlib)
