"""Sweep the wgmma GEMM's candidate tiles (``gemm_wgmma.TILES`` and ``SWEEP_TILES``: tile,
consumer warpgroups, stages, raster group) at S^3 (default 8192) for bf16 in the layout of a
row-major ``matmul`` (column-major NN: A MN-major, B K-major) and for tf32 TN (both K-major),
beside cuBLAS through torch.matmul and oxicuda's mma.sync path, and print the winners.

    python benches/sweep_wgmma.py [--json PATH] [--repeats N] [--size S]

Timing: CUDA events, 3 warm-up calls, the median of ``--repeats`` (default 10) through
``oxicuda.bench.timing``. Every candidate's output is compared with a float32 product of the
same inputs (torch on the GPU with TF32 off; error relative to max|C|): past 2e-2 (bf16) or 5e-3
(tf32) it is reported as wrong and never wins. Meant for the H200, in well under two minutes.
On the emulator it refuses to run unless ``--smoke`` (a tiny size, numpy reference, no vendor:
it checks the script, not the speed).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

BOUND = {"bf16": 2e-2, "tf32": 5e-3}
#: (dtype, transa, transb) per swept input type: bf16 as row-major matmul lays it out, tf32 TN
LAYOUT = {"bf16": ("bfloat16", False, False), "tf32": ("float32", True, False)}


class TorchOperands:
    """Operands as torch tensors on the GPU. A column-major X (r x c, ld r) is the row-major
    torch tensor X^T (c, r): NN stores a = A^T, b = B^T and C^T = b @ a; TN stores a = op(A),
    b = op(B)^T and C^T = b @ a^T."""

    def __init__(self, torch, kind: str, s: int):
        dtype, transa, _ = LAYOUT[kind]
        self.torch = torch
        tdt = getattr(torch, dtype)
        g = torch.Generator(device="cuda").manual_seed(1)
        self.a = torch.randn(s, s, device="cuda", dtype=tdt, generator=g)
        self.b = torch.randn(s, s, device="cuda", dtype=tdt, generator=g)
        self.c = torch.empty(s, s, device="cuda", dtype=tdt)
        torch.backends.cuda.matmul.allow_tf32 = False
        a_op = self.a.float().T if transa else self.a.float()
        self.ref = self.b.float() @ a_op
        self.scale = self.ref.abs().max().item()
        torch.backends.cuda.matmul.allow_tf32 = kind == "tf32"
        self.vendor = (lambda i: torch.matmul(self.b, self.a.T)) if transa else (lambda i: torch.matmul(self.b, self.a))
        self.ptrs = (self.a.data_ptr(), self.b.data_ptr(), self.c.data_ptr())

    def poison(self) -> None:
        self.c.fill_(float("nan"))

    def error(self, out=None) -> float:
        self.torch.cuda.synchronize()
        got = self.c if out is None else out
        return ((got.float() - self.ref).abs().max() / self.scale).item()


class EmulatorOperands:
    """The same operands as oxicuda arrays with a float64 numpy reference (--smoke)."""

    def __init__(self, kind: str, s: int):
        import oxicuda
        from oxicuda.memory.dtypes import BFLOAT16, host_astype

        dtype, transa, _ = LAYOUT[kind]
        self.store = BFLOAT16 if dtype == "bfloat16" else np.dtype(dtype)
        rng = np.random.default_rng(1)
        a = host_astype(rng.standard_normal((s, s)).astype(np.float32), self.store)
        b = host_astype(rng.standard_normal((s, s)).astype(np.float32), self.store)
        self.a, self.b = oxicuda.asarray(a), oxicuda.asarray(b)
        self.c = oxicuda.empty((s, s), self.store)
        a64, b64 = host_astype(a, np.float64), host_astype(b, np.float64)
        self.ref = b64 @ (a64.T if transa else a64)
        self.scale = np.abs(self.ref).max()
        self.vendor = None
        self.ptrs = (self.a.ptr, self.b.ptr, self.c.ptr)
        self._nan = host_astype(np.full((s, s), np.nan, np.float32), self.store)

    def poison(self) -> None:
        import oxicuda

        self.c = oxicuda.asarray(self._nan)
        self.ptrs = (self.a.ptr, self.b.ptr, self.c.ptr)

    def error(self, out=None) -> float:
        from oxicuda.memory.dtypes import host_astype

        return float(np.abs(host_astype(self.c.get(), np.float64) - self.ref).max() / self.scale)


def _sweep_kind(kind: str, s: int, repeats: int, ops) -> list[dict]:
    from oxicuda.bench.timing import time_device
    from oxicuda.blas import gemm_wgmma as wg
    from oxicuda.blas.gemm_core import gemm_colmajor
    from oxicuda.blas.gemm_problem import column_major_problem
    from oxicuda.ptx.target import device_arch

    dtype, transa, transb = LAYOUT[kind]
    compute = "tf32" if kind == "tf32" else "f32"
    problem = column_major_problem(s, s, s, dtype, compute, transa, transb, s, s, s, 16, device_arch())
    flops = 2.0 * s ** 3

    def mma_sync(i: int) -> None:
        a, b, c = ops.ptrs
        gemm_colmajor("T" if transa else "N", "N", s, s, s, 1.0, a, s, b, s, 0.0, c, s, dtype=dtype, compute=compute,
                      algo="tensor_core")

    def wgmma(spec):
        def run(i: int) -> None:
            a, b, c = ops.ptrs
            wg.launch(problem, 1.0, a, s, b, s, 0.0, c, s, spec=spec)
        return run

    variants = [("torch.matmul (cuBLAS)", None, ops.vendor)] if ops.vendor is not None else []
    variants.append(("oxicuda mma.sync", None, mma_sync))
    for tile in dict.fromkeys((*wg.TILES, *wg.SWEEP_TILES)):
        spec = wg._spec(kind, transa, not transb, tile)
        variants.append((f"wgmma {spec.block_m}x{spec.block_n} c{spec.consumers} s{spec.stages} r{spec.raster}",
                         tile, wgmma(spec)))
    rows = []
    for name, tile, fn in variants:
        t0 = time.perf_counter()
        try:
            ops.poison()
            out = fn(0)
            err = ops.error(out)
            timing = time_device(fn, repeats=repeats)
        except Exception as exc:
            rows.append({"dtype": kind, "variant": name, "tile": tile, "error": f"{type(exc).__name__}: {exc}"[:300]})
            print(f"{kind:5s} {name:32s} FAILED {type(exc).__name__}: {str(exc)[:200]}", flush=True)
            continue
        ok = math.isfinite(err) and err < BOUND[kind]
        row = {"dtype": kind, "variant": name, "tile": tile, "median_ms": timing.median_ms, "min_ms": timing.min_ms,
               "tflops": flops / timing.median_ms / 1e9, "rel_error": err, "ok": ok,
               "seconds": round(time.perf_counter() - t0, 2)}
        rows.append(row)
        print(f"{kind:5s} {name:32s} {timing.median_ms:9.3f} ms {row['tflops']:8.1f} TFLOP/s  err {err:.2e}"
              f"{'' if ok else '  WRONG'}", flush=True)
    return rows


def _summary(rows: list[dict]) -> dict:
    out = {}
    for kind in LAYOUT:
        mine = [r for r in rows if r["dtype"] == kind and r.get("ok") and r["variant"].startswith("wgmma")]
        vendor = [r for r in rows if r["dtype"] == kind and r["variant"].startswith("torch") and "tflops" in r]
        if not mine:
            continue
        best = max(mine, key=lambda r: r["tflops"])
        ratio = best["tflops"] / vendor[0]["tflops"] if vendor else None
        out[kind] = {"best": best["variant"], "tile": best["tile"], "tflops": best["tflops"], "vs_cublas": ratio}
        print(f"best {kind}: {best['variant']} {best['tflops']:.1f} TFLOP/s"
              + (f" = {ratio:.3f}x torch.matmul" if ratio else ""))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the rows and the winners here")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--smoke", action="store_true", help="tiny run on the emulator (checks the script only)")
    args = ap.parse_args(argv)
    import oxicuda

    on_gpu = oxicuda.get_backend() == "cuda"
    if not on_gpu and not args.smoke:
        print("sweep_wgmma: needs the H200 (the backend is the emulator, whose timings mean nothing); "
              "--smoke runs a tiny check of the script")
        return 2
    s = args.size if on_gpu else min(args.size, 96)
    rows = []
    for kind in LAYOUT:
        if on_gpu:
            import torch

            ops = TorchOperands(torch, kind, s)
        else:
            ops = EmulatorOperands(kind, s)
        rows += _sweep_kind(kind, s, args.repeats, ops)
        del ops
    record = {"size": s, "repeats": args.repeats, "backend": oxicuda.get_backend(), "device": oxicuda.Device(0).name,
              "rows": rows, "best": _summary(rows), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1))
        print(f"wrote {args.json}")
    return 0 if all("error" not in r and r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
