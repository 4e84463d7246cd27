"""Launch plans of oxicuda.rand: one per (family, distribution, alignment, length, device).

``philox_plan(problem, device)`` sizes a grid-stride launch: enough CTAs to fill every SM
(``device.max_threads_per_sm // THREADS`` per SM), each thread walking ``iters`` groups of four
words, so that a large call gives every thread hundreds of 16-byte stores and a small one a
single step. The plan's ``run`` takes ``pointers = (out,)`` and ``scalars = (word0, key0, key1[,
a, b])``.
"""

from __future__ import annotations

from dataclasses import dataclass

from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache

from .kernels import mrg32k3a as M
from .kernels import poisson as P
from .kernels import sobol as S
from .kernels import xorwow as X
from .kernels.philox import THREADS, PhiloxSpec

PLANS = PlanCache("rand")


@dataclass(frozen=True)
class PhiloxProblem:
    """A Philox call's signature: what the plan depends on (the seed and offset are scalars,
    except the offset's alignment to a Philox block)."""

    dist: str
    n: int
    aligned: bool
    vec: bool
    arch: str
    ordinal: int


def philox_plan(problem: PhiloxProblem, device) -> LaunchPlan:
    spec = PhiloxSpec(arch=problem.arch, dist=problem.dist, aligned=problem.aligned,
                      vec=problem.vec and problem.aligned)
    # one more unit when the offset is not a multiple of the four values per unit
    groups = -(-problem.n // spec.outputs_per_group) + (0 if problem.aligned else 1)
    ctas_per_sm = max(1, device.max_threads_per_sm // THREADS)
    grid = max(1, min(-(-groups // THREADS), device.sm_count * ctas_per_sm))
    iters = -(-groups // (grid * THREADS))
    n = problem.n

    def bind(p, s, ws):
        return (p[0], n, s[0], iters, *s[1:])

    step = KernelStep(spec, grid, THREADS, bind)
    return LaunchPlan(f"rand_philox[{problem.dist}, n={n}]", [step])


@dataclass(frozen=True)
class SubsequenceProblem:
    """A call of a 4096-subsequence generator (XORWOW, MRG32k3a): generator, distribution,
    length, arch, device."""

    generator: str
    dist: str
    n: int
    arch: str
    ordinal: int


SUBSEQUENCE_SPECS = {"xorwow": X.XorwowSpec, "mrg32k3a": M.Mrg32k3aSpec}


def subsequence_plan(problem: SubsequenceProblem, device, tables) -> LaunchPlan:
    """Two steps: init (seed, jump) and generate, with 6 x 4096 x K state words in the
    workspace. Scalars: (seed lo, seed hi, offset, extra pointer[, a, b]); the extra pointer
    holds 4096 s64 words (generator.Engine.extra_words). K chunks per subsequence: enough threads to fill the device, at least 128
    positions per chunk."""
    spec_cls = SUBSEQUENCE_SPECS[problem.generator]
    n = problem.n
    positions = -(-n // X.SUBSEQUENCES) + 1
    fill = max(1, device.sm_count * device.max_threads_per_sm // X.SUBSEQUENCES)
    k = max(1, min(fill, positions // 128))
    chunk = -(-positions // k)
    if problem.dist in X.PAIRED:
        chunk += chunk % 2          # a chunk holds whole Box-Muller pairs of its subsequence
    count = X.SUBSEQUENCES * k
    grid = -(-count // X.THREADS)
    table_ptr = tables.ptr
    wpv = X.WORDS_PER_VALUE.get(problem.dist, 1) if problem.generator == "xorwow" else 1
    init = KernelStep(spec_cls(arch=problem.arch, stage="init"), grid, X.THREADS,
                      lambda p, s, ws: (table_ptr, ws, s[3], count, s[0], s[1], s[2], chunk, wpv))
    gen = KernelStep(spec_cls(arch=problem.arch, dist=problem.dist), grid, X.THREADS,
                     lambda p, s, ws: (ws, p[0], count, n, s[2], chunk, *s[4:]))
    return LaunchPlan(f"rand_{problem.generator}[{problem.dist}, n={n}]", [init, gen], workspace_bytes=24 * count,
                      keep=(tables,))


@dataclass(frozen=True)
class SobolProblem:
    """A Sobol call's signature: bits, distribution, points per dimension, dimensions."""

    bits: int
    dist: str
    npd: int
    dims: int
    arch: str
    ordinal: int


SOBOL_STEPS = 64


def sobol_plan(problem: SobolProblem, device, vectors) -> LaunchPlan:
    """One launch: a warp per 32 x ``steps`` consecutive points of one dimension."""
    steps = max(1, min(SOBOL_STEPS, -(-problem.npd // 32)))
    blocks = -(-problem.npd // (32 * steps))
    warps = blocks * problem.dims
    grid = -(-warps * 32 // S.THREADS)
    spec = S.SobolSpec(arch=problem.arch, bits=problem.bits, dist=problem.dist)
    vptr, npd, dims = vectors.ptr, problem.npd, problem.dims

    def bind(p, s, ws):
        return (vptr, p[0], npd, blocks, s[0], steps, dims, *s[1:])

    step = KernelStep(spec, grid, S.THREADS, bind)
    return LaunchPlan(f"rand_sobol{problem.bits}[{problem.dist}, {dims} x {npd}]", [step], keep=(vectors,))


@dataclass(frozen=True)
class PoissonProblem:
    """A Poisson call's signature: sampler, output type, length, arch, device."""

    method: str
    out_type: str
    n: int
    arch: str
    ordinal: int


def poisson_plan(problem: PoissonProblem, device) -> LaunchPlan:
    """One thread per output (each draws its own Philox stream)."""
    spec = P.PoissonSpec(arch=problem.arch, method=problem.method, out_type=problem.out_type)
    n = problem.n

    def bind(p, s, ws):
        return (p[0], n, *s)

    step = KernelStep(spec, -(-n // P.THREADS), P.THREADS, bind)
    return LaunchPlan(f"rand_poisson[{problem.method}, n={n}]", [step])
