"""Strict mode: fault on reads of registers or shared memory that this CTA never wrote.

On a GPU such a read returns whatever the previous occupant left behind, so a kernel that
passes in the emulator (registers kept from the previous CTA, shared memory filled with 0xFF)
may still be wrong on hardware. With ``OXICUDA_EMULATOR_STRICT=1`` (or ``set_strict(True)`` /
``with strict_mode():`` in-process) every CTA starts with poisoned registers, a boolean
written-mask per register and lane and a per-byte written-mask for shared memory; a read of an
unwritten lane or byte raises a located ``LaunchError`` (kernel, PTX line, block, thread,
register or shared offset). The masks exist only in strict mode, so the default path costs
nothing extra.

What is tracked: operand reads through ``Cta.reader``/``Cta.address`` (every ALU, memory,
collective and tensor-core operand), guard predicates (``@%p``, checked by the run loop for the
threads that test them), shared loads, stores and atomics through ``Memory``, and shared writes
by ``cp.async`` and TMA. Not checked: shared reads by ``wgmma`` descriptors and TMA stores (they
read the buffer directly), the carry flag of ``addc``, local memory.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import numpy as np

from .faults import LAUNCH_FAILED, Fault
from .memory import Memory

_U64 = np.uint64
_override: bool | None = None


def strict_enabled() -> bool:
    """Whether launches run in strict mode: the in-process switch if set, else the environment
    variable ``OXICUDA_EMULATOR_STRICT`` (``1``/``true``/``yes``/``on``)."""
    if _override is not None:
        return _override
    return os.environ.get("OXICUDA_EMULATOR_STRICT", "").strip().lower() in ("1", "true", "yes", "on")


def set_strict(on: bool | None) -> None:
    """Force strict mode on or off for this process (None: follow the environment again)."""
    global _override
    _override = None if on is None else bool(on)


@contextlib.contextmanager
def strict_mode(on: bool = True) -> Iterator[None]:
    """``with strict_mode():`` runs the launches inside it in strict mode (restored after)."""
    global _override
    saved = _override
    _override = bool(on)
    try:
        yield
    finally:
        _override = saved


def unwritten_register_fault(name: str, written: np.ndarray, mask) -> Fault | None:
    """The Fault for a read of register ``name`` by the lanes of ``mask`` (None: all) that
    ``written`` says were never written, or None when every such lane was written."""
    w = written if mask is None else written[mask]
    if w.all():
        return None
    lanes = np.arange(len(written)) if mask is None else np.flatnonzero(mask)
    lane = int(lanes[int(np.argmin(w))])
    nbad = int(np.count_nonzero(~w))
    return Fault(LAUNCH_FAILED, f"strict mode: read of register {name}, never written in this CTA "
                 f"by this thread ({nbad} reading thread(s) affected)", lane)


class StrictMemory(Memory):
    """``Memory`` that tracks which shared bytes this CTA wrote and faults on reads of others."""

    def __init__(self, heap, shared_bytes: int, local_bytes: int, nthreads: int) -> None:
        super().__init__(heap, shared_bytes, local_bytes, nthreads)
        self.shared_written = np.zeros(len(self.shared), dtype=bool)

    def reset(self) -> None:
        """A new CTA: nothing in shared memory has been written."""
        self.shared_written.fill(False)

    def _shared_bytes(self, space, addrs, nbytes, lanes):
        """[(byte index array (lanes, nbytes), lanes)] of the shared parts of an access."""
        out = []
        addrs = np.asarray(addrs).astype(_U64, copy=False)
        if space not in ("shared", "generic") or not len(addrs):
            return out
        for buf, offs, sel in self._pieces(space, addrs, nbytes, lanes):
            if buf is self.shared:
                ln = lanes if sel is None else lanes[sel]
                idx = offs.astype(np.intp)[:, None] + np.arange(nbytes, dtype=np.intp)
                out.append((idx, ln))
        return out

    def _check_read(self, space, addrs, nbytes, lanes) -> None:
        for idx, ln in self._shared_bytes(space, addrs, nbytes, lanes):
            ok = self.shared_written[idx].all(axis=1)
            if not ok.all():
                k = int(np.argmin(ok))
                bad_byte = int(idx[k][np.argmin(self.shared_written[idx[k]])])
                raise Fault(LAUNCH_FAILED, f"strict mode: {nbytes}-byte shared read at offset "
                            f"{int(idx[k][0])} includes byte {bad_byte}, never written in this CTA",
                            int(ln[k]), int(idx[k][0]))

    def _mark(self, space, addrs, nbytes, lanes) -> None:
        for idx, _ in self._shared_bytes(space, addrs, nbytes, lanes):
            self.shared_written[idx] = True

    def load1(self, space, addrs, lanes, dtype):
        self._check_read(space, addrs, dtype.itemsize, lanes)
        return super().load1(space, addrs, lanes, dtype)

    def load(self, space, addrs, lanes, dtype, count=1):
        self._check_read(space, addrs, dtype.itemsize * count, lanes)
        return super().load(space, addrs, lanes, dtype, count)

    def store(self, space, addrs, lanes, values, dtype, count=1):
        super().store(space, addrs, lanes, values, dtype, count)
        self._mark(space, addrs, dtype.itemsize * count, lanes)

    def element_refs(self, space, addrs, lanes, dtype):
        self._check_read(space, addrs, dtype.itemsize, lanes)
        refs = super().element_refs(space, addrs, lanes, dtype)
        self._mark(space, addrs, dtype.itemsize, lanes)
        return refs


def mark_shared_written(mem: Memory, byte_offsets: np.ndarray) -> None:
    """Record direct writes (cp.async, TMA) of shared bytes ``byte_offsets`` in strict mode."""
    written = getattr(mem, "shared_written", None)
    if written is not None:
        written[np.asarray(byte_offsets, dtype=np.intp)] = True


__all__ = [
    "StrictMemory",
    "mark_shared_written",
    "set_strict",
    "strict_enabled",
    "strict_mode",
    "unwritten_register_fault",
]
