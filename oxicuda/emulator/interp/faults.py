"""Faults raised while a kernel runs, and their translation into ``LaunchError``."""

from __future__ import annotations

ILLEGAL_ADDRESS = 700
MISALIGNED = 716
ILLEGAL_INSTRUCTION = 715
LAUNCH_FAILED = 719
TIMEOUT = 702


class Fault(Exception):
    """A kernel fault: CUresult ``code``, what happened, and where (thread lane, address)."""

    def __init__(self, code: int, what: str, lane: int | None = None, address: int | None = None):
        super().__init__(what)
        self.code = code
        self.what = what
        self.lane = lane
        self.address = address

    def __reduce__(self):
        return type(self), (self.code, self.what, self.lane, self.address)


class Unsupported(Exception):
    """An instruction the interpreter cannot decode; the loader reports it by name."""
