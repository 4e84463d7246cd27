"""`dir()` of the packages lists their public names, lazy ones included, and each resolves."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("oxicuda.blas", "oxicuda.dnn", "oxicuda.ptx", "oxicuda.driver", "oxicuda.memory")

# run in a fresh interpreter: in this one, earlier tests have already resolved the lazy names
_PROBE = """
import importlib, json, sys
out = {}
for name in sys.argv[1:]:
    mod = importlib.import_module(name)
    listed = dir(mod)  # before any lazy name is looked up
    unresolved = [n for n in listed if not hasattr(mod, n)]
    out[name] = {"dir": listed, "all": list(mod.__all__), "unresolved": unresolved}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def listings() -> dict:
    proc = subprocess.run([sys.executable, "-c", _PROBE, *PACKAGES], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=True)
    return json.loads(proc.stdout)


@pytest.mark.parametrize("package", PACKAGES)
def test_dir_lists_every_public_name_and_each_resolves(listings, package):
    entry = listings[package]
    public = {n for n in entry["dir"] if not n.startswith("_")}
    assert public == set(entry["all"]), sorted(public ^ set(entry["all"]))
    assert entry["unresolved"] == []


def test_the_lazy_names_are_listed_before_first_use(listings):
    assert {"gemm", "matmul", "gemm_strided_batched", "axpy", "trsm_ptr"} <= set(listings["oxicuda.blas"]["dir"])
    assert {"conv2d", "attention", "conv2d_backward_data", "conv2d_backward_filter"} <= set(
        listings["oxicuda.dnn"]["dir"])


def test_conv2d_gradients_are_exported_beside_conv2d():
    from oxicuda import dnn
    from oxicuda.dnn import conv

    assert dnn.conv2d_backward_data is conv.conv2d_backward_data
    assert dnn.conv2d_backward_filter is conv.conv2d_backward_filter
