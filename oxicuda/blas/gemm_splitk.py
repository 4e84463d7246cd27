"""Split-K reduction: ``C = alpha * sum_z W[z] + beta * C`` over the partial products that the
tiled kernel (``raw_out=True``, K sliced over grid.z) wrote to a workspace ``W`` of ``splits``
column-major m x n slabs (leading dimension m) in accumulator precision.

The reduction is bandwidth-bound: it reads ``splits * m * n`` accumulators once. A CTA of
``BLOCK`` threads owns ``BLOCK / groups`` output vectors of ``vec`` consecutive elements (16-byte
loads); the ``groups`` threads of one output sum every ``groups``-th slab, four slabs in flight
per thread, and combine their sums through shared memory. That keeps enough loads in flight when
the output is small (128 x 128) and the split count large. beta == 0 never reads C.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan
from oxicuda.ptx.registry import register_family
from oxicuda.ptx.spec import KernelSpec

from . import gemm_codegen as cg

BLOCK = 256
#: slabs each thread loads before adding (independent loads in flight)
UNROLL = 4
GROUPS = (1, 2, 4, 8, 16)


@dataclass(frozen=True)
class GemmSplitKReduceSpec(KernelSpec):
    """The reduction of split-K partials of ``dtype`` data into C of ``c_dtype`` (empty: the same).
    ``vec``: elements per load/store (1, or 16 bytes of a real accumulator: the caller guarantees
    m % vec == 0 and a C pointer and ldc aligned to it). ``groups``: threads per output vector."""

    family = "gemm_splitk_reduce"
    dtype: str = "float32"
    c_dtype: str = ""
    vec: int = 1
    groups: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        kind = cg.kind_of(self.dtype)
        name = type(self).__name__
        if self.c_dtype and self.c_dtype != self.dtype:
            from .gemm_tiled import MIXED_OUTPUTS

            if (self.dtype, self.c_dtype) not in MIXED_OUTPUTS:
                raise ValueError(f"{name}: c_dtype={self.c_dtype!r} with dtype {self.dtype!r}; allowed {MIXED_OUTPUTS}")
        if self.vec not in (1, self.max_vec):
            raise ValueError(f"{name}: vec={self.vec} for {self.dtype} with C {self.c_kind.dtype}; allowed 1 or "
                             f"{self.max_vec}")
        if self.groups not in GROUPS:
            raise ValueError(f"{name}: groups={self.groups}; allowed {GROUPS}")
        del kind

    @property
    def c_kind(self) -> cg.ElementKind:
        return cg.kind_of(self.c_dtype or self.dtype)

    @property
    def max_vec(self) -> int:
        """The vector width this dtype pair allows: 16 bytes of accumulator for real C of 4 or 8 bytes."""
        kind = cg.kind_of(self.dtype)
        if kind.complex or self.c_kind.nbytes < 4:
            return 1
        return 16 // kind.acc_nbytes


def generate(spec: GemmSplitKReduceSpec) -> str:
    """PTX of the reduction. Parameters: m n splits (u32), ws c ldc (u64), alpha[, alpha_im]
    alpha_ptr, beta[, beta_im] beta_ptr. Launch: block (BLOCK,), any grid (grid-stride)."""
    kind, ck = cg.kind_of(spec.dtype), spec.c_kind
    acc_kind = cg.ElementKind(kind.dtype, kind.acc, kind.comps, kind.acc)
    sz, V, G = kind.acc_nbytes, spec.vec, spec.groups
    per_cta = BLOCK // G
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    m, n, splits = kb.param("m", "u32"), kb.param("n", "u32"), kb.param("splits", "u32")
    ws, c, ldc = kb.param_ptr("ws"), kb.param_ptr("c"), kb.param("ldc", "u64")
    alpha, _ = cg.scalar_params(kb, kind, "alpha")
    beta, beta_zero = cg.scalar_params(kb, kind, "beta")
    kb.reqntid(BLOCK)
    parts = kb.shared("parts", kind.acc, BLOCK * V * kind.comps, align=16) if G > 1 else None
    nvec = kb.div(kb.mul(m, n), V)
    slab = kb.mul(kb.cvt(kb.mul(m, n), "u64"), sz)
    tid = kb.tid()
    lane = kb.and_(tid, per_cta - 1)
    grp = kb.shr(tid, per_cta.bit_length() - 1) if G > 1 else kb.mov(0, "u32")
    first = kb.mul(kb.ctaid(), per_cta)
    stride = kb.mul(kb.nctaid(), per_cta)
    n_regs = V * kind.comps
    acc = [kb.mov(0.0, kind.acc) for _ in range(n_regs)]
    # whole CTAs iterate together (the shared-memory combine needs every thread at its barriers)
    with kb.loop(first, nvec, 1) as base:
        o = kb.add(base, lane)
        live = kb.setp("lt", o, nvec)
        for r in acc:
            kb.assign(r, 0.0)
        with kb.if_(live):
            p = kb.addr(ws, kb.add(kb.mul(kb.cvt(grp, "u64"), kb.cvt(kb.mul(m, n), "u64")),
                                   kb.cvt(kb.mul(o, V), "u64")), sz)
            step = kb.mul(slab, G)
            # full rounds of UNROLL slabs, then the rest one at a time
            left = kb.sub(splits, kb.min(grp, splits))
            mine = kb.div(kb.add(left, G - 1), G)
            rounds = kb.div(mine, UNROLL)
            with kb.loop(0, rounds, 1, type_="u32"):
                got = []
                for u in range(UNROLL):
                    got.append(_load(kb, acc_kind, p, V))
                    kb.add(p, step, out=p)
                for g in got:
                    for r, v in zip(acc, g):
                        kb.add(r, v, out=r)
            with kb.loop(kb.mul(rounds, UNROLL), mine, 1, type_="u32"):
                for r, v in zip(acc, _load(kb, acc_kind, p, V)):
                    kb.add(r, v, out=r)
                kb.add(p, step, out=p)
        if G > 1:
            sm = kb.add(kb.shared_addr(parts), kb.mul(tid, n_regs * (sz // kind.comps)))
            _store_shared(kb, sm, acc)
            kb.bar_sync()
            with kb.if_(kb.and_(live, kb.setp("eq", grp, 0))):
                for g in range(1, G):
                    other = _load_shared(kb, kind.acc, sm, g * per_cta * n_regs * (sz // kind.comps), n_regs)
                    for r, v in zip(acc, other):
                        kb.add(r, v, out=r)
                _epilogue(kb, spec, kind, ck, c, ldc, m, o, acc, alpha, beta, beta_zero)
            kb.bar_sync()
        else:
            with kb.if_(live):
                _epilogue(kb, spec, kind, ck, c, ldc, m, o, acc, alpha, beta, beta_zero)
        # kb.loop steps by a constant 1: add the rest of the grid stride here
        kb.add(base, kb.sub(stride, 1), out=base)
    return kb.ptx()


def _load(kb: KernelBuilder, acc_kind: cg.ElementKind, p, V: int) -> tuple:
    if V > 1:
        return kb.ld("global", acc_kind.acc, p, vec=V)
    return cg.load(kb, acc_kind, p)


def _store_shared(kb: KernelBuilder, addr, regs: list) -> None:
    if len(regs) == 1:
        kb.st("shared", addr, regs[0])
    else:
        kb.st("shared", addr, list(regs))


def _load_shared(kb: KernelBuilder, type_: str, addr, offset: int, count: int) -> tuple:
    if count == 1:
        return (kb.ld("shared", type_, addr, offset=offset),)
    return kb.ld("shared", type_, addr, offset=offset, vec=count)


def _epilogue(kb: KernelBuilder, spec: GemmSplitKReduceSpec, kind: cg.ElementKind, ck: cg.ElementKind, c, ldc,
              m, o, acc: list, alpha, beta, beta_zero) -> None:
    """C at output vector ``o`` (element o * vec of the column-major m x n result)."""
    idx = kb.mul(o, spec.vec)
    j = kb.div(idx, m)
    i = kb.sub(idx, kb.mul(j, m))
    pc = kb.addr(c, kb.add(kb.cvt(i, "u64"), kb.mul(kb.cvt(j, "u64"), ldc)), ck.nbytes)
    if spec.vec == 1:
        cg.epilogue(kb, ck, pc, tuple(acc), alpha, beta, beta_zero)
        return
    out = [kb.mul(alpha[0], v) for v in acc]
    with kb.if_(beta_zero, negate=True):
        old = kb.ld("global", ck.storage, pc, vec=spec.vec)
        for r, c_old in zip(out, old):
            kb.fma(beta[0], c_old, r, out=r)
    kb.st("global", pc, out)


def configurations(arch: str) -> Iterable[GemmSplitKReduceSpec]:
    """Every dtype (and mixed output) with scalar and vector access, each group count."""
    from .gemm_tiled import MIXED_OUTPUTS

    pairs = [(d, "") for d in cg.GEMM_DTYPES] + list(MIXED_OUTPUTS)
    for dtype, c_dtype in pairs:
        probe = GemmSplitKReduceSpec(arch=arch, dtype=dtype, c_dtype=c_dtype)
        for vec in sorted({1, probe.max_vec}):
            for groups in GROUPS:
                yield GemmSplitKReduceSpec(arch=arch, dtype=dtype, c_dtype=c_dtype, vec=vec, groups=groups)


register_family("gemm_splitk_reduce", GemmSplitKReduceSpec, generate, configurations)


def reduce_spec(dtype: str, c_dtype: str, arch: str, m: int, ldc: int, c_align: int, splits: int,
                sm_count: int) -> GemmSplitKReduceSpec:
    """The reduction for a split-K call: 16-byte access when M, ldc and C's alignment allow, and
    enough threads per output that ``splits`` slabs keep the SMs' load queues full."""
    probe = GemmSplitKReduceSpec(arch=arch.rstrip("a"), dtype=dtype, c_dtype=c_dtype)
    v = probe.max_vec
    es = probe.c_kind.nbytes
    vec = v if v > 1 and m % v == 0 and ldc % v == 0 and c_align >= v * es else 1
    return GemmSplitKReduceSpec(arch=arch.rstrip("a"), dtype=dtype, c_dtype=c_dtype, vec=vec,
                                groups=reduce_groups(splits))


def reduce_groups(splits: int) -> int:
    """Threads per output: about one per UNROLL*2 slabs, at most 16."""
    want = max(1, splits // (2 * UNROLL))
    g = 1
    while g * 2 <= min(want, GROUPS[-1]):
        g *= 2
    return g


def reduce_grid(spec: GemmSplitKReduceSpec, m: int, n: int, sm_count: int) -> int:
    """CTAs of the reduction: one per BLOCK/groups output vectors, at most 16 per SM (grid-stride)."""
    per_cta = BLOCK // spec.groups
    return max(1, min(math.ceil(m * n // spec.vec / per_cta), 16 * max(1, sm_count)))


def launch_reduce(spec: GemmSplitKReduceSpec, m: int, n: int, splits: int, ws_ptr: int, c_ptr: int, ldc: int,
                  scalars: list, sm_count: int, stream) -> None:
    """Launch the reduction ``spec`` of ``splits`` partial slabs at ``ws_ptr`` into C (validated by
    the caller; ``scalars`` as built by gemm_core: alpha parts, alpha_ptr, beta parts, beta_ptr),
    as a one-step plan made per call: the tests drive the kernel alone through this; gemm's
    split-K path runs the cached ``plan`` below."""
    grid = reduce_grid(spec, m, n, sm_count)
    LaunchPlan(spec.kernel_name(), [KernelStep(spec, grid, BLOCK, lambda p, s, ws: s)]).run(
        (), (m, n, splits, ws_ptr, c_ptr, ldc, *scalars), stream)


def plan(partial, reduce: GemmSplitKReduceSpec, splits: int, p, device) -> LaunchPlan:
    """The launch plan of split-K for problem ``p`` (batch 1): the partial products of the tiled
    kernel ``partial`` (``raw_out``) with K in ``splits`` slices of whole BK tiles over grid.z into
    workspace slabs, then ``reduce`` applies alpha/beta into C. ValueError when the rounded split
    count exceeds the grid's z limit."""
    m, n, k, lda, ldb, ldc = p.m, p.n, p.k, p.lda, p.ldb, p.ldc
    chunk = math.ceil(math.ceil(k / splits) / partial.bk) * partial.bk
    splits = -(-k // chunk)
    if splits > cg.MAX_GRID_Z:
        raise ValueError(f"gemm: split_k with {splits} splits exceeds the grid's {cg.MAX_GRID_Z} in z")
    kind = cg.kind_of(p.dtype)
    slab_bytes = m * n * cg.kind_of(cg.ACC_DTYPES[p.dtype]).nbytes
    a_step = chunk * (lda if p.transa == "N" else 1)
    b_step = chunk * (1 if p.transb == "N" else ldb)
    zeros = (0.0,) * kind.comps + (0,)
    mn = m * n

    def bind_partial(ptr, s, ws):
        return (m, n, k, chunk, ptr[0], lda, ptr[1], ldb, ws, m, a_step, b_step, mn, *zeros, *zeros)

    def head(a, b, c, ws):
        return (m, n, splits, ws, c, ldc)

    bind_reduce = cg.simt_bind(kind, head)
    steps = [KernelStep(partial, (-(-m // partial.bm), -(-n // partial.bn), splits), partial.threads, bind_partial),
             KernelStep(reduce, reduce_grid(reduce, m, n, device.sm_count), BLOCK, bind_reduce)]
    return LaunchPlan("split_k", steps, splits * slab_bytes)
