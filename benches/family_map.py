"""Print the map of every registered kernel family to its files and tests, as the markdown table
of docs/architecture.md: ``python3 benches/family_map.py > /tmp/map.md``.

For each family: the module that defines its spec and generator, the library modules that build
its specs (the plan/dispatch side: they name the spec class), and the test files that name the
family or its spec class."""

from __future__ import annotations

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def family_map() -> list[tuple[str, str, str, list[str], list[str]]]:
    sys.path.insert(0, str(ROOT))
    from oxicuda.ptx import registry

    registry.load_all_families()
    sources = {p: p.read_text() for p in (ROOT / "oxicuda").rglob("*.py")}
    tests = {p: p.read_text() for p in (ROOT / "tests").glob("test_*.py")}
    rows = []
    for name, fam in sorted(registry.families().items()):
        if name.startswith(("test_", "bench_")):
            continue
        cls = fam.spec_cls.__name__
        home = fam.spec_cls.__module__
        home_path = ROOT / (home.replace(".", "/") + ".py")
        word = re.compile(rf"\b{re.escape(cls)}\b")
        users = sorted(str(p.relative_to(ROOT)) for p, text in sources.items()
                       if p != home_path and word.search(text))
        quoted = re.compile(rf"[\"']{re.escape(name)}[\"']|\b{re.escape(cls)}\b")
        testing = sorted(p.name for p, text in tests.items() if quoted.search(text))
        if not testing:  # tests that exercise it through its modules' public calls
            mods = [home] + [u[:-3].replace("/", ".") for u in users]
            imports = re.compile("|".join(rf"\b{re.escape(m)}\b|from {re.escape(m.rsplit('.', 1)[0])} import "
                                          rf"[^\n]*\b{re.escape(m.rsplit('.', 1)[1])}\b" for m in mods))
            testing = sorted(f"{p.name} (via its module)" for p, text in tests.items() if imports.search(text))
        rows.append((name, ", ".join(fam.archs), str(home_path.relative_to(ROOT)), users, testing))
    return rows


def markdown(rows) -> str:
    out = ["| family | archs | spec and generator | built by (plans, dispatch) | tests |",
           "|---|---|---|---|---|"]
    for name, archs, home, users, testing in rows:
        out.append(f"| `{name}` | {archs} | `{home}` | {', '.join(f'`{u}`' for u in users) or '-'} | "
                   f"{', '.join(testing) or '-'} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown(family_map()))
