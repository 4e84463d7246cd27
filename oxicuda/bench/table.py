"""What a bench run prints: the aligned results table and the live progress line."""

from __future__ import annotations

import time
from typing import TextIO

#: the column a row fills when its case ran at a size other than the name says and did not say
#: which (the emulator shrinks every case to a few tiles)
SHRUNK = "shrunk (not comparable)"


def _num(x: float | None) -> str:
    """Three significant figures without exponents for the rates a table shows."""
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def _row(r: dict, emulated: bool) -> list[str]:
    name = f"{r['family']}/{r['case']}"
    # host-cost cases time the call itself, whatever backend: nothing shrinks
    ran = r.get("problem") or (SHRUNK if emulated and "ours_us" not in r else "-")
    if "skipped" in r:
        return [name, "-", "-", "-", "-", "-", f"skipped: {r['skipped']}"]
    if "error" in r:
        return [name, ran, "-", "-", "-", "-", f"ERROR {r['error']}"]
    if "ours_us" in r:
        ours, vendor, unit = r.get("ours_us"), r.get("vendor_us"), "us/call"
    elif r.get("unit") == "ms":  # cases timed per call (graph replays): the times themselves
        ours, vendor, unit = r.get("ours_ms"), r.get("vendor_ms"), "ms"
    else:
        ours, vendor, unit = r.get("ours_rate"), r.get("vendor_rate"), r["unit"]
    check = "-"
    if "check_passed" in r:
        check = ("ok" if r["check_passed"] else "FAIL") + f" ({r['rel_error']:.1e})"
    ratio = r.get("speed_vs_vendor")
    return [name, ran, unit, _num(ours), _num(vendor), "-" if ratio is None else f"{ratio:.2f}",
            check]


def format_table(results: list[dict], emulated: bool = False) -> str:
    """The results as an aligned text table, one row per case (skipped and failed ones too).
    ``emulated``: rows that do not name the size they ran say that it was shrunk."""
    head = ["case", "ran", "unit", "oxicuda", "vendor", "ratio", "check"]
    rows = [_row(r, emulated) for r in results]
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head) - 1)]
    right = (False, False, True, True, True, True)  # numbers align on the right

    def line(cells: list[str]) -> str:
        parts = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)]
        return "  ".join([*parts, cells[-1]]).rstrip()

    text = [line(head), "-" * (sum(widths) + 2 * len(widths) + len("check"))]
    return "\n".join(text + [line(row) for row in rows])


class Progress:
    """``case i of n``, elapsed time and an estimate of the rest, on one live line of ``stream``
    (rewritten in place on a terminal; one line per case in a log)."""

    def __init__(self, stream: TextIO | None, total: int) -> None:
        self.stream, self.total = stream, total
        self.live = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.t0 = time.perf_counter()

    def case(self, i: int, name: str) -> None:
        """Announce case ``i`` (1-based) of ``total``, about to run."""
        if self.stream is None:
            return
        elapsed = time.perf_counter() - self.t0
        left = f", about {_duration(elapsed / (i - 1) * (self.total - i + 1))} left" if i > 1 else ""
        text = f"[case {i} of {self.total}] {name}: {_duration(elapsed)} elapsed{left}"
        if self.live:
            self.stream.write("\r\033[K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def done(self) -> None:
        """Clear the live line (a log keeps its lines)."""
        if self.stream is not None and self.live:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
