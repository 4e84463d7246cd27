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
    except Exception:  # noqa: BLE001  (a broken torch install means no vendor column, not a crash)
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

for _module in ("oxicuda.dnn.bench_cases_conv", "oxicuda.dnn.bench_cases_conv_tc"):
    try:  # conv/attention cases, owned elsewhere; absent is fine, broken is an error
        importlib.import_module(_module)
    except ModuleNotFoundError as exc:
        if exc.name != _module:
            raise
