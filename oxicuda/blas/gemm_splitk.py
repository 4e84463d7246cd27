"""Split-K reduction: ``C = alpha * sum_z W[z] + beta * C`` over the partial products that the
tiled kernel (``raw_out=True``, K sliced over grid.z) wrote to a workspace ``W`` of ``splits``
column-major m x m*n slabs in accumulator precision. One thread per output element, grid-stride.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from oxicuda.ptx import cache
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.registry import register_family
from oxicuda.ptx.spec import KernelSpec

from . import gemm_codegen as cg

BLOCK = 256


@dataclass(frozen=True)
class GemmSplitKReduceSpec(KernelSpec):
    """The reduction of split-K partials for ``dtype`` (the output's dtype)."""

    family = "gemm_splitk_reduce"
    dtype: str = "float32"

    def __post_init__(self) -> None:
        super().__post_init__()
        cg.kind_of(self.dtype)


def generate(spec: GemmSplitKReduceSpec) -> str:
    """PTX of the reduction. Parameters: m n splits (u32), ws c ldc (u64), alpha[, alpha_im]
    alpha_ptr, beta[, beta_im] beta_ptr."""
    kind = cg.kind_of(spec.dtype)
    sz, es = kind.acc_nbytes, kind.nbytes
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    m, n, splits = kb.param("m", "u32"), kb.param("n", "u32"), kb.param("splits", "u32")
    ws, c, ldc = kb.param_ptr("ws"), kb.param_ptr("c"), kb.param("ldc", "u64")
    alpha, _ = cg.scalar_params(kb, kind, "alpha")
    beta, beta_zero = cg.scalar_params(kb, kind, "beta")
    kb.maxntid(BLOCK)
    total = kb.mul(m, n)
    slab = kb.mul(kb.cvt(total, "u64"), sz)
    stride = kb.mul(kb.nctaid(), kb.ntid())
    first = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    acc = cg.zero(kb, kind)
    with kb.loop(first, total, 1) as idx:
        for r in acc:
            kb.assign(r, 0.0)
        p = kb.addr(ws, idx, sz)
        with kb.loop(0, splits, 1, type_="u32"):
            part = cg.load(kb, cg.ElementKind(kind.dtype, kind.acc, kind.comps, kind.acc), p)
            for t, s in zip(acc, part):
                kb.add(t, s, out=t)
            kb.add(p, slab, out=p)
        j = kb.div(idx, m)
        i = kb.sub(idx, kb.mul(j, m))
        pc = kb.addr(c, kb.add(kb.cvt(i, "u64"), kb.mul(kb.cvt(j, "u64"), ldc)), es)
        cg.epilogue(kb, kind, pc, acc, alpha, beta, beta_zero)
        # kb.loop steps by a constant 1: add the rest of the grid stride here
        kb.add(idx, kb.sub(stride, 1), out=idx)
    return kb.ptx()


def configurations(arch: str) -> Iterable[GemmSplitKReduceSpec]:
    """One reduction per dtype."""
    for dtype in cg.GEMM_DTYPES:
        yield GemmSplitKReduceSpec(arch=arch, dtype=dtype)


register_family("gemm_splitk_reduce", GemmSplitKReduceSpec, generate, configurations)


def launch_reduce(dtype: str, arch: str, m: int, n: int, splits: int, ws_ptr: int, c_ptr: int, ldc: int,
                  scalars: list, stream) -> None:
    """Launch the reduction of ``splits`` partial slabs at ``ws_ptr`` into C (validated by the
    caller; ``scalars`` as built by gemm_core: alpha parts, alpha_ptr, beta parts, beta_ptr)."""
    fn = cache.load(GemmSplitKReduceSpec(arch=arch.rstrip("a"), dtype=dtype))
    blocks = max(1, min(math.ceil(m * n / BLOCK), 65535))
    fn((blocks,), (BLOCK,), [m, n, splits, ws_ptr, c_ptr, ldc, *scalars], stream=stream)
