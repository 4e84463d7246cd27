"""The in-tree build backend (build_backend/oxicuda_build.py) makes a complete, installable wheel."""

from __future__ import annotations

import importlib.util
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _backend():
    spec = importlib.util.spec_from_file_location("oxicuda_build", ROOT / "build_backend" / "oxicuda_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_wheel_holds_every_package_file_and_the_metadata(tmp_path):
    be = _backend()
    name = be.build_wheel(str(tmp_path))
    assert name == "oxicuda-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(tmp_path / name) as zf:
        names = set(zf.namelist())
        meta = zf.read("oxicuda-0.1.0.dist-info/METADATA").decode()
        record = zf.read("oxicuda-0.1.0.dist-info/RECORD").decode()
        eps = zf.read("oxicuda-0.1.0.dist-info/entry_points.txt").decode()
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "oxicuda").rglob("*.py")
               if "__pycache__" not in p.parts}
    assert sources and sources <= names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert "Requires-Dist: numpy" in meta and "Requires-Dist: cffi" in meta
    assert 'Requires-Dist: pytest>=7; extra == "test"' in meta and "Requires-Python: >=3.10" in meta
    assert "oxicuda = oxicuda.__main__:main" in eps
    # every archived file is listed in RECORD with its hash (RECORD itself without one)
    listed = {line.split(",")[0] for line in record.splitlines()}
    assert listed == names


def test_editable_wheel_points_at_the_source_tree(tmp_path):
    be = _backend()
    name = be.build_editable(str(tmp_path))
    with zipfile.ZipFile(tmp_path / name) as zf:
        pth = [n for n in zf.namelist() if n.endswith(".pth")]
        assert len(pth) == 1 and zf.read(pth[0]).decode().strip() == str(ROOT)
        assert not any(n.startswith("oxicuda/") for n in zf.namelist())
    assert be.get_requires_for_build_editable() == ([] if sys.version_info >= (3, 11) else ["tomli>=1.1"])


def test_sdist_carries_the_backend_and_the_package(tmp_path):
    be = _backend()
    name = be.build_sdist(str(tmp_path))
    with tarfile.open(tmp_path / name) as tf:
        names = set(tf.getnames())
    assert {"oxicuda-0.1.0/pyproject.toml", "oxicuda-0.1.0/build_backend/oxicuda_build.py",
            "oxicuda-0.1.0/oxicuda/__init__.py", "oxicuda-0.1.0/PKG-INFO"} <= names
