"""Bulk asynchronous copies (sm_90): the tensor-memory accelerator (TMA)
``cp.async.bulk.tensor.{1..5}d`` in tile mode, both directions, the plain ``cp.async.bulk``
copies, and ``cp.async.bulk.commit_group``/``wait_group``.

Tensor maps are the 128-byte ones ``EmulatorAPI.tensor_map_encode_tiled`` makes
(``oxicuda.emulator.tensormap``), read from the kernel parameter (generic address from
``cvta.param`` or the parameter itself) or from global memory. A load copies the box at the
given element coordinates into shared memory (innermost dimension first, densely), zero-filling
elements outside the tensor (NaN with ``oob_fill`` = 1 for float types), applies the map's
swizzle to the shared addresses, and then completes the box's full byte count on the named
mbarrier. The innermost coordinate must start the box on a 16-byte boundary (coordinate x
element size a multiple of 16, negative coordinates included): the H200 stops the kernel with
CUDA_ERROR_ILLEGAL_INSTRUCTION otherwise, for loads and stores alike, so the emulator faults
with that code. Copies happen when issued, so the data is visible before the barrier phase completes,
as the hardware guarantees.
"""

from __future__ import annotations

import numpy as np

from ...ptx.ir import Addr, Imm, Sym
from ..tensormap import decode_tensor_map
from .faults import ILLEGAL_INSTRUCTION, LAUNCH_FAILED, Fault, Unsupported
from .mbarrier import barrier_offsets, complete_tx
from .memory import PARAM_WINDOW, WINDOW_SIZE, lanes_of, shared_offsets
from .registry import Op
from .strict import mark_shared_written
from .warp_groups import require_arch
from .wgmma import swizzle

#: CUtensorMapSwizzle -> swizzle width in bytes
TMAP_SWIZZLE_BYTES = {0: 0, 1: 32, 2: 64, 3: 128}
_FLOAT_TYPES = {6: np.float16, 7: np.float32, 8: np.float64, 9: None, 10: None, 11: None, 12: None}
_U8 = np.dtype(np.uint8)
_maps: dict[bytes, object] = {}


def _tensor_map(cta, tmap_op: Addr, value: int, lane: int):
    """The decoded tensor map at ``value`` (a generic or param address)."""
    mem = cta.mem
    if isinstance(tmap_op.base, Sym) and tmap_op.base.name in cta.kernel.param_offsets:
        off = value
        raw = bytes(mem.params[off:off + 128])
    elif PARAM_WINDOW <= value < PARAM_WINDOW + WINDOW_SIZE:
        off = value - PARAM_WINDOW
        raw = bytes(mem.params[off:off + 128])
    else:
        raw = mem.load("global", np.array([value], np.uint64), np.array([lane]), _U8, 128).tobytes()
    info = _maps.get(raw)
    if info is None:
        try:
            info = decode_tensor_map(raw)
        except ValueError as exc:
            raise Fault(LAUNCH_FAILED, f"cp.async.bulk.tensor: the tensor map at 0x{value:x} is not "
                        f"one made by tensor_map_encode_tiled ({exc})", lane, value) from None
        if len(_maps) > 256:
            _maps.clear()
        _maps[raw] = info
    if info.interleave != 0 or any(e != 1 for e in info.element_strides):
        raise Fault(LAUNCH_FAILED, "cp.async.bulk.tensor: interleaved maps and element strides "
                    f"other than 1 are not emulated (interleave={info.interleave}, element_strides="
                    f"{info.element_strides})", lane, value)
    return info


def _box_geometry(info, coords, dst_base: int, lane: int):
    """(in-bounds mask, global addresses, shared addresses) of every box element, innermost
    dimension fastest; all arrays have prod(box) entries."""
    eb = info.element_bytes
    if (int(coords[0]) * eb) % 16:
        raise Fault(ILLEGAL_INSTRUCTION, f"cp.async.bulk.tensor: innermost coordinate {int(coords[0])} x "
                    f"{eb}-byte elements is not a multiple of 16 bytes; the box must start 16-byte "
                    f"aligned (coordinates {[int(c) for c in coords]})", lane)
    grids = np.meshgrid(*[np.arange(b, dtype=np.int64) for b in reversed(info.box_dim)], indexing="ij")
    rel = [g.reshape(-1) for g in reversed(grids)]  # rel[d]: offset along dim d
    inside = np.ones(rel[0].shape, dtype=bool)
    gaddr = np.full(rel[0].shape, info.global_address, dtype=np.int64)
    for d, r in enumerate(rel):
        idx = r + int(coords[d])
        inside &= (idx >= 0) & (idx < info.global_dim[d])
        gaddr += idx * (eb if d == 0 else info.global_strides[d - 1])
    width = TMAP_SWIZZLE_BYTES.get(info.swizzle)
    if width is None:
        raise Fault(LAUNCH_FAILED, f"tensor map swizzle {info.swizzle} is not a CUtensorMapSwizzle", lane)
    if width and info.box_dim[0] * eb > width:
        raise Fault(LAUNCH_FAILED, f"tensor map box_dim[0]={info.box_dim[0]} x {eb} bytes exceeds the "
                    f"{width}-byte swizzle span", lane)
    if dst_base % 128:
        raise Fault(716, f"cp.async.bulk.tensor: shared address {dst_base} must be 128-byte aligned",
                    lane, dst_base)
    lin = np.zeros(rel[0].shape, dtype=np.int64)
    scale = 1
    for d, r in enumerate(rel):
        lin += r * scale
        scale *= info.box_dim[d]
    saddr = swizzle(dst_base + lin * eb, width)
    return inside, gaddr, saddr


def _shared_bytes(cta, saddr: np.ndarray, eb: int, lane: int) -> np.ndarray:
    """(elements, eb) byte offsets into shared memory, bounds-checked."""
    limit = cta.mem.shared_size
    if len(saddr) and (int(saddr.max()) + eb > limit or int(saddr.min()) < 0):
        raise Fault(700, f"cp.async.bulk.tensor box reaches shared byte {int(saddr.max()) + eb}; the "
                    f"block has {limit} bytes of shared memory", lane, int(saddr.max()))
    return (saddr[:, None] + np.arange(eb)).astype(np.intp)


def _decode_tensor(instr, kc, load: bool):
    ops = instr.operands
    if "tile" not in instr.mods and any(m.startswith("im2col") for m in instr.mods):
        raise Unsupported(f"{instr.full_opcode}: im2col mode is not emulated (tile only)")
    if any(m.startswith("multicast") for m in instr.mods):
        raise Unsupported(f"{instr.full_opcode}: multicast is not emulated (clusters of one CTA)")
    dim = next(int(m[0]) for m in instr.mods if len(m) == 2 and m[1] == "d" and m[0].isdigit())
    if load:
        dst, src, bar = ops[0], ops[1], ops[2]
        tmap = src
    else:
        tmap, src = ops[0], ops[1]
        dst, bar = None, None
    if not isinstance(tmap, Addr) or tmap.index is None or len(tmap.index.items) != dim:
        raise Unsupported(f"{instr.full_opcode}: needs [tensorMap, {{{dim} coordinates}}]")

    def bind(cta):
        ta = cta.address(Addr(tmap.base, tmap.offset))
        rcs = [cta.reader(c, "s32") for c in tmap.index.items]
        sa = cta.address(dst if load else src)
        ba = cta.address(bar) if load else None
        n = cta.nthreads
        mem = cta.mem
        shared = mem.shared

        def step(m):
            lanes = lanes_of(cta, m)
            tvals = np.broadcast_to(ta(), (n,))[lanes]
            svals = shared_offsets(instr, np.broadcast_to(sa(), (n,))[lanes].astype(np.uint64))
            cvals = [np.broadcast_to(r(), (n,))[lanes] for r in rcs]
            boffs = barrier_offsets(cta, instr, np.broadcast_to(ba(), (n,))[lanes], lanes) if load else None
            for j, lane in enumerate(int(x) for x in lanes):
                info = _tensor_map(cta, tmap, int(tvals[j]), lane)
                if info.rank != dim:
                    raise Fault(LAUNCH_FAILED, f"cp.async.bulk.tensor.{dim}d with a rank-{info.rank} "
                                "tensor map", lane)
                eb = info.element_bytes
                inside, gaddr, saddr = _box_geometry(info, [int(c[j]) for c in cvals], int(svals[j]), lane)
                sbytes = _shared_bytes(cta, saddr, eb, lane)
                if load:
                    data = np.zeros((len(saddr), eb), dtype=np.uint8)
                    if info.oob_fill == 1 and _FLOAT_TYPES.get(info.data_type) is not None:
                        data[:] = np.array([np.nan], dtype=_FLOAT_TYPES[info.data_type]).view(np.uint8)
                    if inside.any():
                        data[inside] = mem.load("global", gaddr[inside].astype(np.uint64),
                                                np.full(int(inside.sum()), lane), _U8, eb)
                    shared[sbytes] = data
                    mark_shared_written(mem, sbytes)
                    complete_tx(cta, int(boffs[j]), len(saddr) * eb, lane)
                elif inside.any():
                    vals = shared[sbytes[inside]]
                    mem.store("global", gaddr[inside].astype(np.uint64), np.full(int(inside.sum()), lane),
                              vals, _U8, eb)
        return step
    return Op(bind)


def _decode_plain_bulk(instr, kc, load: bool):
    """cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]
    and cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size."""
    ops = instr.operands
    dst, src, size_op = ops[0], ops[1], ops[2]
    bar = ops[3] if load else None

    def bind(cta):
        da, sa = cta.address(dst), cta.address(src)
        rs = cta.reader(size_op, "u32")
        ba = cta.address(bar) if load else None
        n = cta.nthreads
        mem = cta.mem

        def step(m):
            lanes = lanes_of(cta, m)
            d = np.broadcast_to(da(), (n,))[lanes].astype(np.uint64)
            s = np.broadcast_to(sa(), (n,))[lanes].astype(np.uint64)
            sizes = np.broadcast_to(rs(), (n,))[lanes]
            boffs = barrier_offsets(cta, instr, np.broadcast_to(ba(), (n,))[lanes], lanes) if load else None
            for j, lane in enumerate(int(x) for x in lanes):
                size = int(sizes[j])
                if size % 16 or d[j] % np.uint64(16) or s[j] % np.uint64(16):
                    raise Fault(716, f"cp.async.bulk of {size} bytes from 0x{int(s[j]):x} to "
                                f"0x{int(d[j]):x}: size and addresses must be multiples of 16", lane)
                one = np.array([lane])
                if load:
                    off = int(shared_offsets(instr, d[j:j + 1])[0])
                    data = mem.load("global", s[j:j + 1], one, _U8, size)
                    mem.store("shared", np.array([off], np.uint64), one, data, _U8, size)
                    complete_tx(cta, int(boffs[j]), size, lane)
                else:
                    off = int(shared_offsets(instr, s[j:j + 1])[0])
                    data = mem.load("shared", np.array([off], np.uint64), one, _U8, size)
                    mem.store("global", d[j:j + 1], one, data, _U8, size)
        return step
    return Op(bind)


def decode_bulk(instr, kc):
    """Decoder for every ``cp.async.bulk...`` form (called by ``async_copy``)."""
    mods = instr.mods
    require_arch(instr, kc, 90, "cp.async.bulk")
    if len(mods) > 2 and mods[2] in ("commit_group", "wait_group"):
        if mods[2] == "wait_group" and not (instr.operands and isinstance(instr.operands[0], Imm)):
            raise Unsupported(f"{instr.full_opcode}: needs an immediate group count")
        return Op(lambda cta: (lambda m: None))  # copies complete when issued
    tensor = len(mods) > 2 and mods[2] == "tensor"
    spaces = [m.split("::")[0] for m in mods if m.split("::")[0] in ("shared", "global")]
    if spaces[:2] == ["shared", "global"]:
        load = True
        if not any(m.startswith("mbarrier::complete_tx") for m in mods):
            raise Unsupported(f"{instr.full_opcode}: global->shared bulk copies need "
                              ".mbarrier::complete_tx::bytes")
    elif spaces[:2] == ["global", "shared"]:
        load = False
    else:
        raise Unsupported(f"{instr.full_opcode}: only global<->shared bulk copies are emulated")
    if tensor:
        return _decode_tensor(instr, kc, load)
    return _decode_plain_bulk(instr, kc, load)
