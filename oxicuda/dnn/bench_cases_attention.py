"""Attention bench cases per kernel family: the issue's three bf16 shapes (B4 H16 S4096 D128,
causal and not; B4 H32 S4096 D64) with ``algo="wgmma"`` and ``algo="mma"`` forced, each beside
PyTorch's scaled_dot_product_attention, so the two tensor-core variants are reported separately
(the dispatch-chosen cases are ``attention_bf16_*`` without a suffix, in bench_cases_conv).

The wgmma cases need an sm_90 GPU (``gpu_only``: the emulator's default device is sm_86). On the
emulator the mma cases shrink to one head of 19 rows. The check compares 128 leading and 128
trailing query rows of the first and last (batch, head) with a float64 reference on the host.
"""

from __future__ import annotations

import numpy as np

from oxicuda.bench.case import Case, Prepared, register_case

#: (name, B, H, S, D, causal)
SHAPES = (("bf16_B4_H16_S4096_D128", 4, 16, 4096, 128, False),
          ("bf16_B4_H16_S4096_D128_causal", 4, 16, 4096, 128, True),
          ("bf16_B4_H32_S4096_D64", 4, 32, 4096, 64, False))
#: "wgmma_serial": the wgmma family without its intra-warpgroup overlap (spec.overlap False),
#: launched through attention_wgmma.launch. Dispatch itself runs that variant since 8b12524 (it
#: measured faster), so the "wgmma" rows time the same kernel through the public call.
ALGOS = ("wgmma", "wgmma_serial", "mma")
_CHECK_ROWS = 128


def _on_gpu() -> bool:
    import oxicuda

    return oxicuda.get_backend() == "cuda"


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def flops(b: int, h: int, s: int, d: int, causal: bool) -> float:
    """4 B H S^2 D (two GEMMs), halved when causal: the convention of FlashAttention and PyTorch."""
    full = 4.0 * b * h * s * s * d
    return full / 2 if causal else full


def _reference_rows(q: np.ndarray, k: np.ndarray, v: np.ndarray, rows: np.ndarray, causal: bool) -> np.ndarray:
    """float64 attention of query ``rows`` of one head (q, k, v: (S, D) float64)."""
    s = q[rows] @ k.T / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.arange(k.shape[0])[None, :] <= rows[:, None], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True) @ v


def _prep(b: int, h: int, s: int, d: int, causal: bool, algo: str):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda.dnn.attention_api import attention
        from oxicuda.memory.dtypes import (
            bfloat16_bits_to_float32,
            float32_to_bfloat16_bits,
            normalize_dtype,
        )

        bb, hh, ss = (b, h, s) if _on_gpu() else (1, 1, 19)
        rng = np.random.default_rng(0)
        host = [float32_to_bfloat16_bits(rng.standard_normal((bb, hh, ss, d), dtype=np.float32)) for _ in range(3)]
        q, k, v = (oxicuda.asarray(t.view(normalize_dtype("bfloat16"))) for t in host)
        o = oxicuda.empty((bb, hh, ss, d), "bfloat16")

        def ours(i: int) -> None:
            attention(q, k, v, causal=causal, out=o, algo=algo)

        if algo == "wgmma_serial":
            import dataclasses

            from oxicuda.dnn import attention_wgmma as wg
            from oxicuda.ptx.target import device_arch

            if device_arch() != "sm_90":
                raise ValueError(f"the wgmma family needs sm_90; this device is {device_arch()}")
            spec = dataclasses.replace(wg.choose_spec("bf16", d, causal, False), overlap=False)

            def ours(i: int) -> None:
                attention(q, k, v, causal=causal, out=o, config=spec)

        torch = _torch()
        vendor = None
        if torch is not None and _on_gpu():
            tq, tk, tv = (torch.from_numpy(bfloat16_bits_to_float32(t)).cuda().to(torch.bfloat16) for t in host)

            def vendor(i: int) -> None:
                torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)

        def check() -> float:
            got_all = o.get().view(np.uint16)
            rows = np.unique(np.r_[np.arange(min(_CHECK_ROWS, ss)), np.arange(max(0, ss - _CHECK_ROWS), ss)])
            worst = 0.0
            for bi, hi in ((0, 0), (bb - 1, hh - 1)):
                q64, k64, v64 = (bfloat16_bits_to_float32(t[bi, hi]).astype(np.float64) for t in host)
                ref = _reference_rows(q64, k64, v64, rows, causal)
                got = bfloat16_bits_to_float32(got_all[bi, hi, rows]).astype(np.float64)
                worst = max(worst, float(np.abs(got - ref).max() / np.abs(ref).max()))
            return worst

        return Prepared(ours=ours, vendor=vendor, vendor_name="PyTorch SDPA" if vendor else "", check=check,
                        tolerance=2e-2, flops=flops(bb, hh, ss, d, causal), problem=f"B{bb} H{hh} S{ss} D{d}")

    return prepare


for _name, _b, _h, _s, _d, _causal in SHAPES:
    for _algo in ALGOS:
        register_case(Case("attention", f"attention_{_name}_{_algo}", _prep(_b, _h, _s, _d, _causal, _algo),
                           flops=flops(_b, _h, _s, _d, _causal), unit="TFLOP/s", gpu_only=_algo.startswith("wgmma"),
                           archs=("sm_90",) if _algo.startswith("wgmma") else (),
                           note=f"algo={_algo!r} forced" + ("; needs sm_90" if _algo.startswith("wgmma") else "")))
