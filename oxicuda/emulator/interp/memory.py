"""The memories a running CTA sees: global (the device heap), shared, local, param.

Every access takes the addresses of the *active* lanes (uint64 array) and their thread ids,
checks alignment and bounds, and gathers or scatters with numpy. Generic addresses are
resolved by window: shared at ``SHARED_WINDOW``, local at ``LOCAL_WINDOW``, everything else
is global.
"""

from __future__ import annotations

import numpy as np

from .faults import ILLEGAL_ADDRESS, MISALIGNED, Fault

SHARED_WINDOW = 0x0000_6000_0000_0000
LOCAL_WINDOW = 0x0000_6100_0000_0000
PARAM_WINDOW = 0x0000_6200_0000_0000
WINDOW_SIZE = 1 << 32
_U64 = np.uint64


class Memory:
    """Memory of one block shape: shared and local buffers sized for it, plus the heap."""

    def __init__(self, heap, shared_bytes: int, local_bytes: int, nthreads: int) -> None:
        self.heap = heap
        self.shared_size = int(shared_bytes)
        self.shared = np.zeros(max(16, (self.shared_size + 15) // 16 * 16), dtype=np.uint8)
        self.local_size = int(local_bytes)
        self.local_stride = max(16, (self.local_size + 15) // 16 * 16)
        self.local = np.zeros(self.local_stride * nthreads, dtype=np.uint8)
        self.params = b""

    # -- resolution --------------------------------------------------------------------------
    @staticmethod
    def _check_align(addrs: np.ndarray, nbytes: int, lanes: np.ndarray, space: str) -> None:
        if nbytes > 1:
            bad = (addrs & _U64(nbytes - 1)) != 0
            if np.count_nonzero(bad):
                k = int(np.argmax(bad))
                raise Fault(MISALIGNED, f"misaligned {nbytes}-byte {space} access at 0x{int(addrs[k]):x}",
                            int(lanes[k]), int(addrs[k]))

    def _global_groups(self, addrs: np.ndarray, nbytes: int, lanes: np.ndarray):
        """[(buffer, byte offsets, selector or None)] covering every lane; faults on a bad one."""
        heap = self.heap
        lo = int(addrs.min())
        hi = int(addrs.max())
        hit = heap.find(lo)
        if hit is not None and hi + nbytes <= hit[1]:
            return [(hit[2], addrs - _U64(hit[0]), None)]
        bases, ends, bufs = heap.tables()
        idx = np.searchsorted(bases, addrs, side="right") - 1
        ok = idx >= 0
        safe = np.where(ok, idx, 0)
        if len(ends):
            ok &= addrs + _U64(nbytes) <= ends[safe]
        else:
            ok[:] = False
        if np.count_nonzero(ok) != len(ok):
            k = int(np.argmax(~ok))
            a = int(addrs[k])
            raise Fault(ILLEGAL_ADDRESS, f"{nbytes}-byte global access at 0x{a:x}: {heap.describe(a)}",
                        int(lanes[k]), a)
        out = []
        for i in np.unique(idx):
            sel = idx == i
            out.append((bufs[int(i)], addrs[sel] - bases[int(i)], sel))
        return out

    def _flat(self, space: str, addrs: np.ndarray, nbytes: int, lanes: np.ndarray):
        """(buffer, byte offsets) for shared or local addresses (window offsets)."""
        if space == "shared":
            limit = self.shared_size
            if len(addrs) and int(addrs.max()) + nbytes > limit:
                bad = addrs + _U64(nbytes) > _U64(limit)
                k = int(np.argmax(bad))
                raise Fault(ILLEGAL_ADDRESS, f"{nbytes}-byte shared access at offset {int(addrs[k])}; "
                            f"the block has {limit} bytes of shared memory", int(lanes[k]), int(addrs[k]))
            return self.shared, addrs
        if space == "local":
            limit = self.local_size
            if len(addrs) and int(addrs.max()) + nbytes > limit:
                bad = addrs + _U64(nbytes) > _U64(limit)
                k = int(np.argmax(bad))
                raise Fault(ILLEGAL_ADDRESS, f"{nbytes}-byte local access at offset {int(addrs[k])}; "
                            f"the thread has {limit} bytes of local memory", int(lanes[k]), int(addrs[k]))
            return self.local, addrs + lanes.astype(_U64) * _U64(self.local_stride)
        raise AssertionError(space)

    def _split_generic(self, addrs: np.ndarray):
        """{space: selector} for generic addresses (None selector: every lane)."""
        win = addrs >> _U64(32)
        sh = win == _U64(SHARED_WINDOW >> 32)
        lo = win == _U64(LOCAL_WINDOW >> 32)
        if not np.count_nonzero(sh) and not np.count_nonzero(lo):
            return [("global", None, addrs)]
        out = []
        gl = ~(sh | lo)
        if np.count_nonzero(gl):
            out.append(("global", gl, addrs[gl]))
        if np.count_nonzero(sh):
            out.append(("shared", sh, addrs[sh] - _U64(SHARED_WINDOW)))
        if np.count_nonzero(lo):
            out.append(("local", lo, addrs[lo] - _U64(LOCAL_WINDOW)))
        return out

    def _pieces(self, space: str, addrs: np.ndarray, nbytes: int, lanes: np.ndarray):
        """[(buffer, byte offsets, selector)] for an access of ``nbytes`` per lane."""
        addrs = addrs.astype(_U64, copy=False)
        if space in ("global", "const"):
            self._check_align(addrs, nbytes, lanes, space)
            return self._global_groups(addrs, nbytes, lanes)
        if space in ("shared", "local"):
            self._check_align(addrs, nbytes, lanes, space)
            buf, offs = self._flat(space, addrs, nbytes, lanes)
            return [(buf, offs, None)]
        if space == "param":
            self._check_align(addrs, nbytes, lanes, space)
            buf = np.frombuffer(self.params + bytes(16), dtype=np.uint8)
            if len(addrs) and int(addrs.max()) + nbytes > len(self.params):
                raise Fault(ILLEGAL_ADDRESS, f"param access past the {len(self.params)}-byte "
                            "parameter block", int(lanes[0]), int(addrs.max()))
            return [(buf, addrs, None)]
        if space == "generic":
            out = []
            for sp, sel, a in self._split_generic(addrs):
                ln = lanes if sel is None else lanes[sel]
                for buf, offs, sub in self._pieces(sp, a, nbytes, ln):
                    if sel is None:
                        out.append((buf, offs, sub))
                    else:
                        where = np.flatnonzero(sel)
                        out.append((buf, offs, where if sub is None else where[sub]))
            return out
        raise AssertionError(f"unknown state space {space}")

    # -- access ------------------------------------------------------------------------------
    def load1(self, space: str, addrs: np.ndarray, lanes: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """One element per lane (the common case of ``load``): a 1-D array of ``dtype``."""
        size = dtype.itemsize
        pieces = self._pieces(space, addrs, size, lanes)
        if len(pieces) == 1 and pieces[0][2] is None:
            buf, offs, _ = pieces[0]
            return buf.view(dtype)[(offs // _U64(size)).astype(np.intp)]
        return self.load(space, addrs, lanes, dtype, 1)[:, 0]

    def load(self, space: str, addrs: np.ndarray, lanes: np.ndarray, dtype: np.dtype,
             count: int = 1) -> np.ndarray:
        """Values at ``addrs`` (one per lane): shape (lanes, count) of ``dtype``."""
        size = dtype.itemsize
        nbytes = size * count
        out = np.empty((len(addrs), count), dtype=dtype)
        for buf, offs, sel in self._pieces(space, addrs, nbytes, lanes):
            view = buf.view(dtype)
            idx = (offs // _U64(size)).astype(np.intp)
            vals = view[idx] if count == 1 else view[idx[:, None] + np.arange(count)]
            if sel is None:
                out[:] = vals.reshape(len(idx), count)
            else:
                out[sel] = vals.reshape(len(idx), count)
        return out

    def store(self, space: str, addrs: np.ndarray, lanes: np.ndarray, values: np.ndarray,
              dtype: np.dtype, count: int = 1) -> None:
        """Write ``values`` (shape (lanes, count)) at ``addrs``."""
        size = dtype.itemsize
        values = np.asarray(values).astype(dtype, copy=False).reshape(len(addrs), count)
        for buf, offs, sel in self._pieces(space, addrs, size * count, lanes):
            view = buf.view(dtype)
            idx = (offs // _U64(size)).astype(np.intp)
            vals = values if sel is None else values[sel]
            if count == 1:
                view[idx] = vals[:, 0]
            else:
                view[idx[:, None] + np.arange(count)] = vals

    def element_refs(self, space: str, addrs: np.ndarray, lanes: np.ndarray, dtype: np.dtype):
        """[(typed view, element index)] per lane in lane order, for serialized atomics."""
        size = dtype.itemsize
        refs: list = [None] * len(addrs)
        for buf, offs, sel in self._pieces(space, addrs, size, lanes):
            view = buf.view(dtype)
            idx = (offs // _U64(size)).astype(np.intp)
            where = range(len(addrs)) if sel is None else (
                np.flatnonzero(sel) if getattr(sel, "dtype", None) == np.bool_ else sel)
            for j, k in enumerate(where):
                refs[int(k)] = (view, int(idx[j]))
        return refs


def lanes_of(cta, m) -> np.ndarray:
    """The active lanes of a mask (None: every lane of the CTA)."""
    return cta.lanes_all if m is None else np.flatnonzero(m)


def shared_offsets(instr, values: np.ndarray) -> np.ndarray:
    """Shared-window offsets of a destination given in .shared (offsets) or generic addresses."""
    if any(x.split("::")[0] == "shared" for x in instr.mods):
        return values
    return values - np.uint64(SHARED_WINDOW)
