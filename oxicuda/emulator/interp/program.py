"""Loading a PTX module for the emulator: parse, lay out variables, resolve labels, decode.

``load_program(text, heap, device)`` returns a ``Program`` whose ``kernels`` map each ``.entry``
name to a ``KernelProgram`` (the facts ``cuFuncGetAttribute`` reports, and ``launch``).
Instructions outside the supported set are reported by name at load time (ModuleLoadError).
"""

from __future__ import annotations

import importlib
import struct
import warnings

import numpy as np

from ...driver.errors import raise_for
from ...driver.params import layout_from_params
from ...ptx.ir import Function, Instr, Label, Module, RegDecl, VarDecl
from ...ptx.parse import PtxSyntaxError, parse_details
from . import registry
from .calls import flatten_kernel
from .faults import Unsupported
from .types import DTYPES, immediate

_PLUGINS = ("oxicuda.emulator.interp.handlers", "oxicuda.emulator.interp.tensorcore",
            "oxicuda.emulator.interp.async_copy")
_plugins_loaded = False
_plugin_errors: dict[str, str] = {}  # plugin module -> why it failed to import


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    for name in _PLUGINS:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                _plugin_errors[name] = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a broken plugin must not take the core interpreter down
            _plugin_errors[name] = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"oxicuda emulator: instruction plugin {name} failed to import ({exc}); "
                          "its instructions are reported as unsupported", RuntimeWarning, stacklevel=3)
    _plugins_loaded = True


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


class KernelContext:
    """What a decoder may ask about the kernel it decodes (names, types, symbols, labels)."""

    def __init__(self, kernel: KernelProgram) -> None:
        self.kernel = kernel
        self.name = kernel.name
        self.reg_types = kernel.reg_types
        self.arch = kernel.arch

    def reg_type(self, name: str) -> str | None:
        return self.reg_types.get(name.lstrip("!"))

    def unsupported(self, instr: Instr, why: str = "") -> Unsupported:
        """The exception a decoder raises for a variant it does not implement."""
        return Unsupported(f"{instr.full_opcode}{': ' + why if why else ''}")


class KernelProgram:
    """One ``.entry``, decoded: the launch facts and the op list."""

    def __init__(self, fn: Function, module: Module, program: Program, lines: list[int],
                 source: list[str], functions: dict[str, Function] | None = None,
                 all_lines: dict[str, list[int]] | None = None) -> None:
        self.name = fn.name
        self.program = program
        self.arch = module.target.split(",")[0].strip()
        major, _, minor = module.version.partition(".")
        self.ptx_version = int(major) * 10 + int(minor or 0)
        self.reg_types: dict[str, str] = {}
        self.shared_offsets: dict[str, int] = {}
        self.local_offsets: dict[str, int] = {}
        self.instrs: list[Instr] = []
        self.labels: dict[str, int] = {}
        self.source = source
        regs32 = 0
        shared = 0
        local = 0
        extern_shared: list[VarDecl] = []
        try:
            body, lines = flatten_kernel(fn, functions or {}, all_lines or {fn.name: lines})
        except Unsupported as exc:
            raise_for(218, "cuModuleLoadData", f"emulator: kernel {fn.name}: {exc}")
        for st in body:
            if isinstance(st, Instr):
                self.instrs.append(st)
            elif isinstance(st, Label):
                self.labels[st.name] = len(self.instrs)
            elif isinstance(st, RegDecl):
                rtype = st.type.split()[-1]
                names = [st.name] if st.count is None else [f"{st.name}{i}" for i in range(st.count)]
                for nm in names:
                    self.reg_types[nm] = rtype
                if rtype != "pred":
                    regs32 += len(names) * (2 if DTYPES.get(rtype, np.dtype(np.uint32)).itemsize == 8 else 1)
            elif isinstance(st, VarDecl):
                size = _var_bytes(st)
                align = st.align or DTYPES.get(st.type, np.dtype(np.uint8)).itemsize
                if st.space == "shared":
                    if st.linkage == "extern" or st.size == 0:
                        extern_shared.append(st)
                    else:
                        shared = _align(shared, align)
                        self.shared_offsets[st.name] = shared
                        shared += size
                elif st.space in ("local", "param"):  # .param of a call sequence: per thread
                    local = _align(local, align)
                    self.local_offsets[st.name] = local
                    local += size
        for g in module.globals:  # module-level shared variables belong to every kernel
            if g.space == "shared" and g.name not in self.shared_offsets:
                if g.linkage == "extern" or g.size == 0:
                    extern_shared.append(g)
                else:
                    shared = _align(shared, g.align or 1)
                    self.shared_offsets[g.name] = shared
                    shared += _var_bytes(g)
        self.static_smem = shared
        dyn_base = _align(shared, 16)
        for v in extern_shared:
            self.shared_offsets[v.name] = dyn_base
        self.local_bytes = local
        self.const_bytes = program.const_bytes
        self.lines = lines if len(lines) == len(self.instrs) else [0] * len(self.instrs)
        directives = dict(fn.directives)
        self.max_threads_directive = 1024
        for key in ("maxntid", "reqntid"):
            if key in directives:
                self.max_threads_directive = min(self.max_threads_directive,
                                                 int(np.prod(directives[key] or (1024,))))
        self.num_regs = max(16, min(255, regs32 + 8))
        if "maxnreg" in directives:
            self.num_regs = min(self.num_regs, directives["maxnreg"][0])
        params = [(p.name, p.type, p.align, p.size) for p in fn.params]
        layout = layout_from_params(params)
        self.param_offsets = {s.name: s.offset for s in layout.slots}
        self.param_bytes = layout.total_size
        self.ops = self._decode()
        self._bound_key = None
        self._bound = None

    def symbol_address(self, name: str) -> int:
        """The address of a variable or parameter in its own state space."""
        if name in self.shared_offsets:
            return self.shared_offsets[name]
        if name in self.param_offsets:
            return self.param_offsets[name]
        if name in self.local_offsets:
            return self.local_offsets[name]
        if name in self.program.global_addresses:
            return self.program.global_addresses[name]
        raise Unsupported(f"symbol {name!r} is not a variable, parameter or label of {self.name}")

    def line_text(self, pc: int) -> str:
        line = self.lines[pc] if 0 <= pc < len(self.lines) else 0
        text = self.source[line - 1].strip() if 0 < line <= len(self.source) else ""
        return f"PTX line {line}: {text}" if line else f"instruction {pc}"

    def _decode(self) -> list:
        kc = KernelContext(self)
        ops = []
        problems = []
        for pc, ins in enumerate(self.instrs):
            dec = registry.handler_for(ins.opcode)
            try:
                if dec is None:
                    raise Unsupported(f"{ins.full_opcode}: no handler for opcode {ins.opcode!r}")
                op = dec(ins, kc)
                if op.kind == registry.BRANCH and op.label:
                    if op.label not in self.labels:
                        raise Unsupported(f"{ins.full_opcode}: unknown label {op.label}")
                    op.target = self.labels[op.label]
                ops.append(op)
            except Unsupported as exc:
                problems.append(f"  {self.line_text(pc)}  -> unsupported instruction {exc}")
                ops.append(None)
        if problems:
            raise_for(218, "cuModuleLoadData",
                      f"emulator: kernel {self.name} uses instructions the PTX interpreter does "
                      "not support:\n" + "\n".join(problems[:20])
                      + "".join(f"\n  (plugin {k} failed to import: {v})" for k, v in _plugin_errors.items()))
        return ops

    def launch(self, grid, block, dynamic_smem: int, params: bytes, heap) -> None:
        """Run every CTA of the grid (see ``run.run_grid``)."""
        from .run import run_grid

        run_grid(self, tuple(grid), tuple(block), dynamic_smem, params, heap)


def _var_bytes(v: VarDecl) -> int:
    elem = DTYPES.get(v.type, np.dtype(np.uint8)).itemsize
    return elem * (v.size if v.size else 1) if v.size != 0 else 0


class Program:
    """A loaded module: its kernels and the device memory of its global variables."""

    def __init__(self, text: str, heap, device=None) -> None:
        #: the emulated device (``emulator_devices.EmulatedDevice``) or None; decoders compare
        #: an instruction's minimum arch with it, as the driver's JIT does at load
        self.device = device
        try:
            module, details = parse_details(text)
        except PtxSyntaxError as exc:
            raise_for(218, "cuModuleLoadData", f"emulator: {exc}")
        self.global_addresses: dict[str, int] = {}
        self._allocations: list[int] = []
        self.const_bytes = 0
        for g in module.globals:
            if g.space not in ("global", "const") or g.linkage == "extern":
                continue
            size = max(_var_bytes(g), 1)
            base = heap.alloc(size, "cuModuleLoadData")
            self._allocations.append(base)
            self.global_addresses[g.name] = base
            if g.space == "const":
                self.const_bytes += size
            init = details.initializers.get(g.name)
            if init:
                raw = _initializer_bytes(g, init)[:size]
                hit = heap.find(base)
                hit[2][: len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        source = text.splitlines()
        self.kernels: dict[str, KernelProgram] = {}
        funcs = {fn.name: fn for fn in module.functions if not fn.is_entry}
        for fn in module.functions:
            if fn.is_entry:
                self.kernels[fn.name] = KernelProgram(fn, module, self,
                                                      details.instr_lines.get(fn.name, []), source,
                                                      funcs, details.instr_lines)

    def release(self, heap) -> None:
        """Free the module's global variables."""
        for base in self._allocations:
            heap.free(base)
        self._allocations.clear()


def _initializer_bytes(v: VarDecl, items: tuple[str, ...]) -> bytes:
    dt = DTYPES.get(v.type, np.dtype(np.uint8))
    out = bytearray()
    for it in items:
        try:
            val = immediate(it, v.type)
        except ValueError:
            val = dt.type(0)  # a symbol's address in an initializer: not supported, left zero
        out += np.asarray(val, dtype=dt).tobytes()
    return bytes(out)


def load_program(text: str, heap, device=None) -> Program:
    """Parse and decode a PTX module; raises ModuleLoadError naming unsupported instructions."""
    _load_plugins()
    return Program(text, heap, device)


__all__ = ["KernelContext", "KernelProgram", "Program", "load_program", "struct"]
