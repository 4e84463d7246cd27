"""The grid loop and the per-CTA scheduler.

Threads of a CTA share one program counter while converged (the fast path: one op call per
instruction). A branch that splits them switches to per-thread program counters; each step then
runs the group with the lowest PC, so structured code reconverges, and the CTA returns to the
converged path as soon as every live thread has the same PC again. Threads at ``bar.sync`` wait
until every live thread is at that barrier; waiting at different barriers is a fault.
"""

from __future__ import annotations

import os

import numpy as np

from ...driver.errors import raise_for
from .barrier_ops import WARP_SYNC, warp_sync_arrive
from .faults import LAUNCH_FAILED, TIMEOUT, Fault, Unsupported
from .named_barriers import arrive
from .registry import BRANCH, EXIT, PLAIN
from .state import Cta
from .strict import strict_enabled, unwritten_register_fault

WAIT = 1 << 40  # added to the PC of a thread waiting at a barrier
NAMED = 1 << 50  # added to the PC of a thread waiting at a named or partial barrier
DEAD = 1 << 62  # the PC of an exited thread


#: executed instruction steps since import: "steps" (one per instruction issue, all active lanes
#: of the CTA at once) and "warp_steps" (steps x warps of the CTA: the warp-instruction count of
#: converged code, an upper bound under divergence); read by benches/emulator_speed.py
STATS = {"steps": 0, "warp_steps": 0}


def _max_steps() -> int:
    return int(os.environ.get("OXICUDA_EMULATOR_MAX_STEPS", "20000000"))


def _with_mask(cta, step):
    """Strict mode: let the checked readers see the mask of the step that runs."""
    if step is None:
        return None

    def masked_step(m):
        cta.cur_mask = m
        step(m)
    return masked_step


def _bind(kernel, grid, block, dynamic_smem, heap, strict=False):
    key = (block, dynamic_smem, id(heap), strict)  # not the grid: see Cta.set_grid
    if kernel._bound_key == key:
        kernel._bound[0].set_grid(grid)
        return kernel._bound
    cta = Cta(kernel, block, grid, dynamic_smem, heap, strict=strict)
    steps, kinds, targets, guards, named = [], [], [], [], []
    for pc, (op, ins) in enumerate(zip(kernel.ops, kernel.instrs)):
        try:
            step = op.bind(cta) if op.bind is not None else None
            steps.append(_with_mask(cta, step) if strict else step)
            g = None
            if ins.pred is not None:
                g = (cta.regs[ins.pred.reg.name], ins.pred.negated)
                if strict:  # the guard's written-mask and name, checked by the run loop
                    g = g + (cta.written[ins.pred.reg.name], ins.pred.reg.name)
            nb = None
            if op.barrier is not None:
                bid, bcount, is_arrive = op.barrier[:3]
                # (id or member-mask reader, count reader or None, is_arrive, arrive function)
                nb = (cta.reader(bid, "u32"), None if bcount is None else cta.reader(bcount, "u32"),
                      is_arrive, warp_sync_arrive if op.barrier[3:] == (WARP_SYNC,) else arrive)
        except (Fault, Unsupported, KeyError) as exc:
            raise_for(LAUNCH_FAILED, "cuLaunchKernel",
                      f"kernel {kernel.name}: {kernel.line_text(pc)}: cannot bind: {exc}")
        kinds.append(op.kind)
        targets.append(op.target)
        guards.append(g)
        named.append(nb)
    kernel._bound = (cta, steps, kinds, targets, guards, named)
    kernel._bound_key = key
    return kernel._bound


def run_grid(kernel, grid, block, dynamic_smem, params: bytes, heap) -> None:
    """Run every CTA of ``grid`` in order (x fastest). Faults raise LaunchError."""
    if len(params) < kernel.param_bytes:
        raise_for(1, "cuLaunchKernel", f"kernel {kernel.name} takes {kernel.param_bytes} bytes of "
                                       f"parameters; got {len(params)}")
    strict = strict_enabled()
    cta, steps, kinds, targets, guards, named = _bind(kernel, grid, block, dynamic_smem, heap, strict)
    cta.mem.params = params
    max_steps = _max_steps()
    gx, gy, gz = grid
    with np.errstate(all="ignore"):
        for z in range(gz):
            for y in range(gy):
                for x in range(gx):
                    cta.set_block((x, y, z))
                    cta.mem.shared.fill(0xFF)  # shared memory starts as garbage (NaN as f32)
                    if strict:
                        cta.reset_strict()
                    try:
                        _run_cta(cta, steps, kinds, targets, guards, named, max_steps)
                        STATS["steps"] += cta.last_steps
                        STATS["warp_steps"] += cta.last_steps * cta.nwarps
                    except Fault as f:
                        _report(kernel, cta, (x, y, z), f)
                    except Exception as exc:  # a handler bug must still name the place
                        f = Fault(LAUNCH_FAILED, f"interpreter error {type(exc).__name__}: {exc}")
                        f.pc = getattr(cta, "pc", -1)
                        _report(kernel, cta, (x, y, z), f)


def _report(kernel, cta, ctaid, f: Fault) -> None:
    pc = getattr(f, "pc", cta.pc)
    lane = f.lane
    thread = ""
    if lane is not None:
        bx, by, _ = cta.block
        thread = f", thread ({lane % bx}, {lane // bx % by}, {lane // (bx * by)})"
    where = f" at address 0x{f.address:x}" if f.address is not None else ""
    raise_for(f.code, "cuLaunchKernel",
              f"kernel {kernel.name}, {kernel.line_text(pc)}, block {ctaid}{thread}{where}: {f.what}")


def _deadlock(cta, pcs) -> None:
    waiting = (pcs >= NAMED) & (pcs < DEAD)
    lane = int(np.flatnonzero(waiting)[0])
    cta.pc = int(pcs[lane]) - NAMED
    held = ", ".join([f"barrier {b}: {int(st.arrived.sum())} thread(s) arrived, "
                      f"{st.count if st.count is not None else 'all live'} expected"
                      for b, st in sorted(cta.barriers.items())]
                     + [f"bar.warp.sync of warp {w}: mask 0x{st[0]:08x}, {int(st[1].sum())} lane(s) "
                        "arrived" for w, st in sorted(cta.warp_sync.items())])
    raise Fault(LAUNCH_FAILED, f"deadlock: every live thread waits at a named barrier ({held})", lane)


def _first_lane(m, cta) -> int:
    if m is None:
        return 0
    nz = np.flatnonzero(m)
    return int(nz[0]) if len(nz) else 0


def _check_guard(g, lanes) -> None:
    """Strict mode: the guard predicate must have been written for every lane that tests it."""
    f = unwritten_register_fault(g[3], g[2], lanes)
    if f is not None:
        f.what = f.what.replace("read of register", "guard predicate")
        f.args = (f.what,)
        raise f


def _run_cta(cta: Cta, steps, kinds, targets, guards, named, max_steps: int) -> None:
    n = cta.nthreads
    cta.barriers = {}
    cta.warp_sync = {}
    strict = cta.strict
    ninstr = len(steps)
    count_nonzero = np.count_nonzero
    pc = 0
    live = None  # None: every thread is live
    nlive = n
    count = 0
    cta.pc = 0
    while True:
        # ---- converged: every live thread at pc -----------------------------------------
        while True:
            if pc >= ninstr:
                cta.last_steps = count
                return
            count += 1
            k = kinds[pc]
            g = guards[pc]
            if g is None:
                m = live
            else:
                if strict:
                    cta.pc = pc
                    _check_guard(g, live)
                gm = ~g[0] if g[1] else g[0]
                m = gm if live is None else (gm & live)
            if k == PLAIN:
                if g is None or count_nonzero(m):
                    cta.pc = pc
                    steps[pc](m)
                pc += 1
                if count > max_steps:
                    cta.pc = pc - 1
                    raise Fault(TIMEOUT, f"more than {max_steps} steps in one CTA "
                                         "(set OXICUDA_EMULATOR_MAX_STEPS to allow more)")
            elif k == BRANCH:
                if g is None:
                    pc = targets[pc]
                else:
                    taken = count_nonzero(m)
                    if taken == nlive:
                        pc = targets[pc]
                    elif taken == 0:
                        pc += 1
                    else:
                        pcs = np.full(n, pc + 1, dtype=np.int64)
                        pcs[m] = targets[pc]
                        if live is not None:
                            pcs[~live] = DEAD
                        break
                if count > max_steps:
                    cta.pc = pc
                    raise Fault(TIMEOUT, f"more than {max_steps} steps in one CTA "
                                         "(set OXICUDA_EMULATOR_MAX_STEPS to allow more)")
            elif k == EXIT:
                if g is None:
                    cta.last_steps = count
                    return
                ex = count_nonzero(m)
                if ex == nlive:
                    cta.last_steps = count
                    return
                if ex:
                    live = ~m if live is None else (live & ~m)
                    nlive -= ex
                pc += 1
            elif named[pc] is not None:  # a named / partial barrier, or bar.arrive
                cta.pc = pc
                livemask = np.ones(n, bool) if live is None else live
                arriving = livemask if m is None else m
                cta.cur_mask = arriving
                released = named[pc][3](cta, named[pc], arriving, livemask)
                if not named[pc][2]:  # bar.sync: threads whose barrier did not complete wait
                    blocked = arriving if released is None else (arriving & ~released)
                    if count_nonzero(blocked):
                        pcs = np.full(n, pc + 1, dtype=np.int64)
                        pcs[blocked] = NAMED + pc
                        if live is not None:
                            pcs[~live] = DEAD
                        break
                pc += 1
            else:  # BARRIER, everyone here
                cta.pc = pc
                if g is not None and count_nonzero(m) != nlive:
                    raise Fault(LAUNCH_FAILED, "barrier under a predicate that only some "
                                               "threads satisfy", _first_lane(m, cta))
                if steps[pc] is not None:
                    steps[pc](m)
                pc += 1
        # ---- divergent: step the lowest-pc group ---------------------------------------------
        while True:
            count += 1
            if count > max_steps:
                raise Fault(TIMEOUT, f"more than {max_steps} steps in one CTA "
                                     "(set OXICUDA_EMULATOR_MAX_STEPS to allow more)")
            lo = int(pcs.min())
            if lo >= WAIT:
                if lo >= DEAD:
                    cta.last_steps = count
                    return
                if lo >= NAMED:
                    _deadlock(cta, pcs)
                livemask = pcs < DEAD
                if not (pcs[livemask] == lo).all():
                    others = pcs[livemask & (pcs != lo)]
                    cta.pc = lo - WAIT
                    lanes = np.flatnonzero(livemask & (pcs != lo))
                    raise Fault(LAUNCH_FAILED, "divergence at a barrier: threads wait at "
                                f"instruction {lo - WAIT} and at instruction "
                                f"{int(others.min()) - WAIT} (or at different barriers)",
                                int(lanes[0]))
                pc = lo - WAIT
                m = None if live is None else live
                cta.pc = pc
                if steps[pc] is not None:
                    steps[pc](m)
                pc += 1
                break
            pc = lo
            if pc >= ninstr:  # ran off the end: those threads exit
                sel = pcs == pc
                pcs[sel] = DEAD
                live = pcs < DEAD
                nlive = int(count_nonzero(live))
                continue
            sel = pcs == pc
            g = guards[pc]
            if g is None:
                m = sel
            else:
                if strict:
                    cta.pc = pc
                    _check_guard(g, sel)
                m = sel & (~g[0] if g[1] else g[0])
            k = kinds[pc]
            cta.pc = pc
            if k == PLAIN:
                if count_nonzero(m):
                    steps[pc](m)
                pcs[sel] = pc + 1
            elif k == BRANCH:
                pcs[sel] = pc + 1
                pcs[m] = targets[pc]
            elif k == EXIT:
                pcs[sel] = pc + 1
                pcs[m] = DEAD
                live = pcs < DEAD
                nlive = int(count_nonzero(live))
            elif named[pc] is not None:
                cta.cur_mask = m
                released = named[pc][3](cta, named[pc], m, pcs < DEAD)
                pcs[sel] = pc + 1
                if not named[pc][2]:
                    pcs[m] = NAMED + pc
                if released is not None:
                    pcs[released] = pcs[released] - NAMED + 1
            else:  # BARRIER: wait
                pcs[sel] = pc + WAIT
            lo = int(pcs.min())
            if lo < WAIT and ((pcs == lo) | (pcs >= DEAD)).all():
                pc = lo
                break
        if nlive == n:
            live = None
