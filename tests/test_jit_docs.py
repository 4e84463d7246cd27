"""docs/jit.md stays true: its SGEMM example runs on the emulator and the inspect command of a
Python kernel prints its PTX and ptxas figures."""

from __future__ import annotations

import importlib.util
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import oxicuda

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "jit.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)


def _load(tmp_path, code: str, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_docs_tiled_sgemm_runs_on_the_emulator_at_small_size(tmp_path, rng):
    (code,) = [b for b in _blocks() if "def sgemm_tiled" in b]
    mod = _load(tmp_path, code, "jit_doc_sgemm")
    a = rng.standard_normal((33, 20)).astype(np.float32)
    b = rng.standard_normal((20, 18)).astype(np.float32)
    with oxicuda.trace() as t:
        c = mod.sgemm(oxicuda.asarray(a), oxicuda.asarray(b))
    np.testing.assert_allclose(c.get(), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    assert t.launches[0].grid == (2, 3, 1) and t.launches[0].block == (16, 16, 1)


def test_docs_saxpy_and_generated_kernels_run(tmp_path):
    saxpy_code = next(b for b in _blocks() if "def saxpy" in b)
    gen_code = next(b for b in _blocks() if "oxicuda.elementwise" in b)
    mod = _load(tmp_path, saxpy_code.replace("1 << 20", "1000"), "jit_doc_saxpy")
    np.testing.assert_array_equal(mod.out.get(), 3 * np.arange(1000, dtype=np.float32))
    preamble = ("import numpy as np\nimport oxicuda\n"
                "a = oxicuda.asarray(np.ones((3, 4), np.float32))\n"
                "b = oxicuda.asarray(np.full(4, 2, np.float32))\n")
    gen = _load(tmp_path, preamble + gen_code, "jit_doc_generated")
    np.testing.assert_array_equal(gen.r.get(), np.full((3, 4), 4, np.float32))
    np.testing.assert_array_equal(gen.m.get(), np.ones((3, 1), np.float32))


def test_inspect_prints_ptx_and_registers_of_a_python_kernel():
    target = "tests/test_jit_shared.py:sgemm_tiled"
    run = [sys.executable, "-m", "oxicuda", "inspect", target]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/local/bin:/usr/bin:/bin"}
    ptx = subprocess.run(run, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
                         check=False)
    assert ptx.returncode == 0, ptx.stderr
    assert ".entry oxi_jit_sgemm_tiled_" in ptx.stdout and "bar.sync" in ptx.stdout
    from oxicuda.ptx import validate

    try:
        validate.find_ptxas()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"ptxas not available: {exc}")
    regs = subprocess.run(run + ["--emit", "regs", "--arch", "sm_90"], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=300, check=False)
    assert regs.returncode == 0, regs.stderr
    assert re.search(r"registers: \d+", regs.stdout) and "shared: 2048 bytes" in regs.stdout
    bad = subprocess.run(run[:-1] + ["tests/test_jit_safety.py:shifted"], capture_output=True,
                         text=True, cwd=ROOT, env=env, timeout=300, check=False)
    assert bad.returncode == 2 and "give its type with --sig" in bad.stderr
