"""Registry and the kernels/inspect commands, with a test-local family registered per test."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

import ptx_test_family as fam
import pytest

from oxicuda.cli import inspect as inspect_cli
from oxicuda.cli import kernels as kernels_cli
from oxicuda.ptx import registry
from oxicuda.ptx.spec import KernelSpec
from oxicuda.ptx.validate import PtxasNotFound, find_ptxas

try:
    find_ptxas()
    HAVE_PTXAS = True
except PtxasNotFound:
    HAVE_PTXAS = False
needs_ptxas = pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not installed")


@dataclass(frozen=True)
class BrokenSpec(KernelSpec):
    family: ClassVar[str] = "test_broken"
    bad: bool = True


def _broken_generate(spec: BrokenSpec) -> str:
    # ptxas rejects this: an f32 register used as an address
    return (
        ".version 7.1\n.target sm_86\n.address_size 64\n\n.visible .entry "
        f"{spec.kernel_name()}()\n{{\n\t.reg .f32 %f<2>;\n\tld.global.f32 %f1, [%f1];\n\tret;\n}}\n"
    )


@pytest.fixture
def scale_family():
    fam.register()
    yield
    fam.unregister()


@pytest.fixture
def broken_family():
    registry.register_family(
        "test_broken",
        BrokenSpec,
        _broken_generate,
        lambda arch: [BrokenSpec(arch=arch)],
        archs=("sm_86",),
    )
    yield
    registry.unregister_family("test_broken")


def test_register_enumerate_and_unregister(scale_family):
    assert "test_scale" in registry.families()
    specs = registry.configurations(family="test_scale")
    assert len(specs) == 3 * 8 and {s.arch for s in specs} == {"sm_80", "sm_86", "sm_90"}
    assert registry.configurations(arch="sm_90a", family="test_scale") == []
    assert len(registry.configurations(arch="sm_86", family="test_scale")) == 8
    spec = fam.ScaleSpec(arch="sm_86")
    assert registry.family_of(spec).name == "test_scale"
    assert spec.kernel_name() in registry.generate_ptx(spec)
    fam.unregister()
    assert "test_scale" not in registry.families()
    with pytest.raises(KeyError, match="no kernel family registered"):
        registry.generate_ptx(spec)
    fam.register()


def test_registering_a_name_with_another_class_raises(scale_family):
    with pytest.raises(ValueError, match="already registered"):
        registry.register_family("test_scale", BrokenSpec, _broken_generate, lambda a: [])
    with pytest.raises(TypeError, match="must subclass KernelSpec"):
        registry.register_family("x", dict, _broken_generate, lambda a: [])


def test_generate_ptx_rejects_non_ascii():
    @dataclass(frozen=True)
    class Accented(KernelSpec):
        family: ClassVar[str] = "test_accented"

    registry.register_family(
        "test_accented",
        Accented,
        lambda s: ".entry k() {}\n// r\u00e9sum\u00e9\n",
        lambda a: [],
        archs=("sm_86",),
    )
    try:
        with pytest.raises(ValueError, match="non-ASCII PTX \\(line 2\\)"):
            registry.generate_ptx(Accented())
    finally:
        registry.unregister_family("test_accented")


def test_load_all_families_skips_missing_packages_and_raises_for_broken_ones(tmp_path, monkeypatch):
    assert registry.load_all_families(("oxicuda_no_such_package_xyz",)) == []
    (tmp_path / "oxi_broken_lib.py").write_text("import oxi_missing_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="oxi_missing_dependency_xyz"):
        registry.load_all_families(("oxi_broken_lib",))


def test_kernels_lists_configurations(scale_family, capsys):
    assert kernels_cli.main(["--family", "test_scale"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 25 and out[-1].startswith("24 configurations")
    assert all(line.startswith("test_scale\tsm_") for line in out[:-1])


@needs_ptxas
def test_kernels_validate_reports_valid_count(scale_family, capsys):
    assert kernels_cli.main(["--validate", "sm_86,sm_90", "--family", "test_scale", "--regs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "16 kernels valid, 0 failed"
    assert sum("registers" in line for line in lines) == 16


@needs_ptxas
def test_kernels_validate_prints_one_line_per_failure_and_exits_1(broken_family, capsys):
    assert kernels_cli.main(["--validate", "sm_86", "--family", "test_broken"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "0 kernels valid, 1 failed"
    assert lines[0].startswith("FAIL test_broken sm_86") and "error" in lines[0]


def test_kernels_rejects_bad_arch_names(scale_family, capsys):
    assert kernels_cli.main(["--validate", "86", "--family", "test_scale"]) == 2
    assert "expected names like sm_86" in capsys.readouterr().err


def test_inspect_prints_the_ptx_of_the_requested_spec(scale_family, capsys):
    assert (
        inspect_cli.main(
            ["test_scale", "--param", "dtype=f64", "--param", "factor=3", "--arch", "sm_90"]
        )
        == 0
    )
    out = capsys.readouterr().out
    spec = fam.ScaleSpec(arch="sm_90", dtype="f64", factor=3.0)
    assert out == registry.generate_ptx(spec)
    assert inspect_cli.main(["test_scale", "--param", "nope=1"]) == 2
    assert "has fields" in capsys.readouterr().err


@needs_ptxas
def test_inspect_regs_reports_registers(scale_family, capsys):
    assert inspect_cli.main(["test_scale", "--emit", "regs", "--arch", "sm_86"]) == 0
    out = capsys.readouterr().out
    assert "registers: " in out and "spill stores: 0 bytes" in out
    assert int(out.split("registers: ")[1].split()[0]) > 0


_FULL_REGISTRY = os.environ.get("OXICUDA_FULL_REGISTRY") == "1"


def _registry_shards() -> list[str | None]:
    """The complete pass runs one test per family (xdist spreads them over the GPU machine's
    cores); the sampled pass is one test."""
    if not _FULL_REGISTRY:
        return [None]
    from oxicuda.ptx import registry

    registry.load_all_families()
    wanted = ("sm_86", "sm_90", "sm_90a")
    shards = []
    for name, family in sorted(registry.families().items()):
        archs = [a for a in wanted if a in family.archs]
        if not archs:
            continue
        count = sum(len(registry.configurations(arch=a, family=name)) for a in archs)
        n = max(1, -(-count // _SHARD_CONFIGS))  # large families in shares of at most ~300
        shards += [name] if n == 1 else [f"{name}@{i}/{n}" for i in range(n)]
    return shards


#: configurations per test in the complete pass: about 60-120 s of ptxas on a loaded GPU machine
_SHARD_CONFIGS = 300


@pytest.mark.slow
@needs_ptxas
@pytest.mark.parametrize("family", _registry_shards())
def test_the_whole_registry_assembles_for_sm86_sm90_and_sm90a(family, capsys):
    """Every configuration every family registers, through ptxas for each arch it supports (the
    per-family tests check subsets with tighter budgets). The complete pass (about 12,900
    configurations) runs where OXICUDA_FULL_REGISTRY=1 (the GPU machine's suite, 16 cores), one
    test per family; elsewhere (2-core CI) 24 configurations per family and arch, evenly spaced
    through each family's list."""
    archs = ["sm_86", "sm_90", "sm_90a"]
    extra = []
    if family is not None:
        from oxicuda.ptx import registry

        family, _, shard = family.partition("@")
        extra = ["--family", family] + (["--shard", shard] if shard else [])
        archs = [a for a in archs if a in registry.family(family).archs]
    args = ["--validate", ",".join(archs)] + ([] if _FULL_REGISTRY else ["--sample", "24"])
    rc = kernels_cli.main(args + extra)
    out = capsys.readouterr().out
    assert rc == 0, out[-4000:]
    last = out.strip().splitlines()[-1]
    assert last.endswith(" 0 failed"), last
    if family is None:
        assert int(last.split()[0]) > 1000, last
