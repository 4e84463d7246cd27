"""The state of one CTA: registers as numpy arrays (one lane per thread), special registers,
and the operand readers/writers that handlers bind to at launch."""

from __future__ import annotations

import time

import numpy as np

from ...ptx.ir import Addr, Imm, Reg, Sym
from .faults import LAUNCH_FAILED, Fault
from .memory import Memory
from .strict import StrictMemory, unwritten_register_fault
from .types import DTYPES, SIGNED, UNSIGNED, immediate

_SPECIAL_AXES = ("x", "y", "z")


class Cta:
    """Registers, special registers and memories for one block shape of one kernel.

    Reused for every CTA of a launch (``set_block`` updates the block index). Register arrays
    are preallocated; ``reader``/``writer`` return closures over persistent views of them.
    """

    def __init__(self, kernel, block: tuple[int, int, int], grid: tuple[int, int, int],
                 dynamic_smem: int, heap, strict: bool = False) -> None:
        bx, by, bz = block
        n = bx * by * bz
        self.kernel = kernel
        self.block = block
        self.grid = grid
        self.nthreads = n
        lin = np.arange(n, dtype=np.uint32)
        self.tid = (lin % bx, (lin // bx) % by, lin // (bx * by))
        self.lane = lin % np.uint32(32)
        self.warp = lin // np.uint32(32)
        self.nwarps = (n + 31) // 32
        self.lanes_all = np.arange(n, dtype=np.intp)
        self.ctaid = [np.zeros((), dtype=np.uint32) for _ in range(3)]
        self.dynamic_smem = int(dynamic_smem)
        self.strict = bool(strict)
        memory_class = StrictMemory if self.strict else Memory
        self.mem = memory_class(heap, kernel.static_smem + self.dynamic_smem, kernel.local_bytes, n)
        self.regs: dict[str, np.ndarray] = {}
        for name, ptype in kernel.reg_types.items():
            if ptype == "b128":  # two 64-bit halves per thread, low half first
                self.regs[name] = np.zeros((n, 2), dtype=np.uint64)
                continue
            dt = DTYPES[ptype] if ptype == "pred" else UNSIGNED[DTYPES[ptype].itemsize]
            self.regs[name] = np.zeros(n, dtype=dt)
        #: strict mode only: per register, which lanes this CTA wrote; the mask of the running step
        self.written: dict[str, np.ndarray] = (
            {name: np.zeros(n, dtype=bool) for name in self.regs} if self.strict else {})
        self.cur_mask = None
        self._views: dict[tuple[str, str], np.ndarray] = {}
        self._clock0 = time.perf_counter_ns()
        self.steps = 0
        self.specials = self._specials()

    def set_grid(self, grid: tuple[int, int, int]) -> None:
        """A new launch of the same block shape: ``%nctaid`` changes in place (bound readers
        keep reading the live 0-d arrays), so the binding is reused across grid sizes."""
        self.grid = grid
        for i, ax in enumerate(_SPECIAL_AXES):
            self.specials[f"%nctaid.{ax}"][()] = grid[i]

    def set_block(self, ctaid: tuple[int, int, int]) -> None:
        """Point the CTA at block ``ctaid``."""
        for a, v in zip(self.ctaid, ctaid):
            a[()] = v

    def reset_strict(self) -> None:
        """Strict mode, a new CTA: poison every register, forget what was written."""
        for name, arr in self.regs.items():
            arr.fill(arr.dtype.type(False) if arr.dtype == np.bool_ else ~arr.dtype.type(0))
            self.written[name].fill(False)
        self.mem.reset()

    def _specials(self) -> dict[str, object]:
        _bx, _by, _bz = self.block
        _gx, _gy, _gz = self.grid
        u = lambda v: np.array(v, dtype=np.uint32)
        lane = self.lane
        sp: dict[str, object] = {
            "%laneid": self.lane, "%warpid": self.warp, "%nwarpid": u(self.nwarps),
            "%smid": u(0), "%nsmid": u(1), "%gridid": u(0),
            "%dynamic_smem_size": u(self.dynamic_smem),
            "%total_smem_size": u(self.kernel.static_smem + self.dynamic_smem),
            "%lanemask_eq": (np.uint32(1) << lane).astype(np.uint32),
            "%lanemask_lt": ((np.uint64(1) << lane.astype(np.uint64)) - np.uint64(1)).astype(np.uint32),
            "%lanemask_le": ((np.uint64(2) << lane.astype(np.uint64)) - np.uint64(1)).astype(np.uint32),
        }
        sp["%lanemask_gt"] = ~sp["%lanemask_le"]
        sp["%lanemask_ge"] = ~sp["%lanemask_lt"]
        for i, ax in enumerate(_SPECIAL_AXES):
            sp[f"%tid.{ax}"] = self.tid[i]
            sp[f"%ntid.{ax}"] = u(self.block[i])
            sp[f"%ctaid.{ax}"] = self.ctaid[i]
            sp[f"%nctaid.{ax}"] = u(self.grid[i])
        return sp

    # -- operands --------------------------------------------------------------------------
    def fault(self, what: str, lane: int | None = None, code: int = LAUNCH_FAILED,
              address: int | None = None) -> Fault:
        """A Fault to raise from a handler."""
        return Fault(code, what, lane, address)

    def reg_view(self, name: str, ptype: str) -> np.ndarray:
        """The live register array of ``name`` viewed as PTX type ``ptype`` (same width)."""
        key = (name, ptype)
        v = self._views.get(key)
        if v is None:
            arr = self.regs[name]
            v = arr if ptype == "pred" else arr.view(DTYPES[ptype])
            self._views[key] = v
        return v

    def reader(self, op, ptype: str):
        """A zero-arg callable giving operand ``op`` as PTX type ``ptype`` (array or scalar)."""
        read = self._plain_reader(op, ptype)
        if not self.strict or not isinstance(op, Reg) or op.name.startswith("!") \
                or op.name not in self.written:
            return read
        return self._checked(op.name, read)

    def _checked(self, name: str, read):
        written = self.written[name]

        def checked_read():
            f = unwritten_register_fault(name, written, self.cur_mask)
            if f is not None:
                raise f
            return read()
        return checked_read

    def _plain_reader(self, op, ptype: str):
        dt = DTYPES[ptype]
        if isinstance(op, Imm):
            if ptype == "b128":  # a 128-bit literal as its (low, high) 64-bit halves
                v = int(op.text.strip().rstrip("Uu"), 0) & ((1 << 128) - 1)
                c = np.array([v & 0xFFFFFFFFFFFFFFFF, v >> 64], dtype=np.uint64)
            else:
                c = immediate(op.text, ptype)
            return lambda: c
        if isinstance(op, Reg):
            name = op.name
            if name.startswith("!"):
                base = self.reader(Reg(name[1:]), "pred")
                return lambda: ~base()
            if name in self.specials or name in ("%clock", "%clock64", "%globaltimer"):
                return self._special_reader(name, dt)
            arr = self.regs.get(name)
            if arr is None:
                raise self.fault(f"register {name} is not declared")
            if (arr.ndim == 2) != (ptype == "b128"):
                raise self.fault(f"register {name} used as .{ptype}; .b128 registers and "
                                 ".b128 operands go together (mov/ld/st .b128)")
            if arr.ndim == 2:
                return lambda: arr
            if ptype == "pred" or arr.dtype == np.bool_:
                if arr.dtype != np.bool_ or ptype != "pred":
                    raise self.fault(f"register {name} used as .{ptype}")
                return lambda: arr
            w, rw = dt.itemsize, arr.dtype.itemsize
            if w == rw:
                v = self.reg_view(name, ptype)
                return lambda: v
            if w < rw:  # the low bits of a wider register
                lo = UNSIGNED[w]
                return lambda: arr.astype(lo).view(dt)
            # a narrower register read at a wider type: zero- or sign-extend its bits
            if ptype.startswith("s"):
                sv = arr.view(SIGNED[rw])
                return lambda: sv.astype(dt)
            return lambda: arr.astype(dt) if dt.kind != "f" else arr.astype(UNSIGNED[w]).view(dt)
        if isinstance(op, Sym):
            addr = self.kernel.symbol_address(op.name)
            c = immediate(str(addr), ptype)
            return lambda: c
        raise self.fault(f"operand {op!r} cannot be read as a value")

    def _special_reader(self, name: str, dt: np.dtype):
        if name in ("%clock", "%clock64", "%globaltimer"):
            t0 = self._clock0
            def read():
                v = (time.perf_counter_ns() - t0) if name == "%globaltimer" else self.steps * 4
                return np.array(v, dtype=np.uint64).astype(dt)
            return read
        src = self.specials[name]
        if src.dtype == dt:
            return lambda: src
        if src.ndim == 0:
            return lambda: src.astype(dt)
        conv = src.astype(dt)  # per-thread specials are constant for the block shape
        return lambda: conv

    def writer(self, op, ptype: str):
        """``put(value, mask)``: store into register ``op`` at ``ptype``, only where ``mask``."""
        put = self._plain_writer(op, ptype)
        if not self.strict or not isinstance(op, Reg) or op.name not in self.written:
            return put
        written = self.written[op.name]

        def tracked_put(val, mask):
            put(val, mask)
            if mask is None:
                written.fill(True)
            else:
                written[mask] = True
        return tracked_put

    def _plain_writer(self, op, ptype: str):
        if isinstance(op, Sym) and op.name == "_":
            return lambda val, mask: None
        if not isinstance(op, Reg):
            raise self.fault(f"operand {op!r} is not a writable register")
        arr = self.regs.get(op.name)
        if arr is None:
            raise self.fault(f"register {op.name} is not declared")
        if (arr.ndim == 2) != (ptype == "b128"):
            raise self.fault(f"register {op.name} written as .{ptype}; .b128 registers and "
                             ".b128 operands go together (mov/ld/st .b128)")
        if arr.ndim == 2:
            def put128(val, mask):
                if mask is None:
                    np.copyto(arr, val, casting="unsafe")
                else:
                    np.copyto(arr, val, casting="unsafe", where=np.asarray(mask)[:, None])
            return put128
        dt = DTYPES[ptype]
        if arr.dtype == np.bool_:
            target = arr
        elif dt.itemsize == arr.dtype.itemsize:
            target = self.reg_view(op.name, ptype)
        elif dt.itemsize < arr.dtype.itemsize:
            rw = arr.dtype.itemsize
            if dt.kind == "f":  # bits of a narrow float, zero-extended
                wide = arr
                narrow_u = UNSIGNED[dt.itemsize]

                def put_f(val, mask):
                    bits = np.asarray(val, dtype=dt).view(narrow_u).astype(wide.dtype)
                    if mask is None:
                        wide[...] = bits
                    else:
                        np.copyto(wide, bits, where=mask)
                return put_f
            target = arr.view(SIGNED[rw]) if ptype.startswith("s") else arr
        else:
            target = arr  # a wider value into a narrower register: keep the low bits

        def put(val, mask):
            if mask is None:
                np.copyto(target, val, casting="unsafe")
            else:
                np.copyto(target, val, casting="unsafe", where=mask)
        return put

    def address(self, op: Addr, ptype: str = "u64"):
        """A zero-arg callable giving the addresses of memory operand ``op`` (uint64)."""
        addr = self._plain_address(op, ptype)
        if self.strict and isinstance(op.base, Reg) and op.base.name in self.written:
            return self._checked(op.base.name, addr)
        return addr

    def _plain_address(self, op: Addr, ptype: str = "u64"):
        off = np.uint64(op.offset & 0xFFFFFFFFFFFFFFFF)
        if isinstance(op.base, Reg):
            arr = self.regs.get(op.base.name)
            if arr is None:
                raise self.fault(f"register {op.base.name} is not declared")
            if arr.dtype.itemsize == 8:
                v = arr.view(np.uint64)
                if op.offset == 0:
                    return lambda: v
                return lambda: v + off
            return lambda: arr.astype(np.uint64) + off
        base = np.uint64(self.kernel.symbol_address(op.base.name))
        c = base + off
        return lambda: c
