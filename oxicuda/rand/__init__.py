"""oxicuda.rand: the cuRAND counterpart. Generators whose bits are cuRAND's for the same seed and
offset, computed on the device by generated PTX: Philox4x32-10, XORWOW, MRG32k3a (cuRAND's
PSEUDO_LEGACY ordering; its DEFAULT/BEST orderings raise NotImplementedError at generation),
Sobol32 and Sobol64 (dimensions 1..20000, Joe-Kuo 6.21201 direction numbers); MTGP32, MT19937
and the scrambled Sobol generators raise NotImplementedError, with the reason, when created.
XORWOW and MRG32k3a normals follow cuRAND's pair layout (the H200's single calls at offsets 0,
1, 4097); their subsequences carry on from call to call as cuRAND's kept states do (a rule
inferred from the failing XORWOW double calls; .diag/rand2_check.sh checks both on a GPU).

- ``default_rng(seed=None, generator="philox")`` -> ``Generator`` (numpy's shape: random, uniform,
  standard_normal, normal, lognormal, integers, poisson, bits);
- ``oxicuda.cuda.curand``: the ``cupy.cuda.curand`` surface over the same generators;
- ``oxicuda.rand.philox_ptx.philox4x32_10(kb, ctr, key)``: the rounds inline in any kernel.

Names import on first access.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "default_rng": "api",
    "Generator": "api",
    "Engine": "generator",
    "philox4x32_10": "philox_ptx",
}
#: modules that register kernel families (imported by the registry's load_all_families)
KERNEL_MODULES = ("oxicuda.rand.kernels.philox", "oxicuda.rand.kernels.xorwow",
                  "oxicuda.rand.kernels.mrg32k3a", "oxicuda.rand.kernels.sobol",
                  "oxicuda.rand.kernels.poisson")


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'oxicuda.rand' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"oxicuda.rand.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(_EXPORTS)
