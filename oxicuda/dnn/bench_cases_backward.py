"""Backward-pass bench cases (issue 22, item 2), each beside PyTorch's autograd of the same
forward in the same process:

- row-wise: softmax, log_softmax, layer_norm and rms_norm backward, float32 and bfloat16, at
  65536x1024, 8192x8192 and 4096x32768; the figure is GB/s of the fewest bytes a backward must
  move (read dy and the saved tensor, write dx: 3 x rows x cols elements; the parameter
  gradients add O(cols)), to set against the 4257 GB/s device-to-device copy of the H200
  (DESIGN.md) for the issue's 90% goal;
- attention: dq, dk, dv of bf16 B4 H16 S4096 D128 (causal and not) and B4 H32 S4096 D64 against
  ``torch.autograd.grad`` of ``scaled_dot_product_attention``; FLOPs 10 B H S^2 D (the five
  GEMMs of FlashAttention-2's backward), halved when causal.

On the emulator the problems shrink to a few rows (the figures then only say the path runs).
"""

from __future__ import annotations

import numpy as np

from oxicuda.bench.case import Case, Prepared, register_case

ROW_SHAPES = ((65536, 1024), (8192, 8192), (4096, 32768))
ROW_OPS = ("softmax", "log_softmax", "layer_norm", "rms_norm")
ATTENTION_SHAPES = (("bf16_B4_H16_S4096_D128", 4, 16, 4096, 128, False),
                    ("bf16_B4_H16_S4096_D128_causal", 4, 16, 4096, 128, True),
                    ("bf16_B4_H32_S4096_D64", 4, 32, 4096, 64, False))
_SIZES = {"float32": 4, "bfloat16": 2}


def _on_gpu() -> bool:
    import oxicuda

    return oxicuda.get_backend() == "cuda"


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _row_reference(op: str, x: np.ndarray, dy: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(saved tensor, float64 dx) of ``op`` at x (float64)."""
    if op in ("softmax", "log_softmax"):
        e = np.exp(x - x.max(-1, keepdims=True))
        y = e / e.sum(-1, keepdims=True)
        if op == "softmax":
            return y, y * (dy - (dy * y).sum(-1, keepdims=True))
        return np.log(y), dy - y * dy.sum(-1, keepdims=True)
    if op == "layer_norm":
        m = x.mean(-1, keepdims=True)
        r = 1 / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)
        xh, g = (x - m) * r, dy * w
        return x, r * (g - g.mean(-1, keepdims=True) - xh * (g * xh).mean(-1, keepdims=True))
    r = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
    xh, g = x * r, dy * w
    return x, r * (g - xh * (g * xh).mean(-1, keepdims=True))


def _prep_row(op: str, dtype: str, rows: int, cols: int):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda import dnn
        from oxicuda.memory.dtypes import host_astype

        r, c = (rows // 4 if quick else rows, cols) if _on_gpu() else (4, min(cols, 256))
        rng = np.random.default_rng(0)
        x = rng.standard_normal((r, c))
        dy = rng.standard_normal((r, c))
        w = rng.standard_normal(c)
        saved, ref = _row_reference(op, x, dy, w)
        dd, sd, wd = (oxicuda.asarray(host_astype(a, dtype)) for a in (dy, saved, w))
        last = {}

        def ours(i: int):
            if op == "softmax":
                last["dx"] = dnn.softmax_backward(dd, sd)
            elif op == "log_softmax":
                last["dx"] = dnn.log_softmax_backward(dd, sd)
            elif op == "layer_norm":
                last["dx"] = dnn.layer_norm_backward(dd, sd, None, wd, wd)[0]
            else:
                last["dx"] = dnn.rms_norm_backward(dd, sd, wd)[0]

        def check() -> float:
            ours(0)
            got = host_astype(last["dx"].get(), "float32").astype(np.float64)
            return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))

        prepared = Prepared(ours=ours, check=check, tolerance=1e-4 if dtype == "float32" else 3e-2,
                            bytes=3.0 * r * c * _SIZES[dtype], problem=f"{r}x{c}")
        torch = _torch()
        if torch is not None and _on_gpu():
            tdt = torch.float32 if dtype == "float32" else torch.bfloat16
            tx = torch.from_numpy(x).cuda().to(tdt).requires_grad_(True)
            tw = torch.from_numpy(w).cuda().to(tdt).requires_grad_(True)
            tdy = torch.from_numpy(dy).cuda().to(tdt)
            fn = {"softmax": lambda: torch.softmax(tx, -1), "log_softmax": lambda: torch.log_softmax(tx, -1),
                  "layer_norm": lambda: torch.nn.functional.layer_norm(tx, (c,), tw, tw),
                  "rms_norm": lambda: torch.nn.functional.rms_norm(tx, (c,), tw)}[op]
            out = fn()
            inputs = (tx,) if op in ("softmax", "log_softmax") else (tx, tw)
            prepared.vendor = lambda i: torch.autograd.grad(out, inputs, tdy, retain_graph=True)
            prepared.vendor_name = f"torch autograd {op}"
        return prepared

    return prepare


for _op in ROW_OPS:
    for _dtype in ("float32", "bfloat16"):
        for _rows, _cols in ROW_SHAPES:
            register_case(Case("dnn_backward", f"{_op}_backward_{'fp32' if _dtype == 'float32' else 'bf16'}_"
                                               f"{_rows}x{_cols}", _prep_row(_op, _dtype, _rows, _cols),
                               bytes=3.0 * _rows * _cols * _SIZES[_dtype], unit="GB/s",
                               note="read dy and the saved tensor, write dx; goal >= 90% of the 4257 GB/s copy"))


def attention_backward_flops(b: int, h: int, s: int, d: int, causal: bool) -> float:
    full = 10.0 * b * h * s * s * d
    return full / 2 if causal else full


def _prep_attention(b: int, h: int, s: int, d: int, causal: bool):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda import dnn
        from oxicuda.memory.dtypes import host_astype

        bb, hh, ss = (b, h, s) if _on_gpu() else (1, 1, 19)
        rng = np.random.default_rng(0)
        host = [host_astype(rng.standard_normal((bb, hh, ss, d)), "bfloat16") for _ in range(4)]
        q, k, v, do = (oxicuda.asarray(t) for t in host)
        o, lse = dnn.attention(q, k, v, causal=causal, return_lse=True)
        last = {}

        def ours(i: int):
            last["g"] = dnn.attention_backward(q, k, v, o, do, lse, causal=causal)

        def check() -> float:
            ours(0)
            # head (0, 0) against float64 (the whole head: S^2 work on the host)
            q64, k64, v64, do64 = (host_astype(t[0, 0], "float32").astype(np.float64) for t in host)
            sc = q64 @ k64.T / np.sqrt(d)
            if causal:
                sc = np.where(np.tril(np.ones((ss, ss), bool)), sc, -np.inf)
            p = np.exp(sc - sc.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            o64 = p @ v64
            ds = p * (do64 @ v64.T - (do64 * o64).sum(-1, keepdims=True))
            refs = (ds @ k64 / np.sqrt(d), ds.T @ q64 / np.sqrt(d), p.T @ do64)
            worst = 0.0
            for got, ref in zip(last["g"], refs):
                g = host_astype(got.get()[0, 0], "float32").astype(np.float64)
                worst = max(worst, float(np.abs(g - ref).max() / np.abs(ref).max()))
            return worst

        prepared = Prepared(ours=ours, check=check, tolerance=3e-2,
                            flops=attention_backward_flops(bb, hh, ss, d, causal), problem=f"B{bb} H{hh} S{ss} D{d}")
        torch = _torch()
        if torch is not None and _on_gpu():
            tq, tk, tv, tdo = (torch.from_numpy(host_astype(t, "float32")).cuda().to(torch.bfloat16) for t in host)
            for t in (tq, tk, tv):
                t.requires_grad_(True)
            out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
            prepared.vendor = lambda i: torch.autograd.grad(out, (tq, tk, tv), tdo, retain_graph=True)
            prepared.vendor_name = "PyTorch SDPA backward"
        return prepared

    return prepare


for _name, _b, _h, _s, _d, _causal in ATTENTION_SHAPES:
    register_case(Case("attention", f"attention_backward_{_name}", _prep_attention(_b, _h, _s, _d, _causal),
                       flops=attention_backward_flops(_b, _h, _s, _d, _causal), unit="TFLOP/s",
                       note="dq, dk, dv on mma.sync (dk/dv SIMT at D128; no wgmma backward yet)"))
