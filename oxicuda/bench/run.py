"""Run registered cases side by side with the vendor library and report rates and ratios."""

from __future__ import annotations

import gc
import statistics
import sys
import time
import traceback
from dataclasses import asdict

from .case import Case, cases, load_all_cases
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


def _fmt(x, nd=1) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def format_table(results: list[dict]) -> str:
    head = f"{'case':<44} {'unit':>8} {'oxicuda':>10} {'vendor':>10} {'ratio':>7}  check"
    lines = [head, "-" * len(head)]
    for r in results:
        name = f"{r['family']}/{r['case']}"
        if "error" in r:
            lines.append(f"{name:<44} ERROR {r['error']}")
            continue
        if "ours_us" in r:
            ours, vend, unit = r.get("ours_us"), r.get("vendor_us"), "us/call"
        else:
            ours, vend, unit = r.get("ours_rate"), r.get("vendor_rate"), r["unit"]
        check = "-"
        if "check_passed" in r:
            check = ("ok" if r["check_passed"] else "FAIL") + f" ({r['rel_error']:.1e})"
        lines.append(
            f"{name:<44} {unit:>8} {_fmt(ours):>10} {_fmt(vend):>10} "
            f"{_fmt(r.get('speed_vs_vendor'), 2):>7}  {check}"
        )
    return "\n".join(lines)


def run(
    family: str | None = None,
    match: str | None = None,
    quick: bool = False,
    repeats: int = 20,
    progress=sys.stderr,
    on_result=None,
) -> tuple[dict, list[dict]]:
    """Run the selected cases; returns (environment, results). ``on_result(env, results)`` is
    called after every case (the CLI keeps a partial record on disk that way)."""
    from .record import environment

    load_all_cases()
    env = environment()
    on_gpu = env["backend"] == "cuda"
    selected = [
        c for c in cases(family)
        if (match is None or match in c.name)
        and (c.quick or not quick)
        and (on_gpu or not c.gpu_only)
    ]
    results = []
    for i, case in enumerate(selected, 1):
        t0 = time.perf_counter()
        print(f"[{i}/{len(selected)}] {case.family}/{case.name} ...", file=progress, flush=True)
        try:
            r = run_case(case, quick or not on_gpu, repeats if on_gpu else 3)
        except Exception as exc:  # one broken case must not hide the others
            r = {"family": case.family, "case": case.name, "unit": case.unit,
                 "error": f"{type(exc).__name__}: {exc}",
                 "traceback": traceback.format_exc(limit=6)}
        r["wall_s"] = round(time.perf_counter() - t0, 3)
        if case.note:
            r["note"] = case.note
        results.append(r)
        if on_result is not None:
            on_result(env, results)
    return env, results


__all__ = ["run", "run_case", "format_table", "asdict"]
