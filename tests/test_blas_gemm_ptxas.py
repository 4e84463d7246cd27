"""The SIMT GEMM families assemble with ptxas for sm_86 and sm_90, and the hot kernels keep their
register budget (2 CTAs of 256 threads per SM) without spills."""

from __future__ import annotations

import pytest

from oxicuda.blas import gemm_dmma, gemm_naive, gemm_splitk, gemm_tiled, gemv  # noqa: F401  (registers families)
from oxicuda.blas.gemm_tiled import GemmTiledSpec
from oxicuda.ptx import registry, validate

FAMILIES = ("gemm_naive", "gemm_tiled", "gemm_splitk_reduce", "gemv", "gemm_dmma")


def _ptxas_or_skip():
    try:
        validate.find_ptxas()
    except Exception as exc:  # no ptxas on this machine
        pytest.skip(f"ptxas not available: {exc}")


#: every n-th tiled configuration in CI (ptxas takes ~0.5 s on a 128 x 128 tile; all of them:
#: python -m oxicuda kernels --validate sm_86,sm_90)
TILED_SAMPLE = 20


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_90"])  # all archs: python -m oxicuda kernels --validate
def test_every_simt_gemm_configuration_assembles(arch):
    _ptxas_or_skip()
    specs = [s for f in FAMILIES if f != "gemm_tiled" for s in registry.configurations(arch, f)]
    tiled = list(registry.configurations(arch, "gemm_tiled"))
    specs += tiled[::TILED_SAMPLE]
    assert len(specs) > 100
    reports = validate.assemble_many([(registry.generate_ptx(s), arch) for s in specs])
    failed = [(s.key(), r) for s, r in zip(specs, reports) if not r.ok]
    assert not failed, failed[:2]


@pytest.mark.parametrize("arch", ["sm_86", "sm_90"])
@pytest.mark.parametrize("ta,tb", [("N", "N"), ("T", "N"), ("N", "T"), ("T", "T")])
def test_hot_sgemm_register_budget(arch, ta, tb):
    _ptxas_or_skip()
    spec = GemmTiledSpec(arch=arch, dtype="float32", transa=ta, transb=tb, vec_a=4, vec_b=4)
    report = validate.assemble(registry.generate_ptx(spec), arch)
    assert report.ok
    assert report.spill_stores == 0 and report.registers <= 128, (report.registers, report.spill_stores)
