"""Fused attention forward (flash-style, SIMT, f32 compute): ``O = softmax(scale * Q K^T + mask) V``
with an online softmax, so the Sq x Sk score matrix never goes to memory.

Work split: a CTA of 128 threads owns ``rows = 128 / tpr`` query rows of one (batch, head); each
row is shared by ``tpr`` consecutive lanes (threads per row, a power of two), lane ``t`` of a row
holding head dimensions ``t, t + tpr, t + 2*tpr, ...`` of q and of the output accumulator. Key and
value tiles of ``block_k`` rows are staged in shared memory (as f32); a score is a per-lane
partial dot product reduced across the row's lanes with butterfly shuffles. Scores are kept in
the log2 domain: q is pre-multiplied by ``scale * log2(e)``, so ``p = ex2(s - m)`` is
``exp(scale * q.k - max)`` exactly as in float64 up to ex2's rounding.

Masks: keys ``j >= Sk`` (tails), and with ``causal`` keys ``j > i`` for query ``i`` (top-left
alignment, as PyTorch's ``scaled_dot_product_attention(is_causal=True)``: query row i sees keys
0..i whatever Sq and Sk are). Grouped-query attention: query head ``h`` reads key/value head
``h // group``. Launch: grid (ceil(Sq / rows), Hq, B), block 128.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import LN_2, KernelBuilder
from oxicuda.ptx.spec import KernelSpec

from ._common import ELEMENT_BYTES, load_f32, store_f32

FAMILY = "attention_fwd_simt"
THREADS = 128
MAX_HEAD_DIM = 256
_NEG_INF = float("-inf")


def threads_per_row(head_dim: int) -> int:
    """Lanes sharing one query row: the power of two keeping at most 16 dimensions per lane."""
    want = -(-head_dim // 16)
    tpr = 1
    while tpr < want:
        tpr *= 2
    return min(tpr, 32)


class SimtRowLayout:
    """How a SIMT attention kernel of ``THREADS`` threads spreads a row's ``head_dim`` over lanes
    (for the specs of the forward and backward kernels, which have a ``head_dim`` field)."""

    @property
    def tpr(self) -> int:
        """Lanes per row."""
        return threads_per_row(self.head_dim)

    @property
    def dims_per_lane(self) -> int:
        return -(-self.head_dim // self.tpr)

    @property
    def padded_dim(self) -> int:
        return self.dims_per_lane * self.tpr

    @property
    def rows(self) -> int:
        """Rows a CTA owns (query rows forward and in dq, key rows in dkdv)."""
        return THREADS // self.tpr


@dataclass(frozen=True)
class AttentionSimtSpec(SimtRowLayout, KernelSpec):
    """One fused attention forward kernel: element type, head_dim, causal, logsumexp output."""

    family: ClassVar[str] = FAMILY
    dtype: str = "f32"
    head_dim: int = 64
    causal: bool = False
    lse: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in ELEMENT_BYTES:
            raise ValueError(f"AttentionSimtSpec: dtype={self.dtype!r}; allowed {tuple(ELEMENT_BYTES)}")
        if not 1 <= self.head_dim <= MAX_HEAD_DIM:
            raise ValueError(f"AttentionSimtSpec: head_dim={self.head_dim}; allowed 1..{MAX_HEAD_DIM}")

    @property
    def block_k(self) -> int:
        return 32 if self.padded_dim <= 128 else 16


def generate(spec: AttentionSimtSpec) -> str:
    """PTX of one fused attention kernel. Parameters: q, k, v, o, lse pointers; u32 sq, sk, hq,
    hkv, group; f32 scale_log2 (= scale * log2 e)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    q_p, k_p, v_p, o_p, lse_p = (kb.param_ptr(n) for n in ("q", "k", "v", "o", "lse"))
    sq, sk, hq, hkv, group = (kb.param(n, "u32") for n in ("sq", "sk", "hq", "hkv", "group"))
    scale_log2 = kb.param("scale_log2", "f32")
    kb.reqntid(THREADS)
    d_real, tpr, dpl, dp, rows, bk = spec.head_dim, spec.tpr, spec.dims_per_lane, spec.padded_dim, spec.rows, spec.block_k
    esize = ELEMENT_BYTES[spec.dtype]
    k_sh = kb.shared("k_tile", "f32", bk * dp)
    v_sh = kb.shared("v_tile", "f32", bk * dp)

    tid = kb.tid()
    row, lane_r = kb.div(tid, tpr), kb.and_(tid, tpr - 1)
    blk, h, b = kb.ctaid("x"), kb.ctaid("y"), kb.ctaid("z")
    qi = kb.mad(blk, rows, row)
    row_ok = kb.setp("lo", qi, sq)
    hk = kb.div(h, group)
    # (b*H + h) * S * D element offsets of this head's q/o rows and k/v rows
    q_head = kb.mul(kb.mad(b, hq, h), kb.mul(sq, d_real))
    kv_head = kb.mul(kb.mad(b, hkv, hk), kb.mul(sk, d_real))
    q_row = kb.mad(qi, d_real, q_head)

    # q, pre-scaled into the log2 domain; lanes past head_dim hold zeros
    qv = []
    for i in range(dpl):
        d = kb.add(lane_r, i * tpr)
        v = kb.mov(0.0, "f32")
        ok = kb.and_(row_ok, kb.setp("lo", d, d_real)) if dp != d_real else row_ok
        with kb.if_(ok):
            kb.assign(v, kb.mul(load_f32(kb, spec.dtype, kb.addr(q_p, kb.add(q_row, d), esize))[0], scale_log2))
        qv.append(v)
    m = kb.mov(_NEG_INF, "f32")
    lsum = kb.mov(0.0, "f32")
    acc = [kb.mov(0.0, "f32") for _ in range(dpl)]

    # this thread's share of each k/v tile load: element e = tid + 128*u -> (key jj, dim dd)
    loads = []
    for u in range(-(-bk * dp // THREADS)):
        e = kb.add(tid, u * THREADS)
        jj = kb.div(e, dp)
        dd = kb.sub(e, kb.mul(jj, dp))
        in_tile = kb.setp("lo", e, bk * dp)
        if dp != d_real:
            in_tile = kb.and_(in_tile, kb.setp("lo", dd, d_real))
        loads.append((jj, dd, in_tile, kb.shared_addr(k_sh, kb.mul(e, 4)), kb.shared_addr(v_sh, kb.mul(e, 4)),
                      kb.add(kv_head, kb.mad(jj, d_real, dd)), kb.setp("lo", e, bk * dp)))
    k_rd = kb.shared_addr(k_sh, kb.mul(lane_r, 4))
    v_rd = kb.shared_addr(v_sh, kb.mul(lane_r, 4))

    kv_end = sk
    if spec.causal:
        kv_end = kb.min(sk, kb.mul(kb.add(blk, 1), rows))
    with kb.loop(0, kv_end, bk, type_="u32") as j0:
        for jj, dd, in_tile, k_st, v_st, g_off, store_ok in loads:
            kval, vval = kb.mov(0.0, "f32"), kb.mov(0.0, "f32")
            with kb.if_(kb.and_(in_tile, kb.setp("lo", kb.add(j0, jj), sk))):
                off = kb.mad(j0, d_real, g_off)
                kb.assign(kval, load_f32(kb, spec.dtype, kb.addr(k_p, off, esize))[0])
                kb.assign(vval, load_f32(kb, spec.dtype, kb.addr(v_p, off, esize))[0])
            with kb.if_(store_ok):
                kb.st("shared", k_st, kval)
                kb.st("shared", v_st, vval)
        kb.bar_sync(0)
        scores = []
        for jj in range(bk):
            part = kb.mul(qv[0], kb.ld("shared", "f32", k_rd, offset=jj * dp * 4))
            for i in range(1, dpl):
                part = kb.fma(qv[i], kb.ld("shared", "f32", k_rd, offset=(jj * dp + i * tpr) * 4), part)
            step = tpr // 2
            while step >= 1:
                part = kb.add(part, kb.shfl_sync("bfly", part, step))
                step //= 2
            j = kb.add(j0, jj)
            valid = kb.setp("lo", j, sk)
            if spec.causal:
                valid = kb.and_(valid, kb.setp("ls", j, qi))
            scores.append(kb.selp(part, _NEG_INF, valid, type_="f32"))
        tile_max = scores[0]
        for s in scores[1:]:
            tile_max = kb.max(tile_max, s)
        m_new = kb.max(m, tile_max)
        # a row with every key so far masked keeps m = -inf; subtract 0 then (ex2(-inf) = 0)
        m_use = kb.selp(0.0, m_new, kb.setp("eq", m_new, _NEG_INF), type_="f32")
        alpha = kb.ex2(kb.sub(m, m_use))
        kb.mul(lsum, alpha, out=lsum)
        for i in range(dpl):
            kb.mul(acc[i], alpha, out=acc[i])
        for jj, s in enumerate(scores):
            p = kb.ex2(kb.sub(s, m_use))
            kb.add(lsum, p, out=lsum)
            for i in range(dpl):
                kb.fma(p, kb.ld("shared", "f32", v_rd, offset=(jj * dp + i * tpr) * 4), acc[i], out=acc[i])
        kb.assign(m, m_new)
        kb.bar_sync(0)

    inv = kb.rcp(lsum)
    for i in range(dpl):
        d = kb.add(lane_r, i * tpr)
        ok = kb.and_(row_ok, kb.setp("lo", d, d_real)) if dp != d_real else row_ok
        with kb.if_(ok):
            store_f32(kb, spec.dtype, kb.addr(o_p, kb.add(q_row, d), esize), [kb.mul(acc[i], inv)])
    if spec.lse:
        with kb.if_(kb.and_(row_ok, kb.setp("eq", lane_r, 0))):
            lse = kb.mul(kb.add(m, kb.lg2(lsum)), LN_2)
            kb.st("global", kb.addr(lse_p, kb.mad(kb.mad(b, hq, h), sq, qi), 4), lse)
    return kb.ptx()


def configurations(arch: str) -> list[AttentionSimtSpec]:
    """Every dtype, mask and lse output at the head dims of ``REGISTERED_HEAD_DIMS``. The kernel
    bakes head_dim and a call may pass any 1..256: other head dims are generated on first use
    and are not assembled by ``kernels --validate`` (tests/test_registry_exact.py lists this as
    the one exception)."""
    return [AttentionSimtSpec(arch=arch, dtype=t, head_dim=d, causal=c, lse=lse)
            for t in ("f32", "f16", "bf16") for d in REGISTERED_HEAD_DIMS for c in (False, True)
            for lse in (False, True)]


#: the head dims whose SIMT kernels are registered (the models' sizes, an odd one, the limit)
REGISTERED_HEAD_DIMS = (16, 32, 64, 72, 96, 128, 256)


registry.register_family(FAMILY, AttentionSimtSpec, generate, configurations)
