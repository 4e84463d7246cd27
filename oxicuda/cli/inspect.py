"""``python -m oxicuda inspect FAMILY [--param k=v ...] [--arch sm_90] [--emit ptx|regs]``.

A Python kernel instead of a family: ``inspect FILE.py:NAME [--sig "f32, In[f32]"]`` (see
``oxicuda.jit.inspect_kernel``).

Builds the family's spec from its defaults and the given fields, then prints its PTX or the
registers, spills, shared memory and stack ptxas reports for it.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import sys

from oxicuda.ptx import registry
from oxicuda.ptx.validate import PtxasNotFound, assemble


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m oxicuda inspect", description=__doc__.splitlines()[0]
    )
    p.add_argument("family", help="a registered kernel family (see `python -m oxicuda kernels`)")
    p.add_argument(
        "--param", action="append", default=[], metavar="K=V", help="a spec field, repeatable"
    )
    p.add_argument("--arch", default=None, help="target arch (default: the spec's default)")
    p.add_argument("--emit", choices=("ptx", "regs"), default="ptx")
    p.add_argument("--sig", default=None, help="parameter types of a Python kernel (FILE.py:NAME)")
    return p


def _convert(field: dataclasses.Field, text: str) -> object:
    default = field.default
    if isinstance(default, bool):
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"--param {field.name}={text!r}: expected true/false")
    if isinstance(default, int):
        return int(text)
    if isinstance(default, float):
        return float(text)
    if isinstance(default, str) or default is None:
        return text
    return ast.literal_eval(text)  # tuples and the like


def build_spec(family_name: str, params: list[str], arch: str | None):
    """The spec of ``family_name`` with ``params`` (``k=v`` strings) applied; ValueError on a
    field the spec does not have or a value that does not convert."""
    fam = registry.family(family_name)
    fields = {f.name: f for f in dataclasses.fields(fam.spec_cls)}
    values: dict[str, object] = {}
    for item in params:
        if "=" not in item:
            raise ValueError(f"--param {item!r}: expected K=V")
        k, v = item.split("=", 1)
        if k not in fields:
            raise ValueError(f"--param {k!r}: {fam.spec_cls.__name__} has fields {sorted(fields)}")
        values[k] = _convert(fields[k], v)
    if arch is not None:
        values["arch"] = arch
    return fam.spec_cls(**values)


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    args = _parser().parse_args(argv)
    if ":" in args.family:  # a Python kernel, FILE.py:NAME or MODULE:NAME
        from oxicuda.jit.inspect_kernel import main as inspect_python_kernel

        return inspect_python_kernel(args.family, args.sig, args.arch, args.emit)
    registry.load_all_families()
    known = registry.families()
    if args.family not in known:
        print(f"inspect: no kernel family {args.family!r}; the families are (see also "
              f"`python -m oxicuda kernels`):\n  " + "\n  ".join(sorted(known)), file=sys.stderr)
        return 2
    try:
        spec = build_spec(args.family, args.param, args.arch)
    except (KeyError, ValueError, TypeError, SyntaxError) as exc:
        # KeyError's str() quotes its message; print the message itself
        print(f"inspect: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    text = registry.generate_ptx(spec)
    if args.emit == "ptx":
        sys.stdout.write(text)
        return 0
    try:
        rep = assemble(text, spec.arch)
    except PtxasNotFound as exc:
        print(f"inspect: {exc}", file=sys.stderr)
        return 2
    print(f"spec: {spec.key()}")
    print(f"kernel: {spec.kernel_name()} arch: {spec.arch}")
    if not rep.ok:
        print(f"ptxas failed: {rep.message}")
        return 1
    print(f"registers: {rep.registers}")
    print(f"spill stores: {rep.spill_stores} bytes, spill loads: {rep.spill_loads} bytes")
    print(f"shared: {rep.shared_bytes} bytes, stack: {rep.stack_bytes} bytes")
    return 0
