"""`python -m oxicuda bench`: the harness runs every quick case, checks it, and records it."""

from __future__ import annotations

import io
import json

import pytest

import oxicuda
import oxicuda.bench.case as case_module
import oxicuda.bench.run as run_module
from oxicuda.bench.case import Case, Prepared, cases, load_all_cases, register_case
from oxicuda.bench.plot import ceilings
from oxicuda.bench.run import format_table, run_case
from oxicuda.bench.table import SHRUNK, Progress
from oxicuda.cli import bench as bench_cli
from oxicuda.driver.facts import device_facts


@pytest.mark.slow
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
        if "skipped" in r:  # an arch this device lacks, or a GPU-only figure on the emulator
            assert r["skipped"] and r["case"] in out, r
            continue
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

    record = {"environment": {"gpu": "test", "date": "now", "compute_capability": "8.6", "sm_count": 2,
                              "sm_clock_khz": 1_000_000, "backend": "cuda"},
              "peaks": {"copy_GBps": 100.0},
              "results": [{"family": "f", "case": "c", "speed_vs_vendor": 0.5, "flops": 1e9, "bytes": 1e6,
                           "ours_ms": 1.0, "vendor_ms": 0.5, "vendor": "v"},
                          {"family": "g", "case": "d", "speed_vs_vendor": 1.5, "ours_us": 3.0, "vendor": "w"},
                          {"family": "g", "case": "e", "skipped": "needs sm_90"},
                          {"family": "g", "case": "x", "error": "RuntimeError: broken"}]}
    out = plot(record, str(tmp_path / "p.png"))
    assert out and (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_ceilings_read_the_arch_table_not_128_lanes_everywhere():
    # an A100 (sm_80) has 64 FP32 lanes per SM: 2 * 64 * 108 SMs * 1.41 GHz = 19.5 TFLOP/s
    env = {"compute_capability": "8.0", "sm_count": 108, "sm_clock_khz": 1_410_000}
    roofs = ceilings(env)
    assert roofs["FP32"][0] == pytest.approx(2 * 64 * 108 * 1.41e9 / 1e12)
    assert roofs["memory"][0] == pytest.approx(1103 * 1.41e9 / 1e9)  # ARCH_RATES' bytes per clock
    assert roofs["FP16/BF16 tensor"][0] == pytest.approx(2048 * 108 * 1.41e9 / 1e12)
    assert "ARCH_RATES" in roofs["memory"][1]
    # a measured copy rate wins over the table; an unknown arch gives no invented compute roof
    assert ceilings(env, {"copy_GBps": 1400.0})["memory"] == (1400.0, "measured device copy")
    assert set(ceilings({**env, "compute_capability": "99.0"}, {"copy_GBps": 1.0})) == {"memory"}


def _other_arch() -> str:
    return "sm_86" if device_facts(0).arch == "sm_90" else "sm_90"


@pytest.fixture
def selftest_cases(monkeypatch):
    """A private case registry (the real one untouched) with a runnable case, one that needs an
    arch this device lacks, and a GPU-only one; returns the list of prepare calls."""
    monkeypatch.setattr(case_module, "_CASES", {})
    monkeypatch.setattr(run_module, "load_all_cases", lambda: None)
    prepared = []

    def prepare(name):
        def go(quick: bool) -> Prepared:
            prepared.append(name)
            return Prepared(ours=lambda i: None, check=lambda: 0.0, tolerance=1e-6, problem="3x5")

        return go

    register_case(Case("selftest", "runs_anywhere", prepare("runs_anywhere"), unit="GB/s", bytes=8.0))
    register_case(Case("selftest", "runs_anywhere_too", prepare("runs_anywhere_too"), unit="GB/s",
                       bytes=8.0))
    register_case(Case("selftest", "needs_other_arch", prepare("needs_other_arch"), archs=(_other_arch(),)))
    return prepared


def test_a_case_whose_arch_the_device_lacks_is_skipped_with_the_reason_and_exit_0(selftest_cases, capsys, tmp_path):
    rc = bench_cli.main(["selftest", "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "needs_other_arch" not in selftest_cases  # never prepared
    here = device_facts(0).arch
    assert f"skipped: needs {_other_arch()}; this device is {here}" in out
    assert "ERROR" not in out
    record = json.loads((tmp_path / "r.json").read_text())
    by_name = {r["case"]: r for r in record["results"]}
    assert by_name["needs_other_arch"]["skipped"] == f"needs {_other_arch()}; this device is {here}"
    assert by_name["runs_anywhere"]["check_passed"] is True


def test_every_wgmma_case_needs_sm90():
    load_all_cases()
    wgmma = [c for c in cases() if "wgmma" in c.name]
    assert len(wgmma) >= 10
    assert all(c.archs == ("sm_90",) for c in wgmma), [c.name for c in wgmma if c.archs != ("sm_90",)]


def test_an_absent_case_module_is_skipped_but_a_broken_one_raises(tmp_path, monkeypatch):
    load_all_cases(("oxicuda.bench.cases_memory", "oxicuda.no_such_library.bench_cases"))
    (tmp_path / "oxicuda_broken_cases.py").write_text("import oxicuda_no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="oxicuda_no_such_dependency"):
        load_all_cases(("oxicuda_broken_cases",))


@pytest.mark.parametrize("argv, listed", [
    (["nosuchfamily"], "blas"),
    (["--case", "nosuch"], "sgemm_4096"),
    (["blas", "--case", "nosuch"], "sgemm_4096"),
    (["blas", "--quick", "--case", "dgemm_4096_dmma"], "dgemm_4096_dmma"),  # not in the quick pass
])
def test_a_selection_of_nothing_exits_2_listing_the_valid_names(argv, listed, capsys):
    rc = bench_cli.main(argv)
    captured = capsys.readouterr()
    assert rc == 2
    assert listed in captured.err and "case" not in captured.out


def test_progress_is_a_live_line_on_stderr_and_the_table_names_the_size_that_ran(selftest_cases, capsys):
    rc = bench_cli.main(["selftest"])
    captured = capsys.readouterr()
    assert rc == 0
    assert "[case 1 of 2] selftest/runs_anywhere" in captured.err
    assert "[case 2 of 2] selftest/runs_anywhere_too" in captured.err and "left" in captured.err
    assert "[case" not in captured.out
    rows = [line for line in captured.out.splitlines() if line.startswith("selftest/runs_anywhere")]
    assert len(rows) == 2 and all(" 3x5 " in row for row in rows)


def test_progress_rewrites_one_line_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    stream = Tty()
    shown = Progress(stream, 2)
    shown.case(1, "f/a")
    shown.case(2, "f/b")
    shown.done()
    text = stream.getvalue()
    assert "\n" not in text and text.count("\r\033[K") == 3 and "[case 2 of 2] f/b" in text


def test_table_columns_stay_aligned_for_long_names_and_say_when_sizes_shrank():
    results = [
        {"family": "attention", "case": "attention_bf16_B4_H16_S4096_D128_causal_wgmma_serial",
         "unit": "TFLOP/s", "ours_rate": 405.0, "vendor_rate": 583.0, "speed_vs_vendor": 0.695,
         "rel_error": 1e-3, "check_passed": True, "tolerance": 2e-2},
        {"family": "blas", "case": "sgemm_4096", "unit": "TFLOP/s", "ours_rate": 5.8e-6,
         "rel_error": 1e-7, "check_passed": True, "tolerance": 1e-4},
        {"family": "dnn", "case": "softmax", "unit": "GB/s", "ours_rate": 0.01, "problem": "7x300"},
        {"family": "blas", "case": "bf16_8192_wgmma", "unit": "TFLOP/s", "skipped": "needs sm_90"},
    ]
    text = format_table(results, emulated=True)
    head, _rule, *rows = text.splitlines()
    end = head.index("ratio") + len("ratio")  # numbers are right-aligned: every row ends there
    for row in rows[:3]:
        assert row[end] == " " and row[end - 1] != " ", (row, end)
    assert SHRUNK in rows[1] and "7x300" in rows[2] and "5.8e-06" in rows[1]
    assert "skipped: needs sm_90" in rows[3]


@pytest.mark.gpu
def test_the_wgmma_cases_run_on_sm90_and_are_skipped_with_the_reason_elsewhere(tmp_path, capsys):
    path = tmp_path / "wgmma.json"
    rc = bench_cli.main(["blas", "--quick", "--case", "wgmma", "--json", str(path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    results = json.loads(path.read_text())["results"]
    assert len(results) >= 4
    arch = device_facts(0).arch
    for r in results:
        if arch == "sm_90":
            assert "skipped" not in r and r["check_passed"], r
        else:
            assert r["skipped"] == f"needs sm_90; this device is {arch}", r
