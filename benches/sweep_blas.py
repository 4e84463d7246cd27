"""Sweep the SIMT GEMM configurations on issue 5's shapes beside cuBLAS, and print the dispatch
table entries (``THRESHOLDS`` / ``TILES`` in ``oxicuda/blas/gemm_dispatch.py``) the timings
support.

    python benches/sweep_blas.py [--json PATH] [--repeats N] [--only SUBSTRING] [--budget-s S]

Cases: sgemm 4096^3 and 8192^3, strided batched 64 x 512^3, dgemm 4096^3 (every registered tile
of the dtype, forced, the float32 loop and thread-order variants of ``gemm_tiled`` included; for dgemm also every DMMA tensor-core tile of ``gemm_dmma``), the skinny 128x128x131072, 512x512x65536 and 64x4096x16384 (split-K over
every split-K tile candidate and a ladder of split counts, plus the unsplit large tile), and
what dispatch picks on its own for each. cuBLAS runs through CuPy (or PyTorch) on the same
device arrays, TF32 off. Every variant's output is compared on the GPU with the vendor's float64
product of the same inputs (max |error| / max |reference|); a variant past the bound is reported
as wrong and never wins. Timing: CUDA events, warm-up, median of ``--repeats`` (default 10)
through ``oxicuda.bench.timing``. Stops adding variants when ``--budget-s`` (default 140 s) is
spent, and says which were skipped. On the emulator it refuses to run unless ``--tiny`` (tiny
shapes, for the test that keeps this script working; its figures mean nothing).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from oxicuda.blas.gemm_dispatch import GemmPlan  # after the path insert
from oxicuda.blas.gemm_tiled import TileConfig

#: name -> (m, n, k, batch, dtype, kind) with kind "square" (every tile) or "skinny" (split-K)
CASES = {
    "sgemm_4096": (4096, 4096, 4096, 1, "float32", "square"),
    "sgemm_8192": (8192, 8192, 8192, 1, "float32", "square"),
    "sgemm_strided_batched_64x512": (512, 512, 512, 64, "float32", "square"),
    "dgemm_4096": (4096, 4096, 4096, 1, "float64", "square"),
    "sgemm_128x128x131072": (128, 128, 131072, 1, "float32", "skinny"),
    "sgemm_512x512x65536": (512, 512, 65536, 1, "float32", "skinny"),
    "sgemm_64x4096x16384": (64, 4096, 16384, 1, "float32", "skinny"),
    # the same product as torch.mm / oxicuda.blas.matmul of row-major 64 x 16384 @ 16384 x 4096
    # arrays compute it: column-major C^T = B^T A^T, i.e. 4096 x 64 outputs
    "sgemm_4096x64x16384": (4096, 64, 16384, 1, "float32", "skinny"),
}
TINY = {"sgemm_4096": (64, 48, 40, 1), "sgemm_strided_batched_64x512": (32, 16, 24, 2),
        "dgemm_4096": (36, 20, 16, 1), "sgemm_128x128x131072": (16, 8, 512, 1)}
BOUND = {"float32": 1e-5, "float64": 1e-12}


class Vendor:
    """Device arrays, random inputs, float64 references and cuBLAS timing through CuPy or PyTorch."""

    def __init__(self, tiny: bool) -> None:
        self.name = None
        self.lib = None
        if tiny:
            return
        try:
            import cupy

            cupy.cuda.runtime.getDeviceCount()
            self.lib, self.name = cupy, "cupy"
            return
        except (ImportError, RuntimeError):  # no CuPy, or no device it can see
            pass
        try:
            import torch

            if torch.cuda.is_available():
                torch.backends.cuda.matmul.allow_tf32 = False
                self.lib, self.name = torch, "torch"
        except ImportError:
            pass

    def randn(self, shape: tuple, dtype: str, seed: int):
        """A random-normal C-ordered device array (oxicuda DeviceArray view of the vendor's)."""
        import oxicuda

        if self.name == "cupy":
            g = self.lib.random.default_rng(seed)
            return g.standard_normal(shape, dtype=self.lib.float64).astype(dtype)
        if self.name == "torch":
            gen = self.lib.Generator(device="cuda").manual_seed(seed)
            return self.lib.randn(shape, generator=gen, device="cuda", dtype=getattr(self.lib, dtype))
        return oxicuda.asarray(np.random.default_rng(seed).standard_normal(shape).astype(dtype))

    def empty(self, shape: tuple, dtype: str):
        import oxicuda

        if self.name == "cupy":
            return self.lib.empty(shape, dtype=dtype)
        if self.name == "torch":
            return self.lib.empty(shape, device="cuda", dtype=getattr(self.lib, dtype))
        return oxicuda.empty(shape, dtype)

    def fill_nan(self, x) -> None:
        if self.name == "torch":
            x.fill_(float("nan"))
        else:
            x.fill(np.nan)

    def reference(self, a, b):
        """float64 C^T (batch, n, m) of the column-major product: C = A B with A stored as
        (batch, k, m) and B as (batch, n, k) C-ordered arrays."""
        if self.name is None:
            return np.einsum("zkm,znk->znm", _host(a).astype(np.float64), _host(b).astype(np.float64))
        if self.name == "torch":
            return self.lib.matmul(b.double(), a.double())
        return self.lib.matmul(b.astype(self.lib.float64), a.astype(self.lib.float64))

    def rel_error(self, c, ref) -> float:
        if self.name is None:
            got = _host(c).astype(np.float64)
            return float(np.max(np.abs(got - ref)) / max(1e-300, np.max(np.abs(ref))))
        if self.name == "torch":
            err = (c.double() - ref).abs().max() / ref.abs().max()
            return float("nan") if not bool(self.lib.isfinite(err)) else float(err)
        err = self.lib.max(self.lib.abs(c.astype(self.lib.float64) - ref)) / self.lib.max(self.lib.abs(ref))
        return float(err)

    def gemm(self, a, b):
        """The vendor's product of the same operands (TF32 off): one GEMM for batch 1, one
        strided-batched GEMM otherwise."""
        if a.shape[0] == 1:
            return self.lib.matmul(b[0], a[0])
        return self.lib.matmul(b, a)


def _host(x) -> np.ndarray:
    import oxicuda

    return oxicuda.asnumpy(x)


def _ptr(x) -> int:
    import oxicuda

    return oxicuda.asarray(x).ptr


def _variants(name: str, m: int, n: int, k: int, batch: int, dtype: str, kind: str, info) -> list:
    """(label, algo) pairs: algo None (dispatch), a GemmTiledSpec, or a split-K GemmPlan."""
    from oxicuda.blas import gemm_dispatch as gd
    from oxicuda.blas.gemm_tiled import TILE_CONFIGS

    problem = gd.GemmProblem(m, n, k, dtype, lda=m, ldb=k, ldc=m, batch=batch, arch=info.arch)
    out: list = [("dispatch", None)]
    if kind == "square":
        for cfg in TILE_CONFIGS[dtype]:
            if cfg.bm * cfg.bn >= 64 * 64:
                out.append((f"tiled {cfg.name}", gd.tiled_spec(problem, info, cfg=cfg)))
        if dtype == "float64" and int(info.arch[3:].rstrip("a")) >= 80:
            from oxicuda.blas.gemm_dmma import tiles_for

            for tile in tiles_for(info.arch):
                out.append(("dmma {}x{}x{}_w{}x{}_{}".format(*tile), gd.dmma_spec(problem, info, tile)))
        return out
    out.append((f"tiled {gd.TILES[dtype]['large'].name}", gd.tiled_spec(problem, info, cfg=gd.TILES[dtype]["large"])))
    natural_cfg, natural = gd.split_k_choice(problem, info)
    # dispatch's split-K tiles and EXTRA_SPLIT_TILES get the whole ladder; other registered tiles of
    # 64x128 and up (the 64x64 4x4 tile measured at 0.6x of 128x128) their one- and two-round counts
    split_cands = (*gd.TILES[dtype]["split_k"], *gd.split_k_candidates(problem, info))
    cands = list(dict.fromkeys((*split_cands, *[c for c in TILE_CONFIGS[dtype] if c.bm * c.bn > 64 * 64],
                                *EXTRA_SPLIT_TILES.get(dtype, ()))))
    for cfg in cands:
        full = cfg in split_cands or cfg in EXTRA_SPLIT_TILES.get(dtype, ())
        for splits in _split_ladder(problem, info, cfg, natural if cfg == natural_cfg else 0, full):
            plan = gd.split_k_plan(problem, info, splits, cfg)
            label = f"split_k {cfg.name} x{plan.splits}"
            if all(label != seen for seen, _ in out):  # rounding K per split can merge two counts
                out.append((label, plan))
    # the partial products alone (no reduction): dispatch's time minus this is what the reduction
    # costs, i.e. what fusing it could save at most
    plan = gd.split_k_plan(problem, info, natural, natural_cfg) if natural > 1 else None
    if plan is not None:
        out.append((f"partials only {natural_cfg.name} x{plan.splits}", PartialsOnly(**vars(plan))))
    return out


#: split-K partial tiles timed here beyond dispatch's candidates (any TileConfig generates;
#: tests/test_blas_gemm_perfpaths.py checks these on the emulator): 64x256 8x16 keeps 64-row
#: outputs (64x4096x16384) unpadded with 8x16's 6 LDS.128 per 128 FFMA (64x128 8x8: 4 per 64);
#: and the interior loop (unchecked loads; with prefetching the best split-K partial of the skinny
#: sweep on 512x512x65536) over 64x256 8x16, the 128-thread 8x8 tiles and 128x128 8x16
EXTRA_SPLIT_TILES = {"float32": (TileConfig(64, 256, 8, 8, 16), TileConfig(64, 256, 8, 8, 16, prefetch=True, interior=True),
                                 TileConfig(128, 64, 8, 8, 8, prefetch=True, interior=True),
                                 TileConfig(64, 128, 8, 8, 8, prefetch=True, interior=True),
                                 TileConfig(128, 128, 8, 8, 16, interior=True))}


@dataclasses.dataclass(frozen=True)
class PartialsOnly(GemmPlan):
    """A split-K plan whose reduction is skipped: timed, never checked, never a winner."""


def _split_ladder(problem, info, cfg, natural: int, full: bool) -> list[int]:
    """Split counts worth timing for tile ``cfg``: the counts that give the busiest SM 1 or 2
    whole rounds of resident CTAs; with ``full`` also 3 rounds, the count just past the first
    (the partial-round cliff) and the wave model's best for this tile; and dispatch's own count."""
    from oxicuda.blas import gemm_dispatch as gd

    tiles = math.ceil(problem.m / cfg.bm) * math.ceil(problem.n / cfg.bn)
    r = gd.resident_ctas(cfg)
    most = min(problem.k // 64, 1024)
    counts = {natural} if natural > 1 else set()
    for rounds in (1, 1.5, 2, 3) if full else (1, 2):
        counts.add(int(rounds * r * info.sm_count) // tiles)
    if full:
        counts.add(r * info.sm_count // tiles + 1)
    if full and cfg in gd.TILE_RATE:
        counts.add(min(range(2, most + 1), key=lambda s: gd.split_k_clocks(problem, info, cfg, s)))
    return sorted(c for c in counts if 2 <= c <= most)


def sweep(args) -> dict:
    from oxicuda.bench.record import environment
    from oxicuda.blas import gemm_dispatch as gd
    from oxicuda.blas.gemm_core import clear_plan_cache
    from oxicuda.driver.facts import device_facts

    info = device_facts(0)
    vendor = Vendor(args.tiny)
    start = time.perf_counter()
    record = {"environment": environment(), "vendor": vendor.name, "repeats": args.repeats,
              "thresholds": dict(gd.THRESHOLDS), "cases": [], "skipped": []}
    for name, (m, n, k, batch, dtype, kind) in CASES.items():
        if args.only and not any(o in name for o in args.only.split(",")):
            continue
        if args.tiny:
            if name not in TINY:
                continue
            m, n, k, batch = TINY[name]
        record["cases"].append(_sweep_case(name, (m, n, k, batch, dtype, kind), args, vendor, info, start,
                                           record["skipped"]))
        clear_plan_cache()
        if args.json:  # after every case, so a run cut short keeps what it measured
            from oxicuda.bench.record import write_json

            record["suggested"] = suggest(record)
            record["elapsed_s"] = time.perf_counter() - start
            write_json(args.json, record)
    record["suggested"] = suggest(record)
    record["elapsed_s"] = time.perf_counter() - start
    return record


def _sweep_case(name: str, shape: tuple, args, vendor: Vendor, info, start: float, skipped: list) -> dict:
    """Time every variant of one case (and the vendor); check each against the float64 product."""
    import oxicuda
    from oxicuda.bench.timing import time_device
    from oxicuda.blas.gemm_core import gemm_colmajor

    m, n, k, batch, dtype, kind = shape
    a = vendor.randn((batch, k, m), dtype, 1)
    b = vendor.randn((batch, n, k), dtype, 2)
    c = vendor.empty((batch, n, m), dtype)
    pa, pb, pc = _ptr(a), _ptr(b), _ptr(c)
    ref = vendor.reference(a, b)
    flops = 2.0 * m * n * k * batch
    case = {"case": name, "m": m, "n": n, "k": k, "batch": batch, "dtype": dtype, "variants": []}

    def run(algo):
        gemm_colmajor("N", "N", m, n, k, 1.0, pa, m, pb, k, 0.0, pc, m, dtype=dtype, batch=batch,
                      stride_a=m * k, stride_b=k * n, stride_c=m * n, algo=algo)

    for label, algo in _variants(name, m, n, k, batch, dtype, kind, info):
        if time.perf_counter() - start > args.budget_s:
            skipped.append(f"{name}: {label}")
            continue
        entry = {"label": label, **_describe(algo)}
        try:
            if isinstance(algo, PartialsOnly):
                entry["kernels"] = [algo.spec.key()]
                timing = time_device(lambda i, algo=algo: _run_partials(algo, m, n, k, pa, pb),
                                     repeats=args.repeats, warmup=2)
                entry.update(median_ms=timing.median_ms, tflops=flops / timing.median_ms / 1e9,
                             timing=timing.method, rel_error=None, ok=None)
                case["variants"].append(entry)
                print(f"{name:32s} {label:38s} {entry['tflops']:8.2f} TFLOP/s (no reduction, not checked)",
                      flush=True)
                continue
            if algo is None:
                with oxicuda.trace() as t:
                    run(None)
                entry["kernels"] = [x.spec.key() if hasattr(x.spec, "key") else str(x.spec) for x in t.launches]
            else:
                entry["kernels"] = [algo.key()] if hasattr(algo, "key") else [algo.spec.key(), algo.reduce.key()]
            vendor.fill_nan(c)
            run(algo)
            oxicuda.driver.backend.api().ctx_synchronize()
            entry["rel_error"] = vendor.rel_error(c, ref)
            entry["ok"] = bool(entry["rel_error"] <= BOUND[dtype] * max(1.0, math.sqrt(k) / 8))
            timing = time_device(lambda i, algo=algo: run(algo), repeats=args.repeats, warmup=2)
            entry["median_ms"] = timing.median_ms
            entry["tflops"] = flops / timing.median_ms / 1e9
            entry["timing"] = timing.method
        except Exception as exc:
            entry["error"] = f"{type(exc).__name__}: {exc}"[:400]
            entry["ok"] = False
        case["variants"].append(entry)
        shown = (f"{entry['tflops']:8.2f} TFLOP/s err {entry['rel_error']:.1e}{'' if entry['ok'] else ' WRONG'}"
                 if "tflops" in entry else entry.get("error", "?"))
        print(f"{name:32s} {label:38s} {shown}", flush=True)
    if vendor.name is not None:
        timing = time_device(lambda i: vendor.gemm(a, b), repeats=args.repeats, warmup=2)
        case["vendor_ms"] = timing.median_ms
        case["vendor_tflops"] = flops / timing.median_ms / 1e9
        print(f"{name:32s} {'cuBLAS (' + vendor.name + ')':38s} {case['vendor_tflops']:8.2f} TFLOP/s", flush=True)
    good = [v for v in case["variants"] if v.get("ok") and "median_ms" in v]
    if good:
        best = min(good, key=lambda v: v["median_ms"])
        case["best"] = best["label"]
        disp = next((v for v in good if v["label"] == "dispatch"), None)
        if "vendor_ms" in case:
            case["best_ratio_vs_vendor"] = case["vendor_ms"] / best["median_ms"]
            if disp is not None:
                case["dispatch_ratio_vs_vendor"] = case["vendor_ms"] / disp["median_ms"]
    return case


def _run_partials(plan, m: int, n: int, k: int, pa: int, pb: int) -> None:
    """Launch only the partial-product kernel of split-K ``plan`` (column-major N/N operands)."""
    from oxicuda.blas.gemm_core import ACC_DTYPES
    from oxicuda.memory.workspace import workspace
    from oxicuda.ptx import cache

    spec = plan.spec
    chunk = math.ceil(math.ceil(k / plan.splits) / spec.bk) * spec.bk
    splits = math.ceil(k / chunk)
    ws = workspace((ACC_DTYPES[spec.dtype], splits * m * n), None)
    grid = (math.ceil(m / spec.bm), math.ceil(n / spec.bn), splits)
    cache.load(spec)(grid, (spec.threads,), [m, n, k, chunk, pa, m, pb, k, ws.ptr, m, chunk * m, chunk, m * n,
                                              0.0, 0, 0.0, 0])


def _describe(algo) -> dict:
    """The table coordinates of a variant: SIMT tile, split count, DMMA tile."""
    if algo is None:
        return {}
    if isinstance(algo, PartialsOnly):
        return {"tile": [algo.spec.bm, algo.spec.bn, algo.spec.bk, algo.spec.tm, algo.spec.tn, algo.spec.min_ctas],
                "splits": algo.splits, "partials_only": True}
    spec = getattr(algo, "spec", algo)
    if spec.family == "gemm_dmma":
        return {"dmma_tile": [spec.bm, spec.bn, spec.bk, spec.warps_m, spec.warps_n, spec.shape]}
    out = {"tile": [spec.bm, spec.bn, spec.bk, spec.tm, spec.tn, spec.min_ctas]}
    if getattr(spec, "warp_m", 0) or getattr(spec, "prefetch", False) or getattr(spec, "interior", False):
        out["tile_options"] = {"warp_m": spec.warp_m, "prefetch": spec.prefetch, "interior": spec.interior}
    if hasattr(algo, "splits"):
        out["splits"] = algo.splits
    return out


def suggest(record: dict) -> dict:
    """What the timings support, per case: the fastest correct variant, its ratio to cuBLAS and
    dispatch's, and the gemm_dispatch table line that would make dispatch pick it (the lead
    applies them by hand: square float32 cases -> TILES["float32"]["large"], dgemm ->
    THRESHOLDS["float64_dmma"]/DMMA_TILES or TILES["float64"]["large"], skinny cases -> the
    split tile, and the split count against the one dispatch chose)."""
    out = {}
    for case in record["cases"]:
        if "best" not in case:
            continue
        best = next(v for v in case["variants"] if v["label"] == case["best"])
        disp = next((v for v in case["variants"] if v["label"] == "dispatch"), {})
        entry = {"best": case["best"], "best_ratio_vs_vendor": case.get("best_ratio_vs_vendor"),
                 "dispatch_ratio_vs_vendor": case.get("dispatch_ratio_vs_vendor"),
                 "dispatch_kernels": disp.get("kernels")}
        dt = case["dtype"]
        if "dmma_tile" in best:
            entry["table"] = (f'THRESHOLDS["float64_dmma"] = (<this arch>,); DMMA_TILES[<this arch>]["large"] = '
                              f'{tuple(best["dmma_tile"])}')
        elif "splits" in best:
            entry["table"] = (f'split tile TileConfig{tuple(best["tile"])} with {best["splits"]} splits '
                              f'(compare RESIDENT_CTAS / split_k_waves)')
        elif "tile" in best:
            options = "".join(f", {k}={v!r}" for k, v in best.get("tile_options", {}).items())
            entry["table"] = (f'TILES["{dt}"]["large"] = _cfg("{dt}", ' + ", ".join(map(str, best["tile"])) + options
                              + ")" + (" (_cfg must pass warp_m/prefetch/interior on to TileConfig)" if options else ""))
        else:
            entry["table"] = "dispatch already picks the fastest"
        out[case["case"]] = entry
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the record here")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--only", help="only cases whose name contains this (several: comma-separated)")
    parser.add_argument("--budget-s", type=float, default=140.0)
    parser.add_argument("--tiny", action="store_true", help="emulator-sized shapes (tests); figures mean nothing")
    args = parser.parse_args(argv)
    import oxicuda

    if oxicuda.get_backend() != "cuda" and not args.tiny:
        print("sweep_blas: the live backend is the emulator; its timings would mean nothing (use --tiny to "
              "exercise the script)", file=sys.stderr)
        return 2
    record = sweep(args)
    print("\nsuggested dispatch entries (fastest correct variant per case):")
    for name, s in record["suggested"].items():
        print(f"  {name:32s} {s['best']:38s} best/cuBLAS {s['best_ratio_vs_vendor']}  dispatch/cuBLAS "
              f"{s['dispatch_ratio_vs_vendor']}\n  {'':32s} -> {s['table']}")
    if record["skipped"]:
        print(f"skipped (budget): {len(record['skipped'])} variants")
    if args.json:
        from oxicuda.bench.record import write_json

        write_json(args.json, record)
    wrong = [(c["case"], v["label"]) for c in record["cases"] for v in c["variants"] if v.get("ok") is False]
    if wrong:
        print(f"WRONG or failed variants: {wrong}")
    return 1 if any(lbl == "dispatch" for _, lbl in wrong) else 0


if __name__ == "__main__":
    sys.exit(main())
