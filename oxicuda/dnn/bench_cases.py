"""dnn benchmark cases: softmax and layer norm bandwidth (GB/s of one read + one write) against
PyTorch, side by side. On the emulator the problems shrink to a few rows (and the figures mean
nothing but that the path runs); ``Prepared.bytes`` reports what was actually moved.

Conv and attention cases live in ``bench_cases_conv.py`` (imported at the end when present).
"""

from __future__ import annotations

import importlib

import numpy as np

from oxicuda.bench.case import Case, Prepared, register_case

ROTATE = 3  # input sets cycled through, so that repeats do not run out of a warm L2


def _torch():
    try:
        import torch

        return torch if torch.cuda.is_available() else None
    except Exception:
        return None


def _on_gpu() -> bool:
    import oxicuda

    return oxicuda.get_backend() == "cuda"


def _rows_cols(rows: int, cols: int, quick: bool) -> tuple[int, int]:
    if not _on_gpu():
        return 4, min(cols, 256)
    if quick:
        return max(1, rows // 4), cols
    return rows, cols


def _prep_row_op(op: str, rows: int, cols: int):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda import dnn

        r, c = _rows_cols(rows, cols, quick)
        rng = np.random.default_rng(0)
        hosts = [rng.standard_normal((r, c), dtype=np.float32) for _ in range(ROTATE)]
        xs = [oxicuda.asarray(h) for h in hosts]
        outs = [oxicuda.empty((r, c), np.float32) for _ in range(ROTATE)]
        w = rng.standard_normal(c, dtype=np.float32)
        b = rng.standard_normal(c, dtype=np.float32)
        wd, bd = oxicuda.asarray(w), oxicuda.asarray(b)
        last = {}

        if op == "softmax":
            def ours(i: int):
                k = i % ROTATE
                last["k"] = k
                return dnn.softmax(xs[k], out=outs[k])
        else:
            def ours(i: int):
                k = i % ROTATE
                last["k"] = k
                outs[k] = dnn.layer_norm(xs[k], weight=wd, bias=bd)
                return outs[k]

        def check() -> float:
            ours(0)
            x = hosts[0].astype(np.float64)
            if op == "softmax":
                e = np.exp(x - x.max(axis=-1, keepdims=True))
                ref = e / e.sum(axis=-1, keepdims=True)
            else:
                m = x.mean(axis=-1, keepdims=True)
                v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
                ref = (x - m) / np.sqrt(v + 1e-5) * w + b
            got = outs[0].get()
            return float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30))

        prepared = Prepared(ours=ours, check=check, tolerance=1e-5, bytes=2.0 * r * c * 4,
                            problem=f"{r}x{c}")
        torch = _torch()
        if torch is not None and _on_gpu():
            tx = [torch.from_numpy(h).cuda() for h in hosts]
            tw, tb = torch.from_numpy(w).cuda(), torch.from_numpy(b).cuda()
            if op == "softmax":
                prepared.vendor = lambda i: torch.softmax(tx[i % ROTATE], dim=-1)
                prepared.vendor_name = "torch.softmax"
            else:
                prepared.vendor = lambda i: torch.nn.functional.layer_norm(tx[i % ROTATE], (c,), tw, tb)
                prepared.vendor_name = "torch layer_norm"
        return prepared

    return prepare


for _op, _rows, _cols in (("softmax", 8192, 8192), ("softmax", 65536, 1024), ("layernorm", 8192, 8192)):
    register_case(Case("dnn", f"{_op}_fp32_{_rows}x{_cols}", _prep_row_op(_op, _rows, _cols),
                       bytes=2.0 * _rows * _cols * 4, unit="GB/s",
                       note="one read + one write of fp32; target >= 85% of copy bandwidth"))

def _host_cost_case(op: str):
    """Host microseconds of one cached small call (the launch-plan hot path) against PyTorch's
    same call in the same process: softmax and layer_norm 64x64 fp32, conv2d 1x16x32x32 (16
    filters 3x3, padding 1, fp32) and attention B1 H1 S128 D64 (bf16)."""

    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda import dnn
        from oxicuda.memory.dtypes import BFLOAT16

        rng = np.random.default_rng(0)
        torch = _torch() if _on_gpu() else None
        if op in ("softmax", "layer_norm"):
            h = rng.standard_normal((64, 64), dtype=np.float32)
            x, out = oxicuda.asarray(h), oxicuda.empty((64, 64), np.float32)
            if op == "softmax":
                def ours(i: int):
                    return dnn.softmax(x, out=out)

                def reference():
                    e = np.exp(h - h.max(axis=-1, keepdims=True))
                    return e / e.sum(axis=-1, keepdims=True)
            else:
                def ours(i: int):
                    out_ = dnn.layer_norm(x)
                    last[0] = out_
                    return out_

                def reference():
                    m = h.astype(np.float64).mean(axis=-1, keepdims=True)
                    return (h - m) / np.sqrt(((h - m) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
            last = [out]
            tx = torch.from_numpy(h).cuda() if torch is not None else None
            vendor = (lambda i: torch.softmax(tx, dim=-1)) if op == "softmax" else (
                lambda i: torch.nn.functional.layer_norm(tx, (64,)))
            tol = 1e-5
        elif op == "conv2d":
            hx = rng.standard_normal((1, 16, 32, 32), dtype=np.float32)
            hw = rng.standard_normal((16, 16, 3, 3), dtype=np.float32)
            x, w = oxicuda.asarray(hx), oxicuda.asarray(hw)
            out = oxicuda.empty((1, 16, 32, 32), np.float32)
            last = [out]

            def ours(i: int):
                return dnn.conv2d(x, w, padding=1, out=out)

            def reference():
                from numpy.lib.stride_tricks import sliding_window_view

                xp = np.pad(hx.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
                win = sliding_window_view(xp, (3, 3), axis=(2, 3))  # 1, 16, 32, 32, 3, 3
                return np.einsum("nchwrs,kcrs->nkhw", win, hw.astype(np.float64))
            if torch is not None:
                tx, tw = torch.from_numpy(hx).cuda(), torch.from_numpy(hw).cuda()
                vendor = lambda i: torch.nn.functional.conv2d(tx, tw, padding=1)
            tol = 1e-4
        else:
            shape = (1, 1, 128, 64)
            q, k, v = (rng.standard_normal(shape).astype(BFLOAT16) for _ in range(3))
            dq, dk, dv = (oxicuda.asarray(t) for t in (q, k, v))
            out = oxicuda.empty(shape, BFLOAT16)
            last = [out]

            def ours(i: int):
                return dnn.attention(dq, dk, dv, out=out)

            def reference():
                s = q[0, 0].astype(np.float64) @ k[0, 0].astype(np.float64).T / 8.0
                p = np.exp(s - s.max(axis=-1, keepdims=True))
                return (p / p.sum(axis=-1, keepdims=True) @ v[0, 0].astype(np.float64))[None, None]
            if torch is not None:
                tq, tk, tv = (torch.from_numpy(np.asarray(t, np.float32)).cuda().to(torch.bfloat16)
                              for t in (q, k, v))
                vendor = lambda i: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)
            tol = 3e-2

        def check() -> float:
            ours(0)
            ref = reference()
            got = np.asarray(last[0].get(), np.float64)
            return float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30))

        prepared = Prepared(ours=ours, check=check, tolerance=tol)
        if torch is not None:
            prepared.vendor, prepared.vendor_name = vendor, f"PyTorch {op}"
        return prepared

    return prepare


for _op, _shape in (("softmax", "64x64"), ("layer_norm", "64x64"), ("conv2d", "1x16x32x32"),
                    ("attention", "B1_H1_S128_D64")):
    register_case(Case("dnn", f"{_op}_{_shape}_host_cost", _host_cost_case(_op), unit="us", timing="host",
                       gpu_only=True, note=f"host microseconds of one cached {_op} call vs PyTorch's"))

for _module in ("oxicuda.dnn.bench_cases_conv", "oxicuda.dnn.bench_cases_conv_tc"):
    try:  # conv/attention cases, owned elsewhere; absent is fine, broken is an error
        importlib.import_module(_module)
    except ModuleNotFoundError as exc:
        if exc.name != _module:
            raise
