"""The dQ kernel of the attention backward on tensor cores (sm_80+): ``mma.sync m16n8k16``, f16/bf16
in, f32 accumulate, head_dim 64 or 128 (the fragment plans of ``attention_mma``).

A CTA of 4 warps owns 64 query rows of one (batch, head), warp ``w`` rows ``16w..16w+15``. Q and
dO are staged once and kept as A fragments; per key tile of 64 rows (K and V through shared
memory by ``cp.async``, tails zero-filled):

    S = Q K^T (B: K key-major, ldmatrix)       dP = dO V^T (B: V key-major, ldmatrix)
    P = ex2(S * scale log2 e - lse log2 e)     dS = P * (dP - D)
    dQ += dS K (A: dS rounded to the input type from the accumulators, B: K by ldmatrix.trans)

dQ is written times ``scale`` in the input type. Masks as the forward (key tails; causal top-left).
Parameters as the SIMT dq kernel: q, k, v, do, lse, delta, dq; u32 sq, sk, hq, hkv, group; f32
scale_log2, scale. dK and dV still come from the SIMT kernel (``attention_bwd``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import registry
from oxicuda.ptx.builder import LOG2_E, KernelBuilder
from oxicuda.ptx.spec import KernelSpec

from .attention_mma import (
    _MMA,
    ARCHS,
    BLOCK_K,
    BLOCK_Q,
    COPY_BYTES,
    DTYPES,
    HEAD_DIMS,
    K_ORIGINS,
    P_TO_A,
    Q_ORIGINS,
    ROW_SLOT,
    THREADS,
    V_ORIGINS,
    _lane_offset,
    _pack_half2,
)

FAMILY = "attention_bwd_mma"
_NEG_INF = float("-inf")


@dataclass(frozen=True)
class AttentionBwdMmaSpec(KernelSpec):
    """The tensor-core dQ kernel: input type, head_dim, causal."""

    family: ClassVar[str] = FAMILY
    dtype: str = "bf16"
    head_dim: int = 64
    causal: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in DTYPES or self.head_dim not in HEAD_DIMS:
            raise ValueError(f"AttentionBwdMmaSpec: dtype={self.dtype!r}, head_dim={self.head_dim}; allowed "
                             f"{DTYPES} x {HEAD_DIMS}")
        if self.sm < 80:
            raise ValueError(f"AttentionBwdMmaSpec: arch={self.arch!r}; needs sm_80+")

    @property
    def row_bytes(self) -> int:
        return self.head_dim * 2 + 16


def generate(spec: AttentionBwdMmaSpec) -> str:
    """PTX of the tensor-core dQ kernel (see the module docstring)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    q_p, k_p, v_p, do_p, lse_p, d_p, dq_p = (kb.param_ptr(n) for n in ("q", "k", "v", "do", "lse", "delta", "dq"))
    sq, sk, hq, hkv, group = (kb.param(n, "u32") for n in ("sq", "sk", "hq", "hkv", "group"))
    scale_log2, scale = kb.param("scale_log2", "f32"), kb.param("scale", "f32")
    kb.reqntid(THREADS)
    D, rs, dt = spec.head_dim, spec.row_bytes, spec.dtype
    ks_steps, d_tiles = D // 16, D // 8
    k_sh = kb.shared("k_tile", "b8", BLOCK_K * rs, align=128)
    v_sh = kb.shared("v_tile", "b8", BLOCK_K * rs, align=128)
    k0, v0 = kb.shared_addr(k_sh), kb.shared_addr(v_sh)

    tid = kb.tid()
    warp, lane = kb.shr(tid, 5), kb.and_(tid, 31)
    g, t = kb.shr(lane, 2), kb.and_(lane, 3)
    quad, r8 = kb.shr(lane, 3), kb.and_(lane, 7)
    blk, h, b = kb.ctaid("x"), kb.ctaid("y"), kb.ctaid("z")
    if spec.causal:
        blk = kb.sub(kb.sub(kb.nctaid("x"), 1), blk)
    q0 = kb.mul(blk, BLOCK_Q)
    hk = kb.div(h, group)
    q_off = kb.mul(kb.mad(b, hq, h), kb.mul(sq, D))
    q_head, do_head, dq_head = (kb.addr(p, q_off, 2) for p in (q_p, do_p, dq_p))
    kv_off = kb.mul(kb.mad(b, hkv, hk), kb.mul(sk, D))
    k_head, v_head = kb.addr(k_p, kv_off, 2), kb.addr(v_p, kv_off, 2)

    cpr = D * 2 // COPY_BYTES
    rows_per_pass = THREADS // cpr
    trow, tcc = kb.div(tid, cpr), kb.and_(tid, cpr - 1)
    dst_lane = kb.mad(trow, rs, kb.mul(tcc, COPY_BYTES))
    src_lane = kb.mad(trow, D, kb.mul(tcc, COPY_BYTES // 2))

    def load_tile(smem0, head, row0, limit) -> None:
        """cp.async a 64 x D tile from rows row0..; rows >= limit zero-filled (one group)."""
        dst = kb.add(smem0, dst_lane)
        src = kb.addr(head, kb.mad(row0, D, src_lane), 2)
        rows_left = kb.sub(kb.bitcast(limit, "s32"), kb.bitcast(kb.add(row0, trow), "s32"))
        for u in range(BLOCK_K // rows_per_pass):
            ok = kb.setp("gt", rows_left, u * rows_per_pass)
            src_u = kb.selp(kb.add(src, u * rows_per_pass * D * 2), head, ok, type_="u64")
            size = kb.selp(COPY_BYTES, 0, ok, type_="u32")
            kb.cp_async(dst, src_u, COPY_BYTES, "cg", src_size=size, dst_offset=u * rows_per_pass * rs)
        kb.cp_async_commit()

    # Q and dO as A fragments, once
    load_tile(k0, q_head, q0, sq)
    load_tile(v0, do_head, q0, sq)
    kb.cp_async_wait(0)
    kb.bar_sync(0)
    a_off = _lane_offset(kb, quad, r8, list(Q_ORIGINS), kb.mul(warp, 16), rs)
    q_frag = [kb.ldmatrix(4, kb.add(k0, a_off), offset=ks * 32) for ks in range(ks_steps)]
    do_frag = [kb.ldmatrix(4, kb.add(v0, a_off), offset=ks * 32) for ks in range(ks_steps)]
    kb.bar_sync(0)

    k_x4 = [(K_ORIGINS[j & 1][0] + 8 * (j >> 1), K_ORIGINS[j & 1][1]) for j in range(4)]
    t_x4 = [(V_ORIGINS[j & 1][0], V_ORIGINS[j & 1][1] + 8 * (j >> 1)) for j in range(4)]
    nt_off = _lane_offset(kb, quad, r8, k_x4, 0, rs)
    k_nt, v_nt = kb.add(k0, nt_off), kb.add(v0, nt_off)
    k_tr = kb.add(k0, _lane_offset(kb, quad, r8, t_x4, 0, rs))

    warp_row0 = kb.mad(warp, 16, q0)
    row_q = [kb.add(warp_row0, g), None]
    row_q[1] = kb.add(row_q[0], 8)
    last_key = kb.sub(sk, 1)
    limit = [kb.min(last_key, r) if spec.causal else last_key for r in row_q]
    lse2, delta = [], []
    for r in row_q:
        lv, dv = kb.mov(0.0, "f32"), kb.mov(0.0, "f32")
        with kb.if_(kb.setp("lo", r, sq)):
            stat = kb.addr(lse_p, kb.mad(kb.mad(b, hq, h), sq, r), 4)
            kb.assign(lv, kb.mul(kb.ld("global", "f32", stat), LOG2_E))
            kb.assign(dv, kb.ld("global", "f32", kb.addr(d_p, kb.mad(kb.mad(b, hq, h), sq, r), 4)))
        lse2.append(lv)
        delta.append(dv)
    acc = [[kb.mov(0.0, "f32") for _ in range(4)] for _ in range(d_tiles)]
    col_lane = kb.mul(t, 2)

    kv_end = kb.min(sk, kb.add(q0, BLOCK_Q)) if spec.causal else sk
    with kb.loop(0, kv_end, BLOCK_K, type_="u32") as j0:
        load_tile(k0, k_head, j0, sk)
        load_tile(v0, v_head, j0, sk)
        kb.cp_async_wait(0)
        kb.bar_sync(0)
        s = [[kb.mov(0.0, "f32") for _ in range(4)] for _ in range(BLOCK_K // 8)]
        dp = [[kb.mov(0.0, "f32") for _ in range(4)] for _ in range(BLOCK_K // 8)]
        for ks in range(ks_steps):
            for pair in range(BLOCK_K // 16):
                kr = kb.ldmatrix(4, k_nt, offset=pair * 16 * rs + ks * 32)
                vr = kb.ldmatrix(4, v_nt, offset=pair * 16 * rs + ks * 32)
                for half in (0, 1):
                    st, dpt = s[2 * pair + half], dp[2 * pair + half]
                    kb.mma_sync("m16n8k16", dt, dt, "f32", q_frag[ks], kr[2 * half:2 * half + 2], st, d=st)
                    kb.mma_sync("m16n8k16", dt, dt, "f32", do_frag[ks], vr[2 * half:2 * half + 2], dpt, d=dpt)
        col0 = kb.add(j0, col_lane)
        for tile in range(BLOCK_K // 8):
            for i in range(4):
                slot = ROW_SLOT[i]
                x = kb.fma(s[tile][i], scale_log2, kb.neg(lse2[slot]))
                ok = kb.setp("ls", kb.add(col0, tile * 8 + (i & 1)), limit[slot])
                p = kb.selp(kb.ex2(x), 0.0, ok, type_="f32")
                kb.mul(p, kb.sub(dp[tile][i], delta[slot]), out=s[tile][i])  # s now holds dS
        for kc in range(BLOCK_K // 16):
            a = []
            for r in range(_MMA.a.regs):
                (tl, il), (th, ih) = P_TO_A[2 * r], P_TO_A[2 * r + 1]
                a.append(_pack_half2(kb, s[2 * kc + tl][il], s[2 * kc + th][ih], dt))
            for pair in range(d_tiles // 2):
                regs = kb.ldmatrix(4, k_tr, trans=True, offset=kc * 16 * rs + pair * 32)
                for half in (0, 1):
                    tile = acc[2 * pair + half]
                    kb.mma_sync("m16n8k16", dt, dt, "f32", a, regs[2 * half:2 * half + 2], tile, d=tile)
        kb.bar_sync(0)

    for slot in (0, 1):
        with kb.if_(kb.setp("lo", row_q[slot], sq)):
            row_ptr = kb.addr(dq_head, kb.mad(row_q[slot], D, col_lane), 2)
            lo, hi = [i for i in range(4) if ROW_SLOT[i] == slot]
            for dtile in range(d_tiles):
                packed = _pack_half2(kb, kb.mul(acc[dtile][lo], scale), kb.mul(acc[dtile][hi], scale), dt)
                kb.st("global", row_ptr, packed, offset=dtile * 16)
    return kb.ptx()


def configurations(arch: str) -> list[AttentionBwdMmaSpec]:
    """dtype x head_dim x causal (8 kernels per arch)."""
    return [AttentionBwdMmaSpec(arch=arch, dtype=t, head_dim=d, causal=c)
            for t in DTYPES for d in HEAD_DIMS for c in (False, True)]


registry.register_family(FAMILY, AttentionBwdMmaSpec, generate, configurations, archs=ARCHS)
