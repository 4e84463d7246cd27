"""Assemble PTX with ``ptxas`` and read its resource report (registers, spills, shared, stack).

``ptxas`` is found on PATH, then in the ``nvidia-cuda-nvcc`` wheel (``site-packages/nvidia/
cuda_nvcc/bin/ptxas``; ``OXICUDA_PTXAS`` overrides both). Reports are cached by content hash
(PTX text + arch + ptxas path) in memory and, when ``OXICUDA_PTXAS_CACHE`` names a folder, on disk,
so repeated validation of hundreds of configurations costs nothing after the first run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path


class PtxasNotFound(RuntimeError):
    """No ptxas binary could be found."""


@dataclass(frozen=True)
class AssemblyReport:
    """What ``ptxas -v`` said about one kernel (the first entry of the module, or the one named)."""

    ok: bool
    arch: str
    message: str = ""
    registers: int = 0
    spill_stores: int = 0  # bytes
    spill_loads: int = 0  # bytes
    shared_bytes: int = 0
    stack_bytes: int = 0
    kernels: tuple[str, ...] = ()

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads


def find_ptxas() -> str:
    """The path of a usable ptxas, or PtxasNotFound saying where it looked."""
    env = os.environ.get("OXICUDA_PTXAS")
    if env:
        if os.access(env, os.X_OK):
            return env
        raise PtxasNotFound(f"OXICUDA_PTXAS={env!r} is not an executable file")
    on_path = shutil.which("ptxas")
    if on_path:
        return on_path
    looked = []
    # the wheel's layout changed across releases: nvidia/cuda_nvcc/bin (12.x), nvidia/cu13/bin (13.x)
    for entry in sys.path:
        for sub in ("cuda_nvcc", "cu13", "cu12"):
            candidate = Path(entry) / "nvidia" / sub / "bin" / "ptxas"
            looked.append(str(candidate))
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    raise PtxasNotFound(
        "ptxas not found on PATH nor in the nvidia-cuda-nvcc wheel "
        f"(looked in {looked[:3]}...); `pip install nvidia-cuda-nvcc` or set OXICUDA_PTXAS"
    )


_RE_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_RE_STACK = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)
_RE_USED = re.compile(r"Used (\d+) registers")
_RE_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas_output(text: str, arch: str, ok: bool = True) -> AssemblyReport:
    """An AssemblyReport from ``ptxas -v`` text (maxima over the module's entries)."""
    kernels = tuple(m.group(1) for m in _RE_ENTRY.finditer(text))
    regs = max((int(m.group(1)) for m in _RE_USED.finditer(text)), default=0)
    smem = max((int(m.group(1)) for m in _RE_SMEM.finditer(text)), default=0)
    stack = stores = loads = 0
    for m in _RE_STACK.finditer(text):
        stack, stores, loads = (
            max(stack, int(m.group(1))),
            max(stores, int(m.group(2))),
            max(loads, int(m.group(3))),
        )
    message = (
        ""
        if ok
        else " ".join(
            line.strip() for line in text.splitlines() if "error" in line or "fatal" in line
        )[:2000]
    )
    return AssemblyReport(
        ok,
        arch,
        message or ("" if ok else text.strip()[:2000]),
        regs,
        stores,
        loads,
        smem,
        stack,
        kernels,
    )


_memo: dict[str, AssemblyReport] = {}
_memo_lock = threading.Lock()


def _cache_key(ptx: str, arch: str, ptxas: str) -> str:
    return hashlib.sha256(f"{ptxas}\0{arch}\0{ptx}".encode()).hexdigest()


def _disk_cache() -> Path | None:
    folder = os.environ.get("OXICUDA_PTXAS_CACHE")
    return Path(folder) if folder else None


def assemble(
    ptx: str, arch: str, ptxas: str | None = None, timeout: float = 120.0
) -> AssemblyReport:
    """Assemble ``ptx`` for ``arch`` (``sm_86``, ``sm_90a``...) with ``ptxas -v``.

    Returns a report with ``ok`` False and ptxas's error text on failure (never raises for bad
    PTX); raises PtxasNotFound when there is no ptxas."""
    ptxas = ptxas or find_ptxas()
    key = _cache_key(ptx, arch, ptxas)
    hit = _memo.get(key)
    if hit is not None:
        return hit
    disk = _disk_cache()
    if disk is not None:
        path = disk / f"{key}.json"
        try:
            data = json.loads(path.read_text())
            data["kernels"] = tuple(data["kernels"])
            report = AssemblyReport(**data)
            with _memo_lock:
                _memo[key] = report
            return report
        except (OSError, ValueError, TypeError, KeyError):
            pass
    with tempfile.TemporaryDirectory(prefix="oxicuda-ptxas-") as tmp:
        src = Path(tmp) / "kernel.ptx"
        src.write_text(ptx, encoding="ascii", errors="replace")
        try:
            proc = subprocess.run(
                [ptxas, f"-arch={arch}", "-v", str(src), "-o", str(Path(tmp) / "k.cubin")],
                capture_output=True,
                check=False,
                text=True,
                timeout=timeout,
            )
            text, ok = proc.stdout + proc.stderr, proc.returncode == 0
        except subprocess.TimeoutExpired:
            text, ok = f"ptxas timed out after {timeout} s", False
    report = parse_ptxas_output(text.replace(str(src), "kernel.ptx"), arch, ok)
    with _memo_lock:
        _memo[key] = report
    if disk is not None:
        disk.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=disk, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(asdict(report), fh)
        os.replace(tmp_name, disk / f"{key}.json")
    return report


def assemble_many(
    jobs: Iterable[tuple[str, str]], workers: int | None = None
) -> list[AssemblyReport]:
    """Assemble many ``(ptx, arch)`` pairs on a thread pool over ptxas subprocesses, in order."""
    jobs = list(jobs)
    if not jobs:
        return []
    ptxas = find_ptxas()
    workers = workers or min(32, (os.cpu_count() or 2) * 2)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda job: assemble(job[0], job[1], ptxas), jobs))


def parse_arch_list(text: str, allowed: Sequence[str] | None = None) -> list[str]:
    """``"sm_86,sm_90"`` -> ``["sm_86", "sm_90"]``; raises on malformed names."""
    archs = [a.strip() for a in text.split(",") if a.strip()]
    for a in archs:
        if not re.fullmatch(r"sm_\d+a?", a):
            raise ValueError(f"arch {a!r}; expected names like sm_86, sm_90a")
        if allowed is not None and a not in allowed:
            raise ValueError(f"arch {a!r}; allowed {list(allowed)}")
    return archs
