"""The naive GEMM: one thread per output element, a grid-stride loop over ``m * n``, grid.z
over the batch. Transposes are runtime element steps (``op(A)(i, p) = A[i * a_si + p * a_sk]``),
so one kernel per dtype/conjugation/batch-mode serves every layout.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan
from oxicuda.ptx.registry import register_family
from oxicuda.ptx.spec import KernelSpec

from . import gemm_codegen as cg

BLOCK = 256


@dataclass(frozen=True)
class GemmNaiveSpec(KernelSpec):
    """Naive GEMM: ``dtype`` (oxicuda name), conjugation of op(A)/op(B), pointer-array batch."""

    family = "gemm_naive"
    dtype: str = "float32"
    conj_a: bool = False
    conj_b: bool = False
    pointer_array: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        kind = cg.kind_of(self.dtype)
        if (self.conj_a or self.conj_b) and not kind.complex:
            raise ValueError(f"GemmNaiveSpec: conjugation needs a complex dtype, got {self.dtype!r}")


def generate(spec: GemmNaiveSpec) -> str:
    """PTX of a naive GEMM for ``spec``. Parameters, in order: m n k (u32), a a_si a_sk, b b_sk
    b_sj, c ldc, stride_a stride_b stride_c (u64, element steps), alpha[, alpha_im] alpha_ptr,
    beta[, beta_im] beta_ptr."""
    kind = cg.kind_of(spec.dtype)
    es = kind.nbytes
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    m, n, k = kb.param("m", "u32"), kb.param("n", "u32"), kb.param("k", "u32")
    a0, a_si, a_sk = kb.param_ptr("a"), kb.param("a_si", "u64"), kb.param("a_sk", "u64")
    b0, b_sk, b_sj = kb.param_ptr("b"), kb.param("b_sk", "u64"), kb.param("b_sj", "u64")
    c0, ldc = kb.param_ptr("c"), kb.param("ldc", "u64")
    sa, sb, sc = kb.param("stride_a", "u64"), kb.param("stride_b", "u64"), kb.param("stride_c", "u64")
    alpha, _ = cg.scalar_params(kb, kind, "alpha")
    beta, beta_zero = cg.scalar_params(kb, kind, "beta")
    kb.maxntid(BLOCK)

    z = kb.ctaid("z")
    a = cg.batch_operand(kb, a0, sa, z, es, spec.pointer_array)
    b = cg.batch_operand(kb, b0, sb, z, es, spec.pointer_array)
    c = cg.batch_operand(kb, c0, sc, z, es, spec.pointer_array)
    a_step = kb.mul(a_sk, es)
    b_step = kb.mul(b_sk, es)
    total = kb.mul(m, n)
    stride = kb.mul(kb.nctaid(), kb.ntid())
    first = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    acc = cg.zero(kb, kind)
    with kb.loop(first, total, 1) as idx:
        j = kb.div(idx, m)
        i = kb.sub(idx, kb.mul(j, m))
        pa = kb.addr(a, kb.mul(kb.cvt(i, "u64"), a_si), es)
        pb = kb.addr(b, kb.mul(kb.cvt(j, "u64"), b_sj), es)
        for r in acc:
            kb.assign(r, 0.0)
        with kb.loop(0, k, 1, type_="u32"):
            x = cg.load(kb, kind, pa, conj=spec.conj_a)
            y = cg.load(kb, kind, pb, conj=spec.conj_b)
            cg.mul_add(kb, kind, x, y, acc)
            kb.add(pa, a_step, out=pa)
            kb.add(pb, b_step, out=pb)
        pc = kb.addr(c, kb.add(kb.cvt(i, "u64"), kb.mul(kb.cvt(j, "u64"), ldc)), es)
        cg.epilogue(kb, kind, pc, acc, alpha, beta, beta_zero)
        # kb.loop steps by a constant 1: add the rest of the grid stride here
        kb.add(idx, kb.sub(stride, 1), out=idx)
    return kb.ptx()


def configurations(arch: str) -> Iterable[GemmNaiveSpec]:
    """Every naive configuration for ``arch``: each dtype (and conjugations for complex), both
    batch modes."""
    for dtype in cg.GEMM_DTYPES:
        conjs = [(False, False), (True, False), (False, True), (True, True)] if cg.kind_of(dtype).complex else [(False, False)]
        for ca, cb in conjs:
            for pa in (False, True):
                yield GemmNaiveSpec(arch=arch, dtype=dtype, conj_a=ca, conj_b=cb, pointer_array=pa)


register_family("gemm_naive", GemmNaiveSpec, generate, configurations)


def plan(spec: GemmNaiveSpec, p, device) -> LaunchPlan:
    """The launch plan of problem ``p`` with the naive kernel ``spec``: a grid-stride grid of at
    most one wave of resident threads, grid.z over the batch (several steps past 65535)."""
    a_si, a_sk = (1, p.lda) if p.transa == "N" else (p.lda, 1)
    b_sk, b_sj = (1, p.ldb) if p.transb == "N" else (p.ldb, 1)
    blocks = max(1, min(-(-p.m * p.n // BLOCK), device.sm_count * device.max_threads_per_sm // BLOCK))
    m, n, k, ldc, sa, sb, sc = p.m, p.n, p.k, p.ldc, p.stride_a, p.stride_b, p.stride_c

    def head(a, b, c, ws):
        return (m, n, k, a, a_si, a_sk, b, b_sk, b_sj, c, ldc, sa, sb, sc)

    kind = cg.kind_of(p.dtype)
    steps = [KernelStep(spec, (blocks, 1, count), BLOCK, cg.simt_bind(kind, head, offsets))
             for _, count, *offsets in cg.batch_chunks(p)]
    return LaunchPlan("naive", steps)
