"""The attention backward on tensor cores (sm_80+): ``mma.sync m16n8k16``, f16/bf16 in, f32
accumulate (the fragment plans of ``attention_mma``): the dQ kernel at head_dim 64 and 128, the
dK/dV kernel (``generate_dkdv``) at head_dim 64 (at 128 its registers pass 255 and ptxas spills,
so head_dim 128 keeps the SIMT dK/dV kernel of ``attention_bwd``).

The dQ kernel:

A CTA of 4 warps owns 64 query rows of one (batch, head), warp ``w`` rows ``16w..16w+15``. Q and
dO are staged once and kept as A fragments; per key tile of 64 rows (K and V through shared
memory by ``cp.async``, tails zero-filled):

    S = Q K^T (B: K key-major, ldmatrix)       dP = dO V^T (B: V key-major, ldmatrix)
    P = ex2(S * scale log2 e - lse log2 e)     dS = P * (dP - D)
    dQ += dS K (A: dS rounded to the input type from the accumulators, B: K by ldmatrix.trans)

dQ is written times ``scale`` in the input type. Masks as the forward (key tails; causal top-left).
Parameters as the SIMT dq kernel: q, k, v, do, lse, delta, dq; u32 sq, sk, hq, hkv, group; f32
scale_log2, scale.
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
#: the dK/dV kernel keeps K and V fragments and both accumulators in registers: at head_dim 128
#: that passes 255 registers, so head_dim 128 keeps the SIMT dK/dV kernel
DKDV_HEAD_DIMS = (64,)
_NEG_INF = float("-inf")


@dataclass(frozen=True)
class AttentionBwdMmaSpec(KernelSpec):
    """A tensor-core backward kernel: ``kind`` ("dq"; "dkdv" at head_dim 64 only), input type,
    head_dim, causal."""

    family: ClassVar[str] = FAMILY
    dtype: str = "bf16"
    head_dim: int = 64
    causal: bool = False
    kind: str = "dq"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in DTYPES or self.head_dim not in HEAD_DIMS:
            raise ValueError(f"AttentionBwdMmaSpec: dtype={self.dtype!r}, head_dim={self.head_dim}; allowed "
                             f"{DTYPES} x {HEAD_DIMS}")
        if self.sm < 80:
            raise ValueError(f"AttentionBwdMmaSpec: arch={self.arch!r}; needs sm_80+")
        if self.kind not in ("dq", "dkdv") or (self.kind == "dkdv" and self.head_dim not in DKDV_HEAD_DIMS):
            raise ValueError(f"AttentionBwdMmaSpec: kind={self.kind!r} at head_dim {self.head_dim}; allowed 'dq', "
                             f"and 'dkdv' at head_dim {DKDV_HEAD_DIMS}")

    @property
    def row_bytes(self) -> int:
        return self.head_dim * 2 + 16


def generate(spec: AttentionBwdMmaSpec) -> str:
    """PTX of the tensor-core dQ or dK/dV kernel (see the module docstring)."""
    if spec.kind == "dkdv":
        return generate_dkdv(spec)
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


def generate_dkdv(spec: AttentionBwdMmaSpec) -> str:
    """The dK/dV kernel: a CTA of 4 warps owns 64 key rows of one (batch, kv head), warp ``w``
    keys ``16w..16w+15``, K and V kept as A fragments. Per query tile of 64 rows (Q, dO by
    cp.async; lse and D staged as f32), for every query head of the group:

        S^T = K Q^T, dP^T = V dO^T (B: Q, dO query-major, ldmatrix);  P^T = ex2(S^T s - lse);
        dS^T = P^T * (dP^T - D);  dV += P^T dO, dK += dS^T Q (B: dO, Q by ldmatrix.trans)

    Parameters as the SIMT dkdv kernel: q, k, v, do, lse, delta, dk, dv; u32 sq, sk, hq, hkv,
    group; f32 scale_log2, scale."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    q_p, k_p, v_p, do_p, lse_p, d_p, dk_p, dv_p = (kb.param_ptr(n) for n in
                                                   ("q", "k", "v", "do", "lse", "delta", "dk", "dv"))
    sq, sk, hq, hkv, group = (kb.param(n, "u32") for n in ("sq", "sk", "hq", "hkv", "group"))
    scale_log2, scale = kb.param("scale_log2", "f32"), kb.param("scale", "f32")
    kb.reqntid(THREADS)
    D, rs, dt = spec.head_dim, spec.row_bytes, spec.dtype
    ks_steps, d_tiles = D // 16, D // 8
    q_sh = kb.shared("q_tile", "b8", BLOCK_Q * rs, align=128)
    do_sh = kb.shared("do_tile", "b8", BLOCK_Q * rs, align=128)
    lse_sh, dl_sh = kb.shared("lse_tile", "f32", BLOCK_Q), kb.shared("d_tile", "f32", BLOCK_Q)
    q0s, do0s = kb.shared_addr(q_sh), kb.shared_addr(do_sh)
    lse0, dl0 = kb.shared_addr(lse_sh), kb.shared_addr(dl_sh)

    tid = kb.tid()
    warp, lane = kb.shr(tid, 5), kb.and_(tid, 31)
    g, t = kb.shr(lane, 2), kb.and_(lane, 3)
    quad, r8 = kb.shr(lane, 3), kb.and_(lane, 7)
    blk, hk, b = kb.ctaid("x"), kb.ctaid("y"), kb.ctaid("z")
    key0 = kb.mul(blk, BLOCK_K)
    kv_off = kb.mul(kb.mad(b, hkv, hk), kb.mul(sk, D))
    k_head, v_head, dk_head, dv_head = (kb.addr(p, kv_off, 2) for p in (k_p, v_p, dk_p, dv_p))

    cpr = D * 2 // COPY_BYTES
    rows_per_pass = THREADS // cpr
    trow, tcc = kb.div(tid, cpr), kb.and_(tid, cpr - 1)
    dst_lane = kb.mad(trow, rs, kb.mul(tcc, COPY_BYTES))
    src_lane = kb.mad(trow, D, kb.mul(tcc, COPY_BYTES // 2))

    def load_tile(smem0, head, row0, limit) -> None:
        dst = kb.add(smem0, dst_lane)
        src = kb.addr(head, kb.mad(row0, D, src_lane), 2)
        rows_left = kb.sub(kb.bitcast(limit, "s32"), kb.bitcast(kb.add(row0, trow), "s32"))
        for u in range(BLOCK_Q // rows_per_pass):
            ok = kb.setp("gt", rows_left, u * rows_per_pass)
            src_u = kb.selp(kb.add(src, u * rows_per_pass * D * 2), head, ok, type_="u64")
            size = kb.selp(COPY_BYTES, 0, ok, type_="u32")
            kb.cp_async(dst, src_u, COPY_BYTES, "cg", src_size=size, dst_offset=u * rows_per_pass * rs)
        kb.cp_async_commit()

    # K and V of this CTA's keys as A fragments (rows = keys), through the Q/dO buffers
    load_tile(q0s, k_head, key0, sk)
    load_tile(do0s, v_head, key0, sk)
    kb.cp_async_wait(0)
    kb.bar_sync(0)
    a_off = _lane_offset(kb, quad, r8, list(Q_ORIGINS), kb.mul(warp, 16), rs)
    k_frag = [kb.ldmatrix(4, kb.add(q0s, a_off), offset=ks * 32) for ks in range(ks_steps)]
    v_frag = [kb.ldmatrix(4, kb.add(do0s, a_off), offset=ks * 32) for ks in range(ks_steps)]
    kb.bar_sync(0)

    k_x4 = [(K_ORIGINS[j & 1][0] + 8 * (j >> 1), K_ORIGINS[j & 1][1]) for j in range(4)]
    t_x4 = [(V_ORIGINS[j & 1][0], V_ORIGINS[j & 1][1] + 8 * (j >> 1)) for j in range(4)]
    nt_off = _lane_offset(kb, quad, r8, k_x4, 0, rs)
    tr_off = _lane_offset(kb, quad, r8, t_x4, 0, rs)
    q_nt, do_nt = kb.add(q0s, nt_off), kb.add(do0s, nt_off)
    q_tr, do_tr = kb.add(q0s, tr_off), kb.add(do0s, tr_off)

    warp_key0 = kb.mad(warp, 16, key0)
    key = [kb.add(warp_key0, g), None]
    key[1] = kb.add(key[0], 8)
    key_ok = [kb.setp("lo", j, sk) for j in key]
    dk = [[kb.mov(0.0, "f32") for _ in range(4)] for _ in range(d_tiles)]
    dv = [[kb.mov(0.0, "f32") for _ in range(4)] for _ in range(d_tiles)]
    col_lane = kb.mul(t, 2)
    lse_lane, dl_lane = kb.addr(lse0, col_lane, 4), kb.addr(dl0, col_lane, 4)
    q_start = key0 if spec.causal else 0  # BLOCK_Q == BLOCK_K: earlier query tiles see none of these keys

    with kb.loop(0, group, 1, type_="u32") as gi:
        h = kb.mad(hk, group, gi)
        q_off = kb.mul(kb.mad(b, hq, h), kb.mul(sq, D))
        q_head, do_head = kb.addr(q_p, q_off, 2), kb.addr(do_p, q_off, 2)
        stat_head = kb.mul(kb.mad(b, hq, h), sq)
        with kb.loop(q_start, sq, BLOCK_Q, type_="u32") as i0:
            load_tile(q0s, q_head, i0, sq)
            load_tile(do0s, do_head, i0, sq)
            with kb.if_(kb.setp("lo", tid, BLOCK_Q)):
                i = kb.add(i0, tid)
                lv, dlv = kb.mov(0.0, "f32"), kb.mov(0.0, "f32")
                with kb.if_(kb.setp("lo", i, sq)):
                    kb.assign(lv, kb.mul(kb.ld("global", "f32", kb.addr(lse_p, kb.add(stat_head, i), 4)), LOG2_E))
                    kb.assign(dlv, kb.ld("global", "f32", kb.addr(d_p, kb.add(stat_head, i), 4)))
                kb.st("shared", kb.addr(lse0, tid, 4), lv)
                kb.st("shared", kb.addr(dl0, tid, 4), dlv)
            kb.cp_async_wait(0)
            kb.bar_sync(0)
            s = [[kb.mov(0.0, "f32") for _ in range(4)] for _ in range(BLOCK_Q // 8)]
            dp = [[kb.mov(0.0, "f32") for _ in range(4)] for _ in range(BLOCK_Q // 8)]
            for ks in range(ks_steps):
                for pair in range(BLOCK_Q // 16):
                    qr = kb.ldmatrix(4, q_nt, offset=pair * 16 * rs + ks * 32)
                    dr = kb.ldmatrix(4, do_nt, offset=pair * 16 * rs + ks * 32)
                    for half in (0, 1):
                        st, dpt = s[2 * pair + half], dp[2 * pair + half]
                        kb.mma_sync("m16n8k16", dt, dt, "f32", k_frag[ks], qr[2 * half:2 * half + 2], st, d=st)
                        kb.mma_sync("m16n8k16", dt, dt, "f32", v_frag[ks], dr[2 * half:2 * half + 2], dpt, d=dpt)
            col0 = kb.add(i0, col_lane)
            ds = [[None] * 4 for _ in range(BLOCK_Q // 8)]
            for tile in range(BLOCK_Q // 8):
                for i in range(4):
                    slot, c = ROW_SLOT[i], tile * 8 + (i & 1)
                    qi = kb.add(col0, c)
                    ok = kb.and_(key_ok[slot], kb.setp("lo", qi, sq))
                    if spec.causal:
                        ok = kb.and_(ok, kb.setp("ls", key[slot], qi))
                    x = kb.fma(s[tile][i], scale_log2, kb.neg(kb.ld("shared", "f32", lse_lane, offset=c * 4)))
                    p = kb.selp(kb.ex2(x), 0.0, ok, type_="f32", out=s[tile][i])
                    ds[tile][i] = kb.mul(p, kb.sub(dp[tile][i], kb.ld("shared", "f32", dl_lane, offset=c * 4)))
            for kc in range(BLOCK_Q // 16):
                pa, da = [], []
                for r in range(_MMA.a.regs):
                    (tl, il), (th, ih) = P_TO_A[2 * r], P_TO_A[2 * r + 1]
                    pa.append(_pack_half2(kb, s[2 * kc + tl][il], s[2 * kc + th][ih], dt))
                    da.append(_pack_half2(kb, ds[2 * kc + tl][il], ds[2 * kc + th][ih], dt))
                for pair in range(d_tiles // 2):
                    dor = kb.ldmatrix(4, do_tr, trans=True, offset=kc * 16 * rs + pair * 32)
                    qr = kb.ldmatrix(4, q_tr, trans=True, offset=kc * 16 * rs + pair * 32)
                    for half in (0, 1):
                        tv, tk = dv[2 * pair + half], dk[2 * pair + half]
                        kb.mma_sync("m16n8k16", dt, dt, "f32", pa, dor[2 * half:2 * half + 2], tv, d=tv)
                        kb.mma_sync("m16n8k16", dt, dt, "f32", da, qr[2 * half:2 * half + 2], tk, d=tk)
            kb.bar_sync(0)

    for slot in (0, 1):
        with kb.if_(key_ok[slot]):
            lo, hi = [i for i in range(4) if ROW_SLOT[i] == slot]
            dk_row = kb.addr(dk_head, kb.mad(key[slot], D, col_lane), 2)
            dv_row = kb.addr(dv_head, kb.mad(key[slot], D, col_lane), 2)
            for dtile in range(d_tiles):
                kb.st("global", dk_row, _pack_half2(kb, kb.mul(dk[dtile][lo], scale), kb.mul(dk[dtile][hi], scale),
                                                    dt), offset=dtile * 16)
                kb.st("global", dv_row, _pack_half2(kb, dv[dtile][lo], dv[dtile][hi], dt), offset=dtile * 16)
    return kb.ptx()


def configurations(arch: str) -> list[AttentionBwdMmaSpec]:
    """dq: dtype x head_dim x causal; dkdv: dtype x causal at head_dim 64 (12 kernels per arch)."""
    return [AttentionBwdMmaSpec(arch=arch, dtype=t, head_dim=d, causal=c, kind=kind)
            for kind in ("dq", "dkdv") for t in DTYPES for d in (HEAD_DIMS if kind == "dq" else DKDV_HEAD_DIMS)
            for c in (False, True)]


registry.register_family(FAMILY, AttentionBwdMmaSpec, generate, configurations, archs=ARCHS)
