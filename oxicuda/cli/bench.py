"""``python -m oxicuda bench [FAMILY] [--case SUBSTR] [--quick] [--json PATH] [--plot PATH]``."""

from __future__ import annotations

import argparse
import datetime
import os
import sys


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m oxicuda bench", description=__doc__)
    ap.add_argument("family", nargs="?", help="memory, blas, dnn, ... (default: all)")
    ap.add_argument("--case", help="only cases whose name contains this")
    ap.add_argument("--quick", action="store_true", help="a pass of about a minute")
    ap.add_argument("--repeats", type=int, default=20, help="timed repeats per case (>= 20)")
    ap.add_argument("--json", help="write the JSON record here (default on a GPU: "
                    "benches/results/<gpu>-<date>.json when that folder exists)")
    ap.add_argument("--plot", nargs="?", const="", help="write a PNG (matplotlib)")
    ap.add_argument("--profile", help="run as on this board: rtx-a4000, a100, h200 or native "
                    "(sets OXICUDA_DEVICE_PROFILE; the kernels still run on the device present)")
    args = ap.parse_args(argv)
    if args.profile is not None:
        from oxicuda.driver import facts

        os.environ[facts.PROFILE_ENV] = args.profile
        facts.clear_device_facts()
        try:
            facts.active_profile()
        except facts.DeviceProfileError as exc:
            print(f"bench: {exc}", file=sys.stderr)
            return 2
    if args.repeats < 20:
        print("bench: --repeats below 20 gives medians too noisy to report; using 20",
              file=sys.stderr)
        args.repeats = 20

    from oxicuda.bench.record import write_json
    from oxicuda.bench.run import UnknownCaseError, format_table, run
    from oxicuda.cli.info import open_backend

    def keep_partial(env, results):  # a run cut short by a time limit keeps what it measured
        if args.json:
            write_json(args.json, {"environment": env, "argv": ["python", "-m", "oxicuda", "bench", *argv],
                                   "results": results, "complete": False})

    if open_backend("bench") is None:
        return 1
    try:
        env, results = run(args.family, args.case, args.quick, args.repeats, progress=sys.stderr,
                            on_result=keep_partial)
    except UnknownCaseError as exc:
        print(exc, file=sys.stderr)
        return 2
    on_gpu = env["backend"] == "cuda"
    if not on_gpu:
        print("backend: emulator -- a tiny correctness-checked pass; timings below are "
              "host-clock emulator times, NOT GPU figures.")
        print("Every case runs shrunk to a few tiles (column 'ran'), so its rate is comparable "
              "neither with the size its name gives nor with a GPU.")
    print(f"{env['gpu']} (cc {env['compute_capability']}, {env['sm_count']} SMs), CUDA "
          f"{env['driver_cuda_version']}, oxicuda {env['oxicuda_version']} @ {env['commit'][:12]}, "
          f"{env['date']}")
    vendors = sorted({r["vendor"] for r in results if r.get("vendor")})
    print("ratio = vendor time / oxicuda time (>1: oxicuda faster); vendor: "
          + (", ".join(vendors) if vendors else "none here (the vendor column needs PyTorch or "
             "CuPy with a GPU)"))
    print(format_table(results, emulated=not on_gpu))
    skipped = [r for r in results if "skipped" in r]
    if skipped:
        print(f"{len(skipped)} of {len(results)} cases skipped (reasons in the table)")
    record = {"environment": env, "argv": ["python", "-m", "oxicuda", "bench", *argv],
              "results": results, "complete": True}
    copy = [r for r in results if r["case"].startswith("copy_d2d") and r.get("ours_rate")]
    if copy:
        record["peaks"] = {"copy_GBps": copy[0]["ours_rate"]}
    path = args.json
    if path is None and on_gpu and os.path.isdir("benches/results"):
        stamp = datetime.date.today().isoformat()
        gpu = env["gpu"].replace(" ", "-")
        fams = args.family or "all"
        path = f"benches/results/{gpu}-{fams}{'-quick' if args.quick else ''}-{stamp}.json"
    if path:
        write_json(path, record)
        print(f"wrote {path}")
    if args.plot is not None:
        from oxicuda.bench.plot import plot

        png = args.plot or (os.path.splitext(path)[0] + ".png" if path else "bench.png")
        done = plot(record, png)
        print(f"wrote {done}" if done else "plot skipped: matplotlib is not installed")
    failed = [r for r in results if "error" in r or r.get("check_passed") is False]
    return 1 if failed else 0
