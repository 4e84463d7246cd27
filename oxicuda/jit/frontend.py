"""The front of the compiler: a Python function's source, AST, names and a content digest.

``FunctionInfo`` is made once per decorated function: it reads the source with
``inspect.getsource``, parses it with ``ast``, and knows how to resolve a global name (module
globals, closure cells, builtins). ``digest`` covers the source text, the values of the simple
constants the function reads from its globals and closure, and recursively the digests of the
``@oxicuda.device`` functions it calls: that is the source part of the kernel cache key.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import inspect
import textwrap
import types as pytypes

import numpy as np


class CompileError(Exception):
    """A kernel the compiler rejects: the message names the Python file, line and construct."""


class FunctionInfo:
    """The parsed source of one kernel or device function."""

    def __init__(self, fn: pytypes.FunctionType) -> None:
        if not isinstance(fn, pytypes.FunctionType):
            raise TypeError(f"@oxicuda.kernel/@oxicuda.device take a Python function, got {fn!r}")
        self.fn = fn
        self.name = fn.__name__
        self.qualname = fn.__qualname__
        self.filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as exc:
            raise CompileError(f"{fn.__qualname__}: the source of the function is not available "
                               f"({exc}); kernels must be defined in a file") from None
        self.source = textwrap.dedent("".join(lines))
        self.line_offset = first - 1
        node = _function_node(self.source, fn)
        if node is None:
            raise CompileError(f"{self.filename}:{first}: {fn.__qualname__} is not a plain def")
        self.node = node
        self.params = [a.arg for a in node.args.args]
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            raise CompileError(f"{self.where(node)}: kernel parameters must be plain positional "
                               "names (no defaults, *args, **kwargs or keyword-only)")
        self.closure = {}
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:
                    pass
        self._digest: str | None = None

    def where(self, node: ast.AST) -> str:
        line = getattr(node, "lineno", 1) + self.line_offset
        return f"{self.filename}:{line}"

    def line_of(self, node: ast.AST) -> int:
        return getattr(node, "lineno", 1) + self.line_offset

    def text_of(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.source, node) or type(node).__name__

    _MISSING = object()

    def lookup(self, name: str) -> object:
        """The object a free name refers to, or ``FunctionInfo._MISSING``."""
        if name in self.closure:
            return self.closure[name]
        g = self.fn.__globals__
        if name in g:
            return g[name]
        return getattr(builtins, name, self._MISSING)

    def annotations(self) -> dict[str, object]:
        """Parameter annotations as objects (strings from ``from __future__ import annotations``
        are evaluated in the function's globals)."""
        out = {}
        raw = getattr(self.fn, "__annotations__", {})
        for p in self.params:
            ann = raw.get(p)
            if isinstance(ann, str):
                try:
                    ann = eval(ann, dict(self.fn.__globals__), dict(self.closure))  # noqa: S307
                except Exception as exc:
                    raise CompileError(f"{self.filename}: annotation {ann!r} of parameter {p!r} "
                                       f"cannot be evaluated: {exc}") from None
            out[p] = ann
        return out

    def digest(self) -> str:
        if self._digest is None:
            h = hashlib.sha256(self.source.encode())
            h.update(self.qualname.encode())
            for name in sorted(_free_names(self.node)):
                value = self.lookup(name)
                h.update(name.encode())
                h.update(_value_token(value).encode())
            self._digest = h.hexdigest()[:24]
        return self._digest


def _function_node(source: str, fn) -> ast.FunctionDef | None:
    """The ``def`` of ``fn`` in its source, or its lambda as an equivalent ``def``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        try:  # a lambda cut out of a longer expression: parse the line as an expression
            tree = ast.parse("(" + source.strip().rstrip(",") + ")")
        except SyntaxError:
            return None
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.FunctionDef) and first.name == fn.__name__:
        return first
    if fn.__name__ != "<lambda>":
        return None
    names = fn.__code__.co_varnames[: fn.__code__.co_argcount]
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda) and tuple(a.arg for a in node.args.args) == names:
            ret = ast.Return(value=node.body)
            ast.copy_location(ret, node.body)
            fdef = ast.FunctionDef(name="lambda", args=node.args, body=[ret], decorator_list=[],
                                   returns=None, type_params=[])
            ast.copy_location(fdef, node)
            return fdef
    return None


def _free_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _value_token(value: object) -> str:
    from .kernel import DeviceFunction

    if isinstance(value, (bool, int, float, complex, str, np.generic)):
        return f"c:{type(value).__name__}:{value!r}"
    if isinstance(value, tuple) and all(isinstance(v, (bool, int, float)) for v in value):
        return f"t:{value!r}"
    if isinstance(value, DeviceFunction):
        return f"d:{value.info.digest()}"
    if isinstance(value, pytypes.ModuleType):
        return f"m:{value.__name__}"
    return f"o:{type(value).__qualname__}"
