"""benches/sweep_blas.py: refuses to time on the emulator, and every variant it would time on the
H200 is a valid configuration (specs construct, split plans cover K, labels are unique). The
timings themselves are GPU-only (the lead runs the script on the H200)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

import oxicuda
from oxicuda.blas import gemm_dispatch as gd
from oxicuda.driver.facts import board_facts

SCRIPT = Path(__file__).resolve().parent.parent / "benches" / "sweep_blas.py"
H200 = board_facts("h200")


def _load():
    spec = importlib.util.spec_from_file_location("sweep_blas", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sweep_refuses_to_time_the_emulator(capsys):
    if oxicuda.get_backend() == "cuda":
        pytest.skip("a GPU is live: the script would run for real")
    assert _load().main([]) == 2
    assert "emulator" in capsys.readouterr().err


@pytest.mark.parametrize("name", list(_load().CASES))
def test_every_swept_variant_is_a_valid_configuration(name):
    sweep = _load()
    m, n, k, batch, dtype, kind = sweep.CASES[name]
    variants = sweep._variants(name, m, n, k, batch, dtype, kind, H200)
    labels = [label for label, _ in variants]
    assert labels[0] == "dispatch" and len(set(labels)) == len(labels)
    assert len(variants) >= 3
    for label, algo in variants[1:]:
        if isinstance(algo, gd.GemmPlan):
            assert algo.algo == "split_k" and algo.spec.raw_out and algo.reduce is not None
            chunk = gd.split_k_chunk(gd.GemmProblem(m, n, k, dtype), algo.splits, algo.spec.bk)
            assert algo.splits == math.ceil(k / chunk) and k // algo.splits >= 64, label
        elif algo.family == "gemm_dmma":
            assert dtype == "float64" and label.startswith("dmma")
        else:
            assert algo.family == "gemm_tiled" and not algo.raw_out and algo.dtype == dtype
    if kind == "skinny":
        assert any(isinstance(a, gd.GemmPlan) for _, a in variants)
    if dtype == "float64":
        assert any(lbl.startswith("dmma") for lbl in labels)


@pytest.mark.parametrize("name", ["sgemm_4096", "sgemm_8192"])
def test_square_sgemm_cases_time_every_loop_and_thread_order_variant(name):
    from oxicuda.blas.gemm_tiled import TILE_CONFIGS

    sweep = _load()
    m, n, k, batch, dtype, kind = sweep.CASES[name]
    labels = {label: algo for label, algo in sweep._variants(name, m, n, k, batch, dtype, kind, H200)}
    variants = [c for c in TILE_CONFIGS["float32"] if c.square_only]
    assert len(variants) >= 3
    for cfg in variants:
        spec = labels[f"tiled {cfg.name}"]
        assert (spec.warp_m, spec.prefetch, spec.interior, spec.min_ctas) == (cfg.warp_m, cfg.prefetch, cfg.interior,
                                                                             cfg.min_ctas)
        assert spec.vec_a == spec.vec_b == spec.vec_c == 4


def test_suggestion_names_the_variant_options():
    sweep = _load()
    best = {"label": "tiled 128x128x8_8x8_c2_w4x8_pf", "ok": True, "median_ms": 1.0,
            "tile": [128, 128, 8, 8, 8, 2], "tile_options": {"warp_m": 4, "prefetch": True}}
    record = {"cases": [{"case": "sgemm_4096", "dtype": "float32", "best": best["label"],
                         "variants": [{"label": "dispatch", "ok": True, "median_ms": 2.0}, best]}]}
    line = sweep.suggest(record)["sgemm_4096"]["table"]
    assert line.startswith('TILES["float32"]["large"] = _cfg("float32", 128, 128, 8, 8, 8, 2, warp_m=4, prefetch=True)')
