"""Sweep the tensor-core conv2d (float16/bfloat16 forward) over its tiles, pipeline depths and NCHW
routes on a set of shapes, beside cuDNN (PyTorch, same dtype and memory format), to replace the
provisional choices of ``oxicuda/dnn/conv_implicit_gemm_tc.py`` (``TILES``, ``LARGE_MIN_CTAS_PER_SM``,
``nchw_via_channels_last``) with measured ones.

    python benches/sweep_conv_tc.py [--dtype float16|bfloat16] [--repeats N] [--only SUBSTRING] [--json PATH]

Every variant's output is checked against PyTorch's float64 convolution of the same rounded
inputs (error relative to max|y|; past 4e-3 for float16 / 1.6e-2 for bfloat16 it is reported as
wrong). Timing: CUDA events, warm-up, median of ``--repeats`` (default 15). ``--smoke`` runs tiny
shapes on the emulator with a numpy reference (checks the script, not the speed).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

#: (name, N, C, H=W, K, R=S, stride, padding)
SHAPES = (
    ("N32_C64_56x56_K64", 32, 64, 56, 64, 3, 1, 1),
    ("N32_C128_28x28_K128", 32, 128, 28, 128, 3, 1, 1),
    ("N32_C256_14x14_K256", 32, 256, 14, 256, 3, 1, 1),
    ("N8_C512_7x7_K512", 8, 512, 7, 512, 3, 1, 1),
    ("N32_C256_14x14_K1024_1x1", 32, 256, 14, 1024, 1, 1, 0),
    ("N32_C128_56x56_K128_s2", 32, 128, 56, 128, 3, 2, 1),
    ("N32_C3_224x224_K64_7x7_s2", 32, 3, 224, 64, 7, 2, 3),
)
BOUND = {"float16": 4e-3, "bfloat16": 1.6e-2}


def _reference(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    x, w = x.astype(np.float64), w.astype(np.float64)
    h, r = x.shape[2], w.shape[2]
    o = (h + 2 * pad - r) // stride + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    return sum(np.einsum("nchw,kc->nkhw", xp[:, :, i:i + stride * (o - 1) + 1:stride, j:j + stride * (o - 1) + 1:stride],
                         w[:, :, i, j]) for i in range(r) for j in range(r))


def _variants(layout: str, cg: int) -> list[tuple[str, str | None, int | None, bool, int]]:
    """(label, tile, stages, via channels_last) to time: "dispatch" is conv2d's own choice (which
    may not be the tensor-core kernel), "tc" the tensor-core kernel with its own tile choice (and
    split-K), the rest pin a tile, depth and split-K factor."""
    from oxicuda.dnn.conv_implicit_gemm_tc import TILES

    fast = cg % 8 == 0
    out = [("dispatch", None, None, True, 1), ("tc", None, None, True, 1)]
    via = " via NHWC" if layout == "NCHW" else ""
    if fast:
        for tile in TILES:
            for stages in (3, 4):
                out.append((f"{tile}/{stages}st{via}", tile, stages, True, 1))
        for splits in (2, 4, 8):
            out.append((f"small/3st split {splits}{via}", "small", 3, True, splits))
    if layout == "NCHW":
        out.append(("gather small/3st", "small", 3, False, 1))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"))
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--only", default="")
    ap.add_argument("--json")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on any backend, numpy reference")
    args = ap.parse_args()

    import oxicuda
    from oxicuda.bench.timing import time_device
    from oxicuda.dnn import conv_implicit_gemm_tc as tc
    from oxicuda.dnn.conv import conv2d
    from oxicuda.memory.dtypes import (
        bfloat16_bits_to_float32,
        float32_to_bfloat16_bits,
        normalize_dtype,
    )

    if oxicuda.get_backend() != "cuda" and not args.smoke:
        print("sweep_conv_tc: the live backend is the emulator; run this on a GPU (or pass --smoke)", file=sys.stderr)
        return 2
    torch = None if args.smoke else __import__("torch")
    dtype = args.dtype

    def rounded(a):
        return a.astype(np.float16).astype(np.float32) if dtype == "float16" else \
            bfloat16_bits_to_float32(float32_to_bfloat16_bits(a))

    def device(a):
        return oxicuda.asarray(a.astype(np.float16)) if dtype == "float16" else \
            oxicuda.asarray(float32_to_bfloat16_bits(a).view(normalize_dtype(dtype)))

    def host(arr):
        g = arr.get()
        return g.astype(np.float64) if dtype == "float16" else bfloat16_bits_to_float32(g.view(np.uint16)).astype(np.float64)

    records = []
    rng = np.random.default_rng(0)
    original_choose, original_route, original_splits = tc.choose_spec, tc.nchw_via_channels_last, tc.choose_splits
    for name, n, c, hw, k, r, st, pad in SHAPES:
        if args.only not in name:
            continue
        if args.smoke:
            n, c, hw, k = 1, min(c, 8), min(hw, 9), min(k, 8)
        hx = rounded(rng.standard_normal((n, c, hw, hw), dtype=np.float32))
        hwt = rounded(rng.standard_normal((k, c, r, r), dtype=np.float32))
        if torch is not None:
            ref = torch.nn.functional.conv2d(torch.from_numpy(hx).cuda().double(), torch.from_numpy(hwt).cuda().double(),
                                             stride=st, padding=pad).cpu().numpy()
        else:
            ref = _reference(hx, hwt, st, pad)
        o = ref.shape[2]
        flops = 2.0 * n * k * o * o * c * r * r
        for layout in ("NHWC", "NCHW"):
            nhwc = layout == "NHWC"
            to_l = (lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1))) if nhwc else (lambda a: a)
            x, w = device(to_l(hx)), device(to_l(hwt))
            y = oxicuda.empty((n, o, o, k) if nhwc else (n, k, o, o), dtype)
            vendor_ms = math.nan
            if torch is not None:
                fmt = torch.channels_last if nhwc else torch.contiguous_format
                tdt = getattr(torch, dtype)
                tx = torch.from_numpy(hx).cuda().to(tdt).contiguous(memory_format=fmt)
                tw = torch.from_numpy(hwt).cuda().to(tdt).contiguous(memory_format=fmt)
                def vendor(i: int, tx=tx, tw=tw, st=st, pad=pad) -> None:
                    torch.nn.functional.conv2d(tx, tw, stride=st, padding=pad)

                vendor_ms = time_device(vendor, args.repeats).median_ms
            print(f"\n{name} {layout} {dtype}: cuDNN {flops / vendor_ms / 1e9:.1f} TFLOP/s ({vendor_ms:.3f} ms)")
            for label, tile, stages, via_cl, splits in _variants(layout, c):
                def forced(*a, tile=tile, stages=stages, **kw):
                    spec = original_choose(*a, **kw)
                    if tile is None:
                        return spec
                    bm, bn, wm, wn, _ = tc.TILES[tile]
                    return dataclasses.replace(spec, block_m=bm, block_n=bn, warps_m=wm, warps_n=wn, stages=stages)

                tc.choose_spec = forced
                tc.choose_splits = original_splits if tile is None else (lambda *a, n=splits: n)
                tc.nchw_via_channels_last = original_route if via_cl else (lambda *a: False)
                try:
                    algo = None if label == "dispatch" else "implicit_gemm_tc"

                    def call(i: int, x=x, w=w, st=st, pad=pad, layout=layout, y=y, algo=algo) -> None:
                        conv2d(x, w, stride=st, padding=pad, layout=layout, algo=algo, out=y)

                    y.set(np.full(y.shape, np.nan, np.float16) if dtype == "float16"
                          else float32_to_bfloat16_bits(np.full(y.shape, np.nan, np.float32)).view(y.dtype))
                    call(0)
                    got = host(y)
                    got = got.transpose(0, 3, 1, 2) if nhwc else got
                    err = float(np.abs(got - ref).max() / np.abs(ref).max())
                    tm = time_device(call, args.repeats)
                except Exception as exc:
                    print(f"  {label:24s} FAILED: {exc}")
                    records.append({"shape": name, "layout": layout, "variant": label, "error": str(exc)})
                    continue
                finally:
                    tc.choose_spec, tc.nchw_via_channels_last = original_choose, original_route
                    tc.choose_splits = original_splits
                ok = math.isfinite(err) and err <= BOUND[dtype]
                tflops = flops / tm.median_ms / 1e9
                print(f"  {label:24s} {tm.median_ms:8.3f} ms {tflops:7.1f} TFLOP/s {vendor_ms / tm.median_ms:5.2f}x cuDNN"
                      f"  err {err:.1e}{'' if ok else '  WRONG'}")
                records.append({"shape": name, "layout": layout, "dtype": dtype, "variant": label,
                                "median_ms": tm.median_ms, "tflops": tflops, "vs_cudnn": vendor_ms / tm.median_ms,
                                "rel_err": err, "ok": ok})
            records.append({"shape": name, "layout": layout, "dtype": dtype, "variant": "cudnn",
                            "median_ms": vendor_ms, "tflops": flops / vendor_ms / 1e9})
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    return 0 if all(r.get("ok", True) and "error" not in r for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
