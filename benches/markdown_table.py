"""Print a Markdown table of one or more ``python -m oxicuda bench --json`` records (for the README
and benches/results). Usage: python3 benches/markdown_table.py RECORD.json [...]"""

from __future__ import annotations

import json
import sys


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def table(records: list[dict]) -> str:
    lines = ["| case | unit | oxicuda | vendor | ratio | check |", "|---|---|---|---|---|---|"]
    for rec in records:
        for r in rec.get("results", []):
            name = f"{r['family']}/{r['case']}"
            if r.get("error"):
                lines.append(f"| {name} | - | error: {r['error'][:80]} | - | - | - |")
                continue
            ratio = r.get("speed_vs_vendor")
            vendor = _num(r.get("vendor_rate")) + (f" ({r['vendor']})" if r.get("vendor") else "")
            check = "-" if r.get("check_passed") is None else ("ok" if r["check_passed"] else "FAILED")
            lines.append(f"| {name} | {r.get('unit', '')} | {_num(r.get('ours_rate'))} | "
                         f"{vendor if r.get('vendor_rate') is not None else '-'} | "
                         f"{'-' if ratio is None else f'{ratio:.2f}'} | {check} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    records = []
    for p in argv:
        with open(p) as f:
            records.append(json.load(f))
    env = records[0].get("environment", {}) if records else {}
    print(f"<!-- {env.get('gpu')} sm {env.get('compute_capability')}, CUDA {env.get('driver_cuda_version')}, "
          f"commit {env.get('commit')}, {env.get('date')} -->")
    print(table(records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
