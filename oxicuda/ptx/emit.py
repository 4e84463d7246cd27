"""IR -> PTX text. The canonical text form; ``oxicuda.ptx.parse`` is its inverse.

Layout rules (the parser relies on them only loosely, but round trips rely on them exactly):
one statement per line, body statements indented by one tab, labels at column 0, operands
separated by ``", "``, memory operands as ``[base]``, ``[base+8]`` or ``[base+-8]``.
"""

from __future__ import annotations

from .ir import (
    Addr,
    Block,
    Directive,
    Function,
    Imm,
    Instr,
    Label,
    Module,
    Operand,
    Param,
    Reg,
    RegDecl,
    Statement,
    Sym,
    VarDecl,
    Vec,
)


def emit_operand(op: Operand) -> str:
    if isinstance(op, Reg):
        return op.name
    if isinstance(op, Imm):
        return op.text
    if isinstance(op, Sym):
        return op.name
    if isinstance(op, Addr):
        base = emit_operand(op.base)
        if op.index is not None:
            base += ", " + emit_operand(op.index)
        return f"[{base}+{op.offset}]" if op.offset else f"[{base}]"
    if isinstance(op, Vec):
        return "{" + ", ".join(emit_operand(i) for i in op.items) + "}"
    raise TypeError(f"not a PTX operand: {op!r}")


def emit_instr(ins: Instr) -> str:
    guard = ""
    if ins.pred is not None:
        guard = f"@{'!' if ins.pred.negated else ''}{ins.pred.reg.name} "
    ops = ", ".join(emit_operand(o) for o in ins.operands)
    return f"{guard}{ins.full_opcode}{' ' + ops if ops else ''};"


def emit_var(v: VarDecl) -> str:
    parts = []
    if v.linkage:
        parts.append(f".{v.linkage}")
    parts.append(f".{v.space}")
    if v.align is not None:
        parts.append(f".align {v.align}")
    parts.append(f".{v.type}")
    name = v.name
    if v.size is not None:
        name += f"[{v.size}]" if v.size else "[]"
    parts.append(name)
    return " ".join(parts) + ";"


def emit_param(p: Param) -> str:
    parts = [".param", f".{p.type}", *p.ptr_attrs]
    if p.align is not None:
        parts.insert(1, f".align {p.align}")
    name = p.name + (f"[{p.size}]" if p.size is not None else "")
    return " ".join(parts + [name])


def _emit_statement(st: Statement, indent: str, out: list[str]) -> None:
    if isinstance(st, Instr):
        out.append(indent + emit_instr(st))
    elif isinstance(st, Label):
        out.append(f"{st.name}:")
    elif isinstance(st, RegDecl):
        name = st.name + (f"<{st.count}>" if st.count is not None else "")
        out.append(f"{indent}.reg .{st.type} {name};")
    elif isinstance(st, VarDecl):
        out.append(indent + emit_var(st))
    elif isinstance(st, Directive):
        out.append(indent + st.text)
    elif isinstance(st, Block):
        out.append(indent + "{")
        for inner in st.body:
            _emit_statement(inner, indent + "\t", out)
        out.append(indent + "}")
    else:
        raise TypeError(f"not a PTX statement: {st!r}")


def emit_function(fn: Function) -> str:
    out: list[str] = []
    head = []
    if fn.linkage:
        head.append(f".{fn.linkage}")
    head.append(".entry" if fn.is_entry else ".func")
    if fn.returns:
        head.append("(" + ", ".join(emit_param(p) for p in fn.returns) + ")")
    head.append(fn.name)
    if fn.params:
        out.append(" ".join(head) + "(")
        out.append(",\n".join("\t" + emit_param(p) for p in fn.params))
        out.append(")")
    else:
        out.append(" ".join(head) + "()")
    for name, values in fn.directives:
        out.append(f".{name} " + ", ".join(str(v) for v in values))
    out.append("{")
    for st in fn.body:
        _emit_statement(st, "\t", out)
    out.append("}")
    return "\n".join(out)


def emit(module: Module) -> str:
    """The PTX text of a module, ending with a newline. ASCII only."""
    out = [
        f".version {module.version}",
        f".target {module.target}",
        f".address_size {module.address_size}",
        "",
    ]
    for g in module.globals:
        out.append(emit_var(g))
    if module.globals:
        out.append("")
    for fn in module.functions:
        out.append(emit_function(fn))
        out.append("")
    return "\n".join(out)
