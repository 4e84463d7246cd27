"""benches/ptx_costs.py runs on the live backend and writes every figure, labelled by backend."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benches" / "ptx_costs.py"
OWN = ("bench_host_gemm", "bench_host_axpy")
LOAD_FIELDS = ("generate_us", "jit_load_us", "first_load_us", "disk_warm_load_us", "cached_load_us")
CALL_FIELDS = ("first_call_us", "disk_warm_call_us", "cached_call_us", "launch_only_us")
ENV_FIELDS = ("backend", "gpu", "compute_capability", "driver_cuda_version", "commit", "date",
              "device_arch", "driver_jit_cache", "ptxas", "repeats", "statistic")


def _positive(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
        value) and value > 0


def _run(tmp_path: Path, *extra: str, env_extra: dict[str, str] | None = None) -> tuple[dict, str]:
    out = tmp_path / "ptx_costs.json"
    env = dict(os.environ, **(env_extra or {}))
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json", str(out), *extra],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env, check=False,
    )
    tail = f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, f"rc {proc.returncode}\n{tail}"
    return json.loads(out.read_text()), proc.stdout


def _ptxas_available() -> bool:
    from oxicuda.ptx.validate import PtxasNotFound, find_ptxas

    try:
        find_ptxas()
    except PtxasNotFound:
        return False
    return True


def _check_kernel(row: dict, gpu: bool, ptxas: bool) -> None:
    name = row["family"]
    for field in LOAD_FIELDS + ("ptx_bytes", "ptx_lines"):
        assert _positive(row.get(field)), f"{name}: {field} = {row.get(field)!r}"
    assert row["kernel"].isascii() and row["spec"].startswith(row["family"]), row
    # a memory-cache hit is a dict lookup: far cheaper than generating and loading the kernel
    assert row["cached_load_us"] < row["first_load_us"], row
    assert row["cached_load_us"] < row["disk_warm_load_us"], row
    if ptxas:
        assert _positive(row.get("ptxas_ms")) and _positive(row.get("cubin_bytes")), row
        assert row["cubin_arch"].startswith("sm_"), row
        if gpu:
            assert _positive(row.get("cubin_load_us")), row
        else:
            assert "GPU figure" in row["cubin_load_skipped"] and "cubin_load_us" not in row, row
    else:
        assert "ptxas not found" in row["cubin_skipped"] and "ptxas_ms" not in row, row


@pytest.mark.slow
def test_ptx_costs_script_writes_every_figure_for_every_family(tmp_path):
    from oxicuda.ptx import registry

    record, stdout = _run(tmp_path)
    gpu = record["environment"]["backend"] == "cuda"
    assert record["gpu_figures"] is gpu
    if not gpu:
        assert "NOT GPU figures" in record["label"] and stdout.startswith(record["label"])
    for field in ENV_FIELDS:
        assert record["environment"].get(field) not in (None, ""), field
    assert record["errors"] == {}, record["errors"]
    ptxas = _ptxas_available()
    by_family = {row["family"]: row for row in record["kernels"]}
    assert set(OWN) <= set(by_family), sorted(by_family)
    for row in record["kernels"]:
        _check_kernel(row, gpu, ptxas)
    for name in OWN:
        row = by_family[name]
        for field in CALL_FIELDS:
            assert _positive(row.get(field)), f"{name}: {field} = {row.get(field)!r}"
        if gpu:  # emulated launches run the interpreter, whose time swamps the difference
            assert row["cached_call_us"] < row["first_call_us"], row
        assert 0 <= row["max_rel_error"] < 1e-5, row
    # every family that imports here is measured or skipped with a reason, none silently dropped
    for package in registry.LIBRARY_PACKAGES:
        try:
            registry.load_all_families((package,))
        except Exception:  # reported by the script under package_errors; checked below
            assert package in record["package_errors"]
    for name in registry.families():
        if name.startswith("test_"):
            continue  # fixtures of other tests, registered only inside this process
        assert name in by_family or record["skipped_families"].get(name), name
        assert name in stdout, f"{name} missing from the printed table"


@pytest.mark.slow
def test_ptx_costs_script_labels_the_cubin_part_skipped_without_ptxas(tmp_path):
    record, stdout = _run(
        tmp_path, "--own-only", env_extra={"OXICUDA_PTXAS": str(tmp_path / "no-such-ptxas")}
    )
    assert record["environment"]["ptxas"] == "not found"
    assert [row["family"] for row in record["kernels"]] == list(OWN)
    for row in record["kernels"]:
        _check_kernel(row, record["gpu_figures"], ptxas=False)
    assert "ptxas ms" in stdout


@pytest.mark.slow
def test_ptx_costs_script_rejects_an_unknown_family(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--families", "no_such_family"],
        capture_output=True, text=True, timeout=120, cwd=REPO, check=False,
    )
    assert proc.returncode == 2 and "no_such_family" in proc.stderr, proc.stderr[-2000:]
