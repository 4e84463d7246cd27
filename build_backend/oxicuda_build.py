"""A dependency-free PEP 517 / PEP 660 build backend for oxicuda.

oxicuda is pure Python, so its wheel is a zip of the `oxicuda` package plus metadata. Building it
needs nothing beyond the standard library: `pip install .` and `pip install -e .` then work on a
machine without network access or without a recent setuptools/wheel (the offline GPU machine
is one). The project's metadata is read from pyproject.toml's [project] table.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "oxicuda"
TAG = "py3-none-any"


def _project() -> dict:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10: get_requires_for_build_* asked for tomli
        import tomli as tomllib
    return tomllib.loads(text)["project"]


def _requires() -> list[str]:
    return [] if sys.version_info >= (3, 11) else ["tomli>=1.1"]


def get_requires_for_build_wheel(config_settings=None):
    return _requires()


def get_requires_for_build_editable(config_settings=None):
    return _requires()


def get_requires_for_build_sdist(config_settings=None):
    return _requires()


def _dist_name(project: dict) -> str:
    return f"{project['name'].replace('-', '_')}-{project['version']}"


def _metadata(project: dict) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project.get('description', '')}",
        f"Requires-Python: {project.get('requires-python', '>=3')}",
    ]
    lic = project.get("license", {})
    if isinstance(lic, dict) and "text" in lic:
        lines.append(f"License: {lic['text']}")
    for req in project.get("dependencies", []):
        lines.append(f"Requires-Dist: {req}")
    for extra, reqs in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        for req in reqs:
            name, sep, marker = req.partition(";")
            cond = f'({marker.strip()}) and extra == "{extra}"' if sep else f'extra == "{extra}"'
            lines.append(f"Requires-Dist: {name.strip()}; {cond}")
    readme = project.get("readme")
    body = ""
    if isinstance(readme, str) and (ROOT / readme).is_file():
        lines.append("Description-Content-Type: text/markdown")
        body = (ROOT / readme).read_text(encoding="utf-8")
    return "\n".join(lines) + "\n\n" + body


def _entry_points(project: dict) -> str:
    scripts = project.get("scripts", {})
    if not scripts:
        return ""
    return "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())


def _dist_info_files(project: dict) -> dict[str, bytes]:
    info = f"{_dist_name(project)}.dist-info"
    files = {
        f"{info}/METADATA": _metadata(project).encode(),
        f"{info}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: oxicuda_build\nRoot-Is-Purelib: true\n"
                          f"Tag: {TAG}\n").encode(),
    }
    ep = _entry_points(project)
    if ep:
        files[f"{info}/entry_points.txt"] = ep.encode()
    return files


def _package_files() -> dict[str, bytes]:
    out = {}
    for path in sorted((ROOT / PACKAGE).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
            out[path.relative_to(ROOT).as_posix()] = path.read_bytes()
    return out


def _write_wheel(directory: str, project: dict, files: dict[str, bytes]) -> str:
    files = {**files, **_dist_info_files(project)}
    name = f"{_dist_name(project)}-{TAG}.whl"
    record_name = f"{_dist_name(project)}.dist-info/RECORD"
    record = io.StringIO()
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in files.items():
            zf.writestr(zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0)), data,
                        compress_type=zipfile.ZIP_DEFLATED)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.write(f"{arcname},sha256={digest},{len(data)}\n")
        record.write(f"{record_name},,\n")
        zf.writestr(zipfile.ZipInfo(record_name, date_time=(2020, 1, 1, 0, 0, 0)), record.getvalue())
    return name


def _prepare_metadata(directory: str) -> str:
    project = _project()
    for arcname, data in _dist_info_files(project).items():
        target = Path(directory) / arcname
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return f"{_dist_name(project)}.dist-info"


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _prepare_metadata(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _prepare_metadata(metadata_directory)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _project(), _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # PEP 660, the path-based form: a .pth line puts the source tree on sys.path
    pth = {f"__editable__.{PACKAGE}.pth": (str(ROOT) + "\n").encode()}
    return _write_wheel(wheel_directory, _project(), pth)


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    base = _dist_name(project)
    name = f"{base}.tar.gz"
    members = ["pyproject.toml", "README.md", "build_backend/oxicuda_build.py", *_package_files()]
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tf:
        for rel in members:
            tf.add(ROOT / rel, arcname=f"{base}/{rel}")
        meta = _metadata(project).encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(meta)
        tf.addfile(info, io.BytesIO(meta))
    return name
