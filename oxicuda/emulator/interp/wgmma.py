"""Warpgroup MMA (sm_90a): ``wgmma.fence``, ``wgmma.commit_group``, ``wgmma.wait_group``,
``wgmma.mma_async`` (m64nNk16 f16/bf16 and m64nNk8 tf32, f32 or f16 accumulators; A from a
shared-memory descriptor or from registers, B from a descriptor).

The emulator runs in order, so ``mma_async`` computes and writes D when it is issued (a correct
program cannot tell: it may only read D after ``wait_group``); fence/commit/wait check the
warpgroup and do nothing else.

Shared-memory operands follow the canonical layouts of the PTX ISA ("Asynchronous Warpgroup
Level Canonical Layouts"), with T = 16 bytes of elements and W the swizzle width in bytes:

- K-major, no swizzle: ((8,m),(T,2k)):((1T,SBO),(1,LBO)) -- 8-row x 16-byte core matrices.
- K-major, W-byte swizzle: ((8,m),(T,2k)):((W/16*T,SBO),(1,T)) -- rows W bytes apart.
- MN-major, no swizzle: ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO)).
- MN-major, W-byte swizzle: ((T,W/16,m),(8,k)):((1,T,LBO),(W/16*T,SBO)).

The swizzle XORs address bits [4, 4+log2(W/16)) with bits [7, ...) of the absolute shared address
(``fragments.swizzle_128b`` for W = 128). A non-zero descriptor base offset is not emulated.
"""

from __future__ import annotations

import numpy as np

from ...ptx import fragments
from ...ptx.ir import Imm, Reg, Vec
from .faults import LAUNCH_FAILED, Fault, Unsupported
from .registry import Op, register_handler
from .warp_groups import (
    WARPGROUP,
    active_groups,
    bits16_to_f64,
    f64_to_f16_bits,
    halves_to_f64,
    pack_halves,
    require_arch,
    tf32_to_f64,
)

#: descriptor bits 62-63 -> swizzle width in bytes (0: none)
SWIZZLE_BYTES = {0: 0, 1: 128, 2: 64, 3: 32}
_K = {"f16": 16, "bf16": 16, "tf32": 8}
_ELEM_BYTES = {"f16": 2, "bf16": 2, "tf32": 4}


def decode_descriptor(desc: int) -> tuple[int, int, int, int, int]:
    """(start address, LBO, SBO, base offset, swizzle bytes) of a 64-bit matrix descriptor."""
    d = int(desc)
    return (((d & 0x3FFF) << 4), ((d >> 16) & 0x3FFF) << 4, ((d >> 32) & 0x3FFF) << 4,
            (d >> 49) & 7, SWIZZLE_BYTES[(d >> 62) & 3])


def swizzle(addr: np.ndarray, width: int) -> np.ndarray:
    """Apply the W-byte swizzle to absolute shared addresses (W in 0, 32, 64, 128)."""
    if not width:
        return addr
    mask = np.int64(width // 16 - 1)
    return addr ^ (((addr >> 7) & mask) << 4)


def operand_offsets(desc: int, rows: int, k: int, elem_bytes: int, mn_major: bool) -> np.ndarray:
    """Absolute shared byte address of element (r, kk) of a rows x k operand, shape (rows, k)."""
    start, lbo, sbo, base, width = decode_descriptor(desc)
    if base:
        raise Fault(LAUNCH_FAILED, f"wgmma descriptor 0x{int(desc):016x} has base offset {base}; "
                    "the emulator supports base offset 0 (tiles aligned to the swizzle repeat)")
    r = np.arange(rows, dtype=np.int64)[:, None]
    kk = np.arange(k, dtype=np.int64)[None, :]
    per16 = 16 // elem_bytes  # T: elements per 16 bytes
    if not mn_major:
        kbyte = kk * elem_bytes
        if width == 0:
            off = (r // 8) * sbo + (r % 8) * 16 + (kbyte // 16) * lbo + kbyte % 16
        else:
            off = (r // 8) * sbo + (r % 8) * width + kbyte
    else:
        if width == 0:
            off = (r % per16) * elem_bytes + (r // per16) * sbo + (kk % 8) * 16 + (kk // 8) * lbo
        else:
            span = width // elem_bytes  # elements of MN in one swizzle row
            off = (r % span) * elem_bytes + (r // span) * lbo + (kk % 8) * width + (kk // 8) * sbo
    return swizzle(start + off, width)


def load_operand(cta, desc: int, rows: int, k: int, elem: str, mn_major: bool) -> np.ndarray:
    """The rows x k operand as float64, read from shared memory through descriptor ``desc``."""
    eb = _ELEM_BYTES[elem]
    addr = operand_offsets(desc, rows, k, eb, mn_major)
    limit = cta.mem.shared_size
    hi = int(addr.max()) + eb
    if hi > limit or int(addr.min()) < 0:
        raise Fault(700, f"wgmma operand (descriptor 0x{int(desc):016x}) reaches shared byte {hi}; "
                    f"the block has {limit} bytes of shared memory", None, int(addr.max()))
    if (addr % eb).any():
        raise Fault(716, f"wgmma operand (descriptor 0x{int(desc):016x}) is not {eb}-byte aligned")
    shared = cta.mem.shared
    if eb == 2:
        bits = shared.view(np.uint16)[addr // 2]
        return bits16_to_f64(bits, elem)
    return tf32_to_f64(shared.view(np.uint32)[addr // 4])


def _imm(op, what: str, allowed: tuple[int, ...]) -> int:
    if not isinstance(op, Imm):
        raise Unsupported(f"wgmma: {what} must be an immediate")
    v = int(op.text, 0)
    if v not in allowed:
        raise Unsupported(f"wgmma: {what}={v}; allowed {allowed}")
    return v


def _decode_wgmma(instr, kc):
    mods = instr.mods
    kind = mods[0] if mods else ""
    if kind in ("fence", "commit_group", "wait_group"):
        require_arch(instr, kc, 90, f"wgmma.{kind}", arch_a=True)

        def bind_sync(cta):
            def sync(m):
                active_groups(cta, m, WARPGROUP, f"wgmma.{kind}")
            return sync
        return Op(bind_sync)
    if kind != "mma_async":
        raise Unsupported(f"{instr.full_opcode}: unknown wgmma form")
    require_arch(instr, kc, 90, "wgmma.mma_async", arch_a=True)
    shape = next((m for m in mods if m.startswith("m64n")), None)
    types = [m for m in mods if m in ("f16", "bf16", "tf32", "f32")]
    if shape is None or len(types) != 3 or "sp" in mods:
        raise Unsupported(f"{instr.full_opcode}: expected wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype")
    d_type, a_type, b_type = types
    n = int(shape[4:].split("k")[0])
    k = int(shape.split("k")[1])
    if a_type != b_type or a_type not in _K or _K[a_type] != k or d_type not in ("f32", "f16") \
            or (d_type == "f16" and a_type != "f16"):
        raise Unsupported(f"{instr.full_opcode}: emulated: m64nNk16 .f32/.f16 with f16, m64nNk16 .f32 "
                          "with bf16, m64nNk8 .f32 with tf32")
    nregs = fragments.wgmma_accumulator_regs(n) // (2 if d_type == "f16" else 1)
    ops = instr.operands
    d_op, a_op, b_op, scale_op = ops[0], ops[1], ops[2], ops[3]
    a_regs = isinstance(a_op, Vec)
    rest = ops[4:]
    want = 2 + (0 if a_type == "tf32" else (1 if a_regs else 2))
    if len(rest) != want:
        raise Unsupported(f"{instr.full_opcode}: expected {want} immediates after scale-d; got {len(rest)}")
    scale_a = _imm(rest[0], "imm-scale-a", (1, -1))
    scale_b = _imm(rest[1], "imm-scale-b", (1, -1))
    trans_a = 0 if a_regs or a_type == "tf32" else _imm(rest[2], "imm-trans-a", (0, 1))
    trans_b = 0 if a_type == "tf32" else _imm(rest[-1], "imm-trans-b", (0, 1))
    douts = list(d_op.items) if isinstance(d_op, Vec) else [d_op]
    if len(douts) != nregs:
        raise Unsupported(f"{instr.full_opcode}: D has {len(douts)} registers; m64n{n} .{d_type} needs {nregs}")
    acc = np.array(fragments.wgmma_accumulator_layout(n), dtype=np.intp)  # (128, n/2, 2)
    if a_regs:
        amma = fragments.MMA_SHAPES[("m16n8k16" if k == 16 else "m16n8k8", a_type, "f32")].a
        atab = np.array(amma.table, dtype=np.intp)  # (32, E, 2): rows 0..15 of warp w's slice
        if len(a_op.items) != amma.regs:
            raise Unsupported(f"{instr.full_opcode}: A in registers needs {amma.regs} registers")
    d_reg = "f32" if d_type == "f32" else "b32"

    def bind(cta):
        puts = [cta.writer(x, d_reg) for x in douts]
        rd = [cta.reader(x, d_reg) for x in douts]
        rb = cta.reader(b_op, "b64")
        ra = cta.reader(a_op, "b64") if not a_regs else [cta.reader(x, "b32") for x in a_op.items]
        if isinstance(scale_op, Reg) and cta.kernel.reg_types.get(scale_op.name.lstrip("!")) == "pred":
            rs = cta.reader(scale_op, "pred")
        else:
            rs = cta.reader(scale_op, "u32")
        nt = cta.nthreads

        def uniform(values, g, what):
            v = np.broadcast_to(np.asarray(values), (nt,))[g * WARPGROUP:(g + 1) * WARPGROUP]
            if (v != v[0]).any():
                raise Fault(LAUNCH_FAILED, f"wgmma: {what} differs across warpgroup {g}", g * WARPGROUP)
            return v[0]

        def step(m):
            groups = active_groups(cta, m, WARPGROUP, "wgmma.mma_async")
            bvals, svals = rb(), rs()
            avals = ra() if not a_regs else [np.broadcast_to(np.asarray(r()), (nt,)) for r in ra]
            # D is an input only where scale-d is true (strict mode faults on reading it otherwise)
            dvals = [np.broadcast_to(np.asarray(r()), (nt,)) for r in rd] if np.any(svals) else None
            outs = [np.zeros(nt, dtype=np.uint32 if d_type == "f16" else np.float32) for _ in puts]
            for g in (int(x) for x in groups):
                lo = g * WARPGROUP
                B = load_operand(cta, uniform(bvals, g, "the B descriptor"), n, k, b_type, bool(trans_b))
                if a_regs:
                    A = np.empty((64, k))
                    for w in range(4):
                        for j, vals in enumerate(avals):
                            words = vals[lo + 32 * w: lo + 32 * w + 32]
                            if a_type == "tf32":
                                A[16 * w + atab[:, j, 0], atab[:, j, 1]] = tf32_to_f64(words)
                            else:
                                el = halves_to_f64(words, a_type)
                                A[16 * w + atab[:, 2 * j, 0], atab[:, 2 * j, 1]] = el[:, 0]
                                A[16 * w + atab[:, 2 * j + 1, 0], atab[:, 2 * j + 1, 1]] = el[:, 1]
                else:
                    A = load_operand(cta, uniform(avals, g, "the A descriptor"), 64, k, a_type, bool(trans_a))
                D = (scale_a * A) @ (scale_b * B).T  # (64, n)
                if bool(uniform(svals, g, "scale-d")):
                    D = D + _accumulator(dvals, acc, lo, d_type, n)
                per_thread = D[acc[:, :, 0], acc[:, :, 1]]  # (128, n/2)
                for j in range(len(puts)):
                    if d_type == "f32":
                        outs[j][lo:lo + WARPGROUP] = per_thread[:, j].astype(np.float32)
                    else:
                        outs[j][lo:lo + WARPGROUP] = pack_halves(f64_to_f16_bits(per_thread[:, 2 * j]),
                                                                 f64_to_f16_bits(per_thread[:, 2 * j + 1]))
            for put, o in zip(puts, outs):
                put(o, m)
        return step
    return Op(bind)


def _accumulator(dvals, acc, lo: int, d_type: str, n: int) -> np.ndarray:
    """The warpgroup's current D registers as a 64 x n float64 tile."""
    D = np.empty((64, n))
    for j, vals in enumerate(dvals):
        v = vals[lo:lo + WARPGROUP]
        if d_type == "f32":
            D[acc[:, j, 0], acc[:, j, 1]] = v.astype(np.float64)
        else:
            el = halves_to_f64(v.view(np.uint32), "f16")
            D[acc[:, 2 * j, 0], acc[:, 2 * j, 1]] = el[:, 0]
            D[acc[:, 2 * j + 1, 0], acc[:, 2 * j + 1, 1]] = el[:, 1]
    return D


register_handler("wgmma", _decode_wgmma)
