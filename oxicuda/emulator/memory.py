"""The emulated device's memory: one fake 64-bit address space backed by numpy buffers.

Allocations get distinct, 256-byte-aligned addresses from ``HEAP_BASE`` upward with an unmapped
guard gap after each, and addresses are never reused, so pointer arithmetic, sub-array pointers
and use-after-free all behave (or fault) as on a GPU.

Extents. Each allocation has a capacity (the bytes allocated) and a live extent, the bytes that
may be accessed: the capacity unless the caching pool said otherwise (``set_extent``: an array's
requested bytes inside a larger pool block, 0 for a cached block). Every checked access (kernel
loads and stores, copies, memsets) must stay inside the live extent, so the emulator faults one
byte past an array even where the GPU would not. ``OXICUDA_EMULATOR_MEM_BYTES`` caps the
total bytes live at once (default: the emulated device's memory size).
"""

from __future__ import annotations

import bisect
import ctypes
import os

import numpy as np

from ..driver.errors import raise_for

HEAP_BASE = 0x7F00_0000_0000
ALIGNMENT = 256
GUARD_BYTES = 64 * 1024


class DeviceHeap:
    """Live device allocations; ``find`` maps any address to the allocation holding it."""

    def __init__(self, total_bytes: int) -> None:
        limit = os.environ.get("OXICUDA_EMULATOR_MEM_BYTES", "").strip()
        self.total = int(limit) if limit else int(total_bytes)
        self.used = 0
        self._next = HEAP_BASE
        self._bases: list[int] = []  # sorted
        self._ends: list[int] = []  # parallel to _bases: base + live extent (what may be accessed)
        self._caps: list[int] = []  # parallel to _bases: base + capacity (what was allocated)
        self._bufs: list[np.ndarray] = []  # parallel to _bases: uint8 buffers
        self._freed: list[tuple[int, int]] = []  # (base, size) of freed allocations, in order
        self._tables: tuple | None = None

    # -- allocation ------------------------------------------------------------------------
    def alloc(self, nbytes: int, call: str = "cuMemAlloc_v2") -> int:
        """A new allocation of ``nbytes`` (> 0); raises OutOfMemoryError past the cap."""
        nbytes = int(nbytes)
        if nbytes <= 0:
            raise_for(1, call, f"allocation size must be positive; got {nbytes} bytes")
        if self.used + nbytes > self.total:
            raise_for(
                2, call,
                f"requested {nbytes} bytes with {self.used} of {self.total} bytes in use "
                "(set OXICUDA_EMULATOR_MEM_BYTES to change the emulated capacity)",
            )
        base = self._next
        self._next = (base + nbytes + GUARD_BYTES + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
        # padded to 16 bytes so that typed views (uint64, 16-byte vectors) always fit
        buf = np.zeros((nbytes + 15) // 16 * 16, dtype=np.uint8)
        i = bisect.bisect_left(self._bases, base)
        self._bases.insert(i, base)
        self._ends.insert(i, base + nbytes)
        self._caps.insert(i, base + nbytes)
        self._bufs.insert(i, buf)
        self.used += nbytes
        self._tables = None
        return base

    def free(self, ptr: int, call: str = "cuMemFree_v2") -> None:
        """Release the allocation starting at ``ptr``; unknown or double-freed pointers raise."""
        i = bisect.bisect_left(self._bases, ptr)
        if i >= len(self._bases) or self._bases[i] != ptr:
            what = "was already freed" if self.freed_range(ptr) else "is not the start of an allocation"
            raise_for(1, call, f"pointer 0x{ptr:x} {what}")
        size = self._caps[i] - ptr
        del self._bases[i], self._ends[i], self._caps[i], self._bufs[i]
        self._freed.append((ptr, size))
        self.used -= size
        self._tables = None

    def set_extent(self, ptr: int, nbytes: int) -> None:
        """Only ``[ptr, ptr + nbytes)`` of the allocation starting at ``ptr`` may be accessed
        from now on (``nbytes`` at most its capacity; 0 makes every access fault)."""
        i = bisect.bisect_left(self._bases, ptr)
        if i >= len(self._bases) or self._bases[i] != ptr:
            raise_for(1, "mem_set_extent", f"pointer 0x{ptr:x} is not the start of an allocation")
        if not 0 <= nbytes <= self._caps[i] - ptr:
            raise_for(1, "mem_set_extent", f"extent {nbytes} bytes; allowed 0..{self._caps[i] - ptr}")
        self._ends[i] = ptr + int(nbytes)
        self._tables = None

    def allocation(self, addr: int) -> tuple[int, int] | None:
        """(base, capacity) of the live allocation holding ``addr`` whatever its extent, as
        cuMemGetAddressRange reports it, or None."""
        i = bisect.bisect_right(self._bases, addr) - 1
        if i >= 0 and addr < self._caps[i]:
            return self._bases[i], self._caps[i] - self._bases[i]
        return None

    # -- lookup ----------------------------------------------------------------------------
    def tables(self) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """(bases, ends, buffers) of the live allocations, sorted: for vectorized lookups."""
        if self._tables is None:
            self._tables = (np.array(self._bases, dtype=np.uint64),
                            np.array(self._ends, dtype=np.uint64), list(self._bufs))
        return self._tables

    def find(self, addr: int) -> tuple[int, int, np.ndarray] | None:
        """(base, end, buffer) of the live allocation holding ``addr``, or None."""
        i = bisect.bisect_right(self._bases, addr) - 1
        if i >= 0 and addr < self._ends[i]:
            return self._bases[i], self._ends[i], self._bufs[i]
        return None

    def freed_range(self, addr: int) -> tuple[int, int] | None:
        """(base, size) of a freed allocation that held ``addr``, for fault messages."""
        for base, size in reversed(self._freed):
            if base <= addr < base + max(size, 1):
                return base, size
        return None

    def describe(self, addr: int) -> str:
        """Where ``addr`` lies, in words, for error messages."""
        hit = self.find(addr)
        if hit:
            return f"inside allocation 0x{hit[0]:x} of {hit[1] - hit[0]} bytes"
        freed = self.freed_range(addr)
        if freed:
            return f"inside freed allocation 0x{freed[0]:x} of {freed[1]} bytes"
        i = bisect.bisect_right(self._bases, addr) - 1
        if i >= 0 and addr < self._caps[i] and self._ends[i] == self._bases[i]:
            return (f"inside a freed block 0x{self._bases[i]:x} of {self._caps[i] - self._bases[i]}"
                    " bytes that oxicuda's pool keeps for reuse")
        if i >= 0 and addr < self._caps[i]:
            return (f"{addr - self._ends[i]} bytes past the end of the {self._ends[i] - self._bases[i]}"
                    f" bytes in use of pool block 0x{self._bases[i]:x} (capacity "
                    f"{self._caps[i] - self._bases[i]} bytes)")
        if i >= 0:
            return (f"{addr - self._caps[i]} bytes past the end of allocation 0x{self._bases[i]:x}"
                    f" of {self._caps[i] - self._bases[i]} bytes")
        return "outside every allocation"

    def view(self, ptr: int, nbytes: int, call: str) -> np.ndarray:
        """The uint8 view of ``[ptr, ptr+nbytes)``, which must lie in one live allocation."""
        nbytes = int(nbytes)
        if nbytes < 0:
            raise_for(1, call, f"byte count must be >= 0; got {nbytes}")
        hit = self.find(ptr)
        if hit is None or ptr + nbytes > hit[1]:
            raise_for(1, call, f"device range 0x{ptr:x}+{nbytes} is not inside one live "
                               f"allocation (0x{ptr:x} is {self.describe(ptr)})")
        base, _, buf = hit
        return buf[ptr - base: ptr - base + nbytes]


def host_view(hptr: int, nbytes: int) -> np.ndarray:
    """A writable uint8 numpy view of process memory at ``hptr`` (a real host address)."""
    if nbytes == 0:
        return np.zeros(0, dtype=np.uint8)
    if not hptr:
        raise_for(1, "host pointer", "host pointer is NULL")
    return np.frombuffer((ctypes.c_char * nbytes).from_address(hptr), dtype=np.uint8)
