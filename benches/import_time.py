"""How long `import oxicuda` takes in a fresh interpreter, against an empty interpreter start.

Each round starts two Python processes, one running ``pass`` and one running ``import oxicuda``
(then ``import oxicuda.blas``, the usual first line of numerical code), and times the import itself
inside the child with ``time.perf_counter`` around the import statement. The child also reports
whether the import loaded cffi, numpy or the driver binding (it must not, for ``import oxicuda``).

Usage: ``python benches/import_time.py [--rounds N] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = (
    "import time, sys\n"
    "t0 = time.perf_counter()\n"
    "import {mod}\n"
    "t1 = time.perf_counter()\n"
    "heavy = [m for m in ('cffi', 'numpy', 'oxicuda.driver.libcuda', 'oxicuda.emulator.api') if m in sys.modules]\n"
    "print(repr(((t1 - t0) * 1e3, heavy)))\n"
)


def _child(mod: str, root: str) -> tuple[float, list[str]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", CHILD.format(mod=mod)], capture_output=True,
                         text=True, env=env, timeout=120, check=True).stdout
    ms, heavy = eval(out.strip().splitlines()[-1])  # our own child's repr of a (float, list)
    return float(ms), list(heavy)


def _start_ms(rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = {"python": sys.version.split()[0], "rounds": args.rounds,
              "interpreter_start_ms_median": _start_ms(args.rounds), "imports": {}}
    for mod in ("oxicuda", "oxicuda.blas"):
        samples = [_child(mod, root) for _ in range(args.rounds)]
        ms = [s[0] for s in samples]
        heavy = sorted({m for s in samples for m in s[1]})
        result["imports"][mod] = {"median_ms": statistics.median(ms), "min_ms": min(ms),
                                  "max_ms": max(ms), "loaded": heavy}
        print(f"import {mod:<14} median {statistics.median(ms):7.2f} ms  min {min(ms):7.2f} ms"
              f"  loads: {', '.join(heavy) or 'none of cffi/numpy/driver'}")
    print(f"interpreter start (python -c pass): median {result['interpreter_start_ms_median']:.1f} ms")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
