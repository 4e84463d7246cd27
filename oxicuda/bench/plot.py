"""PNG plots of a benchmark record: speed ratio per case, and a roofline view."""

from __future__ import annotations


def plot(record: dict, path: str) -> str | None:
    """Draw the two panels into ``path``; returns the path, or None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    results = [r for r in record["results"] if "error" not in r]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(15, max(4, 0.3 * len(results) + 1)))
    rated = [r for r in results if r.get("speed_vs_vendor")]
    names = [f"{r['family']}/{r['case']}" for r in rated]
    ratios = [r["speed_vs_vendor"] for r in rated]
    ax1.barh(names, ratios, color=["tab:green" if x >= 1 else "tab:orange" for x in ratios])
    ax1.axvline(1.0, color="k", lw=1)
    ax1.set_xlabel("speed vs vendor (vendor time / oxicuda time)")
    ax1.invert_yaxis()
    peaks = record.get("peaks", {})
    bw = peaks.get("copy_GBps")
    for r in results:
        if r.get("flops") and r.get("bytes") and r.get("ours_ms"):
            ai = r["flops"] / r["bytes"]
            ax2.scatter(ai, r["flops"] / (r["ours_ms"] * 1e-3) / 1e12, color="tab:blue")
            if r.get("vendor_ms"):
                ax2.scatter(ai, r["flops"] / (r["vendor_ms"] * 1e-3) / 1e12, color="tab:gray",
                            marker="x")
    env = record.get("environment", {})
    fp32 = peaks.get("fp32_TFLOPs")
    if fp32 is None and env.get("sm_clock_khz") and env.get("sm_count"):
        fp32 = env["sm_count"] * 128 * 2 * env["sm_clock_khz"] * 1e3 / 1e12  # 128 FFMA lanes per SM
    xs = [0.1, 1e4]
    if bw:
        ax2.plot(xs, [x * bw / 1e3 for x in xs], "k--", lw=1, label=f"copy {bw:.0f} GB/s")
    if fp32:
        ax2.plot(xs, [fp32, fp32], "k:", lw=1, label=f"FP32 FMA peak {fp32:.1f} TFLOP/s")
    if bw or fp32:
        ax2.legend()
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("FLOP per byte (fewest bytes)")
    ax2.set_ylabel("TFLOP/s (blue oxicuda, x vendor)")
    fig.suptitle(f"{record['environment'].get('gpu')} {record['environment'].get('date')}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
