"""``KernelBuilder``: how every oxicuda kernel generator writes PTX.

One builder call records one instruction (a few helpers record two or three). Registers are typed
virtual registers (``Value``) allocated per type bank and declared automatically; operand types
are checked at generation time; instructions the target arch lacks raise at the call that uses
them, naming the instruction and the minimum arch. The result is an ``ir.Function`` / ``ir.Module``
and canonical PTX text via ``oxicuda.ptx.emit``.

A vector add ``c[i] = a[i] + b[i]`` for ``i < n``::

    from oxicuda.ptx.builder import KernelBuilder

    kb = KernelBuilder("vadd", arch="sm_86")           # math="precise" (default) or "fast"
    a, b, c = kb.param_ptr("a"), kb.param_ptr("b"), kb.param_ptr("c")
    n = kb.param("n", "u32")
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())          # u32: blockIdx.x * blockDim.x + threadIdx.x
    with kb.if_(kb.setp("lt", i, n)):
        x = kb.ld("global", "f32", kb.addr(a, i, 4))   # addr: mul.wide + add.u64, no 32-bit overflow
        y = kb.ld("global", "f32", kb.addr(b, i, 4))
        kb.st("global", kb.addr(c, i, 4), kb.add(x, y))  # add.rn.f32 in precise mode
    ptx_text = kb.ptx()

Loops and accumulators::

    acc = kb.mov(0.0, "f32")                     # Python floats become exact 0f... literals
    with kb.loop(0, k, 1) as j:                  # runtime loop over a u32/s32 counter
        kb.fma(x, y, acc, out=acc)               # out= overwrites an existing register
    for u in kb.unroll(4): ...                   # compile-time unrolling is a Python loop

Shared memory: ``tile = kb.shared("tile", "f32", 1024)`` (static, <= 48 KB) or
``kb.dynamic_shared("smem", max_bytes)`` (checked against the arch's opt-in limit); address it
directly (``kb.ld("shared", "f32", tile, offset=16)``) or as a u32 from ``kb.shared_addr(tile)``.
See the mixins for the full instruction list: ``builder_arith`` (arithmetic, logic, special
registers), ``builder_convert`` (cvt, packing, ex2/lg2/sin/cos, exp/log, addresses),
``builder_memory`` (params, ld/st, shared, directives), ``builder_flow`` (if/else/loop, barriers,
atomics, shuffles, votes), ``builder_tensorcore`` (cp.async, ldmatrix, mma.sync, wgmma,
mbarrier, TMA).
"""

from __future__ import annotations

from . import ir
from .builder_base import ParamArray, SharedArray, Value
from .builder_convert import LN_2, LOG2_E, ConvertMixin
from .builder_flow import FlowMixin
from .builder_hopper import HopperMixin
from .builder_memory import MemoryMixin
from .builder_tensorcore import TensorCoreMixin, matrix_descriptor_bits
from .emit import emit

__all__ = [
    "LN_2",
    "LOG2_E",
    "KernelBuilder",
    "ParamArray",
    "SharedArray",
    "Value",
    "matrix_descriptor_bits",
]


class KernelBuilder(ConvertMixin, MemoryMixin, FlowMixin, TensorCoreMixin, HopperMixin):
    """Builds one PTX ``.entry`` for ``arch`` (``sm_80``, ``sm_86``, ``sm_90``, ``sm_90a``...).

    ``math``: ``"precise"`` (IEEE div/sqrt/rcp, ``.rn`` on add/sub/mul so nothing is contracted
    into fma behind the generator's back) or ``"fast"`` (approximate forms allowed).
    ``ptx_version``: the ``.version`` to declare; by default the lowest the arch supports, raised
    automatically to what the instructions used need.
    """

    def build(self) -> ir.Function:
        """The kernel as an ``ir.Function``. Raises if an if/else/loop block is still open."""
        if self._structure:
            kind, n = self._structure[-1]
            raise RuntimeError(
                f"kernel {self.name!r}: unbalanced structure, {len(self._structure)} block(s) still open "
                f"(innermost: {kind} #{n}); close every `with kb.if_/else_/loop` before build()"
            )
        body = list(self._body)
        last = body[-1] if body else None
        if not (isinstance(last, ir.Instr) and last.opcode == "ret" and last.pred is None):
            body.append(ir.Instr("ret"))
        decls: list[ir.Statement] = []
        for bank in sorted(self._counters):
            decls.append(ir.RegDecl(self._bank_decl[bank], bank, self._counters[bank] + 1))
        for arr in self._shared:
            decls.append(ir.VarDecl("shared", arr.type, arr.name, align=arr.align, size=arr.count))
        order = ("maxntid", "reqntid", "minnctapersm", "maxnreg")
        directives = tuple((k, self._directives[k]) for k in order if k in self._directives)
        return ir.Function(self.name, tuple(self._params), tuple(decls + body), directives)

    def module(self) -> ir.Module:
        """The kernel in a module with ``.version``/``.target`` (and the dynamic shared array)."""
        fn = self.build()
        globals_: tuple[ir.VarDecl, ...] = ()
        if self._dynamic_shared is not None:
            d = self._dynamic_shared
            globals_ = (
                ir.VarDecl("shared", "b8", d.name, align=d.align, size=0, linkage="extern"),
            )
        return ir.Module(self.ptx_version, self.arch, 64, globals_, (fn,))

    def ptx(self) -> str:
        """The kernel's PTX text (ASCII)."""
        text = emit(self.module())
        if not text.isascii():
            raise ValueError(f"kernel {self.name!r}: generated PTX contains non-ASCII text")
        return text
