"""The registry of the cuBLAS-surface kernel families is exactly what their public calls can
launch: every argument combination of the pointer-level calls is made with the kernel launch
replaced by a recorder (no emulation: this test is about dispatch), and the recorded specs must
equal the registered configurations, in both directions."""

from __future__ import annotations

import itertools
from typing import ClassVar

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import geam_dgmm, level1_rot, level2_packed, level3_rank
from oxicuda.driver.facts import device_facts
from oxicuda.ptx import launch_plan, registry

DTYPES = ("float32", "float64", "complex64", "complex128")
FAMILIES = ("blas2_mv", "blas2_sv", "blas2_rank", "blas_geam", "blas_dgmm", "blas_pack", "blas1_rotm", "blas1_rotg",
            "blas1_rotmg")


class RecordingStep:
    """Stands in for KernelStep: records the spec, launches nothing."""

    seen: ClassVar[set] = set()

    def __init__(self, spec, grid, block, bind, shared_mem=0, function=None):
        RecordingStep.seen.add(spec)
        self.spec, self.bind = spec, bind
        self.launch = lambda args, stream: None


@pytest.fixture
def recorder(monkeypatch):
    RecordingStep.seen = set()
    for module in (level2_packed, geam_dgmm, level1_rot, level3_rank, launch_plan):
        monkeypatch.setattr(module, "KernelStep", RecordingStep)
    monkeypatch.setattr(level3_rank, "_gemm", lambda *a, **k: None)
    for cache in (level2_packed.PLANS, geam_dgmm.PLANS, level1_rot.PLANS, level3_rank.PLANS):
        cache.clear()
    yield RecordingStep.seen
    for cache in (level2_packed.PLANS, geam_dgmm.PLANS, level1_rot.PLANS, level3_rank.PLANS):
        cache.clear()


def ops(dt):
    return ("N", "T", "C") if dt.startswith("complex") else ("N", "T")


def test_every_registered_configuration_is_reachable_and_nothing_else_launches(recorder):
    buf = oxicuda.zeros((4096,), np.complex128)
    p = buf.ptr
    host = np.zeros(16, np.float64)
    hp = host.ctypes.data
    L = level2_packed
    for dt in DTYPES:
        cplx = dt.startswith("complex")
        for t in ops(dt):
            L.gbmv_ptr(t, 3, 3, 1, 1, 1.0, p, 3, p, 1, 0.0, p, 1, dtype=dt)
        for u in ("L", "U"):
            L.sbmv_ptr(u, 3, 1, 1.0, p, 2, p, 1, 0.0, p, 1, dtype=dt, hermitian=cplx)
            L.spmv_ptr(u, 3, 1.0, p, p, 1, 0.0, p, 1, dtype=dt, hermitian=cplx)
            for t, d in itertools.product(ops(dt), ("N", "U")):
                L.trmv_ptr(u, t, d, 3, p, 3, p, 1, dtype=dt)
                L.tbmv_ptr(u, t, d, 3, 1, p, 2, p, 1, dtype=dt)
                L.tpmv_ptr(u, t, d, 3, p, p, 1, dtype=dt)
                L.tbsv_ptr(u, t, d, 3, 1, p, 2, p, 1, dtype=dt)
                L.tpsv_ptr(u, t, d, 3, p, p, 1, dtype=dt)
            for herm in ((False, True) if cplx else (False,)):
                L.syr_ptr(u, 3, 1.0, p, 1, p, 3, dtype=dt, hermitian=herm)
                L.syr2_ptr(u, 3, 1.0, p, 1, p, 1, p, 3, dtype=dt, hermitian=herm)
                if herm or not cplx:
                    L.spr_ptr(u, 3, 1.0, p, 1, p, dtype=dt, hermitian=herm)
                    L.spr2_ptr(u, 3, 1.0, p, 1, p, 1, p, dtype=dt, hermitian=herm)
            geam_dgmm.trttp_ptr(u, 3, p, 3, p, dtype=dt)
            geam_dgmm.tpttr_ptr(u, 3, p, p, 3, dtype=dt)
            level3_rank.syr2k_ptr(u, "N", 3, 2, 1.0, p, 3, p, 3, 0.0, p, 3, dtype=dt)
            if cplx:
                level3_rank.herk_ptr(u, "N", 3, 2, 1.0, p, 3, 0.0, p, 3, dtype=dt)
                level3_rank.her2k_ptr(u, "N", 3, 2, 1.0, p, 3, p, 3, 0.0, p, 3, dtype=dt)
        for ta, tb in itertools.product(ops(dt), ops(dt)):
            geam_dgmm.geam_ptr(ta, tb, 3, 3, 1.0, p, 3, 1.0, p + 2048, 3, p + 4096, 3, dtype=dt)
        for side in ("L", "R"):
            geam_dgmm.dgmm_ptr(side, 3, 3, p, 3, p, 1, p, 3, dtype=dt)
        level1_rot.rotg_ptr(p, p + 64, p + 128, p + 192, dtype=dt, on_host=False)
        if not cplx:
            host[0] = -1.0
            level1_rot.rotm_ptr(3, p, 1, p + 64, 1, hp, dtype=dt)
            level1_rot.rotmg_ptr(p, p + 16, p + 32, p + 48, p + 64, dtype=dt, on_host=False)
    arch = device_facts().arch
    for family in FAMILIES:
        registered = set(registry.configurations(arch=arch, family=family))
        launched = {s for s in recorder if s.family == family}
        assert launched == registered, (family, sorted(map(repr, registered - launched))[:3],
                                        sorted(map(repr, launched - registered))[:3])
    forms = {s for s in registry.configurations(arch=arch, family="blas3_axpby") if s.form != "w"}
    assert {s for s in recorder if s.family == "blas3_axpby"} == forms
