"""Names of the kernel language that are not Python's: thread geometry, synchronization, shared
and local arrays, atomics and warp collectives. They are markers the compiler recognizes; called
from plain Python they raise, except the few with an obvious host meaning (``fma``)."""

from __future__ import annotations


class Intrinsic:
    """A kernel-language function or value, recognized by the compiler by identity."""

    __slots__ = ("host", "name")

    def __init__(self, name: str, host: object = None) -> None:
        self.name = name
        self.host = host

    def __call__(self, *args: object, **kwargs: object) -> object:
        if self.host is not None:
            return self.host(*args, **kwargs)
        raise RuntimeError(f"oxicuda.jit.{self.name} can only be used inside an @oxicuda.kernel "
                           "or @oxicuda.device function")

    def __repr__(self) -> str:
        return f"<kernel intrinsic {self.name}>"


class Dim3:
    """``thread_idx`` / ``block_idx`` / ``block_dim`` / ``grid_dim``: ``.x .y .z`` are i32."""

    __slots__ = ("name", "special")

    def __init__(self, name: str, special: str) -> None:
        self.name = name
        self.special = special

    def __repr__(self) -> str:
        return f"<kernel intrinsic {self.name}>"


class Namespace:
    """A group of intrinsics reached by attribute: ``shared.array``, ``atomic.add``."""

    def __init__(self, name: str, members: tuple[str, ...]) -> None:
        self._name = name
        for m in members:
            setattr(self, m, Intrinsic(f"{name}.{m}"))

    def __repr__(self) -> str:
        return f"<kernel namespace {self._name}>"


def _fma_host(a, b, c):
    return a * b + c


thread_idx = Dim3("thread_idx", "tid")
block_idx = Dim3("block_idx", "ctaid")
block_dim = Dim3("block_dim", "ntid")
grid_dim = Dim3("grid_dim", "nctaid")
grid = Intrinsic("grid")
gridsize = Intrinsic("gridsize")
syncthreads = Intrinsic("syncthreads")
fma = Intrinsic("fma", _fma_host)
lane_id = Intrinsic("lane_id")
unroll = Intrinsic("unroll", range)
warp_size = 32
shared = Namespace("shared", ("array",))
local = Namespace("local", ("array",))
atomic = Namespace("atomic", ("add", "min", "max", "exch", "cas"))
shfl_sync = Intrinsic("shfl_sync")
shfl_down_sync = Intrinsic("shfl_down_sync")
shfl_up_sync = Intrinsic("shfl_up_sync")
shfl_xor_sync = Intrinsic("shfl_xor_sync")
all_sync = Intrinsic("all_sync")
any_sync = Intrinsic("any_sync")
ballot_sync = Intrinsic("ballot_sync")
warp_reduce = Namespace("warp_reduce", ("add", "min", "max"))

BY_NAME = {
    "thread_idx": thread_idx, "block_idx": block_idx, "block_dim": block_dim,
    "grid_dim": grid_dim, "grid": grid, "gridsize": gridsize, "syncthreads": syncthreads,
    "fma": fma, "lane_id": lane_id, "unroll": unroll, "shared": shared, "local": local, "atomic": atomic,
    "shfl_sync": shfl_sync, "shfl_down_sync": shfl_down_sync, "shfl_up_sync": shfl_up_sync,
    "shfl_xor_sync": shfl_xor_sync, "all_sync": all_sync, "any_sync": any_sync,
    "ballot_sync": ballot_sync, "warp_reduce": warp_reduce,
}
