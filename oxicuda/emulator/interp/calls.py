"""``call`` and ``.func``: direct calls are expanded inline when a kernel is loaded.

nvcc emits non-inlined device functions (``__noinline__``) as ``.func`` bodies called with the
ABI form::

    { .param .b32 param0; st.param.f32 [param0+0], %f1;
      .param .b32 retval0;
      call.uni (retval0), fname, (param0);
      ld.param.f32 %f2, [retval0+0]; }

``flatten_kernel`` turns an entry into one flat statement list: ``.param`` variables declared
inside the body become per-thread *local* variables (renamed per scope, ``ld/st.param`` on them
become ``ld/st.local``); each ``call`` is replaced by a copy of the callee whose registers,
labels and variables carry a per-call-site suffix, whose parameters are the caller's argument
variables and whose ``ret`` branches to the end of the copy. Registers declared in a nested
``{ }`` block are renamed for that block (nvcc's inline-asm blocks declare ``%p1`` inside and
use the outer ``%p1`` after). Recursion and indirect calls
(through a register, with a prototype) raise ``Unsupported`` naming the call.
"""

from __future__ import annotations

from ...ptx.ir import (
    Addr,
    Block,
    Directive,
    Function,
    Instr,
    Label,
    Pred,
    Reg,
    RegDecl,
    Sym,
    VarDecl,
    Vec,
)
from .faults import Unsupported

MAX_CALL_DEPTH = 16


def _names(decl: RegDecl) -> list[str]:
    return [decl.name] if decl.count is None else [f"{decl.name}{i}" for i in range(decl.count)]


def _declared(body) -> tuple[list[RegDecl], list[str]]:
    """Every register declaration and label of ``body``, nested blocks included."""
    regs, labels = [], []
    for st in body:
        if isinstance(st, Block):
            r, lab = _declared(st.body)
            regs += r
            labels += lab
        elif isinstance(st, RegDecl):
            regs.append(st)
        elif isinstance(st, Label):
            labels.append(st.name)
    return regs, labels


def _rename(op, ren: dict[str, str]):
    if isinstance(op, Reg):
        if "|" in op.name:
            return Reg("|".join(_rename(Reg(p), ren).name for p in op.name.split("|")))
        if op.name.startswith("!"):
            return Reg("!" + ren.get(op.name[1:], op.name[1:]))
        return Reg(ren.get(op.name, op.name))
    if isinstance(op, Sym):
        if op.name.startswith("("):
            return Sym("(" + ", ".join(ren.get(x, x) for x in _list(op.name)) + ")")
        return Sym(ren.get(op.name, op.name))
    if isinstance(op, Addr):
        idx = _rename(op.index, ren) if op.index is not None else None
        return Addr(_rename(op.base, ren), op.offset, idx)
    if isinstance(op, Vec):
        return Vec(tuple(_rename(x, ren) for x in op.items))
    return op


def _list(text: str) -> list[str]:
    inner = text.strip()[1:-1]
    return [x.strip() for x in inner.split(",") if x.strip()]


class _Flattener:
    def __init__(self, functions: dict[str, Function], lines: dict[str, list[int]]) -> None:
        self.functions = functions
        self.lines = lines
        self.out: list = []
        self.out_lines: list[int] = []
        self.local_params: set[str] = set()
        self.uid = 0

    def _fresh(self, tag: str) -> str:
        self.uid += 1
        return f"${tag}{self.uid}"

    def walk(self, body, ren: dict[str, str], lines, depth: int, ret_label: str | None,
             suffix: str | None, stack: tuple[str, ...]) -> None:
        for st in body:
            if isinstance(st, Block):
                inner = dict(ren)
                for d in st.body:
                    if isinstance(d, VarDecl) and d.space in ("param", "local") and \
                            (d.space == "param" or suffix is not None):
                        inner[d.name] = d.name + self._fresh("b")
                    elif isinstance(d, RegDecl):  # block-scoped: may shadow an outer register
                        tag = self._fresh("s")
                        for nm in _names(d):
                            inner[nm] = nm + tag
                self.walk(st.body, inner, lines, depth, ret_label, suffix, stack)
            elif isinstance(st, RegDecl):
                names = _names(st)
                if all(ren.get(nm, nm) == nm for nm in names):
                    self.out.append(st)
                else:
                    self.out += [RegDecl(st.type, ren.get(nm, nm)) for nm in names]
            elif isinstance(st, VarDecl):
                name = ren.get(st.name, st.name)
                if st.space == "param":
                    self.local_params.add(name)
                self.out.append(VarDecl(st.space, st.type, name, st.align, st.size, st.linkage))
            elif isinstance(st, Label):
                self.out.append(Label(ren.get(st.name, st.name)))
            elif isinstance(st, Directive):
                continue
            elif isinstance(st, Instr):
                line = next(lines, 0)
                if not ren and st.opcode not in ("call", "ret"):  # nothing to rename: as parsed
                    self.emit(st, line)
                    continue
                pred = Pred(_rename(st.pred.reg, ren), st.pred.negated) if st.pred else None
                if st.opcode == "call":
                    self.call(st, ren, pred, line, depth, stack)
                elif st.opcode == "ret" and ret_label is not None:
                    self.emit(Instr("bra", (), (Sym(ret_label),), pred), line)
                else:
                    self.emit(Instr(st.opcode, st.mods, tuple(_rename(o, ren) for o in st.operands),
                                    pred), line)

    def emit(self, instr: Instr, line: int) -> None:
        self.out.append(instr)
        self.out_lines.append(line)

    def call(self, instr: Instr, ren, pred, line: int, depth: int, stack) -> None:
        ops = list(instr.operands)
        rets = _list(ops.pop(0).name) if ops and isinstance(ops[0], Sym) and ops[0].name.startswith("(") else []
        if not ops or not isinstance(ops[0], Sym):
            raise Unsupported(f"{instr.full_opcode}: indirect calls (through a register) are not "
                              "supported; only 'call (ret), fname, (args)'")
        fname = ops.pop(0).name
        args = _list(ops.pop(0).name) if ops and isinstance(ops[0], Sym) and ops[0].name.startswith("(") else []
        if ops:
            raise Unsupported(f"{instr.full_opcode} {fname}: calls with a prototype or a target list "
                              "are not supported")
        callee = self.functions.get(fname)
        if callee is None:
            raise Unsupported(f"{instr.full_opcode}: {fname} has no .func body in this module")
        if fname in stack or depth >= MAX_CALL_DEPTH:
            raise Unsupported(f"{instr.full_opcode}: recursive call of {fname} (call chain "
                              f"{' -> '.join(stack + (fname,))}); the emulator inlines calls")
        if len(args) != len(callee.params) or len(rets) != len(callee.returns):
            raise Unsupported(f"{instr.full_opcode}: {fname} takes {len(callee.params)} parameter(s) "
                              f"and {len(callee.returns)} return value(s); the call passes "
                              f"{len(args)} and {len(rets)}")
        suffix = self._fresh("i")
        inner: dict[str, str] = {}
        regs, labels = _declared(callee.body)
        for d in regs:
            for nm in _names(d):
                inner[nm] = nm + suffix
        for lab in labels:
            inner[lab] = lab + suffix
        for st in callee.body:
            if isinstance(st, VarDecl) and st.space in ("local", "param", "shared") and st.space != "shared":
                inner[st.name] = st.name + suffix
        for p, a in zip(callee.params, args):
            inner[p.name] = ren.get(a, a)
        for p, r in zip(callee.returns, rets):
            inner[p.name] = ren.get(r, r)
        end = "$L__ret" + suffix
        if pred is not None:  # a predicated call: the other threads skip the copy
            self.emit(Instr("bra", (), (Sym(end),), Pred(pred.reg, not pred.negated)), line)
        self.walk(callee.body, inner, iter(self.lines.get(fname, [])), depth + 1, end, suffix,
                  stack + (fname,))
        self.out.append(Label(end))

    def finish(self) -> None:
        """``ld/st.param`` on the body's own .param variables address local memory."""
        lp = self.local_params
        if not lp:
            return
        for k, st in enumerate(self.out):
            if isinstance(st, Instr) and "param" in st.mods and any(
                    isinstance(o, Addr) and isinstance(o.base, Sym) and o.base.name in lp
                    for o in st.operands):
                mods = tuple("local" if m == "param" else m for m in st.mods)
                self.out[k] = Instr(st.opcode, mods, st.operands, st.pred)


def flatten_kernel(fn: Function, functions: dict[str, Function], lines: dict[str, list[int]]):
    """(statements, instruction lines) of entry ``fn`` with nested blocks flattened and every
    direct call inlined; ``.param`` variables of the body are returned as ``VarDecl(space=
    "param")`` and must be laid out as local memory."""
    fl = _Flattener(functions, lines)
    fl.walk(fn.body, {}, iter(lines.get(fn.name, [])), 0, None, None, (fn.name,))
    fl.finish()
    return fl.out, fl.out_lines


__all__ = ["MAX_CALL_DEPTH", "flatten_kernel"]
