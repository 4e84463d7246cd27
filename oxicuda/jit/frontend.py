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
import re
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
        node, self.source = _function_node(self.source, fn)
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
                from . import types as kernel_types

                # the kernel types are always in scope (kernels defined inside functions)
                scope = {n: getattr(kernel_types, n) for n in kernel_types.__all__}
                scope.update(self.fn.__globals__)
                try:
                    ann = eval(ann, scope, dict(self.closure))
                except Exception as exc:  # noqa: BLE001 - any failure of a user annotation
                    raise CompileError(f"{self.filename}: annotation {ann!r} of parameter {p!r} "
                                       f"cannot be evaluated: {exc}") from None
            out[p] = ann
        return out

    def digest(self) -> str:
        if self._digest is None:
            h = hashlib.sha256(ast.dump(self.node, include_attributes=False).encode())
            h.update(self.qualname.encode())
            for name in sorted(_free_names(self.node)):
                value = self.lookup(name)
                h.update(name.encode())
                h.update(_value_token(value).encode())
            self._digest = h.hexdigest()[:24]
        return self._digest


def _function_node(source: str, fn) -> tuple[ast.FunctionDef | None, str]:
    """The ``def`` of ``fn`` in its source, or its lambda as an equivalent ``def``."""
    tree = None
    # a lambda's source is the statement lines around it, possibly cut: try a few completions
    body = source.strip()
    attempts = [source, source.rstrip() + "\n    pass\n"]
    bodies = [body, re.sub(r"^[A-Za-z_]\w*\s*=(?!=)\s*", "", body)]  # also without "name="
    attempts += ["(" + b[: len(b) - cut] + ")" for b in bodies for cut in range(min(12, len(b)))]
    for text in attempts:
        try:
            tree = ast.parse(text)
            source = text
            break
        except SyntaxError:
            continue
    if tree is None:
        return None, source
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.FunctionDef) and first.name == fn.__name__:
        return first, source
    if fn.__name__ != "<lambda>":
        return None, source
    names = fn.__code__.co_varnames[: fn.__code__.co_argcount]
    candidates = [n for n in ast.walk(tree)
                  if isinstance(n, ast.Lambda) and tuple(a.arg for a in n.args.args) == names]
    if len(candidates) > 1:  # several lambdas of the same parameters: the one compiling the same
        same = [n for n in candidates if _same_code(n, fn.__code__)]
        candidates = same or candidates[:1]
    for node in candidates:
            ret = ast.Return(value=node.body)
            ast.copy_location(ret, node.body)
            fdef = ast.FunctionDef(name="lambda", args=node.args, body=[ret], decorator_list=[],
                                   returns=None, type_params=[])
            ast.copy_location(fdef, node)
            return fdef, source
    return None, source


def _same_code(node: ast.Lambda, code) -> bool:
    try:
        compiled = compile(ast.Expression(body=node), "<lambda>", "eval")
    except (SyntaxError, ValueError):
        return False
    inner = next((c for c in compiled.co_consts if hasattr(c, "co_code")), None)
    # names, constants and variables identify it (bytecode differs between compile contexts)
    return (inner is not None and inner.co_names == code.co_names
            and inner.co_consts == code.co_consts and inner.co_varnames == code.co_varnames)


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
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if isinstance(name, str):  # functions, ufuncs, classes, scalar types
        return f"f:{getattr(value, '__module__', '')}.{name}"
    if hasattr(value, "dtype") and hasattr(value, "name"):
        return f"s:{value.name}"
    if isinstance(value, pytypes.FunctionType) or callable(value):
        return f"o:{type(value).__qualname__}:{id(value)}"
    return f"o:{type(value).__qualname__}:{id(value)}"
