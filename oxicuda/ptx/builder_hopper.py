"""Hopper (sm_90a) instructions for ``KernelBuilder`` beyond those of ``builder_tensorcore``:
``wgmma.mma_async`` with the A operand in registers, ``setmaxnreg``, and the named-barrier pair
(``bar.sync`` / ``bar.arrive`` with a register id and a thread count) that warp-specialized
Hopper kernels use to hand turns between warpgroups.

A in registers (PTX ISA "Register Fragments" of wgmma): for ``m64nNk16`` with f16/bf16 inputs
each warp ``w`` of the warpgroup holds rows ``16w .. 16w + 15`` of A in the m16n8k16 A fragment
layout (4 b32 registers per thread, two packed halves each); ``fragments.MMA_SHAPES`` has the
table, which the emulator reads too.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import fragments, ir
from .builder_base import BuilderBase, Value


class HopperMixin(BuilderBase):
    def wgmma_mma_async_rs(
        self,
        n: int,
        a_type: str,
        d: Sequence[Value],
        a: Sequence[Value],
        b_desc: Value,
        scale_d: Value | int = 1,
        trans_b: int = 0,
    ) -> tuple[Value, ...]:
        """``wgmma.mma_async.sync.aligned.m64n{n}k16.f32.<a>.<a> d, {a}, b_desc, p, 1, 1, trans_b``:
        D (+)= A*B for a warpgroup with A (64x16) from registers (``a``: 4 b32 registers of packed
        halves, the m16n8k16 A fragment of this warp's 16 rows) and B (16xN) from a shared-memory
        descriptor; ``trans_b`` 1 reads B MN-major (f16/bf16 only). ``d``: the n/2 f32
        accumulator registers, written in place; ``scale_d`` 0 ignores their old values."""
        self._require("wgmma.mma_async", 90, arch_a=True, ptx="8.0")
        if a_type not in ("f16", "bf16"):
            raise ValueError(f"wgmma_mma_async_rs: a_type={a_type!r}; supported f16, bf16 (f32 accumulate)")
        if trans_b not in (0, 1):
            raise ValueError(f"wgmma_mma_async_rs: trans_b={trans_b!r}; 0 (K-major) or 1 (MN-major)")
        nregs = fragments.wgmma_accumulator_regs(n)
        if len(d) != nregs:
            raise ValueError(f"wgmma_mma_async_rs m64n{n}: d has {len(d)} registers; needs {nregs}")
        a_regs = fragments.MMA_SHAPES[("m16n8k16", a_type, "f32")].a_regs
        if len(a) != a_regs:
            raise ValueError(f"wgmma_mma_async_rs: a has {len(a)} registers; needs {a_regs}")
        for r in d:
            self._src(r, "f32", "wgmma_mma_async_rs d")
        a_ops = tuple(self._src(r, "b32", "wgmma_mma_async_rs a", bits_ok=True) for r in a)
        outs = tuple(self._dst("f32", r, "wgmma_mma_async_rs") for r in d)
        desc = self._src(b_desc, "u64", "wgmma_mma_async_rs b_desc", bits_ok=True)
        if isinstance(scale_d, Value):
            p = self._src(scale_d, "pred", "wgmma_mma_async_rs scale_d")
        else:
            pv = self._dst("pred", None, "wgmma_mma_async_rs scale_d")
            self._emit("setp", ("ne", "u32"), (pv.reg, ir.Imm(str(int(scale_d))), ir.Imm("0")))
            p = pv.reg
        mods = ("mma_async", "sync", "aligned", f"m64n{n}k16", "f32", a_type, a_type)
        imms = (ir.Imm("1"), ir.Imm("1"), ir.Imm(str(trans_b)))
        self._emit("wgmma", mods, (ir.Vec(tuple(o.reg for o in outs)), ir.Vec(a_ops), desc, p, *imms))
        return outs

    def named_barrier_sync(self, bar: Value | int, count: int) -> None:
        """``bar.sync bar, count``: wait at barrier ``bar`` (0..15, a warp-uniform register or an
        int) until ``count`` threads (a multiple of 32; arrivals included) have reached it."""
        self._emit("bar", ("sync",), self._named_barrier_operands(bar, count, "named_barrier_sync"))

    def named_barrier_arrive(self, bar: Value | int, count: int) -> None:
        """``bar.arrive bar, count``: count this warp at barrier ``bar`` without waiting."""
        self._emit("bar", ("arrive",), self._named_barrier_operands(bar, count, "named_barrier_arrive"))

    def _named_barrier_operands(self, bar: Value | int, count: int, what: str) -> tuple[ir.Operand, ...]:
        if isinstance(bar, int) and not 0 <= bar <= 15:
            raise ValueError(f"{what}: barrier {bar}; allowed 0..15")
        if not isinstance(count, int) or count <= 0 or count % 32:
            raise ValueError(f"{what}: count={count!r}; a positive multiple of 32")
        return (self._src(bar, "u32", what), ir.Imm(str(count)))

    def setmaxnreg(self, count: int, increase: bool) -> None:
        """``setmaxnreg.{inc,dec}.sync.aligned.u32 count``: move this warpgroup's per-thread
        register budget to ``count`` (24..256, a multiple of 8) (sm_90a)."""
        self._require("setmaxnreg", 90, arch_a=True, ptx="8.0")
        if count % 8 or not 24 <= count <= 256:
            raise ValueError(f"setmaxnreg: count={count}; a multiple of 8 in 24..256")
        self._emit("setmaxnreg", ("inc" if increase else "dec", "sync", "aligned", "u32"), (ir.Imm(str(count)),))
