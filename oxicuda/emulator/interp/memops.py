"""ld, st, atom, red: memory instructions over the state spaces of ``memory.Memory``."""

from __future__ import annotations

import numpy as np

from ...ptx.ir import Addr, Sym, Vec
from . import floatmath as fm
from .alu import Unsupported_, ptype_of
from .registry import Op, register_handler
from .types import DTYPES

_SPACES = ("global", "shared", "local", "param", "const")


def _space(instr) -> str:
    for m in instr.mods:
        s = m.split("::")[0]
        if s in _SPACES:
            return s
    return "generic"


def _vec(instr) -> int:
    for m in instr.mods:
        if m in ("v2", "v4", "v8"):
            return int(m[1:])
    return 1


def _lanes(cta, m):
    return cta.lanes_all if m is None else np.flatnonzero(m)


def _decode_ld(instr, kc):
    t = "b128" if "b128" in instr.mods else ptype_of(instr)
    space = _space(instr)
    count = _vec(instr)
    dst, src = instr.operands[0], instr.operands[1]
    if not isinstance(src, Addr):
        raise Unsupported_(instr, "the source must be a memory operand [addr]")
    if t == "b128":
        dt, count = np.dtype(np.uint64), 2 * count
    else:
        dt = DTYPES[t] if t != "pred" else np.dtype(np.uint8)
    dsts = list(dst.items) if isinstance(dst, Vec) else [dst]

    def bind(cta):
        addr = cta.address(src)
        mem = cta.mem
        n = cta.nthreads
        if t == "b128":
            return _bind_b128_ld(cta, addr, dsts, space, count)
        puts = [cta.writer(d, t) for d in dsts]
        if space == "param" and isinstance(src.base, Sym):
            off = int(addr())
            nb = dt.itemsize * count

            def ld_param(m):
                vals = np.frombuffer(mem.params, dtype=dt, count=count, offset=off)
                for k, put in enumerate(puts):
                    put(vals[k], m)
            if off + nb > kc.kernel.param_bytes:
                raise cta.fault(f"ld.param at offset {off} past the {kc.kernel.param_bytes}-byte "
                                "parameter block")
            return ld_param

        if count == 1:
            put0 = puts[0]
            lanes_all = cta.lanes_all

            def ld1(m):
                a = addr()
                if a.ndim == 0:
                    a = np.full(n, a, dtype=np.uint64)
                if m is None:
                    put0(mem.load1(space, a, lanes_all, dt), None)
                else:
                    lanes = np.flatnonzero(m)
                    full = np.zeros(n, dtype=dt)
                    full[lanes] = mem.load1(space, a[lanes], lanes, dt)
                    put0(full, m)
            return ld1

        def ld(m):
            a = np.broadcast_to(addr(), (n,))
            if m is None:
                vals = mem.load(space, a, cta.lanes_all, dt, count)
                for k, put in enumerate(puts):
                    put(vals[:, k], None)
            else:
                lanes = np.flatnonzero(m)
                vals = mem.load(space, a[lanes], lanes, dt, count)
                for k, put in enumerate(puts):
                    full = np.zeros(n, dtype=dt)
                    full[lanes] = vals[:, k]
                    put(full, m)
        return ld
    return Op(bind)


def _bind_b128_ld(cta, addr, dsts, space, count):
    """ld{.v2,.v4}.b128 into .b128 registers (16 bytes each, the low half at the lower address)."""
    puts = [cta.writer(d, "b128") for d in dsts]
    mem, n = cta.mem, cta.nthreads

    def ld128(m):
        lanes = cta.lanes_all if m is None else np.flatnonzero(m)
        a = np.broadcast_to(addr(), (n,))[lanes]
        vals = mem.load(space, a, lanes, np.dtype(np.uint64), count)
        for k, put in enumerate(puts):
            full = np.zeros((n, 2), np.uint64)
            full[lanes] = vals[:, 2 * k:2 * k + 2]
            put(full, m)
    return ld128


def _bind_b128_st(cta, addr, srcs, space, count):
    rs = [cta.reader(s, "b128") for s in srcs]
    mem, n = cta.mem, cta.nthreads

    def st128(m):
        lanes = cta.lanes_all if m is None else np.flatnonzero(m)
        a = np.broadcast_to(addr(), (n,))[lanes]
        vals = np.concatenate([np.asarray(r())[lanes] for r in rs], axis=1)
        mem.store(space, a, lanes, vals, np.dtype(np.uint64), count)
    return st128


def _decode_st(instr, kc):
    t = "b128" if "b128" in instr.mods else ptype_of(instr)
    space = _space(instr)
    count = _vec(instr)
    dst, src = instr.operands[0], instr.operands[1]
    if not isinstance(dst, Addr):
        raise Unsupported_(instr, "the destination must be a memory operand [addr]")
    dt = DTYPES[t]
    srcs = list(src.items) if isinstance(src, Vec) else [src]

    def bind(cta):
        addr = cta.address(dst)
        mem = cta.mem
        n = cta.nthreads
        if t == "b128":
            return _bind_b128_st(cta, addr, srcs, space, 2 * count)
        rs = [cta.reader(s, t) for s in srcs]

        if count == 1:
            r0 = rs[0]
            lanes_all = cta.lanes_all

            def st1(m):
                a = addr()
                if a.ndim == 0:
                    a = np.full(n, a, dtype=np.uint64)
                v = r0()
                if np.ndim(v) == 0:
                    v = np.full(n, v, dtype=dt)
                if m is None:
                    mem.store(space, a, lanes_all, v, dt, 1)
                else:
                    lanes = np.flatnonzero(m)
                    mem.store(space, a[lanes], lanes, v[lanes], dt, 1)
            return st1

        def st(m):
            a = np.broadcast_to(addr(), (n,))
            vals = np.empty((n, count), dtype=dt)
            for k, r in enumerate(rs):
                vals[:, k] = r()
            if m is None:
                mem.store(space, a, cta.lanes_all, vals, dt, count)
            else:
                lanes = np.flatnonzero(m)
                mem.store(space, a[lanes], lanes, vals[lanes], dt, count)
        return st
    return Op(bind)


# -- atomics ---------------------------------------------------------------------------------
def _atom_fn(op: str, t: str):
    dt = DTYPES[t]
    if op == "add":
        if t in ("f16", "bf16", "f16x2", "bf16x2"):
            return lambda old, v: fm.pack(t, [x + y for x, y in zip(fm.unpack(t, old), fm.unpack(t, v))])
        if t == "f32":  # PTX: rounds to nearest even and flushes subnormal inputs and results
            return lambda old, v: fm.canon(fm.ftz(fm.ftz(old) + fm.ftz(v)))
        return lambda old, v: old + v
    if op in ("min", "max"):
        f = np.minimum if op == "min" else np.maximum
        if t in ("f32", "f64"):
            g = np.fmin if op == "min" else np.fmax
            f = (lambda old, v: fm.canon(g(old, v))) if t == "f32" else g
        return f
    if op in ("and", "or", "xor"):
        return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
    if op == "exch":
        return lambda old, v: v
    if op == "inc":
        return lambda old, v: np.where(old >= v, dt.type(0), old + dt.type(1)).astype(dt)
    if op == "dec":
        return lambda old, v: np.where((old == 0) | (old > v), v, old - dt.type(1)).astype(dt)
    return None


def _decode_atom(instr, kc):
    is_red = instr.opcode == "red"
    t = ptype_of(instr)
    space = _space(instr)
    op = next((m for m in instr.mods if m in ("add", "min", "max", "and", "or", "xor", "exch",
                                               "cas", "inc", "dec")), None)
    if op is None:
        raise Unsupported_(instr, "no atomic operation")
    if t in ("b32", "b64") and op in ("add", "min", "max"):
        t = "u" + t[1:]
    dt = DTYPES[t]
    ops = instr.operands
    if is_red:
        dst, addr_op, srcs = None, ops[0], ops[1:]
    else:
        dst, addr_op, srcs = ops[0], ops[1], ops[2:]
    fn = _atom_fn(op, t) if op != "cas" else None
    if op != "cas" and fn is None:
        raise Unsupported_(instr, f"atomic {op} on .{t}")

    def bind(cta):
        addr = cta.address(addr_op)
        mem = cta.mem
        n = cta.nthreads
        rs = [cta.reader(s, t) for s in srcs]
        put = cta.writer(dst, t) if dst is not None else None

        def atom(m):
            lanes = _lanes(cta, m)
            a = np.broadcast_to(addr(), (n,))[lanes]
            vals = [np.broadcast_to(np.asarray(r(), dtype=dt), (n,))[lanes] for r in rs]
            olds = np.empty(len(lanes), dtype=dt)
            if op != "cas" and len(np.unique(a)) == len(a):
                cur = mem.load(space, a, lanes, dt)[:, 0]
                olds[:] = cur
                mem.store(space, a, lanes, fn(cur, vals[0]).astype(dt), dt)
            else:  # colliding lanes: serialize in lane order
                refs = mem.element_refs(space, a, lanes, dt)
                for j, (view, i) in enumerate(refs):
                    old = view[i]
                    olds[j] = old
                    if op == "cas":
                        if old == vals[0][j]:
                            view[i] = vals[1][j]
                    else:
                        view[i] = dt.type(fn(np.array([old], dt), vals[0][j:j + 1])[0])
            if put is not None:
                full = np.zeros(n, dtype=dt)
                full[lanes] = olds
                put(full, m)
        return atom
    return Op(bind)


register_handler("ld", _decode_ld)
register_handler("ldu", _decode_ld)
register_handler("st", _decode_st)
register_handler("atom", _decode_atom)
register_handler("red", _decode_atom)
