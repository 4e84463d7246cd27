"""``attention_backward``: the gradients of ``attention`` (FlashAttention-2's backward algorithm,
SIMT, float32 compute).

From the forward's output ``O`` and log-sum-exp ``lse`` (``attention(..., return_lse=True)``)
and the upstream gradient ``dO``, with ``P = exp(scale * Q K^T + mask - lse)`` recomputed tile
by tile (never stored):

    D = rowsum(dO * O);  dV = P^T dO;  dP = dO V^T;  dS = P * (dP - D);
    dQ = scale * dS K;   dK = scale * dS^T Q

Three kernels, no atomics (deterministic):

- ``delta``: ``D`` per query row (a warp per row) into a float32 workspace;
- ``dkdv``: a CTA per block of key rows of one (batch, kv head); ``tpr`` lanes share a key row
  (as the forward shares a query row) and hold its k, v and the dK, dV accumulators; tiles of
  query rows (q, dO, lse, D) are staged in shared memory; with grouped-query attention the CTA
  walks every query head of its group, so dK and dV come out summed over the group;
- ``dq``: a CTA per block of query rows (as the forward), k and v tiles staged in shared
  memory, the dQ accumulator in registers.

Scores are in the log2 domain (``scale * log2 e`` folded into the dot product, ``lse * log2 e``
subtracted), so ``p = ex2(s - lse2)``. Masks as the forward: key tails, and with ``causal`` key
``j > i`` for query ``i`` (top-left alignment). float32, float16, bfloat16 inputs; the gradients
in the inputs' dtype. For float16/bfloat16 with head_dim 64 or 128 on sm_80+ the dq kernel is
the tensor-core one of ``attention_bwd_mma``, and so is the dkdv kernel at head_dim 64 (at 128
it stays SIMT); a wgmma (sm_90) backward is not written yet (``algo="wgmma"`` raises
NotImplementedError).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from oxicuda.driver.facts import current_device_facts
from oxicuda.memory.array import DeviceArray, empty
from oxicuda.ptx import registry
from oxicuda.ptx.builder import LOG2_E, KernelBuilder
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from oxicuda.ptx.spec import KernelSpec

from . import _common as C
from .attention_api import _check, _mma_arch, mma_supports
from .attention_bwd_mma import DKDV_HEAD_DIMS, AttentionBwdMmaSpec
from .attention_kernels import REGISTERED_HEAD_DIMS, SimtRowLayout
from .attention_mma import BLOCK_Q as MMA_BLOCK_Q
from .attention_mma import COPY_BYTES

FAMILY = "attention_bwd_simt"
KINDS = ("delta", "dkdv", "dq")
THREADS = 128
DELTA_WARPS = 4
_NEG_INF = float("-inf")


@dataclass(frozen=True)
class AttentionBwdSimtSpec(SimtRowLayout, KernelSpec):
    """One kernel of the SIMT attention backward: ``kind`` (delta, dkdv, dq), element type,
    head_dim, causal (unused by delta)."""

    family: ClassVar[str] = FAMILY
    kind: str = "dq"
    dtype: str = "f32"
    head_dim: int = 64
    causal: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kind not in KINDS:
            raise ValueError(f"AttentionBwdSimtSpec: kind={self.kind!r}; allowed {KINDS}")
        if self.dtype not in C.ELEMENT_BYTES:
            raise ValueError(f"AttentionBwdSimtSpec: dtype={self.dtype!r}; allowed {tuple(C.ELEMENT_BYTES)}")
        if not 1 <= self.head_dim <= 256:
            raise ValueError(f"AttentionBwdSimtSpec: head_dim={self.head_dim}; allowed 1..256")
        if self.kind == "delta" and self.causal:
            raise ValueError("AttentionBwdSimtSpec: the delta kernel has no mask (causal=False)")

    @property
    def block(self) -> int:
        """Rows of the tiles staged in shared memory."""
        return 32 if self.padded_dim <= 64 else 16


def _delta(kb: KernelBuilder, spec: AttentionBwdSimtSpec) -> None:
    o_p, do_p, d_p = kb.param_ptr("o"), kb.param_ptr("do"), kb.param_ptr("delta")
    nrows, dim = kb.param("rows", "u32"), kb.param("head_dim", "u32")
    tid = kb.tid()
    lane = kb.and_(tid, 31)
    row = kb.mad(kb.ctaid(), DELTA_WARPS, kb.shr(tid, 5))
    kb.ret(kb.setp("ge", row, nrows))
    size = C.ELEMENT_BYTES[spec.dtype]
    base = kb.mul(row, dim, mode="wide")
    orow, drow = kb.addr(o_p, base, size), kb.addr(do_p, base, size)
    acc = kb.mov(0.0, "f32")
    with kb.loop(lane, dim, 32) as j:
        a = C.load_f32(kb, spec.dtype, kb.addr(orow, j, size))[0]
        b = C.load_f32(kb, spec.dtype, kb.addr(drow, j, size))[0]
        kb.fma(a, b, acc, out=acc)
    (acc,) = C.warp_allreduce(kb, (acc,), C.combine_sum)
    with kb.if_(kb.setp("eq", lane, 0)):
        kb.st("global", kb.addr(d_p, row, 4), acc)


class _Rows:
    """Per-lane registers of a row of ``dpl`` dims (lane ``t`` holds dims t, t+tpr, ...)."""

    def __init__(self, kb, spec, lane_r):
        self.kb, self.spec, self.lane_r = kb, spec, lane_r

    def dim_ok(self, i, ok):
        kb, s = self.kb, self.spec
        if s.padded_dim == s.head_dim:
            return ok
        return kb.and_(ok, kb.setp("lo", kb.add(self.lane_r, i * s.tpr), s.head_dim))

    def load(self, ptr, row_off, ok, scale=None):
        kb, s = self.kb, self.spec
        out = []
        for i in range(s.dims_per_lane):
            v = kb.mov(0.0, "f32")
            with kb.if_(self.dim_ok(i, ok)):
                x = C.load_f32(kb, s.dtype, kb.addr(ptr, kb.add(row_off, kb.add(self.lane_r, i * s.tpr)),
                                                    C.ELEMENT_BYTES[s.dtype]))[0]
                kb.assign(v, kb.mul(x, scale) if scale is not None else x)
            out.append(v)
        return out

    def store(self, ptr, row_off, ok, values, scale):
        kb, s = self.kb, self.spec
        for i, v in enumerate(values):
            with kb.if_(self.dim_ok(i, ok)):
                C.store_f32(kb, s.dtype, kb.addr(ptr, kb.add(row_off, kb.add(self.lane_r, i * s.tpr)),
                                                 C.ELEMENT_BYTES[s.dtype]), [kb.mul(v, scale)])

    def dot(self, regs, rd, jj):
        """Sum over the row's lanes of regs . (shared tile row jj at ``rd``)."""
        kb, s = self.kb, self.spec
        dp = s.padded_dim
        part = kb.mul(regs[0], kb.ld("shared", "f32", rd, offset=jj * dp * 4))
        for i in range(1, s.dims_per_lane):
            part = kb.fma(regs[i], kb.ld("shared", "f32", rd, offset=(jj * dp + i * s.tpr) * 4), part)
        step = s.tpr // 2
        while step >= 1:
            part = kb.add(part, kb.shfl_sync("bfly", part, step))
            step //= 2
        return part

    def axpy(self, acc, a, rd, jj):
        """acc += a * (shared tile row jj)."""
        kb, s = self.kb, self.spec
        for i in range(s.dims_per_lane):
            kb.fma(a, kb.ld("shared", "f32", rd, offset=(jj * s.padded_dim + i * s.tpr) * 4), acc[i], out=acc[i])


def _stage(kb, spec, tile_rows, row0, nrows, head_off, tiles, tid):
    """Stage rows row0.. of each (global pointer, shared array) in ``tiles`` as f32 (zeros past
    ``nrows`` and past head_dim): element e = tid + THREADS*u -> (row, dim)."""
    dp, d_real, size = spec.padded_dim, spec.head_dim, C.ELEMENT_BYTES[spec.dtype]
    for u in range(-(-tile_rows * dp // THREADS)):
        e = kb.add(tid, u * THREADS)
        rr = kb.div(e, dp)
        dd = kb.sub(e, kb.mul(rr, dp))
        in_tile = kb.setp("lo", e, tile_rows * dp)
        ok = kb.and_(in_tile, kb.setp("lo", kb.add(row0, rr), nrows))
        if dp != d_real:
            ok = kb.and_(ok, kb.setp("lo", dd, d_real))
        off = kb.add(head_off, kb.mad(kb.add(row0, rr), d_real, dd))
        vals = []
        for ptr, _ in tiles:
            v = kb.mov(0.0, "f32")
            with kb.if_(ok):
                kb.assign(v, C.load_f32(kb, spec.dtype, kb.addr(ptr, off, size))[0])
            vals.append(v)
        with kb.if_(in_tile):
            for (_, sh), v in zip(tiles, vals):
                kb.st("shared", kb.shared_addr(sh, kb.mul(e, 4)), v)


def _dkdv(kb: KernelBuilder, spec: AttentionBwdSimtSpec) -> None:
    q_p, k_p, v_p, do_p, lse_p, d_p, dk_p, dv_p = (kb.param_ptr(n) for n in
                                                   ("q", "k", "v", "do", "lse", "delta", "dk", "dv"))
    sq, sk, hq, hkv, group = (kb.param(n, "u32") for n in ("sq", "sk", "hq", "hkv", "group"))
    scale_log2, scale = kb.param("scale_log2", "f32"), kb.param("scale", "f32")
    d_real, tpr, dp, rows, bq = spec.head_dim, spec.tpr, spec.padded_dim, spec.rows, spec.block
    q_sh, do_sh = kb.shared("q_tile", "f32", bq * dp), kb.shared("do_tile", "f32", bq * dp)
    lse_sh, d_sh = kb.shared("lse_tile", "f32", bq), kb.shared("d_tile", "f32", bq)
    tid = kb.tid()
    row, lane_r = kb.div(tid, tpr), kb.and_(tid, tpr - 1)
    blk, hk, b = kb.ctaid("x"), kb.ctaid("y"), kb.ctaid("z")
    j = kb.mad(blk, rows, row)
    j_ok = kb.setp("lo", j, sk)
    kv_head = kb.mul(kb.mad(b, hkv, hk), kb.mul(sk, d_real))
    k_row = kb.mad(j, d_real, kv_head)
    R = _Rows(kb, spec, lane_r)
    kv = R.load(k_p, k_row, j_ok, scale_log2)   # k pre-scaled: s2 = q . k * scale * log2 e
    vv = R.load(v_p, k_row, j_ok)
    dk = [kb.mov(0.0, "f32") for _ in range(spec.dims_per_lane)]
    dv = [kb.mov(0.0, "f32") for _ in range(spec.dims_per_lane)]
    q_rd, do_rd = kb.shared_addr(q_sh, kb.mul(lane_r, 4)), kb.shared_addr(do_sh, kb.mul(lane_r, 4))
    lse_base, d_base = kb.shared_addr(lse_sh), kb.shared_addr(d_sh)
    # causal: queries before this key block see none of its keys
    q_start = kb.mul(kb.div(kb.mul(blk, rows), bq), bq) if spec.causal else 0
    with kb.loop(0, group, 1, type_="u32") as gi:
        h = kb.mad(hk, group, gi)
        q_head = kb.mul(kb.mad(b, hq, h), kb.mul(sq, d_real))
        stat_head = kb.mul(kb.mad(b, hq, h), sq)
        with kb.loop(q_start, sq, bq, type_="u32") as i0:
            _stage(kb, spec, bq, i0, sq, q_head, ((q_p, q_sh), (do_p, do_sh)), tid)
            with kb.if_(kb.setp("lo", tid, bq)):
                i = kb.add(i0, tid)
                lv, dv_ = kb.mov(0.0, "f32"), kb.mov(0.0, "f32")
                with kb.if_(kb.setp("lo", i, sq)):
                    kb.assign(lv, kb.mul(kb.ld("global", "f32", kb.addr(lse_p, kb.add(stat_head, i), 4)), LOG2_E))
                    kb.assign(dv_, kb.ld("global", "f32", kb.addr(d_p, kb.add(stat_head, i), 4)))
                kb.st("shared", kb.addr(lse_base, tid, 4), lv)
                kb.st("shared", kb.addr(d_base, tid, 4), dv_)
            kb.bar_sync(0)
            for ii in range(bq):
                i = kb.add(i0, ii)
                s = R.dot(kv, q_rd, ii)
                valid = kb.and_(j_ok, kb.setp("lo", i, sq))
                if spec.causal:
                    valid = kb.and_(valid, kb.setp("ls", j, i))
                p = kb.ex2(kb.sub(s, kb.ld("shared", "f32", lse_base, offset=ii * 4)))
                p = kb.selp(p, 0.0, valid, type_="f32")
                R.axpy(dv, p, do_rd, ii)
                dpv = R.dot(vv, do_rd, ii)
                ds = kb.mul(p, kb.sub(dpv, kb.ld("shared", "f32", d_base, offset=ii * 4)))
                R.axpy(dk, ds, q_rd, ii)
            kb.bar_sync(0)
    R.store(dk_p, k_row, j_ok, dk, scale)
    R.store(dv_p, k_row, j_ok, dv, 1.0)


def _dq(kb: KernelBuilder, spec: AttentionBwdSimtSpec) -> None:
    q_p, k_p, v_p, do_p, lse_p, d_p, dq_p = (kb.param_ptr(n) for n in ("q", "k", "v", "do", "lse", "delta", "dq"))
    sq, sk, hq, hkv, group = (kb.param(n, "u32") for n in ("sq", "sk", "hq", "hkv", "group"))
    scale_log2, scale = kb.param("scale_log2", "f32"), kb.param("scale", "f32")
    d_real, tpr, dp, rows, bk = spec.head_dim, spec.tpr, spec.padded_dim, spec.rows, spec.block
    k_sh, v_sh = kb.shared("k_tile", "f32", bk * dp), kb.shared("v_tile", "f32", bk * dp)
    tid = kb.tid()
    row, lane_r = kb.div(tid, tpr), kb.and_(tid, tpr - 1)
    blk, h, b = kb.ctaid("x"), kb.ctaid("y"), kb.ctaid("z")
    qi = kb.mad(blk, rows, row)
    q_ok = kb.setp("lo", qi, sq)
    hk = kb.div(h, group)
    q_head = kb.mul(kb.mad(b, hq, h), kb.mul(sq, d_real))
    kv_head = kb.mul(kb.mad(b, hkv, hk), kb.mul(sk, d_real))
    q_row = kb.mad(qi, d_real, q_head)
    R = _Rows(kb, spec, lane_r)
    qv = R.load(q_p, q_row, q_ok, scale_log2)
    dov = R.load(do_p, q_row, q_ok)
    stat = kb.mad(kb.mad(b, hq, h), sq, qi)
    lse2, dlt = kb.mov(0.0, "f32"), kb.mov(0.0, "f32")
    with kb.if_(q_ok):
        kb.assign(lse2, kb.mul(kb.ld("global", "f32", kb.addr(lse_p, stat, 4)), LOG2_E))
        kb.assign(dlt, kb.ld("global", "f32", kb.addr(d_p, stat, 4)))
    dq = [kb.mov(0.0, "f32") for _ in range(spec.dims_per_lane)]
    k_rd, v_rd = kb.shared_addr(k_sh, kb.mul(lane_r, 4)), kb.shared_addr(v_sh, kb.mul(lane_r, 4))
    kv_end = kb.min(sk, kb.mul(kb.add(blk, 1), rows)) if spec.causal else sk
    with kb.loop(0, kv_end, bk, type_="u32") as j0:
        _stage(kb, spec, bk, j0, sk, kv_head, ((k_p, k_sh), (v_p, v_sh)), tid)
        kb.bar_sync(0)
        for jj in range(bk):
            jx = kb.add(j0, jj)
            s = R.dot(qv, k_rd, jj)
            valid = kb.and_(q_ok, kb.setp("lo", jx, sk))
            if spec.causal:
                valid = kb.and_(valid, kb.setp("ls", jx, qi))
            p = kb.selp(kb.ex2(kb.sub(s, lse2)), 0.0, valid, type_="f32")
            dpv = R.dot(dov, v_rd, jj)
            R.axpy(dq, kb.mul(p, kb.sub(dpv, dlt)), k_rd, jj)
        kb.bar_sync(0)
    R.store(dq_p, q_row, q_ok, dq, scale)


def generate(spec: AttentionBwdSimtSpec) -> str:
    """PTX of one backward kernel. delta: (o, do, delta, rows, head_dim); dkdv: (q, k, v, do,
    lse, delta, dk, dv, sq, sk, hq, hkv, group, scale_log2, scale); dq: (q, k, v, do, lse,
    delta, dq, sq, sk, hq, hkv, group, scale_log2, scale)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    kb.reqntid(THREADS)
    {"delta": _delta, "dkdv": _dkdv, "dq": _dq}[spec.kind](kb, spec)
    return kb.ptx()


def configurations(arch: str) -> list[AttentionBwdSimtSpec]:
    """The delta kernel per dtype; dkdv and dq per dtype, mask and registered head dim (other
    head dims are generated on first use, as the forward's)."""
    specs = [AttentionBwdSimtSpec(arch=arch, kind="delta", dtype=t, head_dim=1) for t in ("f32", "f16", "bf16")]
    specs += [AttentionBwdSimtSpec(arch=arch, kind=kind, dtype=t, head_dim=d, causal=c)
              for kind in ("dkdv", "dq") for t in ("f32", "f16", "bf16") for d in REGISTERED_HEAD_DIMS
              for c in (False, True)]
    return specs


registry.register_family(FAMILY, AttentionBwdSimtSpec, generate, configurations)


@dataclass(frozen=True)
class AttentionBackwardProblem:
    """One backward call: batch, query heads, query length, head_dim, kv heads, key length,
    element type, causal."""

    b: int
    hq: int
    sq: int
    d: int
    hkv: int
    sk: int
    dtype: str
    causal: bool
    #: "simt" or "mma" (the tensor-core kernels of attention_bwd_mma: dQ, and dK/dV at head_dim 64)
    dq_algo: str = "simt"


def plan(problem: AttentionBackwardProblem, device) -> LaunchPlan:
    """delta, dkdv, dq; ``run`` takes pointers (q, k, v, do, o, lse, dq, dk, dv) and scalars
    (scale * log2 e, scale); D lives in the plan's workspace."""
    p = problem
    arch = device.arch
    delta = AttentionBwdSimtSpec(arch=arch, kind="delta", dtype=p.dtype, head_dim=1)
    if p.dq_algo == "mma" and p.d in DKDV_HEAD_DIMS:
        dkdv = AttentionBwdMmaSpec(arch=_mma_arch(arch), dtype=p.dtype, head_dim=p.d, causal=p.causal, kind="dkdv")
        dkdv_grid = (-(-p.sk // MMA_BLOCK_Q), p.hkv, p.b)
    else:
        dkdv = AttentionBwdSimtSpec(arch=arch, kind="dkdv", dtype=p.dtype, head_dim=p.d, causal=p.causal)
        dkdv_grid = (-(-p.sk // dkdv.rows), p.hkv, p.b)
    if p.dq_algo == "mma":
        dq = AttentionBwdMmaSpec(arch=_mma_arch(arch), dtype=p.dtype, head_dim=p.d, causal=p.causal)
        dq_grid = (-(-p.sq // MMA_BLOCK_Q), p.hq, p.b)
    else:
        dq = AttentionBwdSimtSpec(arch=arch, kind="dq", dtype=p.dtype, head_dim=p.d, causal=p.causal)
        dq_grid = (-(-p.sq // dq.rows), p.hq, p.b)
    nrows = p.b * p.hq * p.sq
    u = [np.uint32(x) for x in (nrows, p.d, p.sq, p.sk, p.hq, p.hkv, p.hq // p.hkv)]
    rows_u, d_u, sizes = u[0], u[1], tuple(u[2:])

    def bind_delta(ptr, s, ws):
        return (ptr[4], ptr[3], ws, rows_u, d_u)

    def bind_dkdv(ptr, s, ws):
        return (ptr[0], ptr[1], ptr[2], ptr[3], ptr[5], ws, ptr[7], ptr[8], *sizes, s[0], s[1])

    def bind_dq(ptr, s, ws):
        return (ptr[0], ptr[1], ptr[2], ptr[3], ptr[5], ws, ptr[6], *sizes, s[0], s[1])

    steps = [KernelStep(delta, -(-nrows // DELTA_WARPS), THREADS, bind_delta),
             KernelStep(dkdv, dkdv_grid, THREADS, bind_dkdv),
             KernelStep(dq, dq_grid, THREADS, bind_dq)]
    return LaunchPlan("attention_backward", steps, workspace_bytes=4 * nrows)


#: plans by (problem, device ordinal)
PLANS = PlanCache("attention_backward")
ALGOS = ("simt", "mma", "wgmma")


def attention_backward(q: object, k: object, v: object, o: object, do: object, lse: object, causal: bool = False,
                       scale: float | None = None, *, algo: str | None = None
                       ) -> tuple[DeviceArray, DeviceArray, DeviceArray]:
    """Gradients ``(dq, dk, dv)`` of ``o = attention(q, k, v, causal, scale)`` given ``do``.

    ``q``, ``o``, ``do``: (B, Hq, Sq, D); ``k``, ``v``: (B, Hkv, Sk, D) with Hkv dividing Hq
    (dk and dv are summed over each group of query heads); one dtype (float32, float16,
    bfloat16); ``lse``: the float32 (B, Hq, Sq) log-sum-exp of ``attention(..., return_lse=True)``
    with the same ``causal`` and ``scale`` (default ``1/sqrt(D)``). Results in the inputs' dtype,
    dk and dv of k's shape. ``algo``: None (dispatch: ``"mma"`` for 16-byte aligned
    float16/bfloat16 with head_dim 64 or 128 on sm_80+, else ``"simt"``), ``"mma"`` (dQ on
    tensor cores, dK/dV too at head_dim 64, SIMT at 128) or ``"simt"``; ``"wgmma"`` (Hopper) is not written
    yet and raises NotImplementedError. Raises TypeError/ValueError on bad input before any
    launch.
    """
    op = "attention_backward"
    if algo not in (None, *ALGOS):
        raise ValueError(f"{op}: algo={algo!r}; allowed None, 'simt', 'mma', 'wgmma'")
    qa, ka, va, oa, doa = (C.as_float_array(t, op, n) for t, n in ((q, "q"), (k, "k"), (v, "v"), (o, "o"),
                                                                    (do, "do")))
    b, hq, sq, d, hkv, sk = _check(qa, ka, va, op)
    for name, a in (("o", oa), ("do", doa)):
        if tuple(a.shape) != tuple(qa.shape):
            raise ValueError(f"{op}: {name} has shape {tuple(a.shape)}; it must have q's shape {tuple(qa.shape)}")
        if a.dtype != qa.dtype:
            raise TypeError(f"{op}: {name} has dtype {C.dtype_name_of(a)}; it must have q's dtype "
                            f"{C.dtype_name_of(qa)}")
    if not isinstance(lse, DeviceArray):
        raise TypeError(f"{op}: lse is a {type(lse).__name__}; pass the float32 DeviceArray that "
                        f"attention(..., return_lse=True) returns")
    if C.dtype_name_of(lse) != "float32" or tuple(lse.shape) != (b, hq, sq):
        raise ValueError(f"{op}: lse has shape {tuple(lse.shape)} and dtype {C.dtype_name_of(lse)}; it must be "
                         f"float32 of shape {(b, hq, sq)}")
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    try:
        scale = float(scale)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: scale={scale!r} must be a number") from None
    if not math.isfinite(scale):
        raise ValueError(f"{op}: scale={scale!r} must be finite")
    if algo == "wgmma":
        raise NotImplementedError(f"{op}: algo='wgmma': the Hopper attention backward is not written yet; "
                                  f"use algo=None, 'mma' or 'simt'")
    element = C.PTX_ELEMENT[C.dtype_name_of(qa)]
    arch = current_device_facts().arch
    if algo == "mma" and not mma_supports(element, d, arch):
        raise ValueError(f"{op}: algo='mma' needs float16/bfloat16 inputs with head_dim 64 or 128 on sm_80+; got "
                         f"{C.dtype_name_of(qa)}, head_dim {d}, {arch}; use algo='simt' or None")
    qa, ka, va, oa, doa, la = (C.contiguous(a) for a in (qa, ka, va, oa, doa, lse))
    aligned = all(int(a.ptr) % COPY_BYTES == 0 for a in (qa, ka, va, doa))
    if algo == "mma" and not aligned:
        raise ValueError(f"{op}: algo='mma' needs {COPY_BYTES}-byte aligned q, k, v and do; use algo='simt' or None")
    if algo is None:
        algo = "mma" if aligned and mma_supports(element, d, arch) else "simt"
    stream = qa.stream or None
    dq = empty(qa.shape, qa.dtype, stream=stream)
    dk = empty(ka.shape, ka.dtype, stream=stream)
    dv = empty(va.shape, va.dtype, stream=stream)
    problem = AttentionBackwardProblem(b, hq, sq, d, hkv, sk, element, bool(causal), algo)
    device = current_device_facts()
    launch_plan = PLANS.get_or_build((problem, device.ordinal), lambda: plan(problem, device))
    launch_plan.run((qa.ptr, ka.ptr, va.ptr, doa.ptr, oa.ptr, la.ptr, dq.ptr, dk.ptr, dv.ptr),
                    (np.float32(scale * LOG2_E), np.float32(scale)), C.stream_of(qa))
    return dq, dk, dv


__all__ = ["AttentionBackwardProblem", "AttentionBwdSimtSpec", "attention_backward", "plan"]
