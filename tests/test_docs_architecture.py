"""docs/architecture.md maps every registered kernel family to its files: it stays true."""

from __future__ import annotations

import pathlib

from oxicuda.ptx import registry

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "architecture.md"


def test_every_registered_family_is_in_the_architecture_map():
    registry.load_all_families()
    text = DOC.read_text()
    missing = [n for n in registry.families() if not n.startswith(("test_", "bench_")) and f"| `{n}` |" not in text]
    assert missing == [], f"regenerate the table: python3 benches/family_map.py ({missing})"
    for name, fam in registry.families().items():
        if name.startswith(("test_", "bench_")):
            continue
        home = fam.spec_cls.__module__.replace(".", "/") + ".py"
        assert f"| `{name}` | {', '.join(fam.archs)} | `{home}` |" in text, (name, home)
