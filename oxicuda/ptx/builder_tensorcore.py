"""Asynchronous copies, tensor-core and Hopper (sm_90a) instructions for ``KernelBuilder``.

Register counts per lane come from ``oxicuda.ptx.fragments`` (the same tables the emulator uses).
"""

from __future__ import annotations

from collections.abc import Sequence

from . import fragments, ir
from .builder_base import BuilderBase, Operandish, ParamArray, SharedArray, Value

SWIZZLE_MODES = {"none": 0, "128B": 1, "64B": 2, "32B": 3}


def matrix_descriptor_bits(
    start_address: int, lbo: int, sbo: int, swizzle: str = "none", base_offset: int = 0
) -> int:
    """The 64-bit wgmma shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"):
    bits 0-13 start address >> 4, 16-29 leading-dimension byte offset >> 4, 32-45 stride-dimension
    byte offset >> 4, 49-51 base offset, 62-63 swizzle (0 none, 1 128B, 2 64B, 3 32B)."""
    if swizzle not in SWIZZLE_MODES:
        raise ValueError(f"swizzle={swizzle!r}; allowed {tuple(SWIZZLE_MODES)}")
    for name, v in (("start_address", start_address), ("lbo", lbo), ("sbo", sbo)):
        if v % 16 or not 0 <= v < (1 << 18):
            raise ValueError(f"descriptor {name}={v}: must be a multiple of 16 below 2**18")
    return (
        (start_address >> 4)
        | ((lbo >> 4) << 16)
        | ((sbo >> 4) << 32)
        | ((base_offset & 7) << 49)
        | (SWIZZLE_MODES[swizzle] << 62)
    )


class TensorCoreMixin(BuilderBase):
    # -- cp.async (sm_80) -----------------------------------------------------------------------
    def cp_async(
        self,
        dst_shared: Value | SharedArray,
        src_global: Value,
        size: int = 16,
        cache: str = "ca",
        src_size: Operandish | None = None,
        dst_offset: int = 0,
        src_offset: int = 0,
    ) -> None:
        """``cp.async.{ca,cg}.shared.global [dst], [src], size[, src_size]``: an asynchronous copy of
        4, 8 or 16 bytes (cg: 16 only); bytes past ``src_size`` are zero-filled."""
        self._require("cp.async", 80, ptx="7.0")
        if size not in (4, 8, 16):
            raise ValueError(f"cp_async: size={size}; allowed 4, 8, 16")
        if cache not in ("ca", "cg") or (cache == "cg" and size != 16):
            raise ValueError(
                f"cp_async: cache={cache!r} with size={size}; ca takes 4/8/16, cg takes 16"
            )
        dst = self._address("shared", dst_shared, dst_offset, "cp_async")
        src = self._address("global", src_global, src_offset, "cp_async")
        ops: list[ir.Operand] = [dst, src, ir.Imm(str(size))]
        if src_size is not None:
            ops.append(self._src(src_size, "u32", "cp_async"))
        self._emit("cp", ("async", cache, "shared", "global"), ops)

    def cp_async_commit(self) -> None:
        """``cp.async.commit_group``."""
        self._require("cp.async.commit_group", 80, ptx="7.0")
        self._emit("cp", ("async", "commit_group"), ())

    def cp_async_wait(self, n: int = 0) -> None:
        """``cp.async.wait_group n``: wait until at most n committed groups are pending."""
        self._require("cp.async.wait_group", 80, ptx="7.0")
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"cp_async_wait: n={n!r}; a non-negative int")
        self._emit("cp", ("async", "wait_group"), (ir.Imm(str(n)),))

    # -- ldmatrix and mma.sync ------------------------------------------------------------------
    def ldmatrix(
        self, num: int, addr: Value | SharedArray, trans: bool = False, offset: int = 0
    ) -> tuple[Value, ...]:
        """``ldmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16``: num (1, 2, 4) 8x8 b16 matrices;
        lanes 8*i..8*i+7 give the row addresses of matrix i (see fragments.ldmatrix_*)."""
        self._require("ldmatrix", 75, ptx="6.5")
        if num not in (1, 2, 4):
            raise ValueError(f"ldmatrix: num={num}; allowed 1, 2, 4")
        a = self._address("shared", addr, offset, "ldmatrix")
        outs = tuple(self._dst("b32", None, "ldmatrix") for _ in range(num))
        mods = (
            ("sync", "aligned", "m8n8", f"x{num}")
            + (("trans",) if trans else ())
            + ("shared", "b16")
        )
        self._emit("ldmatrix", mods, (ir.Vec(tuple(o.reg for o in outs)), a))
        return outs

    def mma_sync(
        self,
        shape: str,
        a_type: str,
        b_type: str,
        acc_type: str,
        a: Sequence[Value],
        b: Sequence[Value],
        c: Sequence[Value],
        d: Sequence[Value] | None = None,
    ) -> tuple[Value, ...]:
        """``mma.sync.aligned.<shape>.row.col.<acc>.<a>.<b>.<acc>``: D = A*B + C per warp. Register
        counts per lane are those of ``fragments.MMA_SHAPES``; returns D (fresh, or ``d``)."""
        key = (shape, a_type, acc_type)
        if a_type != b_type or key not in fragments.MMA_SHAPES:
            known = ", ".join(f"{s} {t}->{c_}" for s, t, c_ in sorted(fragments.MMA_SHAPES))
            raise ValueError(
                f"mma_sync: {shape} {a_type}x{b_type}->{acc_type} does not exist; known: {known}"
            )
        info = fragments.MMA_SHAPES[key]
        self._require(f"mma.sync.{shape}.{a_type}", info.min_sm, ptx=info.min_ptx)
        for name, regs, n, rtype in (
            ("a", a, info.a_regs, info.a_reg_type),
            ("b", b, info.b_regs, info.a_reg_type),
            ("c", c, info.c_regs, info.c_reg_type),
        ):
            if len(regs) != n:
                raise ValueError(
                    f"mma_sync {shape} {a_type}: {name} has {len(regs)} registers; needs {n}"
                )
            for r in regs:
                self._src(r, rtype, f"mma_sync operand {name}", bits_ok=True)
        outs = tuple(
            self._dst(info.c_reg_type, None if d is None else d[i], "mma_sync")
            for i in range(info.c_regs)
        )
        if d is not None and len(d) != info.c_regs:
            raise ValueError(f"mma_sync: d has {len(d)} registers; needs {info.c_regs}")
        ctype = info.c_type
        mods = ("sync", "aligned", shape, "row", "col", ctype, a_type, b_type, ctype)
        vec = lambda regs: ir.Vec(tuple(r.reg for r in regs))
        self._emit("mma", mods, (vec(outs), vec(a), vec(b), vec(c)))
        return outs

    # -- Hopper: wgmma --------------------------------------------------------------------------
    def wgmma_fence(self) -> None:
        """``wgmma.fence.sync.aligned``: order register/shared accesses before wgmma (sm_90a)."""
        self._require("wgmma.fence", 90, arch_a=True, ptx="8.0")
        self._emit("wgmma", ("fence", "sync", "aligned"), ())

    def wgmma_commit_group(self) -> None:
        """``wgmma.commit_group.sync.aligned`` (sm_90a)."""
        self._require("wgmma.commit_group", 90, arch_a=True, ptx="8.0")
        self._emit("wgmma", ("commit_group", "sync", "aligned"), ())

    def wgmma_wait_group(self, n: int = 0) -> None:
        """``wgmma.wait_group.sync.aligned n`` (sm_90a)."""
        self._require("wgmma.wait_group", 90, arch_a=True, ptx="8.0")
        self._emit("wgmma", ("wait_group", "sync", "aligned"), (ir.Imm(str(n)),))

    def wgmma_descriptor(
        self, smem_addr: Value, lbo: int, sbo: int, swizzle: str = "none"
    ) -> Value:
        """The u64 matrix descriptor of a shared-memory operand at run time: ``smem_addr`` (u32
        shared-window address) >> 4 in bits 0-13, with the constant LBO/SBO/swizzle fields."""
        const = matrix_descriptor_bits(0, lbo, sbo, swizzle)
        field = self.and_(
            self.shr(smem_addr, 4, type_="u32")
            if smem_addr.type == "u32"
            else self.shr(self.bitcast(smem_addr, "u32"), 4),
            0x3FFF,
            type_="u32",
        )
        wide = self.cvt(field, "u64")
        return self.or_(wide, const if const < (1 << 63) else const - (1 << 64), type_="u64")

    def wgmma_mma_async(
        self,
        n: int,
        a_type: str,
        d: Sequence[Value] | None,
        a_desc: Value,
        b_desc: Value,
        scale_d: Value | int = 1,
        trans_a: int = 0,
        trans_b: int = 0,
    ) -> tuple[Value, ...]:
        """``wgmma.mma_async.sync.aligned.m64n{n}k{16|8}.f32.<a>.<a>``: D (+)= A*B for a warpgroup,
        A and B from shared-memory descriptors. ``d`` holds n/2 f32 registers per thread (None:
        fresh ones, then scale_d must be 0). ``scale_d`` 0 ignores the old D (a predicate or int)."""
        self._require("wgmma.mma_async", 90, arch_a=True, ptx="8.0")
        k = {"f16": 16, "bf16": 16, "tf32": 8}.get(a_type)
        if k is None:
            raise ValueError(
                f"wgmma_mma_async: a_type={a_type!r}; supported f16, bf16, tf32 (f32 accumulate)"
            )
        if n % 8 or not 8 <= n <= 256:
            raise ValueError(f"wgmma_mma_async: n={n}; a multiple of 8 in 8..256")
        nregs = fragments.wgmma_accumulator_regs(n)
        if d is not None and len(d) != nregs:
            raise ValueError(f"wgmma_mma_async m64n{n}: d has {len(d)} registers; needs {nregs}")
        if d is None and scale_d != 0:
            raise ValueError(
                "wgmma_mma_async: fresh accumulators need scale_d=0 (nothing to accumulate into)"
            )
        if d is not None:
            for r in d:
                self._src(r, "f32", "wgmma_mma_async d")
        outs = tuple(self._dst("f32", None if d is None else d[i], "wgmma") for i in range(nregs))
        descs = (
            self._src(a_desc, "u64", "wgmma a_desc", bits_ok=True),
            self._src(b_desc, "u64", "wgmma b_desc", bits_ok=True),
        )
        if isinstance(scale_d, Value):
            p = self._src(scale_d, "pred", "wgmma scale_d")
        else:
            pv = self._dst("pred", None, "wgmma scale_d")
            self._emit("setp", ("ne", "u32"), (pv.reg, ir.Imm(str(int(scale_d))), ir.Imm("0")))
            p = pv.reg
        imms: tuple[ir.Operand, ...] = (ir.Imm("1"), ir.Imm("1"))
        if k == 16:
            imms += (ir.Imm(str(trans_a)), ir.Imm(str(trans_b)))
        elif trans_a or trans_b:
            raise ValueError("wgmma_mma_async: tf32 has no transpose immediates (K-major only)")
        mods = ("mma_async", "sync", "aligned", f"m64n{n}k{k}", "f32", a_type, a_type)
        self._emit("wgmma", mods, (ir.Vec(tuple(o.reg for o in outs)), *descs, p, *imms))
        return outs

    # -- Hopper: mbarrier and TMA ---------------------------------------------------------------
    def mbarrier_init(self, bar: Value | SharedArray, count: Operandish) -> None:
        """``mbarrier.init.shared::cta.b64 [bar], count`` (sm_80)."""
        self._require("mbarrier.init", 80, ptx="7.8")
        a = self._address("shared", bar, 0, "mbarrier_init")
        self._emit(
            "mbarrier",
            ("init", "shared::cta", "b64"),
            (a, self._src(count, "u32", "mbarrier_init")),
        )

    def _pred_guard(self, pred: Value | None, what: str) -> ir.Pred | None:
        if pred is None:
            return None
        if not isinstance(pred, Value) or pred.type != "pred":
            raise TypeError(f"{what}: pred={pred!r} must be a predicate Value (from setp)")
        return ir.Pred(pred.reg)

    def mbarrier_arrive(self, bar: Value | SharedArray, pred: Value | None = None) -> Value:
        """``[@pred] mbarrier.arrive.shared::cta.b64 state, [bar]``; returns the u64 state token.
        ``pred``: only threads where it holds arrive (a guard, not a branch: no divergence)."""
        self._require("mbarrier.arrive", 80, ptx="7.8")
        a = self._address("shared", bar, 0, "mbarrier_arrive")
        st = self._dst("b64", None, "mbarrier_arrive")
        self._emit("mbarrier", ("arrive", "shared::cta", "b64"), (st.reg, a),
                   self._pred_guard(pred, "mbarrier_arrive"))
        return st

    def mbarrier_arrive_expect_tx(
        self, bar: Value | SharedArray, tx_bytes: Operandish, pred: Value | None = None
    ) -> Value:
        """``[@pred] mbarrier.arrive.expect_tx.shared::cta.b64 state, [bar], tx`` (sm_90, PTX 8.0)."""
        self._require("mbarrier.arrive.expect_tx", 90, ptx="8.0")
        a = self._address("shared", bar, 0, "mbarrier_arrive_expect_tx")
        st = self._dst("b64", None, "mbarrier_arrive_expect_tx")
        self._emit(
            "mbarrier",
            ("arrive", "expect_tx", "shared::cta", "b64"),
            (st.reg, a, self._src(tx_bytes, "u32", "mbarrier_arrive_expect_tx")),
            self._pred_guard(pred, "mbarrier_arrive_expect_tx"),
        )
        return st

    def mbarrier_wait_parity(
        self, bar: Value | SharedArray, parity: Operandish, only: Value | None = None
    ) -> None:
        """Spin on ``mbarrier.try_wait.parity.shared::cta.b64`` until phase ``parity`` completes
        (sm_90, PTX 7.8). ``only``: threads where this predicate is false do not wait (they
        leave the loop after one poll, whatever it returned)."""
        self._require("mbarrier.try_wait.parity", 90, ptx="7.8")
        a = self._address("shared", bar, 0, "mbarrier_wait_parity")
        par = self._src(parity, "u32", "mbarrier_wait_parity")
        skip = None
        if only is not None:
            self._pred_guard(only, "mbarrier_wait_parity")
            skip = self.not_(only)
        top = self._new_label("mbarwait")
        self._body.append(ir.Label(top))
        self._last_closed_if = None
        done = self._dst("pred", None, "mbarrier_wait_parity")
        self._emit("mbarrier", ("try_wait", "parity", "shared::cta", "b64"), (done.reg, a, par))
        if skip is not None:
            self._emit("or", ("pred",), (done.reg, done.reg, skip.reg))
        self._emit("bra", (), (ir.Sym(top),), ir.Pred(done.reg, negated=True))

    def cp_async_bulk_tensor(
        self,
        dim: int,
        dst_shared: Value | SharedArray,
        tensor_map: ParamArray | Value,
        coords: Sequence[Operandish],
        mbarrier: Value | SharedArray,
        pred: Value | None = None,
    ) -> None:
        """TMA load: ``[@pred] cp.async.bulk.tensor.<dim>d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
        [dst], [tmap, {coords}], [mbar]`` (sm_90, PTX 8.0). ``tensor_map`` is a ``param_array`` (its
        generic address is taken) or a u64 generic address; coords are s32 element indices.
        ``pred``: only threads where it holds issue the copy (a guard, not a branch)."""
        self._require("cp.async.bulk.tensor", 90, ptx="8.0")
        if dim not in (1, 2, 3, 4, 5) or len(coords) != dim:
            raise ValueError(
                f"cp_async_bulk_tensor: dim={dim} with {len(coords)} coords; dim in 1..5, one coord each"
            )
        tmap = self.param_address(tensor_map) if isinstance(tensor_map, ParamArray) else tensor_map
        self._check_value(tmap, "cp_async_bulk_tensor tensor_map")
        dst = self._address("shared", dst_shared, 0, "cp_async_bulk_tensor")
        bar = self._address("shared", mbarrier, 0, "cp_async_bulk_tensor")
        cs = ir.Vec(
            tuple(self._src(c, "b32", "cp_async_bulk_tensor coord", bits_ok=True) for c in coords)
        )
        src = ir.Addr(tmap.reg, 0, cs)
        mods = (
            "async",
            "bulk",
            "tensor",
            f"{dim}d",
            "shared::cluster",
            "global",
            "tile",
            "mbarrier::complete_tx::bytes",
        )
        self._emit("cp", mods, (dst, src, bar), self._pred_guard(pred, "cp_async_bulk_tensor"))
