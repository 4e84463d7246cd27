"""Warp-level tensor-core instructions: ``mma.sync``, ``ldmatrix``, ``stmatrix``.

Every layout comes from ``oxicuda.ptx.fragments`` (the tables the builder uses too); nothing
here restates one. Numerics: see ``warp_groups`` (exact input conversion, float64 products and
sums, one rounding to the accumulator type). Each instruction needs all 32 threads of every warp
that executes it, else the launch faults naming the missing thread.

Importing this module also registers ``wgmma`` (``wgmma.py``) and the asynchronous copies
(``async_copy.py``), so that the loader's one plugin import covers them all.
"""

from __future__ import annotations

import numpy as np

from ...ptx import fragments
from ...ptx.ir import Addr, Vec
from .faults import Unsupported
from .floatmath import CANONICAL_HALF_BITS, canon
from .registry import Op, register_handler
from .warp_groups import (
    WARP,
    active_groups,
    f64_to_f16_bits,
    halves_to_f64,
    pack_halves,
    require_arch,
    tf32_to_f64,
)

_U16 = np.dtype(np.uint16)
_NP = {"f32": np.dtype(np.float32), "f64": np.dtype(np.float64)}


def _items(op) -> list:
    return list(op.items) if isinstance(op, Vec) else [op]


def _space_of(instr) -> str:
    for m in instr.mods:
        base = m.split("::")[0]
        if base in ("shared", "global", "local"):
            return base
    return "generic"


# -- fragments <-> matrices ---------------------------------------------------------------------
class FragmentMap:
    """Index arrays of one ``fragments.Fragment``: element e of lane l is (rows[l, e], cols[l, e]);
    ``gather``/``scatter`` move whole warps between per-lane elements and matrices."""

    def __init__(self, frag: fragments.Fragment) -> None:
        t = np.array(frag.table, dtype=np.intp)  # (lanes, elements, 2)
        self.frag = frag
        self.rows = t[:, :, 0]
        self.cols = t[:, :, 1]
        self.lanes = t.shape[0]

    def to_matrices(self, elems: np.ndarray) -> np.ndarray:
        """(groups*lanes, E) element values -> (groups, rows, cols) matrices."""
        g = elems.shape[0] // self.lanes
        out = np.empty((g, self.frag.rows, self.frag.cols), dtype=elems.dtype)
        out[:, self.rows, self.cols] = elems.reshape(g, self.lanes, -1)
        return out

    def from_matrices(self, mats: np.ndarray) -> np.ndarray:
        """(groups, rows, cols) -> (groups*lanes, E) per-lane element values."""
        g = mats.shape[0]
        return mats[:, self.rows, self.cols].reshape(g * self.lanes, -1)


def read_elements(readers, idx: np.ndarray, kind: str, per_reg: int, n: int) -> np.ndarray:
    """Registers of threads ``idx`` as float64 elements, shape (len(idx), regs*per_reg); packed
    16-bit halves low first, tf32 truncated (``warp_groups``)."""
    out = np.empty((len(idx), len(readers) * per_reg), dtype=np.float64)
    for j, r in enumerate(readers):
        v = np.broadcast_to(np.asarray(r()), (n,))[idx]
        if kind in ("f16", "bf16"):
            out[:, 2 * j: 2 * j + 2] = halves_to_f64(v.view(np.uint32), kind)
        elif kind == "tf32":
            out[:, j] = tf32_to_f64(v.view(np.uint32))
        else:
            out[:, j] = v.astype(np.float64)
    return out


# -- mma.sync ------------------------------------------------------------------------------------
def _f16_canon(values: np.ndarray) -> np.ndarray:
    """float64 values -> f16 bits (nearest even), NaN as the canonical 0x7FFF."""
    bits = f64_to_f16_bits(values)
    return np.where(np.isnan(values), CANONICAL_HALF_BITS, bits)


def _decode_mma(instr, kc):
    mods = instr.mods
    shape = next((m for m in mods if m.startswith("m") and "n" in m and "k" in m), None)
    if "sync" not in mods or "aligned" not in mods or shape is None:
        raise Unsupported(f"{instr.full_opcode}: only mma.sync.aligned.<shape>... is emulated")
    if "row" not in mods or "col" not in mods:
        raise Unsupported(f"{instr.full_opcode}: only the .row.col operand layouts exist for the "
                          "emulated shapes")
    types = [m for m in mods if m in ("f16", "bf16", "tf32", "f32", "f64")]
    if len(types) != 4:
        raise Unsupported(f"{instr.full_opcode}: expected .dtype.atype.btype.ctype")
    d_type, a_type, b_type, c_type = types
    if a_type != b_type or d_type != c_type:
        raise Unsupported(f"{instr.full_opcode}: mixed a/b or c/d types are not emulated")
    key = (shape, a_type, c_type)
    if key not in fragments.MMA_SHAPES:
        known = ", ".join(f"{s}.{c}.{a}" for s, a, c in sorted(fragments.MMA_SHAPES))
        raise Unsupported(f"{instr.full_opcode}: mma {shape} {a_type}->{c_type} is not a PTX "
                          f"combination the emulator knows; known: {known}")
    info = fragments.MMA_SHAPES[key]
    require_arch(instr, kc, info.min_sm, f"mma.sync.{shape}.{a_type}")
    d, a, b, c = instr.operands
    dl, al, bl, cl = _items(d), _items(a), _items(b), _items(c)
    for name, regs, want in (("d", dl, info.c_regs), ("a", al, info.a_regs), ("b", bl, info.b_regs),
                             ("c", cl, info.c_regs)):
        if len(regs) != want:
            raise Unsupported(f"{instr.full_opcode}: operand {name} has {len(regs)} registers; "
                              f"{shape}.{a_type} needs {want}")
    amap, bmap, cmap = FragmentMap(info.a), FragmentMap(info.b), FragmentMap(info.c)
    in_reg = "f64" if a_type == "f64" else "b32"
    acc_reg = {"f32": "f32", "f64": "f64", "f16": "b32"}[c_type]
    acc_kind = "f16" if c_type == "f16" else c_type
    what = f"mma.sync.{shape}.{a_type}"

    def bind(cta):
        ra = [cta.reader(x, in_reg) for x in al]
        rb = [cta.reader(x, in_reg) for x in bl]
        rc = [cta.reader(x, acc_reg) for x in cl]
        puts = [cta.writer(x, acc_reg) for x in dl]
        n = cta.nthreads

        def step(m):
            warps = active_groups(cta, m, WARP, what)
            idx = (warps[:, None] * WARP + np.arange(WARP)).reshape(-1)
            A = amap.to_matrices(read_elements(ra, idx, a_type, info.a.per_reg, n))
            B = bmap.to_matrices(read_elements(rb, idx, a_type, info.b.per_reg, n))
            C = cmap.to_matrices(read_elements(rc, idx, acc_kind, info.c.per_reg, n))
            D = np.matmul(A, B) + C
            out = cmap.from_matrices(D)  # (threads, elements) float64
            for j, put in enumerate(puts):
                full = np.zeros(n, dtype=np.uint32 if c_type == "f16" else _NP[c_type])
                if c_type == "f16":  # NaN results: the canonical NaN, as the hardware writes
                    full[idx] = pack_halves(_f16_canon(out[:, 2 * j]), _f16_canon(out[:, 2 * j + 1]))
                else:
                    full[idx] = canon(out[:, j].astype(_NP[c_type]))
                put(full, m)
        return step
    return Op(bind)


# -- ldmatrix / stmatrix -------------------------------------------------------------------------
_ROW_PROVIDER = np.array([fragments.ldmatrix_row_provider(lane) for lane in range(WARP)], dtype=np.intp)
_ELEMS = {t: np.array([fragments.ldmatrix_elements(lane, t) for lane in range(WARP)], dtype=np.intp)
          for t in (False, True)}  # (lane, half, (row, col))


def _matrix_count(instr) -> int:
    for m in instr.mods:
        if m in ("x1", "x2", "x4"):
            return int(m[1:])
    raise Unsupported(f"{instr.full_opcode}: needs .x1, .x2 or .x4")


def _check_matrix_mods(instr, opname: str) -> None:
    if "m8n8" not in instr.mods or "b16" not in instr.mods:
        raise Unsupported(f"{instr.full_opcode}: only {opname}.sync.aligned.m8n8.x{{1,2,4}}"
                          "[.trans].shared.b16 is emulated")


def _row_addresses(cta, addr, warps, num, space):
    """(warps, num, 8) shared offsets of each matrix row, from the lanes that supply them."""
    a = np.broadcast_to(addr(), (cta.nthreads,)).astype(np.uint64)
    prov = warps[:, None] * WARP + np.arange(8 * num)
    rows = a[prov].reshape(len(warps), num, 8)
    if space == "generic":
        from .memory import SHARED_WINDOW
        rows = rows - np.uint64(SHARED_WINDOW)
    return rows, prov


def _decode_ldmatrix(instr, kc):
    _check_matrix_mods(instr, "ldmatrix")
    num = _matrix_count(instr)
    trans = "trans" in instr.mods
    require_arch(instr, kc, 75, "ldmatrix")
    dst, src = instr.operands
    outs = _items(dst)
    if len(outs) != num or not isinstance(src, Addr):
        raise Unsupported(f"{instr.full_opcode}: needs {num} destination registers and a [address]")
    space = _space_of(instr)
    el = _ELEMS[trans]
    assert (_ROW_PROVIDER[: 8 * num, 0] == np.repeat(np.arange(num), 8)).all()

    def bind(cta):
        addr = cta.address(src)
        puts = [cta.writer(o, "b32") for o in outs]
        n = cta.nthreads

        def step(m):
            warps = active_groups(cta, m, WARP, "ldmatrix")
            rows, prov = _row_addresses(cta, addr, warps, num, space)
            flat = rows.reshape(-1)
            data = cta.mem.load("shared", flat, prov.reshape(-1), _U16, 8)  # (w*num*8, 8)
            mats = data.reshape(len(warps), num, 8, 8)  # [warp, matrix, row, col]
            idx = (warps[:, None] * WARP + np.arange(WARP)).reshape(-1)
            for i, put in enumerate(puts):
                lo = mats[:, i, el[:, 0, 0], el[:, 0, 1]].reshape(-1)
                hi = mats[:, i, el[:, 1, 0], el[:, 1, 1]].reshape(-1)
                full = np.zeros(n, dtype=np.uint32)
                full[idx] = pack_halves(lo, hi)
                put(full, m)
        return step
    return Op(bind)


def _decode_stmatrix(instr, kc):
    _check_matrix_mods(instr, "stmatrix")
    num = _matrix_count(instr)
    trans = "trans" in instr.mods
    require_arch(instr, kc, 90, "stmatrix")
    dst, src = instr.operands
    ins = _items(src)
    if len(ins) != num or not isinstance(dst, Addr):
        raise Unsupported(f"{instr.full_opcode}: needs a [address] and {num} source registers")
    space = _space_of(instr)
    el = _ELEMS[trans]

    def bind(cta):
        addr = cta.address(dst)
        rs = [cta.reader(o, "b32") for o in ins]
        n = cta.nthreads

        def step(m):
            warps = active_groups(cta, m, WARP, "stmatrix")
            rows, prov = _row_addresses(cta, addr, warps, num, space)
            idx = (warps[:, None] * WARP + np.arange(WARP)).reshape(-1)
            mats = np.zeros((len(warps), num, 8, 8), dtype=np.uint16)
            for i, r in enumerate(rs):
                w = np.broadcast_to(np.asarray(r()), (n,))[idx].astype(np.uint32).reshape(len(warps), WARP)
                mats[:, i, el[:, 0, 0], el[:, 0, 1]] = (w & np.uint32(0xFFFF)).astype(np.uint16)
                mats[:, i, el[:, 1, 0], el[:, 1, 1]] = (w >> np.uint32(16)).astype(np.uint16)
            cta.mem.store("shared", rows.reshape(-1), prov.reshape(-1), mats.reshape(-1, 8), _U16, 8)
        return step
    return Op(bind)


register_handler("mma", _decode_mma)
register_handler("ldmatrix", _decode_ldmatrix)
register_handler("stmatrix", _decode_stmatrix)

from . import wgmma  # noqa: F401  (registers wgmma)
