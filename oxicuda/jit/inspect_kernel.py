"""``python -m oxicuda inspect FILE.py:NAME|MODULE:NAME [--sig "f32, In[f32], Out[f32]"]``: the
PTX (``--emit ptx``) or the ptxas registers and spills (``--emit regs``) of a Python kernel.

``--sig`` gives the parameter types as a comma-separated list in the ``oxicuda.types`` names
(``f32``, ``Array[f32, 2]``, ``In[f64]``...); parameters annotated in the kernel may be left out
entirely (no ``--sig``); arrays without ndim/order are taken as 1-d, C-contiguous.
"""

from __future__ import annotations

import importlib
import importlib.util
import pathlib
import sys

from . import types as T
from .kernel import Kernel, lower_kernel


def load_kernel(target: str) -> Kernel:
    """The Kernel named by ``file.py:name`` or ``package.module:name``."""
    where, _, name = target.rpartition(":")
    if not where or not name:
        raise ValueError(f"{target!r}: expected FILE.py:NAME or MODULE:NAME")
    if where.endswith(".py"):
        path = pathlib.Path(where).resolve()
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise ValueError(f"{where}: not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    obj = getattr(module, name, None)
    if not isinstance(obj, Kernel):
        raise TypeError(f"{target}: {name!r} is not an @oxicuda.kernel function (got {type(obj).__name__})")
    return obj


def signature_from_text(kernel: Kernel, text: str | None) -> tuple:
    """The parameter types of ``text`` (or of the kernel's annotations), completed."""
    params = kernel.info.params
    if text:
        names = {n: getattr(T, n) for n in T.__all__}
        names.update(bool=T.bool_)
        value = eval(f"({text},)", {"__builtins__": {}}, names)
        types = list(value)
    else:
        types = [kernel._annotations[p] for p in params]
    if len(types) != len(params):
        raise ValueError(f"{kernel.name} has {len(params)} parameters ({', '.join(params)}); "
                         f"--sig gives {len(types)}")
    out = []
    for p, t in zip(params, types):
        if t is None:
            raise ValueError(f"parameter {p!r} has no annotation; give its type with --sig")
        if isinstance(t, T.ArrayType):
            t = T.ArrayType(t.dtype, t.ndim or 1, t.order or "C", t.access)
        else:
            t = T.scalar_type(t)
        out.append(t)
    return tuple(out)


def main(target: str, sig: str | None, arch: str | None, emit: str) -> int:
    from oxicuda.ptx.validate import PtxasNotFound, assemble

    try:
        kernel = load_kernel(target)
        signature = signature_from_text(kernel, sig)
        spec = kernel.specialize(signature, arch or "sm_86")
        text, _ = lower_kernel(kernel.info, spec)
    except Exception as exc:  # noqa: BLE001 - a CLI reports any failure as a message
        print(f"inspect: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if emit == "ptx":
        sys.stdout.write(text)
        return 0
    try:
        rep = assemble(text, spec.arch)
    except PtxasNotFound as exc:
        print(f"inspect: {exc}", file=sys.stderr)
        return 2
    print(f"kernel: {spec.kernel_name()} arch: {spec.arch} signature: {signature}")
    if not rep.ok:
        print(f"ptxas failed: {rep.message}")
        return 1
    print(f"registers: {rep.registers}")
    print(f"spill stores: {rep.spill_stores} bytes, spill loads: {rep.spill_loads} bytes")
    print(f"shared: {rep.shared_bytes} bytes, stack: {rep.stack_bytes} bytes")
    return 0
