"""PTX text -> ``ir.Module``: the inverse of ``oxicuda.ptx.emit``.

Opcode-agnostic: any ``[@p|@!p] opcode.mod.mod operands;`` becomes an ``Instr``. Reads what nvcc,
Triton and our own emitter write: comments, the ``.version/.target/.address_size`` header,
module-level ``.global/.shared/.const`` variables (initializers are read and returned by
``parse_details``; ``ir.VarDecl`` has no field for them), ``.entry/.func`` with parameters
(``.ptr .global .align N`` included), performance directives, ``.reg`` declarations with ``<N>``
ranges, state-space variables, labels, nested ``{ }`` blocks and statement directives
(``.pragma``, ``.loc``, ... kept verbatim as ``ir.Directive``).

Where the IR has no node, the choice made here (and read back by the interpreter):

- a parenthesized operand list (``call`` return and argument lists) is a ``Sym`` whose name is
  the list as written in canonical form, e.g. ``Sym("(param0, param1)")``, so it re-emits as is;
- a negated predicate operand ``!%p1`` is ``Reg("!%p1")``; a two-destination ``%p1|%p2`` is
  ``Reg("%p1|%p2")``;
- several names in one ``.reg`` line give one ``RegDecl`` each;
- module-level ``.file`` and ``.section`` (DWARF) are dropped, as are ``.extern .func``
  prototypes without a body.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from .ir import (
    Addr,
    Block,
    Directive,
    Function,
    Imm,
    Instr,
    Label,
    Module,
    Param,
    Pred,
    Reg,
    RegDecl,
    Statement,
    Sym,
    VarDecl,
    Vec,
)


class PtxSyntaxError(ValueError):
    """The text is not PTX this parser reads; the message names the line and what was seen."""


_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<str>"[^"\n]*")
  | (?P<num>0[fF][0-9a-fA-F]{8}(?![\w$])|0[dD][0-9a-fA-F]{16}(?![\w$])|0[xX][0-9a-fA-F]+U?
        |\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+U?)
  | (?P<word>[%$A-Za-z_.][\w$.]*(?:::[\w$.]+)*)
  | (?P<punct>[{}()\[\],;:@!+\-=<>|*])
    """,
    re.VERBOSE,
)

_LINKAGES = ("visible", "extern", "weak", "common")
_SPACES = ("global", "shared", "const", "local", "param")
_PERF = ("maxntid", "reqntid", "minnctapersm", "maxnctapersm", "maxnreg", "maxclusterrank",
         "reqnctapercluster", "explicitcluster", "noreturn", "blocksareclusters", "pragma_abi")


def _strip_comments(text: str) -> str:
    """Blank out comments, keeping every other character (and line break) in place."""
    def blank(m: re.Match) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r"/\*.*?\*/|//[^\n]*", blank, text, flags=re.DOTALL)


@dataclass
class _Tok:
    kind: str
    text: str
    pos: int


@dataclass
class ParseDetails:
    """What ``parse_details`` returns besides the module.

    ``initializers``: module variable name -> the initializer's items as written (strings).
    ``instr_lines``: function name -> source line (1-based) of each ``Instr``, in the order a
    depth-first walk of the body (into ``Block``s) meets them.
    ``lines``: the source text split into lines, for messages.
    """

    initializers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    instr_lines: dict[str, list[int]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)


class _Parser:
    def __init__(self, text: str) -> None:
        self.raw = text
        clean = _strip_comments(text)
        self.toks: list[_Tok] = []
        pos = 0
        while pos < len(clean):
            m = _TOKEN.match(clean, pos)
            if m is None:
                raise self._error_at(pos, f"unexpected character {clean[pos]!r}")
            if m.lastgroup != "ws":
                self.toks.append(_Tok(m.lastgroup, m.group(0), pos))
            pos = m.end()
        self._newlines = [m.start() for m in re.finditer("\n", text)]
        self.i = 0
        self.details = ParseDetails(lines=text.splitlines())
        self._lines_of: list[int] = []

    # -- token helpers ---------------------------------------------------------------------
    def _line(self, pos: int) -> int:
        return bisect.bisect_right(self._newlines, pos - 1) + 1 if pos else 1

    def _error_at(self, pos: int, what: str) -> PtxSyntaxError:
        line = self._line(pos)
        src = self.raw.splitlines()[line - 1] if self.raw else ""
        return PtxSyntaxError(f"PTX line {line}: {what}\n  {line} | {src.strip()}")

    def error(self, what: str) -> PtxSyntaxError:
        pos = self.toks[self.i].pos if self.i < len(self.toks) else len(self.raw)
        return self._error_at(pos, what)

    def peek(self, k: int = 0) -> _Tok | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def next(self) -> _Tok:
        if self.i >= len(self.toks):
            raise self.error("unexpected end of text")
        t = self.toks[self.i]
        self.i += 1
        return t

    def at(self, text: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t.text == text

    def expect(self, text: str) -> _Tok:
        t = self.next()
        if t.text != text:
            self.i -= 1
            raise self.error(f"expected {text!r}, found {t.text!r}")
        return t

    def int_value(self) -> int:
        neg = False
        if self.at("-"):
            self.next()
            neg = True
        t = self.next()
        if t.kind != "num":
            self.i -= 1
            raise self.error(f"expected an integer, found {t.text!r}")
        v = int(t.text.rstrip("U"), 0)
        return -v if neg else v

    def skip_to_line_end(self, pos: int) -> None:
        """Skip tokens on the same source line as ``pos``."""
        end = self.raw.find("\n", pos)
        end = len(self.raw) if end < 0 else end
        while self.i < len(self.toks) and self.toks[self.i].pos < end:
            self.i += 1

    # -- module ------------------------------------------------------------------------------
    def module(self) -> Module:
        version, target, addr = "", "", 64
        globals_: list[VarDecl] = []
        functions: list[Function] = []
        while self.peek() is not None:
            t = self.peek()
            w = t.text
            if w == ".version":
                self.next()
                version = self.next().text
            elif w == ".target":
                self.next()
                parts = [self.next().text]
                while self.at(","):
                    self.next()
                    parts.append(self.next().text)
                target = ", ".join(parts)
            elif w == ".address_size":
                self.next()
                addr = self.int_value()
            elif w == ".file":
                self.skip_to_line_end(self.next().pos)
            elif w == ".section":
                self._skip_section()
            elif w in (";",):
                self.next()
            else:
                linkage = ""
                if w[1:] in _LINKAGES:
                    linkage = self.next().text[1:]
                nxt = self.peek()
                if nxt is None:
                    raise self.error("unexpected end of text after linkage")
                if nxt.text in (".entry", ".func"):
                    fn = self._function(linkage)
                    if fn is not None:
                        functions.append(fn)
                elif nxt.text[1:] in _SPACES:
                    globals_.append(self._var(linkage, module_level=True))
                else:
                    raise self.error(f"unexpected {nxt.text!r} at module level")
        if not version or not target:
            raise self.error("missing .version or .target header")
        return Module(version, target, addr, tuple(globals_), tuple(functions))

    def _skip_section(self) -> None:
        self.next()
        while not self.at("{"):
            self.next()
        depth = 0
        while True:
            t = self.next()
            if t.text == "{":
                depth += 1
            elif t.text == "}":
                depth -= 1
                if depth == 0:
                    return

    # -- declarations --------------------------------------------------------------------------
    def _var(self, linkage: str, module_level: bool) -> VarDecl:
        space = self.next().text[1:]
        align = None
        vtype = None
        while True:
            t = self.next()
            if t.text == ".align":
                align = self.int_value()
            elif t.text.startswith(".") and vtype is None:
                vtype = t.text[1:]
            else:
                self.i -= 1
                break
        if vtype is None:
            raise self.error(f".{space} variable without a type")
        name = self.next().text
        size = None
        if self.at("["):
            self.next()
            if self.at("]"):
                size = 0
            else:
                size = self.int_value()
            self.expect("]")
        if self.at("="):
            self.next()
            self.details.initializers[name] = self._initializer()
        self.expect(";")
        return VarDecl(space, vtype, name, align, size, linkage)

    def _initializer(self) -> tuple[str, ...]:
        items: list[str] = []
        depth = 0
        while True:
            t = self.peek()
            if t is None:
                raise self.error("unterminated initializer")
            if t.text == ";" and depth == 0:
                return tuple(items)
            self.next()
            if t.text == "{":
                depth += 1
            elif t.text == "}":
                depth -= 1
            elif t.text == ",":
                continue
            elif t.text == "-":
                nt = self.next()
                items.append("-" + nt.text)
            else:
                items.append(t.text)

    def _param(self) -> Param:
        self.expect(".param")
        align = None
        ptype = None
        ptr_attrs: list[str] = []
        while True:
            t = self.next()
            if t.text == ".align":
                a = self.int_value()
                if ptype is None:
                    align = a
                else:
                    ptr_attrs.append(f".align {a}")
            elif t.text == ".ptr" or (ptype is not None and t.text[1:] in _SPACES):
                ptr_attrs.append(t.text)
            elif t.text.startswith(".") and ptype is None:
                ptype = t.text[1:]
            else:
                self.i -= 1
                break
        if ptype is None:
            raise self.error(".param without a type")
        name = self.next().text
        size = None
        if self.at("["):
            self.next()
            size = self.int_value()
            self.expect("]")
        return Param(ptype, name, align, size, tuple(ptr_attrs))

    def _param_list(self) -> tuple[Param, ...]:
        self.expect("(")
        out = []
        while not self.at(")"):
            out.append(self._param())
            if self.at(","):
                self.next()
        self.expect(")")
        return tuple(out)

    def _function(self, linkage: str) -> Function | None:
        is_entry = self.next().text == ".entry"
        returns: tuple[Param, ...] = ()
        if self.at("("):
            returns = self._param_list()
        name = self.next().text
        params: tuple[Param, ...] = ()
        if self.at("("):
            params = self._param_list()
        directives = []
        while self.peek() is not None and self.peek().text[1:] in _PERF:
            d = self.next().text[1:]
            vals = []
            if self.peek() is not None and (self.peek().kind == "num"):
                vals.append(self.int_value())
                while self.at(","):
                    self.next()
                    vals.append(self.int_value())
            directives.append((d, tuple(vals)))
        if self.at(";"):
            self.next()
            return None  # a prototype: nothing to emit or run
        self._lines_of = []
        body = self._block_body()
        self.details.instr_lines[name] = self._lines_of
        return Function(name, params, body, tuple(directives), is_entry, linkage, returns)

    # -- bodies ----------------------------------------------------------------------------------
    def _block_body(self) -> tuple[Statement, ...]:
        self.expect("{")
        out: list[Statement] = []
        while not self.at("}"):
            if self.peek() is None:
                raise self.error("unterminated '{' block")
            out.extend(self._statement())
        self.expect("}")
        return tuple(out)

    def _statement(self) -> list[Statement]:
        t = self.peek()
        w = t.text
        if w == "{":
            return [Block(self._block_body())]
        if w == ".reg":
            return self._reg_decl()
        if w[1:] in _SPACES or (w[1:] in _LINKAGES and self.peek(1) and self.peek(1).text[1:] in _SPACES):
            linkage = self.next().text[1:] if w[1:] in _LINKAGES else ""
            return [self._var(linkage, module_level=False)]
        if w.startswith(".") and t.kind == "word":
            return [self._directive()]
        if t.kind == "word" and self.at(":", 1) and not w.startswith("%"):
            self.next()
            self.next()
            return [Label(w)]
        return [self._instr()]

    def _directive(self) -> Directive:
        start = self.next()
        if start.text == ".loc" or start.text == ".file":
            end = self.raw.find("\n", start.pos)
            end = len(self.raw) if end < 0 else end
            self.skip_to_line_end(start.pos)
            text = _strip_comments(self.raw[start.pos:end]).rstrip()
            return Directive(text)
        while not self.at(";"):
            self.next()
        semi = self.next()
        return Directive(self.raw[start.pos: semi.pos + 1])

    def _reg_decl(self) -> list[Statement]:
        self.expect(".reg")
        t = self.next().text
        if t == ".v2" or t == ".v4":
            t = t + " " + self.next().text  # vector registers: kept in the type string
        rtype = t[1:]
        out: list[Statement] = []
        while True:
            name = self.next().text
            count = None
            if self.at("<"):
                self.next()
                count = self.int_value()
                self.expect(">")
            out.append(RegDecl(rtype, name, count))
            if self.at(","):
                self.next()
                continue
            self.expect(";")
            return out

    def _instr(self) -> Instr:
        first = self.peek()
        pred = None
        if self.at("@"):
            self.next()
            neg = False
            if self.at("!"):
                self.next()
                neg = True
            pred = Pred(Reg(self.next().text), neg)
        tok = self.next()
        if tok.kind != "word":
            self.i -= 1
            raise self.error(f"expected an instruction, found {tok.text!r}")
        opcode, *mods = tok.text.split(".")
        operands = []
        while not self.at(";"):
            if self.peek() is None:
                raise self.error(f"missing ';' after {tok.text}")
            operands.append(self._operand())
            if self.at(","):
                self.next()
            elif not self.at(";"):
                raise self.error(f"expected ',' or ';' after an operand of {tok.text}, "
                                 f"found {self.peek().text!r}")
        self.next()
        self._lines_of.append(self._line(first.pos))
        return Instr(opcode, tuple(mods), tuple(operands), pred)

    def _operand(self):
        t = self.next()
        w = t.text
        if w == "[":
            base_tok = self.next()
            base = Reg(base_tok.text) if base_tok.text.startswith("%") else Sym(base_tok.text)
            index = None
            if self.at(","):  # a tensor-map operand: [tmap, {c0, c1}]
                self.next()
                index = self._operand()
                if not isinstance(index, Vec):
                    raise self.error("a tensor-map operand needs a coordinate vector {c0, ...}")
            offset = 0
            while self.at("+") or self.at("-"):
                sign = -1 if self.next().text == "-" else 1
                offset += sign * self.int_value()
            self.expect("]")
            return Addr(base, offset, index) if index is not None else Addr(base, offset)
        if w == "{":
            items = []
            while not self.at("}"):
                items.append(self._operand())
                if self.at(","):
                    self.next()
            self.expect("}")
            return Vec(tuple(items))
        if w == "(":
            items = []
            while not self.at(")"):
                items.append(self.next().text)
                if self.at(","):
                    self.next()
            self.expect(")")
            return Sym("(" + ", ".join(items) + ")")
        if w == "!":
            return Reg("!" + self.next().text)
        if w == "-":
            n = self.next()
            return Imm("-" + n.text)
        if t.kind == "num":
            return Imm(w)
        if t.kind == "word":
            if w.startswith("%"):
                if self.at("|"):
                    self.next()
                    return Reg(w + "|" + self.next().text)
                return Reg(w)
            return Sym(w)
        self.i -= 1
        raise self.error(f"unexpected {w!r} in an operand list")


def parse_details(text: str) -> tuple[Module, ParseDetails]:
    """Parse PTX text; return the module and the side facts the IR has no place for."""
    p = _Parser(text)
    module = p.module()
    return module, p.details


def parse(text: str) -> Module:
    """Parse PTX text into an ``ir.Module``. Raises ``PtxSyntaxError`` naming the line."""
    return parse_details(text)[0]
