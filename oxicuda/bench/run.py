"""Run registered cases side by side with the vendor library and report rates and ratios."""

from __future__ import annotations

import gc
import statistics
import time
import traceback
from typing import TextIO

from .case import Case, cases, load_all_cases
from .table import Progress, format_table
from .timing import time_device, time_host


def _rate(case: Case, ms: float, flops: float | None, nbytes: float | None) -> float | None:
    if ms is None or ms <= 0:
        return None
    if case.unit == "TFLOP/s" and flops:
        return flops / (ms * 1e-3) / 1e12
    if case.unit == "GB/s" and nbytes:
        return nbytes / (ms * 1e-3) / 1e9
    return None


def run_case(case: Case, quick: bool, repeats: int) -> dict:
    result: dict = {"family": case.family, "case": case.name, "unit": case.unit}
    prepared = case.prepare(quick)
    flops = prepared.flops if prepared.flops is not None else case.flops
    nbytes = prepared.bytes if prepared.bytes is not None else case.bytes
    if flops:
        result["flops"] = flops
    if nbytes:
        result["bytes"] = nbytes
    if prepared.problem:
        result["problem"] = prepared.problem
    try:
        if prepared.check is not None:
            # the check inspects what one call of ours computed: make that call first
            from oxicuda.driver.backend import api
            from oxicuda.driver.context import ensure_context

            ensure_context()  # the synchronize below needs a current context, whatever ours() did
            prepared.ours(0)
            api().ctx_synchronize()
            err = float(prepared.check())
            result["rel_error"] = err
            result["check_passed"] = bool(err <= prepared.tolerance)
            result["tolerance"] = prepared.tolerance
        if case.timing == "host":
            # rounds alternate ours and the vendor's (host load drifts; one long loop each put
            # +-40% on the ratio on the H200's host), the median round of each side counts
            loops, rounds = (200, 3) if quick else (2_000, 9)
            ours_rounds, vendor_rounds = [], []
            for _ in range(rounds):
                ours_rounds.append(time_host(prepared.ours, loops=loops))
                if prepared.vendor is not None:
                    vendor_rounds.append(time_host(prepared.vendor, loops=loops))
            ours_us = statistics.median(ours_rounds)
            result["ours_us"] = ours_us
            result["host_rounds"] = f"median of {rounds} alternating rounds of {loops} calls"
            result["ours_us_rounds"] = ours_rounds
            if prepared.vendor is not None:
                result["vendor"] = prepared.vendor_name
                result["vendor_us"] = statistics.median(vendor_rounds)
                result["vendor_us_rounds"] = vendor_rounds
                result["speed_vs_vendor"] = result["vendor_us"] / ours_us
            return result
        t = time_device(prepared.ours, repeats=repeats)
        result["ours_ms"] = t.median_ms
        result["ours_ms_min"] = t.min_ms
        result["timing"] = t.method
        result["repeats"] = t.repeats
        result["ours_rate"] = _rate(case, t.median_ms, flops, nbytes)
        if prepared.vendor is not None:
            v = time_device(prepared.vendor, repeats=repeats)
            result["vendor"] = prepared.vendor_name
            result["vendor_ms"] = v.median_ms
            result["vendor_rate"] = _rate(case, v.median_ms, flops, nbytes)
            result["speed_vs_vendor"] = v.median_ms / t.median_ms
        return result
    finally:
        if prepared.cleanup is not None:
            prepared.cleanup()
        del prepared
        gc.collect()


class UnknownCaseError(ValueError):
    """A family or case name that selects nothing; the message lists the valid names."""


def _names(pool: list[Case]) -> str:
    by_family: dict[str, list[str]] = {}
    for c in pool:
        by_family.setdefault(c.family, []).append(c.name)
    return "\n".join(f"  {fam}: {', '.join(names)}" for fam, names in by_family.items())


def select_cases(family: str | None = None, match: str | None = None,
                 quick: bool = False) -> list[Case]:
    """The cases of ``family`` (None: all) whose name contains ``match``, those of the quick pass
    only when ``quick``. UnknownCaseError, listing the valid names, when that selects nothing."""
    load_all_cases()
    everything = cases()
    families = sorted({c.family for c in everything})
    if family is not None and family not in families:
        raise UnknownCaseError(f"bench: no family {family!r}; the families are: {', '.join(families)}")
    pool = cases(family)
    if match is not None:
        matching = [c for c in pool if match in c.name]
        if not matching:
            where = f"family {family!r}" if family else "any family"
            raise UnknownCaseError(f"bench: no case of {where} has {match!r} in its name; the "
                                   f"cases are:\n{_names(pool)}")
        pool = matching
    chosen = [c for c in pool if c.quick or not quick]
    if not chosen:
        raise UnknownCaseError("bench: none of these cases is in the --quick pass (run without "
                               f"--quick):\n{_names(pool)}")
    return chosen


def skip_reason(case: Case, on_gpu: bool, arch: str) -> str | None:
    """Why ``case`` cannot run on this device (None: it can)."""
    if case.archs and arch not in case.archs:
        return f"needs {' or '.join(case.archs)}; this device is {arch}"
    if case.gpu_only and not on_gpu:
        return "GPU only" + (f" ({case.note})" if case.note else "")
    return None


def run(
    family: str | None = None,
    match: str | None = None,
    quick: bool = False,
    repeats: int = 20,
    progress: TextIO | None = None,
    on_result=None,
) -> tuple[dict, list[dict]]:
    """Run the selected cases; returns (environment, results). A case the device cannot run (an
    arch it lacks, a GPU-only figure on the emulator) gets a result with ``"skipped"``, the
    reason. ``progress``: where the live progress line goes (the CLI: stderr; None: nowhere).
    ``on_result(env, results)`` is called after every case (the CLI keeps a partial record on
    disk that way). UnknownCaseError when ``family``/``match`` select nothing."""
    from oxicuda.driver.facts import device_facts

    from .record import environment

    selected = select_cases(family, match, quick)
    env = environment()
    on_gpu = env["backend"] == "cuda"
    arch = device_facts(0).arch
    reasons = [skip_reason(case, on_gpu, arch) for case in selected]
    shown = Progress(progress, reasons.count(None))
    results: list[dict] = []
    ran = 0
    for case, reason in zip(selected, reasons):
        base = {"family": case.family, "case": case.name, "unit": case.unit}
        if reason is not None:
            results.append({**base, "skipped": reason})
            continue
        ran += 1
        shown.case(ran, f"{case.family}/{case.name}")
        t0 = time.perf_counter()
        try:
            r = run_case(case, quick or not on_gpu, repeats if on_gpu else 3)
        except Exception as exc:
            r = {**base, "error": f"{type(exc).__name__}: {exc}",
                 "traceback": traceback.format_exc(limit=6)}
        r["wall_s"] = round(time.perf_counter() - t0, 3)
        if case.note:
            r["note"] = case.note
        results.append(r)
        if on_result is not None:
            on_result(env, results)
    shown.done()
    return env, results


__all__ = ["UnknownCaseError", "format_table", "run", "run_case", "select_cases", "skip_reason"]
