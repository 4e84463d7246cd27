"""PNG plots of a benchmark record: each family's speed ratios against the vendor, and a roofline.

The figure reads on its own: every bar is labelled with its ratio and the vendor it was timed
against, the 1.0 line marks parity, and the roofline's ceilings (measured copy bandwidth, FP32
and tensor-core peaks) are named with their values and where they come from. Ceilings not
measured in the record come from ``oxicuda.driver.facts.ARCH_RATES`` for the record's compute
capability (FP32 lanes, tensor FLOPs and DRAM bytes per clock) at the SM clock the record names.
"""

from __future__ import annotations

from oxicuda.driver.facts import arch_rates


def ceilings(env: dict, peaks: dict | None = None) -> dict[str, tuple[float, str]]:
    """The roofline's ceilings for the device of ``env`` (a record's environment): name ->
    (value, source). ``"memory"`` is GB/s, the others TFLOP/s. A measured copy rate in ``peaks``
    wins over the arch table; a record without compute capability or clock gives fewer."""
    out: dict[str, tuple[float, str]] = {}
    peaks = peaks or {}
    if peaks.get("copy_GBps"):
        out["memory"] = (float(peaks["copy_GBps"]), "measured device copy")
    cc_text, clock_khz, sms = env.get("compute_capability"), env.get("sm_clock_khz"), env.get("sm_count")
    if not (cc_text and clock_khz and sms):
        return out
    try:
        rates = arch_rates(tuple(int(x) for x in str(cc_text).split(".")))
    except (KeyError, ValueError):
        return out
    hz = clock_khz * 1e3
    if "memory" not in out:
        out["memory"] = (rates.memory_bytes_per_clock * hz / 1e9, f"ARCH_RATES ({rates.source})")
    source = f"ARCH_RATES sm_{cc_text.replace('.', '')}, {sms} SMs at {clock_khz / 1e6:.2f} GHz"
    out["FP32"] = (2.0 * rates.fp32_lanes * sms * hz / 1e12, f"{rates.fp32_lanes} lanes/SM, {source}")
    out["TF32 tensor"] = (rates.tf32_flops_per_clock * sms * hz / 1e12, source)
    out["FP16/BF16 tensor"] = (rates.fp16_flops_per_clock * sms * hz / 1e12, source)
    return out


def _ratio_panel(ax, family: str, rows: list[dict]) -> None:
    names = [r["case"] for r in rows]
    ratios = [r["speed_vs_vendor"] for r in rows]
    ax.barh(names, ratios, color=["tab:green" if x >= 1 else "tab:orange" for x in ratios])
    ax.axvline(1.0, color="k", lw=1)
    for y, r in enumerate(rows):
        ax.text(r["speed_vs_vendor"], y, f" {r['speed_vs_vendor']:.2f} vs {r.get('vendor', '?')}",
                va="center", fontsize=7)
    ax.set_title(f"{family}: oxicuda speed vs vendor (1.0 = parity, right of it: faster)",
                 fontsize=9, loc="left")
    ax.set_xlim(0, max(1.5, 1.6 * max(ratios)))
    ax.tick_params(axis="y", labelsize=7)
    ax.invert_yaxis()


def _roofline_panel(ax, results: list[dict], record: dict) -> None:
    left_off = 0
    for r in results:
        if not (r.get("flops") and r.get("bytes") and r.get("ours_ms")):
            left_off += "ours_ms" in r
            continue
        ai = r["flops"] / r["bytes"]
        ours = r["flops"] / (r["ours_ms"] * 1e-3) / 1e12
        ax.scatter(ai, ours, color="tab:blue", s=14, zorder=3)
        ax.annotate(f"{r['family']}/{r['case']}", (ai, ours), fontsize=5, xytext=(3, 2),
                    textcoords="offset points")
        if r.get("vendor_ms"):
            vendor = r["flops"] / (r["vendor_ms"] * 1e-3) / 1e12
            ax.scatter(ai, vendor, color="tab:gray", marker="x", s=14, zorder=3)
            ax.plot([ai, ai], [ours, vendor], color="tab:gray", lw=0.5)
    xs = [0.05, 2e4]
    roofs = ceilings(record.get("environment", {}), record.get("peaks"))
    top = max((v for k, (v, _) in roofs.items() if k != "memory"), default=None)
    if "memory" in roofs:
        bw, src = roofs["memory"]
        # the bandwidth roof rises until it meets the highest compute ceiling
        end = xs[1] if top is None else min(xs[1], top * 1e3 / bw)
        ax.plot([xs[0], end], [xs[0] * bw / 1e3, end * bw / 1e3], "k--", lw=1,
                label=f"memory {bw:.0f} GB/s ({src})")
    for (name, (peak, src)), style in zip(((k, v) for k, v in roofs.items() if k != "memory"),
                                          (":", "-.", "-")):
        ax.plot(xs, [peak, peak], "k" + style, lw=1, label=f"{name} peak {peak:.0f} TFLOP/s ({src})")
    ax.scatter([], [], color="tab:blue", s=14, label="oxicuda")
    ax.scatter([], [], color="tab:gray", marker="x", s=14, label="vendor (same case)")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity: FLOP per byte (the fewest bytes a call must move)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("roofline: achieved rate against the device's ceilings", fontsize=9, loc="left")
    if left_off:
        ax.text(0.01, 0.99, f"{left_off} timed case(s) without both a FLOP and a byte count are "
                "not on this panel", transform=ax.transAxes, va="top", fontsize=7)


def plot(record: dict, path: str) -> str | None:
    """Draw the ratio panels (one per family) and the roofline into ``path``; returns the path,
    or None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    results = [r for r in record["results"] if "error" not in r and "skipped" not in r]
    by_family: dict[str, list[dict]] = {}
    for r in results:
        if r.get("speed_vs_vendor"):
            by_family.setdefault(r["family"], []).append(r)
    heights = [max(1.0, 0.28 * len(rows) + 0.6) for rows in by_family.values()] or [4.0]
    fig = plt.figure(figsize=(18, max(6.0, sum(heights) + 1.5)))
    grid = fig.add_gridspec(len(heights), 2, height_ratios=heights, width_ratios=(1, 1.1))
    for i, (family, rows) in enumerate(by_family.items()):
        _ratio_panel(fig.add_subplot(grid[i, 0]), family, rows)
    if not by_family:
        ax = fig.add_subplot(grid[0, 0])
        ax.text(0.5, 0.5, "no vendor timings in this record\n(the vendor column needs PyTorch or "
                "CuPy on a GPU)", ha="center", va="center")
        ax.set_axis_off()
    _roofline_panel(fig.add_subplot(grid[:, 1]), results, record)
    env = record.get("environment", {})
    emulated = " -- EMULATOR: host-clock times, not GPU figures" if env.get("backend") == "emulator" else ""
    fig.suptitle(f"oxicuda bench on {env.get('gpu')} (cc {env.get('compute_capability')}), "
                 f"oxicuda {env.get('oxicuda_version', '?')} @ {str(env.get('commit', '?'))[:12]}, "
                 f"{env.get('date')}{emulated}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.98))  # leave the top line to the title
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
