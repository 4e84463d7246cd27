"""Benchmark cases for conv2d in float16/bfloat16 on tensor cores (``conv_implicit_gemm_tc``): the
issue's four 3x3 shapes in NHWC (channels_last in PyTorch) and NCHW, each against
``torch.nn.functional.conv2d`` (cuDNN) on the same data in the same layout and dtype. Family
``conv_tc`` (``python -m oxicuda bench conv_tc``). The check is against a float64 convolution
of the same rounded inputs; on the emulator every case shrinks to a tiny problem. The cases pin
``algo="implicit_gemm_tc"`` (dispatch may route a shape elsewhere, e.g. im2col for reductions of
4608 and more); an NCHW case includes its two channels-last transposes."""

from __future__ import annotations

import numpy as np

from oxicuda.bench.case import Case, Prepared, register_case

#: (name, N, C, H=W, K) of the issue's conv shapes (3x3, stride 1, padding 1), as in bench_cases_conv
CONV_SHAPES = (("N32_C64_56x56_K64", 32, 64, 56, 64), ("N32_C128_28x28_K128", 32, 128, 28, 128),
               ("N32_C256_14x14_K256", 32, 256, 14, 256), ("N8_C512_7x7_K512", 8, 512, 7, 512))
DTYPES = {"fp16": "float16", "bf16": "bfloat16"}
LAYOUTS = ("NHWC", "NCHW")
#: max|ours - float64| / max|float64|: one rounding of the output plus f32 accumulation
TOLERANCE = {"float16": 2e-3, "bfloat16": 8e-3}


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _on_gpu() -> bool:
    import oxicuda

    return oxicuda.get_backend() == "cuda"


def _flops(n: int, c: int, hw: int, k: int) -> float:
    return 2.0 * n * k * hw * hw * c * 9


def _conv3x3_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """float64 3x3 convolution with padding 1, NCHW (for the emulator's tiny problems)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    hh, ww = x.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    return sum(np.einsum("nchw,kc->nkhw", xp[:, :, i:i + hh, j:j + ww], w[:, :, i, j])
               for i in range(3) for j in range(3))


def _rounded(host: np.ndarray, dtype: str) -> np.ndarray:
    """float32 host data rounded to ``dtype`` and held as float32 (exact)."""
    from oxicuda.memory.dtypes import bfloat16_bits_to_float32, float32_to_bfloat16_bits

    if dtype == "float16":
        return host.astype(np.float16).astype(np.float32)
    return bfloat16_bits_to_float32(float32_to_bfloat16_bits(host))


def _device(host32: np.ndarray, dtype: str):
    """A device array of ``dtype`` holding the (already rounded) float32 values."""
    import oxicuda
    from oxicuda.memory.dtypes import float32_to_bfloat16_bits, normalize_dtype

    if dtype == "float16":
        return oxicuda.asarray(host32.astype(np.float16))
    return oxicuda.asarray(float32_to_bfloat16_bits(host32).view(normalize_dtype(dtype)))


def _prep(n: int, c: int, hw: int, k: int, dtype: str, layout: str):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda.dnn.conv import conv2d

        nn, cc, hh, kk = (n, c, hw, k) if _on_gpu() else (1, 8, 6, 8)
        rng = np.random.default_rng(0)
        hx = _rounded(rng.standard_normal((nn, cc, hh, hh), dtype=np.float32), dtype)
        hw_ = _rounded(rng.standard_normal((kk, cc, 3, 3), dtype=np.float32), dtype)
        nhwc = layout == "NHWC"
        to_layout = (lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1))) if nhwc else (lambda a: a)
        x, w = _device(to_layout(hx), dtype), _device(to_layout(hw_), dtype)
        y = oxicuda.empty((nn, hh, hh, kk) if nhwc else (nn, kk, hh, hh), dtype)

        def ours(i: int) -> None:
            conv2d(x, w, padding=1, layout=layout, algo="implicit_gemm_tc", out=y)

        torch = _torch()
        vendor = None
        expected = None
        if torch is not None:
            tdt = getattr(torch, dtype)
            fmt = torch.channels_last if nhwc else torch.contiguous_format
            tx = torch.from_numpy(hx).cuda().to(tdt).contiguous(memory_format=fmt)
            tw = torch.from_numpy(hw_).cuda().to(tdt).contiguous(memory_format=fmt)

            def vendor(i: int) -> None:
                torch.nn.functional.conv2d(tx, tw, padding=1)

            expected = torch.nn.functional.conv2d(torch.from_numpy(hx).cuda().double(),
                                                  torch.from_numpy(hw_).cuda().double(), padding=1).cpu().numpy()

        def check() -> float:
            from oxicuda.memory.dtypes import bfloat16_bits_to_float32

            ref = expected if expected is not None else _conv3x3_reference(hx, hw_)
            got = y.get()
            got = (got.astype(np.float64) if dtype == "float16"
                   else bfloat16_bits_to_float32(got.view(np.uint16)).astype(np.float64))
            if nhwc:
                got = got.transpose(0, 3, 1, 2)
            return float(np.abs(got - ref).max() / np.abs(ref).max())

        return Prepared(ours=ours, vendor=vendor,
                        vendor_name=f"cuDNN (torch {dtype}, {'channels_last' if nhwc else 'NCHW'})" if vendor else "",
                        check=check, tolerance=TOLERANCE[dtype], flops=_flops(nn, cc, hh, kk),
                        problem="" if _on_gpu() else f"N{nn} C{cc} {hh}x{hh} K{kk}")

    return prepare


for _name, _n, _c, _hw, _k in CONV_SHAPES:
    for _tag, _dtype in DTYPES.items():
        for _layout in LAYOUTS:
            register_case(Case("conv_tc", f"conv3x3_{_tag}_{_layout}_{_name}", _prep(_n, _c, _hw, _k, _dtype, _layout),
                               flops=_flops(_n, _c, _hw, _k), unit="TFLOP/s",
                               quick=_name == CONV_SHAPES[0][0] and _layout == "NHWC",
                               note=f"algo=implicit_gemm_tc, {_layout}"))
