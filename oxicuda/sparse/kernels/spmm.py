"""SpMM ``Y = alpha A X + beta Y`` for a CSR A (m x n) and row-major dense X (n x k), Y (m x k).

Family ``sparse_spmm``: row-split, the dense columns tiled: a warp per (row, tile of 32 * vec
columns), each lane owning ``vec`` consecutive columns and loading them with one vector load
(16 bytes for f32 x4 and f64 x2) from every row of X the sparse row touches; consecutive lanes
read consecutive addresses. ``beta == 0`` never reads Y.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.spec import KernelSpec

from .numeric import DTYPES, Num

THREADS = 256
WARPS = THREADS // 32
#: dtype -> the vector widths the kernel is generated for
VECS = {"float32": (1, 4), "float64": (1, 2), "complex64": (1,), "complex128": (1,)}


@dataclass(frozen=True)
class SpmmSpec(KernelSpec):
    family: ClassVar[str] = "sparse_spmm"
    dtype: str = "float32"
    vec: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in DTYPES or self.vec not in VECS[self.dtype]:
            raise ValueError(f"SpmmSpec: dtype={self.dtype!r} vec={self.vec}")


def generate_spmm(spec: SpmmSpec) -> str:
    """Params (indptr, indices, data, x, y, m, k, alpha, beta, read_y); grid (rows / 8, tiles)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.maxntid(THREADS)
    nm = Num(kb, spec.dtype)
    indptr, indices, data, x, y = (kb.param_ptr(k) for k in ("indptr", "indices", "data", "x", "y"))
    m, k = kb.param("m", "u32"), kb.param("k", "u32")
    alpha, beta = nm.param("alpha"), nm.param("beta")
    read_y = kb.param("read_y", "u32")
    V = spec.vec
    tid = kb.tid()
    row = kb.mad(kb.ctaid(), WARPS, kb.shr(tid, 5))
    c0 = kb.mul(kb.mad(kb.ctaid("y"), 32, kb.and_(tid, 31)), V)
    kb.ret(kb.or_(kb.setp("ge", row, m), kb.setp("ge", c0, k)))
    lo = kb.ld("global", "s32", kb.addr(indptr, row, 4))
    hi = kb.ld("global", "s32", kb.addr(indptr, row, 4), offset=4)
    k64 = kb.cvt(k, "u64")
    c64 = kb.cvt(c0, "u64")

    def load_row(base, r64, nc=False):
        addr = kb.addr(base, kb.add(kb.mul(r64, k64), c64), nm.size)
        if V == 1:
            return [nm.load(addr, 0, nc=nc)]
        vals = kb.ld("global", nm.real, addr, vec=V, nc=nc)
        return [(v,) for v in vals]

    acc = [nm.zero() for _ in range(V)]
    with kb.loop(lo, hi, 1) as j:
        col = kb.cvt(kb.ld("global", "u32", kb.addr(indices, j, 4), nc=True), "u64")
        a = nm.load(data, j, nc=True)
        for v, xv in zip(acc, load_row(x, col, nc=True)):
            nm.assign(v, nm.fma(a, xv, v))
    r64 = kb.cvt(row, "u64")
    out = [nm.mul(alpha, v) for v in acc]
    res = [nm.mov(o) for o in out]
    with kb.if_(kb.setp("ne", read_y, 0)):
        for r, o, yv in zip(res, out, load_row(y, r64)):
            nm.assign(r, nm.fma(beta, yv, o))
    addr = kb.addr(y, kb.add(kb.mul(r64, k64), c64), nm.size)
    if V == 1:
        nm.store(addr, 0, res[0])
    else:
        kb.st("global", addr, [r[0] for r in res])
    return kb.ptx()


registry.register_family(SpmmSpec.family, SpmmSpec, generate_spmm,
                         lambda arch: [SpmmSpec(arch=arch, dtype=d, vec=v) for d in DTYPES for v in VECS[d]])
