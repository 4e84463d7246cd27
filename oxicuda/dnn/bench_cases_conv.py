"""Benchmark cases for conv2d (3x3 fp32 vs cuDNN with TF32 off; dispatch, implicit GEMM and
Winograd side by side, so the Winograd / implicit-GEMM ratio reads off the table) and fused
attention (bf16 vs PyTorch scaled_dot_product_attention). On the emulator every case shrinks
to a tiny problem and reports its real flops."""

from __future__ import annotations

import numpy as np

from oxicuda.bench.case import Case, Prepared, register_case

#: (name, N, C, H=W, K) of the issue's conv shapes (3x3, stride 1, padding 1)
CONV_SHAPES = (("N32_C64_56x56_K64", 32, 64, 56, 64), ("N32_C128_28x28_K128", 32, 128, 28, 128),
               ("N32_C256_14x14_K256", 32, 256, 14, 256), ("N8_C512_7x7_K512", 8, 512, 7, 512))
#: dispatch's choice, then each algorithm forced (the Winograd / implicit-GEMM ratio reads off the
#: table: winograd_*'s TFLOP/s over implicit_gemm's, both counted as direct-convolution flops)
CONV_ALGOS = (None, "implicit_gemm", "winograd_2x2", "winograd_4x4", "im2col")
#: (name, B, H, S, D, causal)
ATTENTION_SHAPES = (("bf16_B4_H16_S4096_D128", 4, 16, 4096, 128, False),
                    ("bf16_B4_H16_S4096_D128_causal", 4, 16, 4096, 128, True),
                    ("bf16_B4_H32_S4096_D64", 4, 32, 4096, 64, False))


def _torch():
    try:
        import torch

    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _on_gpu() -> bool:
    import oxicuda

    return oxicuda.get_backend() == "cuda"


def _conv_flops(n: int, c: int, hw: int, k: int) -> float:
    return 2.0 * n * k * hw * hw * c * 9


def _prep_conv(n: int, c: int, hw: int, k: int, algo: str | None):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda.dnn.conv import conv2d

        nn, cc, hh, kk = (n, c, hw, k) if _on_gpu() else (1, 4, 6, 4)
        rng = np.random.default_rng(0)
        hx = rng.standard_normal((nn, cc, hh, hh), dtype=np.float32)
        hw_ = rng.standard_normal((kk, cc, 3, 3), dtype=np.float32)
        x, w = oxicuda.asarray(hx), oxicuda.asarray(hw_)
        y = oxicuda.empty((nn, kk, hh, hh), "float32")

        def ours(i: int) -> None:
            conv2d(x, w, padding=1, algo=algo, out=y)

        torch = _torch()
        vendor = None
        expected = None
        if torch is not None:
            torch.backends.cudnn.allow_tf32 = False
            tx, tw = torch.from_numpy(hx).cuda(), torch.from_numpy(hw_).cuda()

            def vendor(i: int) -> None:
                torch.nn.functional.conv2d(tx, tw, padding=1)

            expected = torch.nn.functional.conv2d(tx.double(), tw.double(), padding=1).cpu().numpy()

        def check() -> float:
            ref = expected
            if ref is None:
                from oxicuda.dnn.conv_winograd import winograd_reference

                ref = winograd_reference(hx.astype(np.float64), hw_.astype(np.float64), 2, (1, 1))
            return float(np.abs(y.get() - ref).max() / np.abs(ref).max())

        return Prepared(ours=ours, vendor=vendor, vendor_name="cuDNN (torch, TF32 off)" if vendor else "",
                        check=check, tolerance=2e-5, flops=_conv_flops(nn, cc, hh, kk))

    return prepare


def _attention_flops(b: int, h: int, s: int, d: int, causal: bool) -> float:
    full = 4.0 * b * h * s * s * d
    return full / 2 if causal else full


def _prep_attention(b: int, h: int, s: int, d: int, causal: bool):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda.dnn.attention_api import attention
        from oxicuda.memory.dtypes import (
            bfloat16_bits_to_float32,
            float32_to_bfloat16_bits,
            normalize_dtype,
        )

        bb, hh, ss, dd = (b, h, s, d) if _on_gpu() else (1, 2, 19, min(d, 16))
        rng = np.random.default_rng(0)
        host = [float32_to_bfloat16_bits(rng.standard_normal((bb, hh, ss, dd), dtype=np.float32))
                for _ in range(3)]
        q, k, v = (oxicuda.asarray(t.view(normalize_dtype("bfloat16"))) for t in host)
        o = oxicuda.empty((bb, hh, ss, dd), "bfloat16")

        def ours(i: int) -> None:
            attention(q, k, v, causal=causal, out=o)

        torch = _torch()
        vendor = None
        if torch is not None:
            tq, tk, tv = (torch.from_numpy(bfloat16_bits_to_float32(t)).cuda().to(torch.bfloat16) for t in host)

            def vendor(i: int) -> None:
                torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)

        def check() -> float:
            q64, k64, v64 = (bfloat16_bits_to_float32(t).astype(np.float64) for t in host)
            # a few heads suffice on the GPU sizes (float64 S x S per head)
            q64, k64, v64 = q64[:1, :2], k64[:1, :2], v64[:1, :2]
            sc = q64 @ k64.transpose(0, 1, 3, 2) / np.sqrt(dd)
            if causal:
                sc = np.where(np.tril(np.ones((ss, ss), bool)), sc, -np.inf)
            p = np.exp(sc - sc.max(-1, keepdims=True))
            ref = p / p.sum(-1, keepdims=True) @ v64
            got = bfloat16_bits_to_float32(o.get()[:1, :2].view(np.uint16)).astype(np.float64)
            return float(np.abs(got - ref).max() / np.abs(ref).max())

        return Prepared(ours=ours, vendor=vendor, vendor_name="PyTorch SDPA" if vendor else "", check=check,
                        tolerance=2e-2, flops=_attention_flops(bb, hh, ss, dd, causal))

    return prepare


for _name, _n, _c, _hw, _k in CONV_SHAPES:
    for _algo in CONV_ALGOS:
        register_case(Case("conv", f"conv3x3_fp32_{_name}" + (f"_{_algo}" if _algo else ""),
                           _prep_conv(_n, _c, _hw, _k, _algo), flops=_conv_flops(_n, _c, _hw, _k),
                           unit="TFLOP/s",
                           note="algo=" + (_algo or "dispatch")))
for _name, _b, _h, _s, _d, _causal in ATTENTION_SHAPES:
    register_case(Case("attention", f"attention_{_name}", _prep_attention(_b, _h, _s, _d, _causal),
                       flops=_attention_flops(_b, _h, _s, _d, _causal), unit="TFLOP/s"))
