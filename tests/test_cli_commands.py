"""`python -m oxicuda ...` behaves like a command-line tool: --version, --help without side
effects, loud failures on names that select nothing, one clear line without a backend, and a
quiet end when its reader goes away."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import oxicuda
from oxicuda.__main__ import EXIT_BROKEN_PIPE
from oxicuda.__main__ import main as oxicuda_main

REPO = Path(__file__).resolve().parent.parent


def _python_m_oxicuda(*args: str, env: dict[str, str] | None = None, timeout: int = 120):
    return subprocess.run([sys.executable, "-m", "oxicuda", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, **(env or {})), check=False)


def test_version_prints_the_package_version(capsys):
    assert oxicuda_main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"oxicuda {oxicuda.__version__}"


def test_demo_help_shows_help_and_runs_nothing(capsys):
    with oxicuda.trace() as t, pytest.raises(SystemExit) as exit_info:
        oxicuda_main(["demo", "--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert out.startswith("usage: python -m oxicuda demo") and "--verbose" in out
    assert "demo on" not in out and not t.launches


def test_validating_an_arch_no_kernel_targets_fails_loudly(capsys):
    assert oxicuda_main(["kernels", "--validate", "sm_99"]) == 2
    err = capsys.readouterr().err
    assert "sm_99" in err and "sm_86" in err and "sm_90" in err
    # a family asked for an arch it does not target fails the same way
    assert oxicuda_main(["kernels", "--validate", "sm_86", "--family", "gemm_wgmma"]) == 2
    assert "gemm_wgmma" in capsys.readouterr().err


def test_inspect_of_an_unknown_family_lists_the_families(capsys):
    assert oxicuda_main(["inspect", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("inspect: no kernel family 'nosuch'")
    assert "\n  gemm_tiled\n" in err and "\n  dnn_softmax\n" in err


@pytest.mark.parametrize("command", ["demo", "info", "bench"])
def test_a_forced_cuda_backend_without_a_driver_says_so_in_one_line(command):
    # OXICUDA_LIBCUDA at a path that does not exist: no driver, on a GPU machine too
    proc = _python_m_oxicuda(command, env={"OXICUDA_BACKEND": "cuda",
                                           "OXICUDA_LIBCUDA": "/nonexistent/libcuda.so.1"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"oxicuda {oxicuda.__version__} {command}: no backend could be loaded")
    assert "OXICUDA_BACKEND=emulator" in lines[0]


def test_a_closed_pipe_ends_quietly():
    # the listing is ~800 KB, far more than a pipe holds: the writer meets the closed pipe
    proc = subprocess.Popen([sys.executable, "-m", "oxicuda", "kernels"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # what `| head -1` does after its line
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == EXIT_BROKEN_PIPE
    assert b"\t" in first
    assert err == "", err
