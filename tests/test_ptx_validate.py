"""ptxas discovery, output parsing, assembly reports and the result cache."""

from __future__ import annotations

import pytest

from oxicuda.ptx import validate
from oxicuda.ptx.builder import KernelBuilder

try:
    validate.find_ptxas()
    HAVE_PTXAS = True
except validate.PtxasNotFound:
    HAVE_PTXAS = False
needs_ptxas = pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not installed")

SAMPLE = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k' for 'sm_86'
ptxas info    : Function properties for k
    24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 4112 bytes smem, 380 bytes cmem[0]
"""


def test_parse_ptxas_output_reads_every_figure():
    rep = validate.parse_ptxas_output(SAMPLE, "sm_86")
    assert (
        rep.registers,
        rep.spill_stores,
        rep.spill_loads,
        rep.shared_bytes,
        rep.stack_bytes,
    ) == (40, 8, 12, 4112, 24)
    assert rep.kernels == ("k",) and rep.ok and rep.spills == 20


def test_find_ptxas_honours_override_and_reports_bad_one(monkeypatch, tmp_path):
    monkeypatch.setenv("OXICUDA_PTXAS", str(tmp_path / "missing"))
    with pytest.raises(validate.PtxasNotFound, match="not an executable"):
        validate.find_ptxas()
    fake = tmp_path / "ptxas"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("OXICUDA_PTXAS", str(fake))
    assert validate.find_ptxas() == str(fake)


def test_find_ptxas_looks_in_the_nvcc_wheel(monkeypatch, tmp_path):
    monkeypatch.delenv("OXICUDA_PTXAS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    wheel_bin = tmp_path / "site" / "nvidia" / "cuda_nvcc" / "bin"
    wheel_bin.mkdir(parents=True)
    (wheel_bin / "ptxas").write_text("#!/bin/sh\n")
    (wheel_bin / "ptxas").chmod(0o755)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert validate.find_ptxas() == str(wheel_bin / "ptxas")


def _kernel(arch: str, regs_used: int) -> str:
    kb = KernelBuilder("k", arch=arch)
    p = kb.param_ptr("p")
    vals = [kb.ld("global", "f32", p, offset=4 * i) for i in range(regs_used)]
    acc = kb.mov(0.0, "f32")
    for v in vals:
        kb.fma(v, v, acc, out=acc)
    kb.st("global", p, acc)
    return kb.ptx()


@needs_ptxas
def test_assemble_reports_resources_and_errors(monkeypatch, tmp_path):
    monkeypatch.setenv("OXICUDA_PTXAS_CACHE", str(tmp_path))
    good = validate.assemble(_kernel("sm_86", 4), "sm_86")
    assert good.ok and good.registers > 0 and good.kernels == ("k",) and good.spills == 0
    bad = validate.assemble(_kernel("sm_86", 4).replace("fma.rn.f32", "fma.rn.f64", 1), "sm_86")
    assert not bad.ok and "error" in bad.message and "fma" in bad.message
    assert len(list(tmp_path.glob("*.json"))) == 2


@needs_ptxas
def test_assembly_results_are_cached_by_content(monkeypatch, tmp_path):
    monkeypatch.setenv("OXICUDA_PTXAS_CACHE", str(tmp_path))
    text = _kernel("sm_90", 3)
    first = validate.assemble(text, "sm_90")
    validate._memo.clear()

    def no_ptxas(*args, **kwargs):
        raise AssertionError("ptxas ran although the result was cached on disk")

    monkeypatch.setattr(validate.subprocess, "run", no_ptxas)
    assert validate.assemble(text, "sm_90") == first
    validate._memo.clear()
    with pytest.raises(AssertionError, match="ptxas ran"):
        validate.assemble(text + "\n", "sm_90")


@needs_ptxas
def test_assemble_many_keeps_order():
    jobs = [(_kernel("sm_86", n), "sm_86") for n in (1, 8, 2)] + [("garbage", "sm_86")]
    reports = validate.assemble_many(jobs, workers=4)
    assert [r.ok for r in reports] == [True, True, True, False]


def test_parse_arch_list():
    assert validate.parse_arch_list("sm_86, sm_90a") == ["sm_86", "sm_90a"]
    with pytest.raises(ValueError, match="expected names like"):
        validate.parse_arch_list("sm86")


# -- targets --------------------------------------------------------------------------------------
def test_ptx_version_per_arch_and_driver():
    from oxicuda.ptx import target

    assert [target.ptx_version_for(a) for a in ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")] == [
        "7.0",
        "7.1",
        "7.8",
        "7.8",
        "8.0",
    ]
    assert target.ptx_version_for_driver(13000) == "9.0"
    assert target.ptx_version_for_driver(12080) == "8.7"
    assert target.ptx_version_for_driver(12040) == "8.4"
    assert target.ptx_version_for_driver(12000) == "8.0"
    assert target.ptx_version_for_driver(11080) == "7.8"
    assert target.ptx_version_for_driver(13020) == "9.0"  # newer than the table: best known
    with pytest.raises(target.PtxVersionError, match="older than"):
        target.ptx_version_for_driver(10020)
    with pytest.raises(ValueError, match="unknown arch"):
        target.ptx_version_for("sm_99")


def test_check_driver_supports_raises_for_old_drivers():
    from oxicuda.ptx import target

    target.check_driver_supports("8.0", driver_max="8.4")
    with pytest.raises(
        target.PtxVersionError, match="PTX ISA 8.0 but the installed driver JITs at most 7.8"
    ):
        target.check_driver_supports("8.0", driver_max="7.8")


def test_device_arch_matches_the_live_device_compute_capability():
    import oxicuda
    from oxicuda.ptx import target

    major, minor = oxicuda.Device(0).compute_capability
    assert target.device_arch(0) == f"sm_{major}{minor}" == target.device_arch()
    version = target.driver_max_ptx_version()
    assert target.version_tuple(version) >= (7, 0)
