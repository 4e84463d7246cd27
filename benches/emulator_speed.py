"""The PTX interpreter's speed (issue #4 item 5): its rate in warp-instructions per second and
the time of a 128 x 128 x 128 tiled SGEMM on the emulator.

    python3 benches/emulator_speed.py [--repeat N]

Two SGEMMs, both checked against a float64 numpy reference:
- the nvcc-generated 16 x 16-tile kernel of tests/data/nvcc/sgemm_tiled.ptx, launched through the
  emulated driver (the interpreter alone);
- ``oxicuda.blas.gemm(a, b, algo="tiled")``, the project's own tiled kernel through the whole
  stack (first call: generation, parse and decode included; then the cached call).

A warp-instruction is one instruction issued for one warp; the interpreter issues an
instruction for all active threads of a CTA at once, and the count is steps x warps of the CTA
(exact for converged code, an upper bound under divergence). Prints one line per figure and,
with --json PATH, writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

os.environ["OXICUDA_BACKEND"] = "emulator"

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oxicuda.emulator.api import EmulatorAPI
from oxicuda.emulator.interp import run as interp_run
from oxicuda.emulator.interp.harness import run_ptx

M = N = K = 128


def _check(c: np.ndarray, a: np.ndarray, b: np.ndarray, what: str) -> float:
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = float(np.abs(c - ref).max() / np.abs(ref).max())
    if not np.isfinite(c).all() or err > 1e-5:
        raise SystemExit(f"{what}: wrong result (max relative error {err:.3g})")
    return err


def nvcc_sgemm(repeat: int, rng) -> dict:
    """The nvcc tiled kernel through the emulated driver: time, steps, warp-instructions/s."""
    ptx = (ROOT / "tests" / "data" / "nvcc" / "sgemm_tiled.ptx").read_text()
    api = EmulatorAPI()
    api.init()
    api.ctx_set_current(api.device_primary_ctx_retain(0))
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    times, cpu, steps, warp_steps = [], [], 0, 0
    for _ in range(repeat):
        c = np.full((M, N), np.nan, np.float32)
        s0, w0 = interp_run.STATS["steps"], interp_run.STATS["warp_steps"]
        t0, p0 = time.perf_counter(), time.process_time()
        c = run_ptx(api, ptx, "sgemm_tiled", (N // 16, M // 16, 1), (16, 16, 1), [a, b, c, M, N, K])[2]
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - p0)
        steps = interp_run.STATS["steps"] - s0
        warp_steps = interp_run.STATS["warp_steps"] - w0
        _check(c, a, b, "nvcc sgemm_tiled")
    best = min(times)
    return {"sgemm_nvcc_128_s": best, "sgemm_nvcc_128_median_s": float(np.median(times)),
            "sgemm_nvcc_128_cpu_s": min(cpu), "warp_instructions_per_cpu_s": warp_steps / min(cpu),
            "steps": steps, "warp_instructions": warp_steps,
            "warp_instructions_per_s": warp_steps / best, "steps_per_s": steps / best}


def oxicuda_sgemm(repeat: int, rng) -> dict:
    import oxicuda
    from oxicuda import blas

    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    da, db = oxicuda.asarray(a), oxicuda.asarray(b)
    t0 = time.perf_counter()
    c = blas.gemm(da, db, algo="tiled").get()
    first = time.perf_counter() - t0
    _check(c, a, b, "oxicuda tiled gemm")
    times = []
    w0 = interp_run.STATS["warp_steps"]
    for _ in range(repeat):
        t0 = time.perf_counter()
        c = blas.gemm(da, db, algo="tiled").get()
        times.append(time.perf_counter() - t0)
        _check(c, a, b, "oxicuda tiled gemm")
    warp_steps = (interp_run.STATS["warp_steps"] - w0) / repeat
    best = min(times)
    return {"sgemm_oxicuda_tiled_128_first_call_s": first, "sgemm_oxicuda_tiled_128_s": best,
            "sgemm_oxicuda_tiled_128_warp_instructions": warp_steps,
            "sgemm_oxicuda_tiled_128_warp_instructions_per_s": warp_steps / best}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, check=False).stdout.strip()
    except OSError:
        commit = ""
    rec = {"commit": os.environ.get("OXICUDA_COMMIT") or commit or "unknown",
           "machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "python": platform.python_version(), "numpy": np.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
           "load_average_1min": os.getloadavg()[0]}  # other work on the machine slows the figures
    rec.update(nvcc_sgemm(args.repeat, rng))
    rec.update(oxicuda_sgemm(args.repeat, rng))
    print(f"(machine load average {rec['load_average_1min']:.1f} on {rec['cpus']} CPUs)")
    print(f"interpreter: {rec['warp_instructions_per_s']:,.0f} warp-instructions/s "
          f"({rec['steps_per_s']:,.0f} CTA-wide steps/s) on the nvcc 16x16-tile SGEMM")
    print(f"nvcc tiled SGEMM 128x128x128 on the emulator: {rec['sgemm_nvcc_128_s']:.3f} s "
          f"({rec['sgemm_nvcc_128_cpu_s']:.3f} s of CPU; {rec['warp_instructions']:,} "
          f"warp-instructions, {rec['warp_instructions_per_cpu_s']:,.0f} per CPU-second)")
    print(f"oxicuda.blas.gemm(algo='tiled') 128x128x128 on the emulator: "
          f"{rec['sgemm_oxicuda_tiled_128_s']:.3f} s cached, "
          f"{rec['sgemm_oxicuda_tiled_128_first_call_s']:.3f} s first call "
          f"({rec['sgemm_oxicuda_tiled_128_warp_instructions_per_s']:,.0f} warp-instructions/s)")
    if args.json:
        args.json.write_text(json.dumps(rec, indent=2) + "\n")


if __name__ == "__main__":
    main()
