"""Asynchronous copies (opcode ``cp``): ``cp.async`` with its groups, ``cp.async.mbarrier.arrive``,
and (through ``tma.py``) the bulk copies ``cp.async.bulk[.tensor]``.

``cp.async.{ca,cg}.shared.global [dst], [src], cp-size[, src-size]`` reads its source when it is
issued and lands in shared memory when a ``cp.async.wait_group``/``wait_all`` of the issuing
thread covers its group (or at ``cp.async.mbarrier.arrive``); before that, shared memory still
holds what it held, so a kernel that forgets to wait reads stale data here as it may on a GPU.
Bytes past ``src-size`` are zero-filled and a ``src-size`` of 0 reads nothing. Pending copies
belong to one CTA: a new CTA (or launch) starts with none.
"""

from __future__ import annotations

import numpy as np

from ...ptx.ir import Addr, Imm
from .faults import Fault, Unsupported
from .memory import lanes_of, shared_offsets
from .registry import Op, register_handler
from .strict import mark_shared_written
from .warp_groups import require_arch

_U8 = np.dtype(np.uint8)


class PendingCopies:
    """The cp.async copies of one CTA not yet made visible, with each thread's group count."""

    def __init__(self, cta) -> None:
        self.owner = _owner(cta)
        self.committed = np.zeros(cta.nthreads, dtype=np.int64)
        self.records: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def issue(self, lanes: np.ndarray, dst: np.ndarray, data: np.ndarray) -> None:
        """Queue ``data`` (lanes x bytes) for shared offsets ``dst`` in each lane's open group."""
        self.records.append((lanes, dst, data, self.committed[lanes].copy()))

    def commit(self, lanes: np.ndarray) -> None:
        self.committed[lanes] += 1

    def complete(self, cta, lanes: np.ndarray, keep: int | None) -> None:
        """Land the copies of ``lanes`` except their ``keep`` newest committed groups (None: all,
        including the open group), in issue order."""
        sel = np.zeros(cta.nthreads, dtype=bool)
        sel[lanes] = True
        limit = self.committed - (keep if keep is not None else -(1 << 40))
        remaining = []
        shared = cta.mem.shared
        for rl, dst, data, group in self.records:
            due = sel[rl] & (group < limit[rl])
            if due.any():
                offs = dst[due][:, None] + np.arange(data.shape[1], dtype=np.uint64)
                shared[offs.astype(np.intp)] = data[due]
                mark_shared_written(cta.mem, offs)
            if not due.all():
                remaining.append((rl[~due], dst[~due], data[~due], group[~due]))
        self.records = remaining


def _owner(cta):
    return (tuple(int(c) for c in cta.ctaid), cta.mem.params)


def pending(cta) -> PendingCopies:
    """The pending-copy state of the CTA now running (fresh for a new CTA or launch)."""
    st = getattr(cta, "_oxicuda_cp_async", None)
    if st is None or st.owner[0] != _owner(cta)[0] or st.owner[1] is not cta.mem.params:
        st = PendingCopies(cta)
        cta._oxicuda_cp_async = st
    return st


def _decode_cp_async(instr, kc):
    mods = instr.mods
    if "shared" not in {x.split("::")[0] for x in mods} or "global" not in mods:
        raise Unsupported(f"{instr.full_opcode}: only cp.async.{{ca,cg}}.shared.global is emulated")
    require_arch(instr, kc, 80, "cp.async")
    ops = instr.operands
    dst, src, size_op = ops[0], ops[1], ops[2]
    if not isinstance(dst, Addr) or not isinstance(src, Addr) or not isinstance(size_op, Imm):
        raise Unsupported(f"{instr.full_opcode}: needs [dst], [src], cp-size")
    size = int(size_op.text, 0)
    if size not in (4, 8, 16) or ("cg" in mods and size != 16):
        raise Unsupported(f"{instr.full_opcode}: cp-size {size}; allowed 4, 8, 16 (cg: 16)")
    extra = list(ops[3:])
    if any(x.startswith("L2::cache_hint") for x in mods) and extra:
        extra.pop()  # the cache policy: a hint only
    ignore_op = None
    if extra and kc.reg_type(getattr(extra[-1], "name", "")) == "pred":
        ignore_op = extra.pop()  # ignore-src: zero-fill instead of reading
    src_size_op = extra[0] if extra else None

    def bind(cta):
        da, sa = cta.address(dst), cta.address(src)
        rsz = cta.reader(src_size_op, "u32") if src_size_op is not None else None
        rig = cta.reader(ignore_op, "pred") if ignore_op is not None else None
        n = cta.nthreads
        mem = cta.mem

        def step(m):
            lanes = lanes_of(cta, m)
            d = shared_offsets(instr, np.broadcast_to(da(), (n,))[lanes].astype(np.uint64))
            s = np.broadcast_to(sa(), (n,))[lanes].astype(np.uint64)
            if (d % np.uint64(size)).any() or (s % np.uint64(size)).any():
                bad = int(np.flatnonzero((d % np.uint64(size)) | (s % np.uint64(size)))[0])
                raise Fault(716, f"cp.async of {size} bytes: shared 0x{int(d[bad]):x} / global "
                            f"0x{int(s[bad]):x} not {size}-byte aligned", int(lanes[bad]), int(s[bad]))
            if len(lanes) and int(d.max()) + size > mem.shared_size:
                bad = int(np.argmax(d + np.uint64(size) > np.uint64(mem.shared_size)))
                raise Fault(700, f"cp.async writes {size} bytes at shared offset {int(d[bad])}; the "
                            f"block has {mem.shared_size} bytes of shared memory", int(lanes[bad]))
            nbytes = np.full(len(lanes), size, dtype=np.int64)
            if rsz is not None:
                nbytes = np.minimum(np.broadcast_to(rsz(), (n,))[lanes].astype(np.int64), size)
            if rig is not None:
                nbytes = np.where(np.broadcast_to(rig(), (n,))[lanes], 0, nbytes)
            data = np.zeros((len(lanes), size), dtype=np.uint8)
            for nb in np.unique(nbytes):
                if nb <= 0:
                    continue
                sel = nbytes == nb
                data[sel, :nb] = mem.load("global", s[sel], lanes[sel], _U8, int(nb))
            pending(cta).issue(lanes, d, data)
        return step
    return Op(bind)


def _decode_group(instr, kc):
    """cp.async.commit_group / wait_group N / wait_all."""
    kind = instr.mods[1]
    require_arch(instr, kc, 80, f"cp.async.{kind}")
    n_keep = None
    if kind == "wait_group":
        if not instr.operands or not isinstance(instr.operands[0], Imm):
            raise Unsupported(f"{instr.full_opcode}: needs an immediate group count")
        n_keep = int(instr.operands[0].text, 0)

    def bind(cta):
        def step(m):
            st = pending(cta)
            lanes = lanes_of(cta, m)
            if kind == "commit_group":
                st.commit(lanes)
            elif kind == "wait_group":
                st.complete(cta, lanes, n_keep)
            else:  # wait_all = commit_group + wait_group 0
                st.commit(lanes)
                st.complete(cta, lanes, 0)
        return step
    return Op(bind)


def _decode_cp_mbarrier_arrive(instr, kc):
    """cp.async.mbarrier.arrive[.noinc][.shared{::cta}].b64 [mbar]: the thread's copies land, then
    (with .noinc) the arrival counts; without .noinc the pending count was raised by one first,
    so the net effect on the phase is none."""
    from .mbarrier import arrive_lanes, barrier_offsets

    require_arch(instr, kc, 80, "cp.async.mbarrier.arrive")
    noinc = "noinc" in instr.mods
    (bar,) = instr.operands

    def bind(cta):
        ba = cta.address(bar)
        n = cta.nthreads

        def step(m):
            lanes = lanes_of(cta, m)
            pending(cta).complete(cta, lanes, None)
            if noinc:
                offs = barrier_offsets(cta, instr, np.broadcast_to(ba(), (n,))[lanes], lanes)
                arrive_lanes(cta, offs, lanes, 1, 0)
        return step
    return Op(bind)


def _decode_cp(instr, kc):
    mods = instr.mods
    if not mods or mods[0] != "async":
        raise Unsupported(f"{instr.full_opcode}: only cp.async forms are emulated")
    if len(mods) > 1 and mods[1] == "bulk":
        from .tma import decode_bulk

        return decode_bulk(instr, kc)
    if len(mods) > 1 and mods[1] in ("commit_group", "wait_group", "wait_all"):
        return _decode_group(instr, kc)
    if len(mods) > 1 and mods[1] == "mbarrier":
        return _decode_cp_mbarrier_arrive(instr, kc)
    return _decode_cp_async(instr, kc)


register_handler("cp", _decode_cp)

from . import mbarrier  # noqa: F401  (registers mbarrier, setmaxnreg, elect)
