"""Fused attention forward on Hopper (sm_90a): ``wgmma.mma_async`` with f16/bf16 inputs and f32
accumulation, TMA tile loads and an mbarrier ring, flash-attention-3 style (online softmax on
the wgmma accumulator fragments; scores never leave registers).

Work split: a CTA of ``spec.consumers`` warpgroups (``CONSUMERS``: 3 at head_dim 64, whose
softmax weighs more against its smaller GEMMs, 2 at 128, whose registers allow no third) owns
``64 * consumers`` query rows of one
(batch, head); warpgroup ``c`` owns rows ``64c .. 64c + 63`` and within it warp ``w`` rows
``16w .. 16w + 15`` (the wgmma accumulator layout). There is no producer warpgroup: thread 0
issues the first loads, and each warpgroup's thread 0 the refills.

Shared memory (dynamic, 1024-byte aligned): the Q tile, the K ring and the V ring (``STAGES``
tiles of ``BLOCK_K`` key rows each), the mbarriers and the release counters. Every tile is stored as head-dim
panels of 64 elements (128 bytes per row) with the 128-byte swizzle, exactly what a TMA box of
64 x rows with ``CU_TENSOR_MAP_SWIZZLE_128B`` writes; rows past the sequence end are zero-filled
by TMA, so tails need masking only. Descriptors:

- ``S = Q K^T``: A = Q (K-major: head-dim contiguous) and B = K (K-major too: a K row is
  contiguous along the head dim), 128B swizzle, SBO 1024; a k16 step advances the start by 32
  bytes inside a panel, then moves to the next panel.
- ``O += P V``: A = P from registers; B = V, MN-major (a V row is contiguous along the head dim
  = N), transpose immediate 1, 128B swizzle, SBO 1024 (8 key rows), LBO = one panel
  (``BLOCK_K * 128`` bytes: the next 64 head-dim columns); a k16 step advances 16 key rows.

P as the A operand: the f32 accumulator element of S at (row, 16kc + c) sits in the same thread
as element (row, c) of the register-A fragment of k-step kc, so P is rounded and packed in place
(``P_TO_A``, derived and checked below from ``oxicuda.ptx.fragments``, the tables the emulator
computes wgmma from). Softmax: each thread holds two rows per warp (``groupID`` and
``groupID + 8``), reduced over the quad with two butterfly shuffles; scores are scaled by
``scale * log2(e)`` and exponentiated with ``ex2``; masked keys (``j >= Sk``; ``j > i`` when
causal, top-left like PyTorch) become -inf only in tiles that cross Sk or the diagonal.

Pipeline: K and V tiles have separate rings of ``STAGES`` slots, each slot with its mbarrier
(TMA complete_tx); thread 0 fills every slot up front. A warpgroup done with a slot (its wgmma
chain has completed) counts itself on the slot's shared counter (``atom.add``); the warpgroup
that makes the count a multiple of ``consumers`` is the last reader and refills the slot with the
tile ``STAGES`` ahead, so there is no CTA barrier in the loop and the warpgroups drift freely
(their softmax phases overlap the other's GEMMs). With ``overlap`` (the default), a warpgroup
also keeps two wgmma groups in flight: per key tile j it issues S_j = Q K_j^T and
O += P_{j-1} V_{j-1}, waits for S_j only, runs the softmax of S_j while P V runs on the tensor
cores, then waits, rescales O and packs P_j (FlashAttention-3's intra-warpgroup overlap), and
the warpgroups take turns issuing their chains (named barriers 1..consumers, FlashAttention-3's
ping-pong) so that one's softmax meets the others' GEMMs; without ``overlap`` every chain is
waited for at once and the warpgroups do not take turns. Causal CTAs run the longest query blocks first.

Launch: grid (ceil(Sq / block_q), Hq, B), block ``128 * consumers``, dynamic shared memory
``spec.shared_bytes``. Parameters: o, lse pointers; u32 sq, sk, hq, hkv, group; f32 scale_log2;
three 128-byte tensor maps (q, k, v as 3-D (D, S, B*H) tensors, boxes of 64 x rows x 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from oxicuda.driver.backend import api
from oxicuda.ptx import fragments, registry
from oxicuda.ptx.builder import LN_2, KernelBuilder, Value
from oxicuda.ptx.launch_plan import KernelStep
from oxicuda.ptx.spec import KernelSpec

FAMILY = "attention_fwd_wgmma"
ARCHS = ("sm_90a",)
DTYPES = ("f16", "bf16")
HEAD_DIMS = (64, 128)
#: consumer warpgroups per CTA by head_dim (dispatch's choice; provisional until measured)
CONSUMERS = {64: 3, 128: 2}
#: (head_dim, consumers) that fit: 2 or 3 warpgroups of 128 threads; at head_dim 128 a thread
#: needs ~190 registers, more than the 168 that 384 threads may have
ALLOWED_CONSUMERS = {64: (2, 3), 128: (2,)}
BLOCK_K = 128
STAGES = 2
PANEL = 64  # head-dim elements per 128-byte swizzled row
SWIZZLE_BYTES = 128
ATOM_BYTES = 1024  # 8 rows of 128 bytes: the 128B swizzle repeat
#: CUtensorMapDataType per input type; swizzle and L2 promotion enums of cuTensorMapEncodeTiled
TMA_DATA_TYPE = {"f16": 6, "bf16": 9}
TMA_SWIZZLE_128B, TMA_L2_PROMOTION_128B = 3, 2
_NEG_INF = float("-inf")


# -- fragment plans, derived from oxicuda.ptx.fragments and checked at import --------------------
def _accumulator_plan(n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(row slot, column offset) of each m64nN accumulator register, checked for every thread:
    row = 16*warp + groupID + 8*slot and col = offset + 2*tig."""
    table = fragments.wgmma_accumulator_layout(n)
    slots, cols = [], []
    for i in range(fragments.wgmma_accumulator_regs(n)):
        slot, col0 = table[0][i][0] // 8, table[0][i][1]
        for th in range(fragments.WARPGROUP):
            w, g, t = th // 32, (th % 32) >> 2, th % 4
            if table[th][i] != (16 * w + g + 8 * slot, col0 + 2 * t):
                raise AssertionError(f"attention_wgmma: accumulator register {i} of m64n{n} is not "
                                     "(16w + groupID + 8*slot, col + 2*tig)")
        slots.append(slot)
        cols.append(col0)
    return tuple(slots), tuple(cols)


def _p_as_register_a(n: int) -> tuple[tuple[int, ...], ...]:
    """For k-step kc of ``P V`` and A element e (of the m16n8k16 A fragment, this warp's 16 rows):
    the S accumulator register holding the same (row, 16kc + col) in the same thread."""
    acc = fragments.wgmma_accumulator_layout(n)
    a = fragments.mma_shape("m16n8k16", "f16", "f32").a  # bf16 has the same fragment tables
    plan = []
    for kc in range(n // 16):
        regs = []
        for e in range(a.elements):
            hit = [i for i in range(len(acc[0]))
                   if all(acc[th][i] == (16 * (th // 32) + a.table[th % 32][e][0], 16 * kc + a.table[th % 32][e][1])
                          for th in range(fragments.WARPGROUP))]
            if len(hit) != 1:
                raise AssertionError(f"attention_wgmma: A element {e} of k-step {kc} is not one accumulator register")
            regs.append(hit[0])
        plan.append(tuple(regs))
    return tuple(plan)


ROW_SLOT, COL_OFFSET = _accumulator_plan(BLOCK_K)
P_TO_A = _p_as_register_a(BLOCK_K)
OUT_SLOT = {d: _accumulator_plan(d) for d in HEAD_DIMS}


# -- the spec -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class AttentionWgmmaSpec(KernelSpec):
    """One Hopper attention forward kernel: input type, head_dim, causal, logsumexp output."""

    family: ClassVar[str] = FAMILY
    arch: str = "sm_90a"
    dtype: str = "bf16"
    head_dim: int = 128
    causal: bool = False
    lse: bool = False
    #: intra-warpgroup overlap: the softmax of key tile j runs while P_{j-1} V_{j-1} is in flight
    overlap: bool = True
    consumers: int = 2

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.arch != "sm_90a":
            raise ValueError(f"AttentionWgmmaSpec: arch={self.arch!r}; wgmma needs 'sm_90a'")
        if self.dtype not in DTYPES:
            raise ValueError(f"AttentionWgmmaSpec: dtype={self.dtype!r}; allowed {DTYPES}")
        if self.head_dim not in HEAD_DIMS:
            raise ValueError(f"AttentionWgmmaSpec: head_dim={self.head_dim}; allowed {HEAD_DIMS}")
        if self.consumers not in ALLOWED_CONSUMERS[self.head_dim]:
            raise ValueError(f"AttentionWgmmaSpec: consumers={self.consumers} at head_dim {self.head_dim}; "
                             f"allowed {ALLOWED_CONSUMERS[self.head_dim]}")

    @property
    def block_q(self) -> int:
        """Query rows per CTA: 64 per consumer warpgroup."""
        return 64 * self.consumers

    @property
    def threads(self) -> int:
        return 128 * self.consumers

    @property
    def q_bytes(self) -> int:
        return self.block_q * self.head_dim * 2

    @property
    def tile_bytes(self) -> int:
        """One K (or V) tile: BLOCK_K rows of head_dim halves."""
        return BLOCK_K * self.head_dim * 2

    @property
    def shared_bytes(self) -> int:
        """Q, the K and V rings, 1 + 2 * STAGES mbarriers, 2 * STAGES release counters, and
        slack for the 1024-byte alignment."""
        return self.q_bytes + 2 * STAGES * self.tile_bytes + 8 * (1 + 2 * STAGES) + 4 * 2 * STAGES + ATOM_BYTES


def _tree(op, values: list[Value]) -> Value:
    """``op`` folded over ``values`` as a balanced tree: depth log2(n) instead of a chain of n
    dependent instructions (the row max and row sum of a 64-column fragment)."""
    while len(values) > 1:
        paired = [op(values[i], values[i + 1]) for i in range(0, len(values) - 1, 2)]
        values = paired + values[len(paired) * 2:]
    return values[0]


def _pack_half2(kb: KernelBuilder, lo: Value, hi: Value, dtype: str) -> Value:
    """Two f32 rounded (rn) to f16/bf16 and packed into one b32 (lo in bits 0-15)."""
    return kb.bitcast(kb.pack(kb.cvt(lo, dtype), kb.cvt(hi, dtype)), "b32")


def generate(spec: AttentionWgmmaSpec) -> str:
    """PTX of one Hopper attention kernel (see the module docstring)."""
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    o_p, lse_p = kb.param_ptr("o"), kb.param_ptr("lse")
    sq, sk, hq, hkv, group = (kb.param(n, "u32") for n in ("sq", "sk", "hq", "hkv", "group"))
    scale_log2 = kb.param("scale_log2", "f32")
    tmap_q, tmap_k, tmap_v = (kb.param_array(n) for n in ("tmap_q", "tmap_k", "tmap_v"))
    kb.reqntid(spec.threads)
    # the register file split over the block (65536 / threads, in steps of 8): what ptxas must
    # meet anyway for one resident CTA, stated so that occupancy queries (and the emulator,
    # which counts virtual registers) see it too
    kb.maxnreg(min(255, 65536 // spec.threads // 8 * 8))
    BQ, NC = spec.block_q, spec.consumers
    D, dt, TB = spec.head_dim, spec.dtype, spec.tile_bytes
    panels = D // PANEL
    smem = kb.dynamic_shared("smem", spec.shared_bytes, align=1024)
    base = kb.and_(kb.add(kb.shared_addr(smem), ATOM_BYTES - 1), 0xFFFFFC00)  # swizzled tiles: 1024-aligned
    k_ring = kb.add(base, spec.q_bytes)
    v_ring = kb.add(k_ring, STAGES * TB)
    bars = kb.add(v_ring, STAGES * TB)  # Q barrier, STAGES K barriers, STAGES V barriers
    counters = kb.add(bars, 8 * (1 + 2 * STAGES))  # u32 release counts: STAGES for K, then V

    tid = kb.tid()
    wg, lane_wg = kb.shr(tid, 7), kb.and_(tid, 127)
    warp, lane = kb.shr(lane_wg, 5), kb.and_(tid, 31)
    g, t = kb.shr(lane, 2), kb.and_(lane, 3)
    blk, h, b = kb.ctaid("x"), kb.ctaid("y"), kb.ctaid("z")
    if spec.causal:  # the longest rows first: CTAs launched last then have the least work
        blk = kb.sub(kb.sub(kb.nctaid("x"), 1), blk)
    q0 = kb.mul(blk, BQ)
    zq = kb.mad(b, hq, h)
    zkv = kb.mad(b, hkv, kb.div(h, group))
    kv_end = kb.min(sk, kb.add(q0, BQ)) if spec.causal else sk
    ntiles = kb.div(kb.add(kv_end, BLOCK_K - 1), BLOCK_K)
    leader = kb.setp("eq", tid, 0)
    panel_x = [kb.mov(p * PANEL, "u32") for p in range(panels)]

    with kb.if_(leader):
        for i in range(1 + 2 * STAGES):
            kb.mbarrier_init(kb.add(bars, 8 * i), 1)
        for i in range(2 * STAGES):
            kb.st("shared", counters, kb.mov(0, "u32"), offset=4 * i)
        kb.fence_proxy_async("shared::cta")
    kb.bar_sync(0)

    def ring_slot(ring: Value, slot: Value | int) -> Value:
        return kb.add(ring, slot * TB) if isinstance(slot, int) else kb.mad(slot, TB, ring)

    def full_bar(kind: int, slot: Value | int) -> Value:
        """The mbarrier of a K (kind 0) or V (kind 1) ring slot."""
        first = 8 * (1 + kind * STAGES)
        return kb.add(bars, first + 8 * slot) if isinstance(slot, int) else kb.mad(slot, 8, kb.add(bars, first))

    def issue(kind: int, slot: Value | int, tile: Value | int) -> None:
        """TMA key tile ``tile`` of K (kind 0) or V (kind 1) into a ring slot (one thread)."""
        bar, dst = full_bar(kind, slot), ring_slot(v_ring if kind else k_ring, slot)
        row = kb.mov(tile * BLOCK_K, "u32") if isinstance(tile, int) else kb.mul(tile, BLOCK_K)
        kb.mbarrier_arrive_expect_tx(bar, TB)
        for p in range(panels):
            kb.cp_async_bulk_tensor(3, kb.add(dst, p * BLOCK_K * SWIZZLE_BYTES), tmap_v if kind else tmap_k,
                                    (panel_x[p], row, zkv), bar)

    with kb.if_(leader):
        kb.mbarrier_arrive_expect_tx(bars, spec.q_bytes)
        for p in range(panels):
            kb.cp_async_bulk_tensor(3, kb.add(base, p * BQ * SWIZZLE_BYTES), tmap_q, (panel_x[p], q0, zq), bars)
        for s_ in range(STAGES):
            with kb.if_(kb.setp("lt", kb.mov(s_, "u32"), ntiles)):
                issue(0, s_, s_)
                issue(1, s_, s_)

    def slot_of(tile: Value | int) -> tuple[Value | int, Value | int]:
        """(ring slot, mbarrier phase parity) of key tile ``tile``."""
        if isinstance(tile, int):
            return tile % STAGES, (tile // STAGES) & 1
        return kb.and_(tile, STAGES - 1), kb.and_(kb.shr(tile, STAGES.bit_length() - 1), 1)

    def wait_tile(kind: int, tile: Value | int) -> Value | int:
        slot, parity = slot_of(tile)
        kb.mbarrier_wait_parity(full_bar(kind, slot), parity if not isinstance(parity, int) else kb.mov(parity, "u32"))
        return slot

    def release(kind: int, slot: Value | int, tile: Value | int) -> None:
        """This warpgroup is done with a ring slot (its wgmma chain has completed): count it; the
        warpgroup that releases the slot last refills it with tile + STAGES. No CTA barrier, so
        the warpgroups drift freely."""
        with kb.if_(kb.setp("eq", lane_wg, 0)):
            kb.fence("acq_rel", "cta")
            cnt = kb.add(counters, 4 * (kind * STAGES + slot)) if isinstance(slot, int) else \
                kb.mad(slot, 4, kb.add(counters, 4 * kind * STAGES))
            old = kb.atom("shared", "add", "u32", cnt, 1)
            nxt = kb.add(tile, STAGES) if not isinstance(tile, int) else kb.mov(tile + STAGES, "u32")
            go = kb.setp("lt", nxt, ntiles)
            if NC > 1:
                done = kb.add(old, 1)  # releases of this slot so far, mine included
                go = kb.and_(go, kb.setp("eq", kb.mul(kb.div(done, NC), NC), done))
            with kb.if_(go):
                issue(kind, slot, nxt)

    # Q descriptor of this warpgroup's 64 rows; k-step kk: panel kk // 4, 32 bytes per k16 inside it
    q_desc = kb.wgmma_descriptor(kb.mad(wg, 64 * SWIZZLE_BYTES, base), 16, ATOM_BYTES, "128B")
    ksteps = D // 16
    per_panel = SWIZZLE_BYTES // 32

    def k_major_offset(kk: int, rows: int) -> int:
        return ((kk // per_panel) * rows * SWIZZLE_BYTES + (kk % per_panel) * 32) >> 4

    q_descs = [kb.add(q_desc, k_major_offset(kk, BQ)) if kk else q_desc for kk in range(ksteps)]

    # this thread's two rows (slot 0: groupID, slot 1: groupID + 8) and their last visible key
    warp_row0 = kb.add(q0, kb.mad(wg, 64, kb.mul(warp, 16)))
    row_q = [kb.add(warp_row0, g), None]
    row_q[1] = kb.add(row_q[0], 8)
    last_key = kb.sub(sk, 1)
    limit = [kb.min(last_key, r) if spec.causal else last_key for r in row_q]
    col_lane = kb.mul(t, 2)
    m = [kb.mov(_NEG_INF, "f32") for _ in range(2)]
    lsum = [kb.mov(0.0, "f32") for _ in range(2)]
    n_s = fragments.wgmma_accumulator_regs(BLOCK_K)
    s = [kb.mov(0.0, "f32") for _ in range(n_s)]
    acc = [kb.mov(0.0, "f32") for _ in range(fragments.wgmma_accumulator_regs(D))]
    p_regs = [[kb.mov(0, "b32") for _ in plan[::2]] for plan in P_TO_A]
    alpha = [kb.mov(0.0, "f32") for _ in range(2)]

    def issue_s(slot: Value | int) -> None:
        """S = Q K^T from ring slot ``slot`` (fresh accumulators: scale-d 0 on the first k-step)."""
        k_desc = kb.wgmma_descriptor(ring_slot(k_ring, slot), 16, ATOM_BYTES, "128B")
        for kk in range(ksteps):
            kd = kb.add(k_desc, k_major_offset(kk, BLOCK_K)) if kk else k_desc
            kb.wgmma_mma_async(BLOCK_K, dt, s, q_descs[kk], kd, scale_d=0 if kk == 0 else 1)
        kb.wgmma_commit_group()

    def issue_pv(slot: Value | int) -> None:
        """O += P V from ring slot ``slot``: P from registers, V MN-major (transpose immediate)."""
        v_desc = kb.wgmma_descriptor(ring_slot(v_ring, slot), BLOCK_K * SWIZZLE_BYTES, ATOM_BYTES, "128B")
        for kc in range(BLOCK_K // 16):
            vd = kb.add(v_desc, (kc * 16 * SWIZZLE_BYTES) >> 4) if kc else v_desc
            kb.wgmma_mma_async_rs(D, dt, acc, p_regs[kc], vd, scale_d=1, trans_b=1)
        kb.wgmma_commit_group()

    def softmax(tile: Value | int) -> None:
        """Scores of ``tile`` to probabilities in place (log2 domain, masked), the running max and
        row sums updated; ``alpha`` gets the factor the output accumulator must be scaled by."""
        for i in range(n_s):
            kb.mul(s[i], scale_log2, out=s[i])
        j0 = kb.mul(tile, BLOCK_K) if not isinstance(tile, int) else kb.mov(tile * BLOCK_K, "u32")
        needs_mask = kb.setp("hi", kb.add(j0, BLOCK_K), sk)
        if spec.causal:
            needs_mask = kb.or_(needs_mask, kb.setp("hi", kb.add(j0, BLOCK_K - 1), warp_row0))
        with kb.if_(needs_mask):  # only tiles that cross Sk or this warp's diagonal
            col0 = kb.add(j0, col_lane)
            for i in range(n_s):
                ok = kb.setp("ls", kb.add(col0, COL_OFFSET[i]), limit[ROW_SLOT[i]])
                kb.selp(s[i], _NEG_INF, ok, type_="f32", out=s[i])
        m_use = []
        for slot in (0, 1):
            mx = _tree(kb.max, [s[i] for i in range(n_s) if ROW_SLOT[i] == slot])
            for step in (1, 2):
                mx = kb.max(mx, kb.shfl_sync("bfly", mx, step))
            m_new = kb.max(m[slot], mx)
            # a row whose keys so far are all masked keeps m = -inf; subtract 0 then (ex2(-inf) = 0)
            mu = kb.selp(0.0, m_new, kb.setp("eq", m_new, _NEG_INF), type_="f32")
            kb.ex2(kb.sub(m[slot], mu), out=alpha[slot])
            kb.mul(lsum[slot], alpha[slot], out=lsum[slot])
            kb.assign(m[slot], m_new)
            m_use.append(mu)
        for i in range(n_s):
            kb.ex2(kb.sub(s[i], m_use[ROW_SLOT[i]]), out=s[i])
        for slot in (0, 1):
            kb.add(lsum[slot], _tree(kb.add, [s[i] for i in range(n_s) if ROW_SLOT[i] == slot]), out=lsum[slot])

    def rescale_and_pack() -> None:
        """O *= alpha per row; P rounded to the input type into the register-A operand."""
        for i in range(len(acc)):
            kb.mul(acc[i], alpha[OUT_SLOT[D][0][i]], out=acc[i])
        for kc, plan in enumerate(P_TO_A):
            for r in range(len(plan) // 2):
                lo, hi = kb.cvt(s[plan[2 * r]], dt), kb.cvt(s[plan[2 * r + 1]], dt)
                kb.assign(p_regs[kc][r], kb.bitcast(kb.pack(lo, hi), "b32"))

    kb.mbarrier_wait_parity(bars, 0)  # Q has landed
    if spec.overlap:
        # Turns (FlashAttention-3's ping-pong): warpgroup c issues its wgmma chains only between
        # a bar.sync on barrier 1 + c and a bar.arrive on the next warpgroup's, so the chains of
        # the warpgroups alternate and each one's softmax runs while the others' GEMMs do. The
        # last warpgroup opens the first turn and skips its final hand-over, so every barrier
        # sees as many arrivals as syncs.
        turn_count = 2 * 128
        my_turn = kb.add(wg, 1)
        next_turn = kb.selp(1, kb.add(wg, 2), kb.setp("eq", wg, NC - 1), type_="u32")
        is_last_wg = kb.setp("eq", wg, NC - 1)

        def take_turn() -> None:
            kb.named_barrier_sync(my_turn, turn_count)

        def pass_turn(final: bool = False) -> None:
            if final:
                with kb.if_(kb.setp("ne", wg, NC - 1)):
                    kb.named_barrier_arrive(next_turn, turn_count)
            else:
                kb.named_barrier_arrive(next_turn, turn_count)

        if NC > 1:
            with kb.if_(is_last_wg):
                kb.named_barrier_arrive(1, turn_count)
        else:
            take_turn = pass_turn = lambda final=False: None  # one warpgroup: no turns

        # tile 0 alone; then per tile j: S_j and P_{j-1} V_{j-1} in flight together, the softmax of
        # S_j running while the tensor cores do P V; the last P V after the loop
        take_turn()
        slot0 = wait_tile(0, 0)
        kb.wgmma_fence()
        issue_s(slot0)
        pass_turn()
        kb.wgmma_wait_group(0)
        release(0, slot0, 0)
        softmax(0)
        rescale_and_pack()
        with kb.loop(1, ntiles, 1, type_="u32") as j:
            take_turn()
            ks = wait_tile(0, j)
            kb.wgmma_fence()
            issue_s(ks)
            prev = kb.sub(j, 1)
            vs = wait_tile(1, prev)
            kb.wgmma_fence()  # ptxas would inject it: the P registers were written before the S chain
            issue_pv(vs)
            pass_turn()
            kb.wgmma_wait_group(1)  # S_j is done (groups complete in order)
            release(0, ks, j)
            softmax(j)
            kb.wgmma_wait_group(0)  # P_{j-1} V_{j-1} is done: O and the P registers are free
            release(1, vs, prev)
            rescale_and_pack()
        last = kb.sub(ntiles, 1)
        take_turn()
        vs = wait_tile(1, last)
        kb.wgmma_fence()
        issue_pv(vs)
        pass_turn(final=True)
        kb.wgmma_wait_group(0)
    else:
        with kb.loop(0, ntiles, 1, type_="u32") as j:
            ks = wait_tile(0, j)
            kb.wgmma_fence()
            issue_s(ks)
            kb.wgmma_wait_group(0)
            release(0, ks, j)
            softmax(j)
            rescale_and_pack()
            vs = wait_tile(1, j)
            kb.wgmma_fence()
            issue_pv(vs)
            kb.wgmma_wait_group(0)
            release(1, vs, j)

    # normalize and store: registers i, i+1 (i even) are adjacent columns of one row
    for slot in (0, 1):
        for step in (1, 2):
            kb.add(lsum[slot], kb.shfl_sync("bfly", lsum[slot], step), out=lsum[slot])
    inv = [kb.rcp(x) for x in lsum]
    o_head = kb.addr(o_p, kb.mul(zq, kb.mul(sq, D)), 2)
    out_slot, out_col = OUT_SLOT[D]
    for slot in (0, 1):
        with kb.if_(kb.setp("lo", row_q[slot], sq)):
            row_ptr = kb.addr(o_head, kb.mad(row_q[slot], D, col_lane), 2)
            for i in range(0, len(acc), 2):
                if out_slot[i] != slot:
                    continue
                packed = _pack_half2(kb, kb.mul(acc[i], inv[slot]), kb.mul(acc[i + 1], inv[slot]), dt)
                kb.st("global", row_ptr, packed, offset=out_col[i] * 2)
            if spec.lse:
                with kb.if_(kb.setp("eq", t, 0)):
                    val = kb.mul(kb.add(m[slot], kb.lg2(lsum[slot])), LN_2)
                    kb.st("global", kb.addr(lse_p, kb.mad(zq, sq, row_q[slot]), 4), val)
    return kb.ptx()


def _check_pairs() -> None:
    for d in HEAD_DIMS:
        slots, cols = OUT_SLOT[d]
        for i in range(0, len(slots), 2):
            if slots[i + 1] != slots[i] or cols[i + 1] != cols[i] + 1:
                raise AssertionError(f"attention_wgmma: m64n{d} registers {i}, {i + 1} are not adjacent columns")


_check_pairs()


def configurations(arch: str) -> list[AttentionWgmmaSpec]:
    """Every kernel of the family (sm_90a only): dtype x (head_dim, consumers) x causal x lse x
    overlap (48)."""
    return [AttentionWgmmaSpec(arch=arch, dtype=t, head_dim=d, causal=c, lse=lse, overlap=ov, consumers=n)
            for ov in (True, False) for t in DTYPES for d in HEAD_DIMS for n in ALLOWED_CONSUMERS[d]
            for c in (False, True) for lse in (False, True)]


#: whether dispatch uses the overlapped (ping-pong) pipeline. Measured on the H200
#: (benches/results/2026-11-29-h200-session2/bench-attention-final.json), bf16 B4 S4096, TFLOP/s
#: overlapped / serial: D128 405 / 470, D128 causal 362 / 411, D64 301 / 354: serial is faster.
DISPATCH_OVERLAP = False


def choose_spec(dtype: str, head_dim: int, causal: bool, lse: bool) -> AttentionWgmmaSpec:
    """The kernel dispatch runs: ``DISPATCH_OVERLAP``, ``CONSUMERS[head_dim]`` warpgroups."""
    return AttentionWgmmaSpec(dtype=dtype, head_dim=head_dim, causal=causal, lse=lse, consumers=CONSUMERS[head_dim],
                              overlap=DISPATCH_OVERLAP)


registry.register_family(FAMILY, AttentionWgmmaSpec, generate, configurations, archs=ARCHS)

#: tensor maps kept per (q, k, v) address triple by each plan step (a map holds its address)
TENSOR_MAPS_PER_STEP = 64


def tensor_map(dtype: str, ptr: int, seq: int, heads: int, head_dim: int, box_rows: int) -> bytes:
    """The CUtensorMap of a (heads, seq, head_dim) contiguous tensor (batch folded into heads)
    as 3-D (head_dim, seq, heads), boxes of 64 x ``box_rows`` x 1 with the 128-byte swizzle;
    reads past ``seq`` fill zeros."""
    return api().tensor_map_encode_tiled(
        TMA_DATA_TYPE[dtype], 3, ptr, (head_dim, seq, heads), (head_dim * 2, seq * head_dim * 2),
        (PANEL, box_rows, 1), (1, 1, 1), 0, TMA_SWIZZLE_128B, TMA_L2_PROMOTION_128B, 0)


def step(spec: AttentionWgmmaSpec, b: int, hq: int, sq: int, hkv: int, sk: int) -> KernelStep:
    """The launch-plan step of ``spec`` for C-contiguous, 16-byte aligned q (b, hq, sq, D), k/v
    (b, hkv, sk, D) and o: pointers (q, k, v, o, lse or 0), scalars (scale * log2(e),); the three
    tensor maps are encoded once per (q, k, v) address triple. Checks are the caller's."""
    d = spec.head_dim
    maps: dict[tuple[int, int, int], tuple[bytes, bytes, bytes]] = {}
    group = hq // hkv

    def bind(ptr, s, ws):
        key = (ptr[0], ptr[1], ptr[2])
        three = maps.get(key)
        if three is None:
            if len(maps) >= TENSOR_MAPS_PER_STEP:
                maps.clear()
            three = maps[key] = (tensor_map(spec.dtype, ptr[0], sq, b * hq, d, spec.block_q),
                                 tensor_map(spec.dtype, ptr[1], sk, b * hkv, d, BLOCK_K),
                                 tensor_map(spec.dtype, ptr[2], sk, b * hkv, d, BLOCK_K))
        return (ptr[3], ptr[4], sq, sk, hq, hkv, group, s[0], *three)

    grid = ((sq + spec.block_q - 1) // spec.block_q, hq, b)
    return KernelStep(spec, grid, spec.threads, bind, spec.shared_bytes)
