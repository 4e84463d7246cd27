"""The low layers import only down (docs/architecture.md): driver/ at the bottom, ptx/ on it,
memory/ on both, and the emulator wing beside them, reached only through driver/backend.py.
Every import statement counts, function-level ones included (they are how circles hide)."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "oxicuda"

#: package -> the oxicuda packages its modules may import ("" is oxicuda itself: __version__)
ALLOWED = {
    "driver": {"driver"},
    "ptx": {"ptx", "driver", ""},
    "memory": {"memory", "ptx", "driver"},
    "emulator": {"emulator", "driver", "ptx"},
}
#: the seams through which a low layer reaches up, each one lazy import in one place: the driver
#: picks the emulator as its backend; DeviceArray's operators call array_math on first use (as
#: numpy's ndarray calls its ufuncs)
SEAMS = {("oxicuda/driver/backend.py", "emulator"), ("oxicuda/memory/array.py", "array_math")}


def _imports(path: pathlib.Path) -> list[tuple[int, str]]:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    package = parts if parts[-1] == "__init__" else parts[:-1]
    package = [p for p in package if p != "__init__"]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module is None:  # from .. import name: the names are modules
                found += [(node.lineno, f"{target}.{a.name}") for a in node.names]
                continue
            found.append((node.lineno, target))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return [(line, t) for line, t in found if t == "oxicuda" or t.startswith("oxicuda.")]


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_low_layers_import_only_down_and_the_emulator_only_through_the_backend_seam():
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = str(path.relative_to(ROOT.parent))
        own = _layer(".".join(path.relative_to(ROOT.parent).with_suffix("").parts))
        for line, target in _imports(path):
            to = _layer(target)
            if (rel, to) in SEAMS:
                continue
            if own in ALLOWED and to not in ALLOWED[own]:
                wrong.append(f"{rel}:{line} imports {target}")
            elif own not in ALLOWED and to == "emulator":
                wrong.append(f"{rel}:{line} imports {target} (the emulator is reached through driver.backend)")
    assert wrong == []


def test_the_check_sees_relative_and_function_level_imports():
    mod = ROOT / "driver" / "backend.py"
    targets = {t for _, t in _imports(mod)}
    assert "oxicuda.emulator.api" in targets  # a function-level relative import, resolved
    array = {t for _, t in _imports(ROOT / "memory" / "array.py")}
    assert "oxicuda.array_math" in array  # `from .. import array_math`, resolved to the module
