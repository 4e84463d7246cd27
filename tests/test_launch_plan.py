"""The launch-plan protocol (oxicuda.ptx.launch_plan) and the device-facts owner
(oxicuda.driver.facts): a plan launches exactly its steps with the bound arguments, reuses its
workspace, and the plan cache is bounded."""

from __future__ import annotations

import numpy as np
import ptx_test_family as fam
import pytest

import oxicuda
from oxicuda.driver.facts import ARCH_RATES, BOARDS, arch_rates, device_facts
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache


@pytest.fixture
def scale_family():
    fam.register()
    yield
    fam.unregister()


def _arch() -> str:
    return device_facts().arch


def test_plan_runs_its_steps_in_order_with_bound_arguments(scale_family, rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    dx = oxicuda.asarray(x)
    mid = oxicuda.full((n,), np.nan, np.float32)
    out = oxicuda.full((n,), np.nan, np.float32)
    blocks = (n + 127) // 128
    first = KernelStep(fam.ScaleSpec(arch=_arch(), factor=2.0), blocks, 128,
                       lambda p, s, ws: (p[0], p[1], n, np.float32(s[0])))
    second = KernelStep(fam.ScaleSpec(arch=_arch(), factor=-0.5), blocks, 128,
                        lambda p, s, ws: (p[1], p[2], n, np.float32(s[1])))
    plan = LaunchPlan("scale-twice", [first, second])
    with oxicuda.trace() as t:
        plan.run((dx.ptr, mid.ptr, out.ptr), (1.5, -3.0))
    want = (x.astype(np.float64) * 2 + 1.5) * -0.5 - 3.0
    np.testing.assert_allclose(out.get(), want, rtol=1e-6)
    assert [r.kernel for r in t.launches] == list(plan.kernels)
    assert [r.spec.factor for r in t.launches] == [2.0, -0.5]


def test_plan_passes_the_same_cached_workspace_on_every_run(scale_family):
    seen = []
    step = KernelStep(fam.ScaleSpec(arch=_arch()), 1, 128,
                      lambda p, s, ws: (seen.append(ws) or ws, ws, 0, np.float32(0)))
    plan = LaunchPlan("ws", [step], workspace_bytes=4096)
    plan.run((), ())
    plan.run((), ())
    assert seen[0] != 0 and seen[0] == seen[1]


def test_plan_cache_is_bounded_and_counts_hits():
    cache = PlanCache("test", maxsize=2)
    built = []
    for key in ("a", "b", "a", "c", "a"):
        cache.get_or_build(key, lambda k=key: built.append(k) or k)
    assert built == ["a", "b", "c", "a"]  # "a" was evicted by "c" (oldest built first)
    assert len(cache) == 2 and cache.hits == 1 and cache.misses == 4
    with pytest.raises(ValueError, match="maxsize"):
        PlanCache("bad", maxsize=0)


def test_bad_geometry_raises_when_the_plan_is_made(scale_family):
    with pytest.raises(ValueError, match="threads"):
        KernelStep(fam.ScaleSpec(arch=_arch()), 1, 4096, lambda p, s, ws: ())


def test_device_facts_come_from_the_driver_once_per_device():
    facts = device_facts()
    dev = oxicuda.Device(0)
    assert facts.sm_count == dev.multiprocessor_count
    assert facts.cc == dev.compute_capability
    assert facts is device_facts(0)
    assert facts.fp32_lanes_per_sm == arch_rates(facts.cc).fp32_lanes


def test_rate_table_covers_every_board_and_matches_known_peaks():
    for board in BOARDS.values():
        assert board.cc in ARCH_RATES
    h200 = BOARDS["h200"]
    fp32 = 2 * arch_rates(h200.cc).fp32_lanes * h200.sm_count * h200.clock_khz * 1e3
    assert 66e12 < fp32 < 68e12  # DESIGN.md: 67 TFLOP/s
    a100 = BOARDS["a100"]
    assert arch_rates(a100.cc).fp32_lanes == 64  # A100 has 64 FP32 lanes per SM
    assert arch_rates((8, 7)).fp32_lanes == arch_rates((8, 6)).fp32_lanes
    with pytest.raises(KeyError, match="compute capability"):
        arch_rates((5, 0))
