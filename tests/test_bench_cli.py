"""`python -m oxicuda bench`: the harness runs every quick case, checks it, and records it."""

from __future__ import annotations

import json

import pytest

import oxicuda
from oxicuda.bench.case import Case, Prepared, register_case
from oxicuda.bench.run import format_table, run_case
from oxicuda.cli import bench as bench_cli


@pytest.mark.timeout(600)  # on a GPU every case also runs the vendor's and its checks (~3 min)
def test_quick_bench_checks_every_case_and_writes_a_labelled_record(tmp_path, capsys):
    path = tmp_path / "record.json"
    rc = bench_cli.main(["--quick", "--json", str(path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    record = json.loads(path.read_text())
    env = record["environment"]
    assert env["backend"] == oxicuda.get_backend() and env["gpu"] and env["compute_capability"]
    if env["backend"] == "emulator":
        assert "NOT GPU figures" in out
    families = {r["family"] for r in record["results"]}
    assert {"memory", "blas", "dnn", "conv", "attention"} <= families
    for r in record["results"]:
        assert "error" not in r, r
        if "check_passed" in r:
            assert r["check_passed"], r
            assert r["rel_error"] <= r["tolerance"]
        if "ours_ms" in r:
            assert r["ours_ms"] > 0
            # emulator timings say so; GPU timings come from CUDA events
            assert ("emulator" in r["timing"]) == (env["backend"] == "emulator"), r["timing"]


def test_a_case_whose_result_is_wrong_fails_its_check():
    calls = []

    def prepare(quick: bool) -> Prepared:
        return Prepared(ours=lambda i: calls.append(i), check=lambda: 0.5, tolerance=1e-6)

    result = run_case(Case("selftest", "wrong", prepare, unit="GB/s", bytes=1.0), True, 3)
    assert result["check_passed"] is False and calls  # ours ran before the check
    assert "FAIL" in format_table([result])


def test_registering_a_case_twice_is_refused(monkeypatch):
    import oxicuda.bench.case as case_module

    monkeypatch.setattr(case_module, "_CASES", {})  # leave the real registry untouched
    case = Case("selftest", "twice", lambda quick: Prepared(ours=lambda i: None))
    register_case(case)
    with pytest.raises(ValueError, match="registered twice"):
        register_case(case)


def test_plot_draws_ratio_and_roofline_panels_when_matplotlib_is_present(tmp_path):
    pytest.importorskip("matplotlib")
    from oxicuda.bench.plot import plot

    record = {"environment": {"gpu": "test", "date": "now", "sm_count": 2, "sm_clock_khz": 1_000_000},
              "peaks": {"copy_GBps": 100.0},
              "results": [{"family": "f", "case": "c", "speed_vs_vendor": 0.5, "flops": 1e9, "bytes": 1e6,
                           "ours_ms": 1.0, "vendor_ms": 0.5}]}
    out = plot(record, str(tmp_path / "p.png"))
    assert out and (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
