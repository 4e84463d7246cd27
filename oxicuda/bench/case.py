"""Benchmark cases: what one side-by-side measurement is, and the registry they live in.

A case is registered beside its family (``oxicuda/blas/bench_cases.py`` and so on). Its
``prepare(quick)`` builds inputs on the device and returns a ``Prepared``: the oxicuda call,
the vendor call (None when no vendor library is importable), and a correctness check run once
before timing. Calls take the repeat index so that cases can rotate through several input sets
and keep the L2 from flattering them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

# family -> case name -> Case
_CASES: dict[str, dict[str, Case]] = {}


@dataclass
class Prepared:
    ours: Callable[[int], object]
    vendor: Callable[[int], object] | None = None
    vendor_name: str = ""
    #: returns the relative error of ours against a float64 (or vendor) reference
    check: Callable[[], float] | None = None
    tolerance: float = 1e-5
    #: released after timing (drop device arrays)
    cleanup: Callable[[], None] | None = None
    #: the problem actually prepared, when it differs from the case's (quick or emulator passes)
    flops: float | None = None
    bytes: float | None = None
    #: the shape actually run, when it differs from the case's name (e.g. "2048x8192")
    problem: str = ""


@dataclass(frozen=True)
class Case:
    family: str
    name: str
    prepare: Callable[[bool], Prepared] = field(compare=False)
    #: floating-point operations of one call (None: bandwidth-bound case)
    flops: float | None = None
    #: fewest bytes one call must move through device memory
    bytes: float | None = None
    #: the figure the issue asks for, in the unit of ``unit``
    unit: str = "TFLOP/s"
    #: in the --quick pass
    quick: bool = True
    #: the case only makes sense on a real GPU (host costs, bandwidth)
    gpu_only: bool = False
    #: "device": CUDA events around the call; "host": host microseconds per call (unit "us")
    timing: str = "device"
    note: str = ""
    #: the PTX targets the case can run on (``("sm_90",)`` for wgmma); empty: any device. A device
    #: of another arch skips the case and says why instead of reporting an error
    archs: tuple[str, ...] = ()


def register_case(case: Case) -> Case:
    fam = _CASES.setdefault(case.family, {})
    if case.name in fam:
        raise ValueError(f"bench case {case.family}/{case.name} registered twice")
    fam[case.name] = case
    return case


def cases(family: str | None = None) -> list[Case]:
    """The registered cases, of one family or of all, in registration order."""
    out = []
    for fam, by_name in _CASES.items():
        if family is None or fam == family:
            out.extend(by_name.values())
    return out


#: the modules whose import registers bench cases; those of libraries not written yet are absent
CASE_MODULES = (
    "oxicuda.bench.cases_memory",
    "oxicuda.blas.bench_cases",
    "oxicuda.dnn.bench_cases",
    "oxicuda.dnn.bench_cases_attention",
    "oxicuda.dnn.bench_cases_backward",
    "oxicuda.fft.bench_cases",
    "oxicuda.sparse.bench_cases",
    "oxicuda.solver.bench_cases",
    "oxicuda.rand.bench_cases",
    "oxicuda.primitives.bench_cases",
    "oxicuda.graphs.bench_cases",
    "oxicuda.jit.bench_cases",
    "oxicuda.array_math.bench_cases",
)


def load_all_cases(modules: tuple[str, ...] = CASE_MODULES) -> None:
    """Import every family's bench cases that exist."""
    import importlib

    for mod in modules:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            # the module or its package is absent (a library not written yet): no cases from it;
            # a module that exists but imports something missing is a broken module and raises
            if exc.name is None or not (mod == exc.name or mod.startswith(exc.name + ".")):
                raise
