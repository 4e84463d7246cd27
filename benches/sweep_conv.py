"""Sweep conv2d float32 forward over every algorithm and implicit-GEMM tile/split on a set of
shapes, beside cuDNN (PyTorch, TF32 off), and print the per-shape winners as ``MEASURED``
entries for ``oxicuda/dnn/conv_dispatch.py``.

    python benches/sweep_conv.py [--json PATH] [--repeats N] [--only SUBSTRING]

Every variant's output is checked against PyTorch's float64 convolution on the GPU (error
relative to max|y|; a variant past 2e-5 is reported as wrong and never wins). Timing: CUDA
events, warm-up, median of ``--repeats`` (default 15) through ``oxicuda.bench.timing``. TFLOP/s
count 2*N*K*OH*OW*C/groups*R*S for every algorithm (Winograd included). Meant for the H200:
about two minutes. On the emulator it refuses to run (the figures would mean nothing).
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

#: (name, N, C, H, W, K, R, S, stride, padding, layout)
SHAPES = (
    ("N32_C64_56x56_K64", 32, 64, 56, 56, 64, 3, 3, 1, 1, "NCHW"),
    ("N32_C128_28x28_K128", 32, 128, 28, 28, 128, 3, 3, 1, 1, "NCHW"),
    ("N32_C256_14x14_K256", 32, 256, 14, 14, 256, 3, 3, 1, 1, "NCHW"),
    ("N8_C512_7x7_K512", 8, 512, 7, 7, 512, 3, 3, 1, 1, "NCHW"),
    ("N32_C64_56x56_K64_nhwc", 32, 64, 56, 56, 64, 3, 3, 1, 1, "NHWC"),
    ("N32_C256_14x14_K256_nhwc", 32, 256, 14, 14, 256, 3, 3, 1, 1, "NHWC"),
    ("N32_C256_14x14_K1024_1x1", 32, 256, 14, 14, 1024, 1, 1, 1, 0, "NCHW"),
    ("N32_C64_56x56_K256_1x1", 32, 64, 56, 56, 256, 1, 1, 1, 0, "NCHW"),
    ("N32_C128_56x56_K128_s2", 32, 128, 56, 56, 128, 3, 3, 2, 1, "NCHW"),
    ("N32_C3_224x224_K64_7x7_s2", 32, 3, 224, 224, 64, 7, 7, 2, 3, "NCHW"),
    ("N1_C64_56x56_K64", 1, 64, 56, 56, 64, 3, 3, 1, 1, "NCHW"),
    ("N1_C512_7x7_K512", 1, 512, 7, 7, 512, 3, 3, 1, 1, "NCHW"),
)
BOUND = 2e-5


def _variants(problem, sm_count: int) -> list[tuple[str, str | None, int | None]]:
    """(algo, tile, splits) to time: every tile without split, split-K where the grid is small,
    each Winograd tile where eligible, im2col where its workspace is moderate."""
    from oxicuda.dnn.conv_dispatch import IGEMM_TILES, igemm_ctas
    from oxicuda.dnn.conv_implicit_gemm_f32 import TILES

    out: list[tuple[str, str | None, int | None]] = [("dispatch", None, None)]
    for tile in TILES:
        out.append(("implicit_gemm", tile, 1))
        ctas = igemm_ctas(problem, tile)
        for splits in (2, 4, 8):
            if ctas * splits <= 4 * sm_count and problem.reduction // splits >= 64:
                out.append(("implicit_gemm", tile, splits))
    if problem.winograd_eligible:
        # the transformed-domain GEMM's tile too (as rules pick it, then each of the rules' tiles)
        for algo in ("winograd_2x2", "winograd_4x4"):
            out.append((algo, None, None))
            out += [(algo, tile, 1) for tile in IGEMM_TILES]
    if problem.im2col_bytes <= 1 << 30:
        out.append(("im2col", None, None))
    return out


def _reference(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """float64 NCHW cross-correlation (small shapes only: the --smoke path without PyTorch)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, _, h, wd = x.shape
    k, _, r, s = w.shape
    oh, ow = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    y = np.zeros((n, k, oh, ow))
    for i in range(r):
        for j in range(s):
            patch = xp[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
            y += np.einsum("nchw,kc->nkhw", patch, w[:, :, i, j])
    return y


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write every measurement to this file")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--only", default="", help="shapes whose name contains this")
    ap.add_argument("--budget", type=float, default=140.0,
                    help="seconds; shapes not started by then are skipped (the JSON is rewritten after "
                         "every shape, so a run cut short still leaves what it measured)")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny versions of the shapes, numpy reference, no vendor (checks the script "
                         "itself; runs on the emulator)")
    args = ap.parse_args()

    import oxicuda
    from oxicuda.bench.timing import time_device
    from oxicuda.dnn import conv_dispatch
    from oxicuda.dnn.conv import conv2d, make_geometry
    from oxicuda.dnn.conv_dispatch import choose_algo, choose_igemm_tile, shape_key
    from oxicuda.dnn.conv_winograd import winograd_gemm_geometry, winograd_tiles_per_chunk
    from oxicuda.driver.facts import device_facts

    if oxicuda.get_backend() != "cuda" and not args.smoke:
        print("sweep_conv: the live backend is the emulator; run this on a GPU (or pass --smoke)",
              file=sys.stderr)
        return 2
    torch = None
    if not args.smoke:
        import torch

        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    sms = device_facts().sm_count
    dev = oxicuda.Device(0)
    records: list[dict] = []
    winners: dict[tuple, tuple[str, str | None, int | None]] = {}
    t_start = time.perf_counter()
    rng = np.random.default_rng(0)
    for name, n, c, h, w, k, r, s, st, pad, layout in SHAPES:
        if args.only not in name:
            continue
        if time.perf_counter() - t_start > args.budget:
            print(f"\n{name}: skipped (past the {args.budget:.0f} s budget)", flush=True)
            continue
        if args.smoke:
            n, c, h, w, k = 1, min(c, 8), min(h, 6 + 2 * st), min(w, 5 + 2 * st), min(k, 8)
        hx = rng.standard_normal((n, c, h, w), dtype=np.float32)
        hw = rng.standard_normal((k, c, r, s), dtype=np.float32)
        if torch is not None:
            tx, tw = torch.from_numpy(hx).cuda(), torch.from_numpy(hw).cuda()
            ref = torch.nn.functional.conv2d(tx.double(), tw.double(), stride=st, padding=pad)
            if layout == "NHWC":
                ref = ref.permute(0, 2, 3, 1).contiguous()
        else:
            ref = _reference(hx, hw, st, pad)
            if layout == "NHWC":
                ref = np.ascontiguousarray(ref.transpose(0, 2, 3, 1))
        ref_max = float(abs(ref).max())
        if layout == "NHWC":
            x = oxicuda.asarray(np.ascontiguousarray(hx.transpose(0, 2, 3, 1)))
            wt = oxicuda.asarray(np.ascontiguousarray(hw.transpose(0, 2, 3, 1)))
        else:
            x, wt = oxicuda.asarray(hx), oxicuda.asarray(hw)
        geo = make_geometry(tuple(x.shape), tuple(wt.shape), st, pad, 1, 1, layout, "f32", "sweep")
        problem = geo.problem
        flops = 2.0 * n * k * problem.oh * problem.ow * c * r * s
        y = oxicuda.empty(geo.y_shape, "float32")
        vendor_ms = math.nan
        if torch is not None:
            def vendor(i: int, tx=tx, tw=tw, st=st, pad=pad) -> None:
                torch.nn.functional.conv2d(tx, tw, stride=st, padding=pad)

            vendor_ms = time_device(vendor, args.repeats).median_ms
        rules_algo = choose_algo(problem, dict(conv_dispatch.THRESHOLDS))
        rules_tile = choose_igemm_tile(problem, sms, dict(conv_dispatch.THRESHOLDS))
        print(f"\n{name} ({layout}): cuDNN {flops / vendor_ms / 1e9:.1f} TFLOP/s "
              f"({vendor_ms:.3f} ms); rules pick {rules_algo}, igemm tile {rules_tile}", flush=True)
        best = None
        key = shape_key(problem)
        saved = conv_dispatch.MEASURED.pop(key, None)
        try:
            for algo, tile, splits in _variants(problem, sms):
                # the key whose MEASURED entry pins the tile: the conv's own, or Winograd's GEMM's
                tile_key = key
                if algo.startswith("winograd"):
                    m = 4 if algo == "winograd_4x4" else 2
                    tile_key = shape_key(winograd_gemm_geometry(problem, m, winograd_tiles_per_chunk(problem, m))
                                         .problem)
                if tile is not None:
                    conv_dispatch.MEASURED[tile_key] = ("implicit_gemm", tile, splits)
                forced = None if algo == "dispatch" else algo

                def call(i: int, forced=forced, x=x, wt=wt, st=st, pad=pad, layout=layout, y=y) -> None:
                    conv2d(x, wt, stride=st, padding=pad, layout=layout, algo=forced, out=y)

                try:
                    y.fill(float("nan"))
                    call(0)
                    if torch is not None:
                        err = float((torch.as_tensor(y, device="cuda").double() - ref).abs().max()) / ref_max
                    else:
                        err = float(np.abs(y.get().astype(np.float64) - ref).max()) / ref_max
                    tm = time_device(call, args.repeats)
                except Exception as exc:
                    print(f"  {algo:14s} {tile or '':11s} {splits or '':>2}  FAILED: {exc}", flush=True)
                    records.append({"shape": name, "layout": layout, "algo": algo, "tile": tile,
                                    "splits": splits, "error": str(exc)})
                    continue
                finally:
                    conv_dispatch.MEASURED.pop(tile_key, None)
                ok = err <= BOUND and math.isfinite(err)
                tflops = flops / tm.median_ms / 1e9
                ratio = vendor_ms / tm.median_ms
                print(f"  {algo:14s} {tile or '':11s} {splits or '':>2}  {tm.median_ms:8.3f} ms  "
                      f"{tflops:6.1f} TFLOP/s  {ratio:5.2f}x cuDNN  err {err:.2e}{'' if ok else '  WRONG'}", flush=True)
                records.append({"shape": name, "layout": layout, "algo": algo, "tile": tile, "splits": splits,
                                "median_ms": tm.median_ms, "min_ms": tm.min_ms, "tflops": tflops,
                                "vs_cudnn": ratio, "rel_err": err, "ok": ok})
                if ok and algo != "dispatch" and (best is None or tm.median_ms < best[0]):
                    best = (tm.median_ms, algo, tile, splits, tile_key)
        finally:
            if saved is not None:
                conv_dispatch.MEASURED[key] = saved
        records.append({"shape": name, "layout": layout, "algo": "cudnn", "median_ms": vendor_ms,
                        "tflops": flops / vendor_ms / 1e9})
        if best is not None:
            ms, algo, tile, splits, tile_key = best
            print(f"  best: {algo} {tile or ''} {splits or ''} ({ms:.3f} ms)")
            if key not in winners or layout == "NCHW":
                if algo.startswith("winograd"):
                    winners[key] = (algo, None, None)
                    if tile is not None:
                        winners[tile_key] = ("implicit_gemm", tile, splits)
                else:
                    winners[key] = (algo, tile, splits)
        _write(args.json, dev.name, sms, time.perf_counter() - t_start, records, winners)
    elapsed = time.perf_counter() - t_start
    print(f"\nMEASURED entries for oxicuda/dnn/conv_dispatch.py ({dev.name}, {sms} SMs, {elapsed:.0f} s):")
    for key, (algo, tile, splits) in winners.items():
        print(f"    {key!r}: ({algo!r}, {tile!r}, {splits!r}),")
    _write(args.json, dev.name, sms, elapsed, records, winners)
    if args.json:
        print(f"wrote {args.json}")
    return 0


def _write(path: str | None, device: str, sms: int, elapsed: float, records: list, winners: dict) -> None:
    if not path:
        return
    with open(path, "w") as f:
        json.dump({"device": device, "sm_count": sms, "seconds": elapsed, "bound": BOUND, "records": records,
                   "measured": [[list(k), list(v)] for k, v in winners.items()]}, f, indent=1, default=str)


if __name__ == "__main__":
    sys.exit(main())
