"""Probe the GPU where the emulator had to guess (issue #4): NaN propagation of fma and of the
f64 two-operand instructions, the mbarrier phase kernel, and TMA boxes at every kind of
coordinate. Each probe runs on the GPU and on an in-process sm_90 emulator with the same inputs;
the script prints what differs and writes every input and output bit pattern as JSON.

    OXICUDA_BACKEND=cuda python3 benches/probe_fidelity.py --json probe-fidelity.json

- nan: every pairing of NaN and non-NaN operands (non-NaN: 1.5, +inf, +0; NaN: quiet +payload 1,
  quiet -payload 2, signalling +payload 3, signalling -payload 4) in every operand position of
  fma.rn.f64 (343 lanes), fma.rn.f32, fma.rn.f16, fma.rn.bf16, and add/sub/mul/min/max/div.rn.f64
  (49 lanes each); for each set of NaN operand positions, the position whose NaN the GPU returned
  (quieted) or "canonical"/"other".
- mbarrier: the 64-thread, 5-probe table of tests/test_emulator_async.py::mbarrier_phases_kernel
  in its fenced form and in its first, racy form (five GPU runs of that one), full tables printed.
- tma: the 16 x 8 f32 box of tests/test_emulator_async.py::tma_oob_kernel over a 10 x 12 tensor at
  16-byte aligned and unaligned innermost coordinates, and the 64B-swizzle load + TMA store
  kernel, each in a child process (a kernel that dies with CUDA_ERROR_ILLEGAL_INSTRUCTION leaves
  its context unusable).

Without a GPU the "GPU" side is a second emulator (the JSON says so): a dry run of the script.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from emulator_fidelity_cases import NP, kernel, module, sm90_emulator

from oxicuda.emulator.interp.harness import run_ptx

#: per type: (non-NaN values, NaN values) as bit patterns; NaNs in the order named in the docstring
VALUES = {
    "f64": ([0x3FF8000000000000, 0x7FF0000000000000, 0x0],
            [0x7FF8000000000001, 0xFFF8000000000002, 0x7FF0000000000003, 0xFFF0000000000004]),
    "f32": ([0x3FC00000, 0x7F800000, 0x0], [0x7FC00001, 0xFFC00002, 0x7F800003, 0xFF800004]),
    "f16": ([0x3E00, 0x7C00, 0x0], [0x7E01, 0xFE02, 0x7C03, 0xFC04]),
    "bf16": ([0x3FC0, 0x7F80, 0x0], [0x7FC1, 0xFFC2, 0x7F83, 0xFF84]),
}
#: quiet bit and canonical NaN of each type
QUIET = {"f64": 1 << 51, "f32": 1 << 22, "f16": 1 << 9, "bf16": 1 << 6}
CANONICAL = {"f64": None, "f32": 0x7FFFFFFF, "f16": 0x7FFF, "bf16": 0x7FFF}
NAN_CASES = [("fma.rn", t, 3) for t in ("f64", "f32", "f16", "bf16")] + \
    [(op, "f64", 2) for op in ("add", "sub", "mul", "min", "max", "div.rn")]
TMA_COORDS = [(-3, -5), (7, 4), (1, 0), (2, 0), (4, 0), (-4, -5), (8, 4), (0, 0), (4, 7)]


def apis():
    """(device API, emulator API, description of the device side)."""
    import oxicuda

    emu = sm90_emulator()
    if oxicuda.get_backend() == "cuda":
        from oxicuda.driver.backend import api
        from oxicuda.driver.context import ensure_context

        ensure_context()
        gpu = api()
        dev = oxicuda.Device(0)
        desc = f"{dev.name}, compute capability {dev.compute_capability}, driver {gpu.driver_get_version()}"
    else:
        gpu = sm90_emulator()
        desc = "emulator (no GPU: dry run)"
    return gpu, emu, desc


# -- NaN propagation ----------------------------------------------------------------------------
def nan_inputs(t: str, n_ops: int) -> list[np.ndarray]:
    """Every combination of the type's values over ``n_ops`` positions (lane-major)."""
    vals = VALUES[t][0] + VALUES[t][1]
    combos = np.array(list(itertools.product(vals, repeat=n_ops)), dtype=np.uint64)
    return [combos[:, k].astype(NP[t]) for k in range(n_ops)]


def is_nan(bits: int, t: str) -> bool:
    exp_mask, frac_mask = {"f64": (0x7FF << 52, (1 << 52) - 1), "f32": (0xFF << 23, (1 << 23) - 1),
                           "f16": (0x1F << 10, (1 << 10) - 1), "bf16": (0xFF << 7, (1 << 7) - 1)}[t]
    return (bits & exp_mask) == exp_mask and (bits & frac_mask) != 0


def winner(ins: list[int], out: int, t: str) -> str:
    """Which operand's NaN ``out`` is (quieted, sign kept): "a"/"b"/"c", "canonical" or "other";
    "-" when ``out`` is not NaN."""
    if not is_nan(out, t):
        return "-"
    hits = [n for n, v in zip("abc", ins) if is_nan(v, t) and (v | QUIET[t]) == out]
    if hits:
        return "/".join(hits)
    return "canonical" if out == CANONICAL[t] else "other"


def probe_nan(gpu, emu) -> dict:
    res = {}
    for op, t, n_ops in NAN_CASES:
        name = f"{op.replace('.', '_')}_{t}"
        body = f"{op}.{t} %o, " + ", ".join(f"%a{k}" for k in range(n_ops)) + ";"
        ins = nan_inputs(t, n_ops)
        ptx = module([kernel("k_" + name, body, [t] * n_ops, t)])
        outs = []
        for api in (gpu, emu):
            out = np.zeros(len(ins[0]), NP[t])
            outs.append(run_ptx(api, ptx, "k_" + name, (1, 1, 1), (len(out), 1, 1), [*ins, out])[-1])
        g, e = outs
        rows = [[int(x[j]) for x in ins] for j in range(len(g))]
        # the rule: for each set of NaN positions, the winners the GPU showed, and the operand
        # positions that explain every one of those lanes
        rule: dict[str, set] = {}
        explains: dict[str, set] = {}
        for j, r in enumerate(rows):
            nan_pos = "".join(n for n, v in zip("abc", r) if is_nan(v, t))
            if nan_pos:
                w = winner(r, int(g[j]), t)
                rule.setdefault(nan_pos, set()).add(w)
                explains[nan_pos] = explains.get(nan_pos, set(w.split("/"))) & set(w.split("/"))
        bad = np.flatnonzero(g != e)
        res[name] = {
            "body": body, "type": t,
            "inputs": [[hex(v) for v in r] for r in rows],
            "gpu": [hex(int(v)) for v in g], "emulator": [hex(int(v)) for v in e],
            "mismatches": [int(k) for k in bad],
            "gpu_nan_winner_by_nan_positions": {k: sorted(v) for k, v in sorted(rule.items())},
            "gpu_rule": {k: sorted(v) for k, v in sorted(explains.items())},
        }
        print(f"nan {name}: {len(bad)} of {len(g)} lanes differ from the emulator; the GPU's NaN comes "
              f"from (by NaN operands): {res[name]['gpu_rule']}; all outcomes: "
              f"{res[name]['gpu_nan_winner_by_nan_positions']}")
        for k in bad[:8]:
            print(f"    lane {k}: inputs {[hex(v) for v in rows[k]]} GPU {hex(int(g[k]))} "
                  f"emulator {hex(int(e[k]))}")
    return res


# -- mbarrier -----------------------------------------------------------------------------------
def _row_groups(table: np.ndarray) -> str:
    """'threads 0-31: [0 1 0 0 1]; ...' for runs of equal rows."""
    parts, start = [], 0
    for i in range(1, len(table) + 1):
        if i == len(table) or (table[i] != table[start]).any():
            parts.append(f"threads {start}-{i - 1}: {table[start].tolist()}")
            start = i
    return "; ".join(parts)


def probe_mbarrier(gpu, emu) -> dict:
    from test_emulator_async import MBARRIER_PHASES_WANT, mbarrier_phases_kernel

    res = {"want_every_row": list(MBARRIER_PHASES_WANT)}
    for settled, runs in ((True, 2), (False, 5)):
        ptx = mbarrier_phases_kernel(settled)
        key = "fenced" if settled else "racy_first_version"
        tables = {"gpu": [], "emulator": None}
        for _ in range(runs):
            tables["gpu"].append(run_ptx(gpu, ptx, "mbar_phases", (1, 1, 1), (64, 1, 1),
                                         [np.full((64, 5), 7, np.uint32)])[0])
        tables["emulator"] = run_ptx(emu, ptx, "mbar_phases", (1, 1, 1), (64, 1, 1),
                                     [np.full((64, 5), 7, np.uint32)])[0]
        res[key] = {"gpu_runs": [t.tolist() for t in tables["gpu"]], "emulator": tables["emulator"].tolist()}
        print(f"mbarrier {key}:")
        with np.printoptions(threshold=10**6, linewidth=200):
            for i, t in enumerate(tables["gpu"]):
                print(f"  GPU run {i}: {_row_groups(t)}")
                print("  full GPU table (thread x probe):\n" + str(t))
            print(f"  emulator: {_row_groups(tables['emulator'])}")
            print("  full emulator table:\n" + str(tables["emulator"]))
    return res


# -- TMA (children) -----------------------------------------------------------------------------
def _outcome(fn) -> dict:
    try:
        return {"ok": True, "value": fn()}
    except Exception as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}


def child_tma(which: str, cx: int, cy: int) -> dict:
    """One TMA kernel on the device, then on the emulator (the device first: nothing ran before)."""
    from test_emulator_async import run_tma_oob, run_tma_store

    gpu, emu, _ = apis()
    rng = np.random.default_rng([cx + 1000, cy + 1000])
    if which == "oob":
        X = rng.standard_normal((10, 12)).astype(np.float32)
        run = lambda api: run_tma_oob(api, X, [(cx, cy)])[0].tolist()
    else:
        X = rng.standard_normal((8, 16)).astype(np.float32)
        run = lambda api: [a.tolist() for a in run_tma_store(api, X)]
    g = _outcome(lambda: run(gpu))
    e = _outcome(lambda: run(emu))
    same = (g["ok"] == e["ok"]) and (g.get("value") == e.get("value") if g["ok"] else
                                     ("ILLEGAL_INSTRUCTION" in g["error"]) == ("ILLEGAL_INSTRUCTION" in e["error"]))
    return {"kernel": which, "coords": [cx, cy], "gpu": g, "emulator": e, "agree": bool(same)}


def probe_tma() -> dict:
    res = []
    for which, (cx, cy) in [("oob", c) for c in TMA_COORDS] + [("store_swizzle64", (0, 0))]:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child-tma", which, str(cx), str(cy)]
        t0 = time.time()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
            line = next((ln for ln in reversed(p.stdout.splitlines()) if ln.startswith("{")), None)
            r = json.loads(line) if line else {"kernel": which, "coords": [cx, cy], "agree": False,
                                               "child_failed": (p.stderr or p.stdout)[-2000:]}
        except subprocess.TimeoutExpired:
            r = {"kernel": which, "coords": [cx, cy], "agree": False, "child_failed": "timeout (120 s)"}
        r["seconds"] = round(time.time() - t0, 2)
        res.append(r)
        say = {k: (r[k]["error"] if not r[k]["ok"] else "ok") for k in ("gpu", "emulator") if k in r}
        print(f"tma {which} at {tuple(r['coords'])}: {say or r.get('child_failed', '')[:300]}; "
              f"agree={r['agree']}")
    return {"runs": res}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write every probe's inputs and outputs here")
    ap.add_argument("--parts", default="nan,mbarrier,tma", help="comma-separated: nan, mbarrier, tma")
    ap.add_argument("--child-tma", nargs=3, metavar=("KERNEL", "CX", "CY"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_tma:
        which, cx, cy = args.child_tma
        print(json.dumps(child_tma(which, int(cx), int(cy))))
        return 0
    parts = set(args.parts.split(","))
    gpu, emu, desc = apis()
    record: dict = {"device": desc, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    try:
        record["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                          text=True, check=False).stdout.strip()
    except OSError:
        record["commit"] = None
    print(f"device: {desc}")
    if "nan" in parts:
        record["nan"] = probe_nan(gpu, emu)
    if "mbarrier" in parts:
        record["mbarrier"] = probe_mbarrier(gpu, emu)
    if "tma" in parts:
        record["tma"] = probe_tma()
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
