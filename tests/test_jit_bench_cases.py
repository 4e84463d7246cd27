"""The jit bench cases prepare, run and check on the emulator (their timings only mean
something on a GPU: `python -m oxicuda bench jit`)."""

from __future__ import annotations

import pytest

from oxicuda.bench.case import cases, load_all_cases

load_all_cases(("oxicuda.jit.bench_cases",))
JIT_CASES = {c.name: c for c in cases("jit")}


def test_the_issue_figures_have_cases():
    assert set(JIT_CASES) == {"saxpy_f32_2^28", "fused3_f32_2^28", "compile_cold_20_lines",
                              "compile_warm_20_lines", "launch_host_cost", "sgemm_tiled_4096"}


@pytest.mark.parametrize("name", sorted(JIT_CASES))
def test_case_runs_and_checks(name):
    p = JIT_CASES[name].prepare(True)
    try:
        p.ours(0)
        p.ours(1)
        if p.check is not None:
            assert p.check() <= p.tolerance
    finally:
        if p.cleanup is not None:
            p.cleanup()
