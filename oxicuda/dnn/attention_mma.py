"""Fused attention forward on tensor cores (sm_80+): ``mma.sync m16n8k16`` with f16/bf16 inputs and
f32 accumulation, flash-attention-2 style (online softmax, scores never leave registers).

Work split: a CTA of 4 warps owns 64 query rows of one (batch, head); warp ``w`` owns rows
``16w .. 16w+15``. The Q tile is staged once in shared memory with ``cp.async`` and read into
registers as A fragments with ``ldmatrix``. Key and value tiles of 64 rows stream through shared
memory (``cp.async``, rows beyond the sequence zero-filled by a short ``src-size``); K gives the B
fragments of ``S = Q K^T`` through ``ldmatrix`` and V those of ``P V`` through ``ldmatrix.trans``.
The loads overlap the math: V_j is in flight while S_j is computed, K_{j+1} while P_j V_j is.
Causal CTAs run the last (longest) query blocks first.

Softmax runs on the accumulator fragments: each lane holds two rows (``groupID`` and
``groupID + 8``), row maxima are reduced over the quad with two butterfly shuffles, scores are
scaled by ``scale * log2(e)`` so that ``p = ex2(s - m)`` is ``exp(scale * q.k - max)``; masked keys
(``j >= Sk``, and ``j > i`` when causal, top-left like PyTorch) become -inf, in the tiles
where a warp's rows meet the sequence end or the diagonal only (a warp-uniform branch). P is
rounded to the input type in registers and used directly as the A operand of the second mma:
the accumulator layout of two adjacent n8 tiles is the A layout of one k16 step (derived and
checked below from ``oxicuda.ptx.fragments``, the tables the emulator computes mma from). Row
sums stay per lane (unrounded f32 p) and are reduced over the quad once at the end.

Launch: grid (ceil(Sq / 64), Hq, B), block 128, static shared memory 2 x 64 x (D + 8) halves.
Parameters: q, k, v, o, lse pointers; u32 sq, sk, hq, hkv, group; f32 scale_log2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.ptx import fragments, registry
from oxicuda.ptx.builder import LN_2, KernelBuilder, Value
from oxicuda.ptx.fragment_plans import quad_select
from oxicuda.ptx.spec import KernelSpec

FAMILY = "attention_fwd_mma"
THREADS = 128
WARPS = 4
BLOCK_Q = 64  # query rows per CTA (16 per warp)
BLOCK_K = 64  # keys per K/V tile
HEAD_DIMS = (64, 128)
DTYPES = ("f16", "bf16")
ARCHS = ("sm_80", "sm_86", "sm_90")
COPY_BYTES = 16
_NEG_INF = float("-inf")
_MMA = fragments.mma_shape("m16n8k16", "f16", "f32")  # bf16 has the same fragment tables


# -- fragment plans, derived from oxicuda.ptx.fragments and checked at import --------------------
def _ldmatrix_origins(frag: fragments.Fragment, to_smem, trans: bool) -> tuple[tuple[int, int], ...]:
    """For each register of ``frag``: the (smem row, smem col) origin of the 8x8 b16 matrix that
    ``ldmatrix`` (``.trans`` when ``trans``) must load into it, given ``to_smem(row, col)`` mapping
    fragment coordinates to shared-memory (row, col). Checked for every lane and element."""
    origins = []
    for r in range(frag.regs):
        row, col = to_smem(*frag.table[0][r * frag.per_reg])
        origins.append((row - row % 8, col - col % 8))
    for lane in range(fragments.WARP):
        for e, rc in enumerate(frag.table[lane]):
            r, h = divmod(e, frag.per_reg)
            mr, mc = fragments.ldmatrix_elements(lane, trans)[h]
            if (origins[r][0] + mr, origins[r][1] + mc) != to_smem(*rc):
                raise AssertionError(f"attention_mma: ldmatrix plan fails at lane {lane} element {e}")
    return tuple(origins)


#: Q as A (row = query, col = head dim), stored query-major: ldmatrix
Q_ORIGINS = _ldmatrix_origins(_MMA.a, lambda m, k: (m, k), trans=False)
#: K as B (row = head dim, col = key), stored key-major: ldmatrix
K_ORIGINS = _ldmatrix_origins(_MMA.b, lambda k, n: (n, k), trans=False)
#: V as B (row = key, col = head dim), stored key-major: ldmatrix.trans
V_ORIGINS = _ldmatrix_origins(_MMA.b, lambda k, n: (k, n), trans=True)


def _p_as_a_operand() -> tuple[tuple[int, int], ...]:
    """For each A element e of one k16 step: (which of the two n8 accumulator tiles, which
    accumulator element) holds the same (row, col) in the same lane."""
    out = []
    for e in range(_MMA.a.elements):
        hit = None
        for tile in (0, 1):
            for i in range(_MMA.c.elements):
                if all(
                    (_MMA.c.table[lane][i][0], _MMA.c.table[lane][i][1] + 8 * tile) == _MMA.a.table[lane][e]
                    for lane in range(fragments.WARP)
                ):
                    hit = (tile, i)
        if hit is None:
            raise AssertionError(f"attention_mma: A element {e} is not an accumulator element of the same lane")
        out.append(hit)
    return tuple(out)


P_TO_A = _p_as_a_operand()


def _accumulator_rows() -> tuple[int, ...]:
    """Row slot (0: row groupID, 1: row groupID + 8) of each accumulator element, checked: the lanes
    holding one row are the quad sharing groupID, so two butterfly shuffles (1, 2) reduce a row."""
    slots = []
    for i in range(_MMA.c.elements):
        slot = _MMA.c.table[0][i][0] // 8
        for lane in range(fragments.WARP):
            row, col = _MMA.c.table[lane][i]
            if row != (lane >> 2) + 8 * slot or col != 2 * (lane % 4) + (i & 1):
                raise AssertionError("attention_mma: accumulator rows are not (groupID + 8*slot), cols 2*tig + i&1")
        slots.append(slot)
    return tuple(slots)


ROW_SLOT = _accumulator_rows()


# -- the spec -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class AttentionMmaSpec(KernelSpec):
    """One tensor-core attention forward kernel: input type, head_dim, causal, logsumexp output."""

    family: ClassVar[str] = FAMILY
    dtype: str = "bf16"
    head_dim: int = 64
    causal: bool = False
    lse: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in DTYPES:
            raise ValueError(f"AttentionMmaSpec: dtype={self.dtype!r}; allowed {DTYPES}")
        if self.head_dim not in HEAD_DIMS:
            raise ValueError(f"AttentionMmaSpec: head_dim={self.head_dim}; allowed {HEAD_DIMS}")
        if self.sm < 80:
            raise ValueError(f"AttentionMmaSpec: arch={self.arch!r}; mma.sync f16/bf16 with cp.async needs sm_80+")

    @property
    def row_bytes(self) -> int:
        """Shared-memory row stride: 16 bytes of padding keep ldmatrix rows on distinct banks."""
        return self.head_dim * 2 + 16

    @property
    def shared_bytes(self) -> int:
        return 2 * BLOCK_K * self.row_bytes


def _lane_offset(kb: KernelBuilder, quad: Value, r8: Value, origins: list[tuple[int, int]], row0: int | Value,
                 rs: int) -> Value:
    """Byte offset of this lane's ldmatrix row address: (row0 + origin row + lane%8) * rs + origin col * 2."""
    row = kb.add(quad_select(kb, quad, [o[0] for o in origins]), r8)
    if not isinstance(row0, int) or row0:
        row = kb.add(row, row0)
    return kb.mad(row, rs, kb.mul(quad_select(kb, quad, [o[1] for o in origins]), 2))


def _pack_half2(kb: KernelBuilder, lo: Value, hi: Value, dtype: str) -> Value:
    """Two f32 rounded (rn) to f16/bf16 and packed into one b32 (lo in bits 0-15). Two cvt and a
    mov rather than ``cvt.rn.{dtype}x2.f32``: the emulator does not run the two-source cvt yet;
    ptxas fuses the pair on the GPU."""
    return kb.bitcast(kb.pack(kb.cvt(lo, dtype), kb.cvt(hi, dtype)), "b32")


def generate(spec: AttentionMmaSpec) -> str:
    """PTX of one tensor-core attention kernel (see the module docstring)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    q_p, k_p, v_p, o_p, lse_p = (kb.param_ptr(n) for n in ("q", "k", "v", "o", "lse"))
    sq, sk, hq, hkv, group = (kb.param(n, "u32") for n in ("sq", "sk", "hq", "hkv", "group"))
    scale_log2 = kb.param("scale_log2", "f32")
    kb.reqntid(THREADS)
    D, rs, dt = spec.head_dim, spec.row_bytes, spec.dtype
    ks_steps, d_tiles = D // 16, D // 8
    kq_sh = kb.shared("kq_tile", "b8", BLOCK_K * rs, align=128)  # Q first, then the K tiles
    v_sh = kb.shared("v_tile", "b8", BLOCK_K * rs, align=128)
    kq0, v0 = kb.shared_addr(kq_sh), kb.shared_addr(v_sh)

    tid = kb.tid()
    warp, lane = kb.shr(tid, 5), kb.and_(tid, 31)
    g, t = kb.shr(lane, 2), kb.and_(lane, 3)
    quad, r8 = kb.shr(lane, 3), kb.and_(lane, 7)
    blk, h, b = kb.ctaid("x"), kb.ctaid("y"), kb.ctaid("z")
    if spec.causal:  # the longest rows first: CTAs launched last then have the least work
        blk = kb.sub(kb.sub(kb.nctaid("x"), 1), blk)
    q0 = kb.mul(blk, BLOCK_Q)
    hk = kb.div(h, group)
    q_head = kb.addr(q_p, kb.mul(kb.mad(b, hq, h), kb.mul(sq, D)), 2)
    o_head = kb.addr(o_p, kb.mul(kb.mad(b, hq, h), kb.mul(sq, D)), 2)
    kv_off = kb.mul(kb.mad(b, hkv, hk), kb.mul(sk, D))
    k_head, v_head = kb.addr(k_p, kv_off, 2), kb.addr(v_p, kv_off, 2)

    # this thread's 16-byte chunks of a 64 x D tile: row trow + u * rows_per_pass, chunk tcc
    cpr = D * 2 // COPY_BYTES
    rows_per_pass = THREADS // cpr
    trow, tcc = kb.div(tid, cpr), kb.and_(tid, cpr - 1)
    dst_lane = kb.mad(trow, rs, kb.mul(tcc, COPY_BYTES))
    src_lane = kb.mad(trow, D, kb.mul(tcc, COPY_BYTES // 2))

    def load_tile(smem0: Value, head: Value, row0: Value, limit: Value) -> None:
        """cp.async one 64 x D tile from rows row0.. of a head; rows >= limit are zero-filled."""
        dst = kb.add(smem0, dst_lane)
        src = kb.addr(head, kb.mad(row0, D, src_lane), 2)
        passes = BLOCK_K // rows_per_pass
        with kb.if_(kb.setp("ls", kb.add(row0, BLOCK_K), limit)):  # a whole tile: no checks
            for u in range(passes):
                kb.cp_async(dst, src, COPY_BYTES, "cg", dst_offset=u * rows_per_pass * rs,
                            src_offset=u * rows_per_pass * D * 2)
        with kb.else_():
            rows_left = kb.sub(kb.bitcast(limit, "s32"), kb.bitcast(kb.add(row0, trow), "s32"))
            for u in range(passes):
                ok = kb.setp("gt", rows_left, u * rows_per_pass)
                src_u = kb.selp(kb.add(src, u * rows_per_pass * D * 2), head, ok, type_="u64")
                size = kb.selp(COPY_BYTES, 0, ok, type_="u32")
                kb.cp_async(dst, src_u, COPY_BYTES, "cg", src_size=size, dst_offset=u * rows_per_pass * rs)
        kb.cp_async_commit()

    # Q fragments, once: stage the tile in the K buffer, then registers
    load_tile(kq0, q_head, q0, sq)
    kb.cp_async_wait(0)
    kb.bar_sync(0)
    q_addr = kb.add(kq0, _lane_offset(kb, quad, r8, list(Q_ORIGINS), kb.mul(warp, 16), rs))
    q_frag = [kb.ldmatrix(4, q_addr, offset=ks * 32) for ks in range(ks_steps)]
    kb.bar_sync(0)

    # x4 loads: K covers two n8 key tiles of one k16 step; V (trans) two n8 dim tiles of one k16 step
    k_x4 = [(K_ORIGINS[j & 1][0] + 8 * (j >> 1), K_ORIGINS[j & 1][1]) for j in range(4)]
    v_x4 = [(V_ORIGINS[j & 1][0], V_ORIGINS[j & 1][1] + 8 * (j >> 1)) for j in range(4)]
    k_addr = kb.add(kq0, _lane_offset(kb, quad, r8, k_x4, 0, rs))
    v_addr = kb.add(v0, _lane_offset(kb, quad, r8, v_x4, 0, rs))

    # this lane's two rows (slot 0: groupID, slot 1: groupID + 8) and their key limits
    warp_row0 = kb.mad(warp, 16, q0)
    row_q = [kb.add(warp_row0, g), None]
    row_q[1] = kb.add(row_q[0], 8)
    last_key = kb.sub(sk, 1)
    limit = [kb.min(last_key, r) if spec.causal else last_key for r in row_q]
    m = [kb.mov(_NEG_INF, "f32") for _ in range(2)]
    lsum = [kb.mov(0.0, "f32") for _ in range(2)]
    acc = [[kb.mov(0.0, "f32") for _ in range(4)] for _ in range(d_tiles)]
    col_lane = kb.mul(t, 2)

    kv_end = kb.min(sk, kb.add(q0, BLOCK_Q)) if spec.causal else sk
    load_tile(kq0, k_head, kb.mov(0, "u32"), sk)
    with kb.loop(0, kv_end, BLOCK_K, type_="u32") as j0:
        load_tile(v0, v_head, j0, sk)
        kb.cp_async_wait(1)  # K_j has landed (V_j may still be in flight)
        kb.bar_sync(0)
        s = [[kb.mov(0.0, "f32") for _ in range(4)] for _ in range(BLOCK_K // 8)]
        for ks in range(ks_steps):
            for pair in range(BLOCK_K // 16):
                regs = kb.ldmatrix(4, k_addr, offset=pair * 16 * rs + ks * 32)
                for half in (0, 1):
                    tile = s[2 * pair + half]
                    kb.mma_sync("m16n8k16", dt, dt, "f32", q_frag[ks], regs[2 * half:2 * half + 2], tile, d=tile)
        kb.bar_sync(0)  # every warp is done with K_j: fetch K_{j+1} while P V runs
        nxt = kb.add(j0, BLOCK_K)
        with kb.if_(kb.setp("lo", nxt, kv_end)):
            load_tile(kq0, k_head, nxt, sk)
        kb.cp_async_commit()  # an empty group on the last tile keeps the wait count uniform

        # scale into the log2 domain; mask only where this warp's tile crosses Sk or the diagonal
        for tile in s:
            for i in range(4):
                kb.mul(tile[i], scale_log2, out=tile[i])
        needs_mask = kb.setp("hi", kb.add(j0, BLOCK_K), sk)
        if spec.causal:
            needs_mask = kb.or_(needs_mask, kb.setp("hi", kb.add(j0, BLOCK_K - 1), warp_row0))
        with kb.if_(needs_mask):
            col0 = kb.add(j0, col_lane)
            for tile in range(BLOCK_K // 8):
                for i in range(4):
                    ok = kb.setp("ls", kb.add(col0, tile * 8 + (i & 1)), limit[ROW_SLOT[i]])
                    kb.selp(s[tile][i], _NEG_INF, ok, type_="f32", out=s[tile][i])
        # online softmax per row slot
        m_use = []
        for slot in (0, 1):
            mx = None
            for tile in range(BLOCK_K // 8):
                for i in range(4):
                    if ROW_SLOT[i] == slot:
                        mx = s[tile][i] if mx is None else kb.max(mx, s[tile][i])
            for step in (1, 2):
                mx = kb.max(mx, kb.shfl_sync("bfly", mx, step))
            m_new = kb.max(m[slot], mx)
            # a row whose keys so far are all masked keeps m = -inf; subtract 0 then (ex2(-inf) = 0)
            mu = kb.selp(0.0, m_new, kb.setp("eq", m_new, _NEG_INF), type_="f32")
            alpha = kb.ex2(kb.sub(m[slot], mu))
            kb.mul(lsum[slot], alpha, out=lsum[slot])
            for dtile in acc:
                for i in range(4):
                    if ROW_SLOT[i] == slot:
                        kb.mul(dtile[i], alpha, out=dtile[i])
            kb.assign(m[slot], m_new)
            m_use.append(mu)
        for tile in range(BLOCK_K // 8):
            for i in range(4):
                p = kb.ex2(kb.sub(s[tile][i], m_use[ROW_SLOT[i]]), out=s[tile][i])
                kb.add(lsum[ROW_SLOT[i]], p, out=lsum[ROW_SLOT[i]])

        kb.cp_async_wait(1)  # V_j has landed
        kb.bar_sync(0)
        for kc in range(BLOCK_K // 16):
            a = []
            for r in range(_MMA.a.regs):
                (tl, il), (th, ih) = P_TO_A[2 * r], P_TO_A[2 * r + 1]
                a.append(_pack_half2(kb, s[2 * kc + tl][il], s[2 * kc + th][ih], dt))
            for pair in range(d_tiles // 2):
                regs = kb.ldmatrix(4, v_addr, trans=True, offset=kc * 16 * rs + pair * 32)
                for half in (0, 1):
                    tile = acc[2 * pair + half]
                    kb.mma_sync("m16n8k16", dt, dt, "f32", a, regs[2 * half:2 * half + 2], tile, d=tile)
        kb.bar_sync(0)  # every warp is done with V_j before the next tile overwrites it
    kb.cp_async_wait(0)

    # normalize and store: elements (0, 1) and (2, 3) are adjacent columns of one row
    for slot in (0, 1):
        for step in (1, 2):
            kb.add(lsum[slot], kb.shfl_sync("bfly", lsum[slot], step), out=lsum[slot])
    inv = [kb.rcp(x) for x in lsum]
    for slot in (0, 1):
        with kb.if_(kb.setp("lo", row_q[slot], sq)):
            row_ptr = kb.addr(o_head, kb.mad(row_q[slot], D, col_lane), 2)
            lo, hi = [i for i in range(4) if ROW_SLOT[i] == slot]
            for dtile in range(d_tiles):
                packed = _pack_half2(kb, kb.mul(acc[dtile][lo], inv[slot]), kb.mul(acc[dtile][hi], inv[slot]), dt)
                kb.st("global", row_ptr, packed, offset=dtile * 16)
            if spec.lse:
                with kb.if_(kb.setp("eq", t, 0)):
                    val = kb.mul(kb.add(m[slot], kb.lg2(lsum[slot])), LN_2)
                    kb.st("global", kb.addr(lse_p, kb.mad(kb.mad(b, hq, h), sq, row_q[slot]), 4), val)
    return kb.ptx()


def configurations(arch: str) -> list[AttentionMmaSpec]:
    """Every kernel of the family for ``arch``: dtype x head_dim x causal x lse (16 kernels)."""
    return [AttentionMmaSpec(arch=arch, dtype=t, head_dim=d, causal=c, lse=lse)
            for t in DTYPES for d in HEAD_DIMS for c in (False, True) for lse in (False, True)]


registry.register_family(FAMILY, AttentionMmaSpec, generate, configurations, archs=ARCHS)
