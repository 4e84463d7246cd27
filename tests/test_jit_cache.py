"""Python kernels go through the kernel cache: a second process-level compile of the same
function is a disk hit; the source, the constants it reads, the signature and the math mode are
all in the key."""

from __future__ import annotations

import numpy as np

import oxicuda
from oxicuda.jit import grid
from oxicuda.ptx import cache

SCALE = 3.0


def _body(x):
    i = grid(1)
    if i < len(x):
        x[i] = x[i] * SCALE


def test_disk_cache_hit_for_the_same_function_and_miss_for_changed_constants(tmp_path, monkeypatch):
    monkeypatch.setenv("OXICUDA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("OXICUDA_CACHE", raising=False)
    cache.clear_memory_cache()
    x = oxicuda.asarray(np.ones(16, np.float32))
    oxicuda.kernel(_body)[1, 32](x)
    assert cache.cache_info()["disk"]["writes"] == 1
    cache.clear_memory_cache()
    k2 = oxicuda.kernel(_body)
    k2[1, 32](x)
    assert cache.cache_info()["disk"]["hits"] == 1
    np.testing.assert_array_equal(x.get(), np.full(16, 9, np.float32))
    sp = k2.specializations[0]
    monkeypatch.setitem(globals(), "SCALE", 4.0)
    k3 = oxicuda.kernel(_body)
    assert k3.specialize(sp.signature, sp.arch) != sp  # the constant is part of the digest
    k3[1, 32](x)
    np.testing.assert_array_equal(x.get(), np.full(16, 36, np.float32))
    fast = oxicuda.kernel(_body, math="fast")
    assert fast.specialize(sp.signature, sp.arch).key() != sp.key()
    cache.clear_memory_cache()


def test_every_jit_family_lists_configurations_that_generate_and_assemble():
    import pytest

    import oxicuda.jit.elementwise
    import oxicuda.jit.reduction  # noqa: F401
    from oxicuda.ptx import registry, validate

    try:
        validate.find_ptxas()
        have_ptxas = True
    except Exception:  # noqa: BLE001
        have_ptxas = False
    for fam in ("jit_kernel", "jit_elementwise", "jit_reduction"):
        for arch in ("sm_86", "sm_90"):
            specs = registry.configurations(arch, fam)
            assert specs, fam
            for spec in specs[:5]:
                text = registry.generate_ptx(spec)
                if have_ptxas:
                    assert validate.assemble(text, arch).ok, spec.key()
    if not have_ptxas:
        pytest.skip("ptxas not available: generation checked, assembly not")
