"""Host-side costs, as pytest-benchmark figures that also check what was computed.

Spec -> PTX generation per registered family, a memory-cache hit of ``cache.load``, launch
argument packing for a GEMM-shaped parameter list, and ``import oxicuda`` in a fresh process.
Rounds are small so the file stays fast; run with ``--benchmark-only`` to see the table.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys

import numpy as np
import ptx_test_family as scale_family
import pytest

import oxicuda
from oxicuda.driver.module import ArgPacker
from oxicuda.driver.params import entry_layouts
from oxicuda.ptx import cache, registry

PREFERRED_ARCHS = ("sm_86", "sm_80", "sm_90", "sm_90a")


def _registered_family_names() -> list[str]:
    """The families of the library packages that import (a broken package fails its own tests)."""
    for package in registry.LIBRARY_PACKAGES:
        try:
            registry.load_all_families((package,))
        except Exception:  # noqa: S112 - a broken package fails its own tests
            continue
    return sorted(n for n in registry.families() if not n.startswith(("test_", "bench_")))


@pytest.fixture
def scale_kernels(tmp_path, monkeypatch):
    """The test family registered, a private disk cache, and a clean memory cache."""
    monkeypatch.setenv("OXICUDA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("OXICUDA_CACHE", raising=False)
    scale_family.register()
    cache.clear_memory_cache()
    yield
    cache.clear_memory_cache()
    scale_family.unregister()


def _representative_spec(name: str):
    fam = registry.family(name)
    arch = next((a for a in PREFERRED_ARCHS if a in fam.archs), fam.archs[0])
    configs = list(fam.configurations(arch))
    assert configs, f"family {name!r} registers no configuration for {arch}"
    return configs[0]


@pytest.mark.parametrize("family", [*_registered_family_names(), scale_family.FAMILY])
def test_generation_cost_per_family_gives_deterministic_ascii_ptx(benchmark, family, request):
    if family == scale_family.FAMILY:
        request.getfixturevalue("scale_kernels")
    spec = _representative_spec(family)
    text = benchmark.pedantic(registry.generate_ptx, args=(spec,), rounds=3, iterations=1)
    benchmark.extra_info.update(spec=spec.key(), ptx_bytes=len(text))
    assert isinstance(text, str) and text.strip() and text.isascii()
    entries = list(entry_layouts(text))
    assert entries == [spec.kernel_name()] or (len(entries) == 1 and entries[0] in text), entries
    target = re.search(r"^\.target\s+(sm_\w+)", text, re.MULTILINE)
    assert target is not None and target.group(1) == spec.arch, (spec.arch, target)
    assert registry.generate_ptx(spec) == text, f"{family}: generation is not a pure function"


def test_cache_hit_cost_returns_the_same_loaded_function(benchmark, scale_kernels, rng):
    spec = scale_family.ScaleSpec(arch="sm_80", factor=-0.5)
    fn = cache.load(spec)
    before = cache.cache_info()
    hit = benchmark.pedantic(cache.load, args=(spec,), rounds=200, iterations=10)
    after = cache.cache_info()
    assert hit is fn
    assert after["function"]["hits"] > before["function"]["hits"]
    for level in ("function", "ptx_memory"):  # a hit neither regenerates nor reloads
        assert after[level]["misses"] == before[level]["misses"], (level, before, after)
    # the cached function still computes y = x * factor + offset
    n = 300
    x = rng.standard_normal(n).astype(np.float32)
    dx, dy = oxicuda.asarray(x), oxicuda.full((n,), np.nan, np.float32)
    hit((n + 127) // 128, 128, (dx, dy, n, np.float32(0.25)))
    expected = x.astype(np.float64) * -0.5 + 0.25
    np.testing.assert_allclose(dy.get(), expected, rtol=1e-6, atol=1e-6)


GEMM_LIKE_ENTRY = """
.version 7.8
.target sm_86
.address_size 64
.visible .entry gemm_like(
    .param .u64 a, .param .u64 b, .param .u64 c,
    .param .u32 m, .param .u32 n, .param .u32 k,
    .param .s32 lda, .param .s32 ldb, .param .s32 ldc,
    .param .f32 alpha, .param .f32 beta,
    .param .u64 workspace
)
{
    ret;
}
"""
# name -> (byte offset, struct code), written out by hand from the PTX alignment rules
GEMM_LIKE_SLOTS = {
    "a": (0, "Q"), "b": (8, "Q"), "c": (16, "Q"), "m": (24, "I"), "n": (28, "I"), "k": (32, "I"),
    "lda": (36, "i"), "ldb": (40, "i"), "ldc": (44, "i"), "alpha": (48, "f"), "beta": (52, "f"),
    "workspace": (56, "Q"),
}


def test_arg_packing_cost_for_a_gemm_parameter_list_round_trips(benchmark, rng):
    from oxicuda.driver.backend import api

    layout = entry_layouts(GEMM_LIKE_ENTRY)["gemm_like"]
    assert layout.total_size == 64
    assert {s.name: s.offset for s in layout.slots} == {
        k: v[0] for k, v in GEMM_LIKE_SLOTS.items()
    }
    packer = ArgPacker("gemm_like", layout)
    buffer = api().param_buffer(layout).data
    buffer[:] = b"\xff" * layout.total_size  # poison: a slot left unwritten shows up
    a, b, c = (oxicuda.empty((int(rng.integers(1, 64)),), np.float32) for _ in range(3))
    m, n, k = (int(v) for v in rng.integers(1, 1 << 20, size=3))
    lda, ldb, ldc = (np.int32(v) for v in rng.integers(-(1 << 30), 1 << 30, size=3))
    alpha, beta = np.float32(rng.standard_normal()), float(rng.standard_normal())
    workspace = int(rng.integers(1, 1 << 48)) * 256
    args = (a, b, c, m, n, k, lda, ldb, ldc, alpha, beta, workspace)
    benchmark.pedantic(packer.pack_into, args=(buffer, args), rounds=200, iterations=20)
    expected = {
        "a": a.ptr, "b": b.ptr, "c": c.ptr, "m": m, "n": n, "k": k,
        "lda": int(lda), "ldb": int(ldb), "ldc": int(ldc),
        "alpha": float(alpha), "beta": float(np.float32(beta)), "workspace": workspace,
    }
    raw = bytes(buffer)
    for name, (offset, code) in GEMM_LIKE_SLOTS.items():
        (got,) = struct.unpack_from("<" + code, raw, offset)
        assert got == expected[name], (name, got, expected[name])


IMPORT_PROBE = """
import json, sys, time
t0 = time.perf_counter()
import oxicuda
elapsed = time.perf_counter() - t0
print(json.dumps({"import_s": elapsed, "modules": sorted(sys.modules)}))
"""


def test_import_cost_in_a_fresh_process_loads_no_driver(benchmark):
    def run() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, timeout=60,
            check=False,
        )

    proc = benchmark.pedantic(run, rounds=3, iterations=1)
    assert proc.returncode == 0, proc.stderr
    probe = json.loads(proc.stdout)
    benchmark.extra_info["import_s"] = probe["import_s"]
    loaded = set(probe["modules"])
    assert "oxicuda" in loaded
    for name in ("cffi", "oxicuda.driver.libcuda", "oxicuda.emulator.api"):
        assert name not in loaded, f"import oxicuda loaded {name}"
    assert 0 < probe["import_s"] < 0.5, probe["import_s"]
