"""GEMM dispatch: a pure function from the problem and the device to the kernel that runs it.

``choose_algo(problem, device) -> GemmPlan``. Nothing here touches the device. Every number
dispatch uses lives in the tables of this module (their one owner): ``THRESHOLDS`` (when to take
which branch), ``TILES`` (which SIMT CTA tile each role gets, per dtype), ``DMMA_TILES`` (float64
tensor-core tiles), ``RESIDENT_CTAS`` (CTAs per SM of a tile, read off ptxas's register counts)
and the wave model's ``TILE_RATE``/``OCCUPANCY_EXPONENT``/``ROUND_CLOCKS``/
the device facts' FP32 lanes and memory bytes per clock (``oxicuda.driver.facts``), which price a tile and split count in SM clocks so that split-K
(tile and count) and strided batches (tile per batch count) take the candidate that finishes
first. They were checked against the H200 with ``benches/sweep_blas.py`` (every candidate of
``gemm_tiled.TILE_CONFIGS`` / ``gemm_dmma.TILES`` and ladders of split counts on issue 5's shapes
beside cuBLAS), most recently benches/results/2026-11-29-h200-session3/call2-sweep-blas.json:
128x128x8 8x8 for sgemm 4096/8192 and strided batched 64x512 (the "large" tile; the wave model's
pick for 64 x 512^3, 128x64 measured 1% faster there and 1% slower in an earlier sweep);
split-K as the wave model section below records (0.98x / 0.86x / 0.97x of cuBLAS on the three
skinny shapes); float64 (call3-sweep-blas.json): DMMA 128x64 m16n8k8 39.7 TFLOP/s (0.64x
cuBLAS) ahead of the best SIMT tile, 128x128 8x8 at 23.2 (the float64 "large" SIMT tile for other
archs), so sm_90 runs float64 on DMMA. Shapes outside those lists follow the model unmeasured.

Branches, in order:
1. ``gemv``        m == 1 or n == 1 (one matrix-vector product, batch 1, strided operands);
2. tensor cores    float16/bfloat16 data, or compute="tf32" on float32, when
                   ``gemm_wgmma``/``gemm_tensorcore`` is importable and its ``supports(problem)``;
3. ``naive``       tiny problems (m*n*k <= naive_max_work): one thread per output;
4. ``split_k``     output tiles cannot fill the SMs and K is long: K over grid.z, then a reduction
                   (tile and count from the wave model);
5. ``dmma``        float64 on the archs in THRESHOLDS["float64_dmma"] (sm_90, measured);
6. ``tiled``       everything else (shared-memory tiles, register blocking; batches take the
                   wave model's tile for their batch count).
A float32 C over float16/bfloat16 data (``c_dtype``) skips gemv and naive, and takes tensor cores
only from a module that declares ``MIXED_C`` (gemm_tensorcore's mma.sync kernels do).
"""

from __future__ import annotations

import functools
import importlib
import math
from dataclasses import dataclass

from oxicuda.driver.facts import DeviceFacts

from . import gemm_codegen as cg
from .gemm_problem import GemmProblem
from .gemm_splitk import GemmSplitKReduceSpec, reduce_groups, reduce_spec  # noqa: F401  (reduce_groups re-exported)
from .gemm_tiled import SPLIT_K_TILES, TILE_CONFIGS, GemmTiledSpec, TileConfig, spec_for

#: table -> the committed sweep it was read from (tests check they exist and replay them)
SOURCES = {
    "TILES": "benches/results/2026-11-29-h200-session3/call2-sweep-blas.json",
    "DMMA_TILES": "benches/results/2026-11-29-h200-session3/call3-sweep-blas.json",
    "VARIANTS": "benches/results/2026-11-29-h200-session3/call3-sweep-blas.json",
    "TILE_RATE": "benches/results/2026-11-29-h200-session3/call2-sweep-blas.json",
    "SPLIT_K_VARIANTS": "benches/results/2026-11-29-h200-session4/call2-sweep-skinny.json",
}

#: Branch thresholds; how they were checked: the module docstring.
THRESHOLDS = {
    "naive_max_work": 32 * 32 * 32,    # m*n*k at or below this runs the naive kernel
    "split_k_min_k": 4096,             # split K only when k is at least this long
    "split_k_fill_fraction": 0.5,      # ... and the output tiles fill less than this share of SMs
    "split_k_min_chunk": 256,          # each split keeps at least this much K
    "split_k_max_splits": 512,
    "split_k_max_workspace": 64 << 20,  # bytes of partial slabs a split count may need
    "split_k_tie": 0.005,              # counts modelled within this share of the best: the fewest wins
    "split_k_waves": 1,                # tiles x splits fill this many whole waves of resident CTAs
    "big_tile_min_tiles_per_sm": 1.0,  # the large CTA tile when it makes at least this many per SM
    # archs whose float64 GEMMs run on DMMA tensor cores (gemm_dmma) instead of the SIMT tiles: the
    # H200 (call3-sweep-blas.json, dgemm 4096^3: DMMA 128x64 m16n8k8 39.7 TFLOP/s, the best SIMT
    # tile 23.2; see DMMA_TILES)
    "float64_dmma": ("sm_90",),
}

#: DMMA tile (bm, bn, bk, warps_m, warps_n, mma shape) by oldest arch, then role, from
#: gemm_dmma.TILES. sm_90: the fastest measured on the H200 (call3-sweep-blas.json, dgemm 4096^3, every
#: tile exact against cuBLAS's product: 128x64x8 m16n8k8 with 2x2 warps 39.7 TFLOP/s = 0.64x cuBLAS,
#: 64x64x16 m16n8k16 36.0, 128x128x8 m16n8k8 35.5, 128x64x8 m16n8k8 4x2 warps 25.5; the best m8n8k4
#: tile 26.7 and the best SIMT tile 23.2).
DMMA_TILES = {"sm_80": {"large": (128, 64, 8, 4, 2, "m8n8k4"), "small": (64, 64, 16, 2, 2, "m8n8k4")},
              "sm_90": {"large": (128, 64, 8, 2, 2, "m16n8k8"), "small": (64, 64, 16, 2, 2, "m16n8k16")}}


def dmma_tiles(arch: str) -> dict[str, tuple]:
    """DMMA_TILES' roles for ``arch``: those of the newest arch at or below it."""
    sm = int(arch[3:].rstrip("a"))
    have = [a for a in DMMA_TILES if int(a[3:]) <= sm]
    if not have:
        raise ValueError(f"gemm: DMMA needs sm_80+; the device is {arch}")
    return DMMA_TILES[max(have, key=lambda a: int(a[3:]))]


def _cfg(dtype: str, bm: int, bn: int, bk: int, tm: int, tn: int, min_ctas: int = 0, **variant) -> TileConfig:
    cfg = TileConfig(bm, bn, bk, tm, tn, min_ctas, **variant)
    if cfg not in TILE_CONFIGS[dtype]:
        raise AssertionError(f"dispatch table names {cfg} for {dtype}, which gemm_tiled does not register")
    return cfg


#: dtype -> role -> tile. "large": the tiles fill the SMs; "small": they do not; "split_k":
#: candidates for split-K partials (the wave model picks among those in TILE_RATE; otherwise the
#: one padding M x N least wins, ties: the first); "batched": candidates for strided batches,
#: the wave model picks one per shape and batch count (dtypes without it use large/small).
TILES: dict[str, dict[str, object]] = {
    "float32": {"large": _cfg("float32", 128, 128, 8, 8, 8), "small": _cfg("float32", 64, 64, 8, 4, 4),
                "split_k": (_cfg("float32", 128, 128, 8, 8, 8), _cfg("float32", 64, 128, 8, 8, 8),
                            _cfg("float32", 128, 64, 8, 8, 8)),
                "batched": (_cfg("float32", 128, 128, 8, 8, 8), _cfg("float32", 64, 128, 8, 8, 8),
                            _cfg("float32", 128, 64, 8, 8, 8), _cfg("float32", 64, 64, 8, 4, 4))},
    "float16": {"large": _cfg("float16", 128, 128, 8, 8, 8), "small": _cfg("float16", 64, 64, 8, 4, 4),
                "split_k": (_cfg("float16", 64, 64, 8, 4, 4),)},
    "bfloat16": {"large": _cfg("bfloat16", 128, 128, 8, 8, 8), "small": _cfg("bfloat16", 64, 64, 8, 4, 4),
                 "split_k": (_cfg("bfloat16", 64, 64, 8, 4, 4),)},
    "float64": {"large": _cfg("float64", 128, 128, 8, 8, 8), "small": _cfg("float64", 64, 64, 8, 4, 4),
                "split_k": (_cfg("float64", 128, 64, 8, 8, 4, 2), _cfg("float64", 64, 64, 8, 4, 4))},
    "complex64": {"large": _cfg("complex64", 64, 64, 8, 4, 4), "small": _cfg("complex64", 32, 32, 8, 2, 2),
                  "split_k": (_cfg("complex64", 32, 32, 8, 2, 2),)},
    "complex128": {"large": _cfg("complex128", 32, 32, 8, 2, 2), "small": _cfg("complex128", 32, 32, 8, 2, 2),
                   "split_k": (_cfg("complex128", 32, 32, 8, 2, 2),)},
}

#: CTAs of a tile resident per SM (ptxas sm_90 registers of the 16-byte-load float32 variants,
#: partials and C writers alike: 128x128 ~120-128 registers x 256 threads -> 2; 64x128/128x64 ~140 x
#: 128 -> 3; 64x64 4x4 ~57 x 256 -> 4; 128x256/256x128 200-245 x 256 -> 1; 128x128 8x16 ~230 x 128
#: -> 2; 64x256 8x16, the sweep's split-K candidate for 64-row outputs, ~240 x 128 -> 2); others
#: default to 16 warps per SM.
RESIDENT_CTAS = {(128, 128, 8, 8): 2, (64, 128, 8, 8): 3, (128, 64, 8, 8): 3, (64, 64, 4, 4): 4,
                 (128, 256, 8, 16): 1, (256, 128, 16, 8): 1, (128, 128, 8, 16): 2, (64, 256, 8, 16): 2}


def resident_ctas(cfg: TileConfig) -> int:
    """CTAs of ``cfg`` that fit on one SM at once (RESIDENT_CTAS, else 512 threads' worth)."""
    return RESIDENT_CTAS.get((cfg.bm, cfg.bn, cfg.tm, cfg.tn), max(1, 512 // cfg.threads))


# -- the wave model: which tile and split count finishes first ---------------------------------
#
# The time of a launch is the time of its busiest SM. The block scheduler hands CTAs out breadth
# first, so an SM gets ceil(ctas / sm_count) of them; it runs them ``r = resident_ctas`` at a time
# (a full round: r CTAs' K loops at the tile's full rate), and the r' < r left over at the end
# run as a partial round whose SM throughput is (r'/r) ** OCCUPANCY_EXPONENT of a full one. Time
# in SM clocks = rounds x K tiles per CTA x the tile's FMAs / (FP32 lanes x TILE_RATE), plus
# ROUND_CLOCKS per round (a CTA's first loads and its C writes), plus, for split-K, the partial
# slabs written and read back by the reduction at the device's memory bytes per clock.
# Fitted to the H200 sweep benches/results/2026-11-29-h200-session3/call2-sweep-blas.json (34 split-K
# variants of the three base tiles on the three skinny shapes; tests/test_blas_gemm_perfpaths.py
# replays them): every count whose busiest SM runs whole rounds within 10% of its measurement
# (most within 5%); counts a few CTAs past a round measured 0.69-0.92x of the round below, which
# the model overstates for short CTAs (128x128x131072 x265: 34.6 measured, 26.5 modelled) but
# always ranks below it. Its picks: 128x64 x198 for 128x128x131072 (39.2 TFLOP/s, the fastest),
# 128x128 x33 for 512x512x65536 (43.4; the fastest, 128x64 x37, made 44.1) and 64x128 x12 for
# 64x4096x16384 (39.4, the fastest). The same sweep priced the reduction (partial products alone):
# 5% of the time at 128x128x131072, 2-3% on the other two.

# FP32 FMA lanes per SM and the chip-wide bytes per SM clock that split-K partials move (write +
# reduction read; they mostly stay in L2) are the device facts' ``fp32_lanes_per_sm`` and
# ``memory_bytes_per_clock`` (oxicuda.driver.facts.ARCH_RATES).
#: Share of FP32 peak a tile's K loop reaches with a full SM (float32; fitted to the sweep above,
#: 64x64 4x4 from its 29 of 66.9 TFLOP/s on 4096^3). Tiles missing here are not considered by the model.
#: SPLIT_K_VARIANTS' loop-variant partial tiles (see there), the ones gemm_tiled registers as
#: float32 split-K partials: 128x128 8x16 with the prefetching and the interior loop, and the
#: prefetching 128-thread 8x8 tiles 128x64 and 64x128
_SK_128x128_8x16, _SK_128x64, _SK_64x128 = SPLIT_K_TILES["float32"]
TILE_RATE = {TileConfig(128, 128, 8, 8, 8): 0.67, TileConfig(64, 128, 8, 8, 8): 0.62,
             TileConfig(128, 64, 8, 8, 8): 0.65, TileConfig(64, 64, 8, 4, 4): 0.44,
             # SPLIT_K_VARIANTS' loop variants (see there), with their own ROUND_CLOCKS
             _SK_128x128_8x16: 0.72, _SK_128x64: 0.70, _SK_64x128: 0.665}
#: A partial round of r' of r resident CTAs runs at (r'/r) ** this of a full round's SM throughput
#: (fitted as above; one 128x128 CTA alone on an SM at 0.85 of two).
OCCUPANCY_EXPONENT = 0.24
#: Fixed clocks per round of CTAs (first global loads, C / partial writes); TILE_ROUND_CLOCKS for
#: tiles fitted with their own (rate, round clocks) pair.
ROUND_CLOCKS = 2000
TILE_ROUND_CLOCKS = {_SK_128x128_8x16: 14000, _SK_128x64: 10000, _SK_64x128: 9000}


def modelled_clocks(cfg: TileConfig, ctas: int, k_tiles: int, device: DeviceFacts) -> float:
    """SM clocks the busiest SM needs for ``ctas`` CTAs of ``cfg`` that each run ``k_tiles`` K
    steps (the wave model above; ``cfg`` must be in TILE_RATE)."""
    r = resident_ctas(cfg)
    per_sm = -(-ctas // device.sm_count)
    full, rem = divmod(per_sm, r)
    ctas_time = full * r + (rem ** (1 - OCCUPANCY_EXPONENT) * r ** OCCUPANCY_EXPONENT if rem else 0.0)
    lanes = device.fp32_lanes_per_sm
    fma = cfg.bm * cfg.bn * cfg.bk
    rounds = full + (rem > 0)
    return ctas_time * k_tiles * fma / (lanes * TILE_RATE[cfg]) + TILE_ROUND_CLOCKS.get(cfg, ROUND_CLOCKS) * rounds


def split_k_clocks(problem: GemmProblem, device: DeviceFacts, cfg: TileConfig, splits: int) -> float:
    """Modelled SM clocks of split-K with ``splits`` (rounded as split_k_plan rounds it) and tile ``cfg``:
    the partial products plus the slabs' traffic through the reduction."""
    k_tiles = -(-problem.k // cfg.bk)
    chunk = -(-k_tiles // splits)
    splits = -(-k_tiles // chunk)
    clocks = modelled_clocks(cfg, _tiles(problem, cfg) * splits, chunk, device)
    slab = problem.m * problem.n * cg.kind_of(problem.dtype).acc_nbytes
    return clocks + 2 * splits * slab / device.memory_bytes_per_clock


#: splits used when algo="split_k" is forced on a problem the thresholds would not split
FORCED_SPLITS = 4

TENSOR_CORE_MODULES = ("oxicuda.blas.gemm_wgmma", "oxicuda.blas.gemm_tensorcore")
#: Algorithms that dispatch may pick on its own, preferred first where both support a problem.
#: (both pass their GPU tests on the H200; which one is faster is not measured yet.)
AUTO_TENSOR_CORE_ALGOS = ("wgmma", "tensor_core")


@dataclass(frozen=True)
class GemmPlan:
    """What runs: ``algo`` (naive, tiled, split_k, gemv, dmma or a tensor-core ALGO), its kernel
    ``spec`` (None for gemv, whose plan picks it), ``splits`` (K splits for split_k) and the
    split-K ``reduce`` spec."""

    algo: str
    spec: object = None
    splits: int = 1
    reduce: GemmSplitKReduceSpec | None = None


ALGOS = ("naive", "tiled", "split_k", "gemv", "tensor_core", "wgmma", "dmma")


@functools.cache
def tensor_core_module(name: str):
    """The tensor-core module ``name`` or None when it does not exist (yet)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None
        raise


def tensor_core_modules() -> list:
    """The importable tensor-core GEMM modules, preferred first."""
    return [m for m in (tensor_core_module(n) for n in TENSOR_CORE_MODULES) if m is not None]


def wants_tensor_cores(problem: GemmProblem) -> bool:
    """True for the dtypes/compute types that tensor cores serve."""
    return problem.dtype in ("float16", "bfloat16") or (problem.dtype == "float32" and problem.compute == "tf32")


def tensor_core_choice(problem: GemmProblem, algo: str | None = None):
    """(module, spec) of the first tensor-core module that supports ``problem`` (restricted to
    ``algo`` when given), or None."""
    if problem.pointer_array:
        return None
    for module in tensor_core_modules():
        if problem.mixed and not getattr(module, "MIXED_C", False):
            continue  # this family would write C in the data's type
        name = getattr(module, "ALGO", None)
        if algo is not None and name != algo:
            continue
        if algo is None and name not in AUTO_TENSOR_CORE_ALGOS:
            continue
        if module.supports(problem):
            return module, module.choose_spec(problem)
    return None


# -- SIMT choices ------------------------------------------------------------------------------

def _vector_width(problem: GemmProblem, operand: str, cfg: TileConfig, k_extent: int) -> int:
    """Elements per global load of A or B: 16 bytes when the pointer, leading dimension and
    batch stride are 16-byte aligned and the contiguous extent is a multiple of the width."""
    kind = cg.kind_of(problem.dtype)
    if kind.complex:
        return 1
    width = min(4, 16 // kind.nbytes)
    align = problem.align_a if operand == "a" else problem.align_b
    if align < width * kind.nbytes:
        return 1
    trans = problem.transa if operand == "a" else problem.transb
    along_k = (trans != "N") if operand == "a" else (trans == "N")
    extent = k_extent if along_k else (problem.m if operand == "a" else problem.n)
    # along K the last split's K (problem.k - splits * chunk) must keep whole vectors too
    tail_ok = not along_k or problem.k % width == 0
    if extent % width or cfg.bk % width or not tail_ok:
        return 1
    return width


def _tiles(problem: GemmProblem, cfg: TileConfig) -> int:
    return math.ceil(problem.m / cfg.bm) * math.ceil(problem.n / cfg.bn)


#: whole-K loop variants that replace a tile on the archs they were measured on, for problems whose
#: A and B both get 16-byte loads (with scalar loads they spill): tile -> (archs, variant). H200
#: (SOURCES["VARIANTS"]): 128x128x8 8x16 with prefetch (128 threads, 2 CTAs/SM)
#: 51.4 / 51.9 TFLOP/s at sgemm 4096 / 8192 (1.00x / 1.01x cuBLAS; the 8x8 tile 45.0 / 45.8) and
#: 47.0 on strided batched 64 x 512^3 (0.97x; 8x8: 42.7).
VARIANTS: dict[TileConfig, tuple[tuple[str, ...], TileConfig]] = {
    _cfg("float32", 128, 128, 8, 8, 8): (("sm_90",), _cfg("float32", 128, 128, 8, 8, 16, prefetch=True)),
}


#: split-K partial tiles replaced by loop variants on the archs they were measured on, for problems
#: whose A and B both get 16-byte loads (as VARIANTS). H200
#: (SOURCES["SPLIT_K_VARIANTS"], TFLOP/s, cuBLAS in brackets):
#: 128x128x131072: 128x64 prefetching x198 40.1 (39.7; plain 128x64 39.0); 512x512x65536: 128x128
#: 8x16 prefetching with the interior loop x33 49.0 (50.4; the plain 128x128 8x8 x33 43.6, 8x16
#: without the interior loop 43.6); 64x4096x16384: 64x128 prefetching x12 40.3 (40.9; plain 39.6).
#: Their TILE_RATE / TILE_ROUND_CLOCKS were fitted to that sweep's whole-round counts: rms 2% for
#: the 8x8 tiles; 128x128 8x16 within 6% on the two unpadded shapes (its x33 ahead of x16 as
#: measured) and 11-16% optimistic on the 64-row outputs, where it still ranks below 64x128.
SPLIT_K_VARIANTS: dict[TileConfig, tuple[tuple[str, ...], TileConfig]] = {
    _cfg("float32", 128, 128, 8, 8, 8): (("sm_90",), _SK_128x128_8x16),
    _cfg("float32", 128, 64, 8, 8, 8): (("sm_90",), _SK_128x64),
    _cfg("float32", 64, 128, 8, 8, 8): (("sm_90",), _SK_64x128),
}


def split_k_candidates(problem: GemmProblem, device: DeviceFacts) -> list[TileConfig]:
    """TILES' split-K candidates for ``problem``, each replaced by its SPLIT_K_VARIANTS loop variant
    where that was measured faster on this arch and A and B get 16-byte loads."""
    return [_variant(problem, device, c, SPLIT_K_VARIANTS) for c in TILES[problem.dtype]["split_k"]]


def _variant(problem: GemmProblem, device: DeviceFacts, cfg: TileConfig, table: dict | None = None) -> TileConfig:
    archs, better = (VARIANTS if table is None else table).get(cfg, ((), cfg))
    if problem.dtype != "float32" or device.arch.rstrip("a") not in archs or problem.pointer_array:
        return cfg
    width = min(4, 16 // cg.kind_of(problem.dtype).nbytes)
    if any(_vector_width(problem, op, better, problem.k) != width for op in ("a", "b")):
        return cfg
    return better


def tile_config(problem: GemmProblem, device: DeviceFacts, *, big: bool | None = None) -> TileConfig:
    """The CTA tile for the tiled path: TILES' "large" one when its tiles give every SM work
    (or its measured loop variant, see VARIANTS)."""
    roles = TILES[problem.dtype]
    if big is None and problem.batch > 1 and "batched" in roles:
        return _variant(problem, device, batched_tile(problem, device))
    if big is None:
        tiles = _tiles(problem, roles["large"]) * problem.batch
        big = tiles >= THRESHOLDS["big_tile_min_tiles_per_sm"] * device.sm_count
    return _variant(problem, device, roles["large"]) if big else roles["small"]


def batched_tile(problem: GemmProblem, device: DeviceFacts) -> TileConfig:
    """The tile of a batched problem: the "batched" candidate whose tiles x batch CTAs finish
    first in the wave model (ties: the first listed). H200 sweep, 64 x 512^3: 128x128 42.4,
    128x64 42.1, 64x128 41.6, 64x64 28.0 TFLOP/s; the model picks 128x128."""
    cands = TILES[problem.dtype]["batched"]
    return min(cands, key=lambda c: modelled_clocks(c, _tiles(problem, c) * problem.batch,
                                                    -(-problem.k // c.bk), device))


def split_k_tile(problem: GemmProblem) -> TileConfig:
    """The split-K partials' tile: the candidate padding M x N least (ties: the first listed)."""
    cands = TILES[problem.dtype]["split_k"]
    return min(cands, key=lambda c: _tiles(problem, c) * c.bm * c.bn)


def _vec_c(problem: GemmProblem, cfg: TileConfig, raw_out: bool) -> int:
    """Elements per C access: W (16 bytes of accumulator) when M keeps whole aligned chunks."""
    kind = cg.kind_of(problem.dtype)
    if kind.complex:
        return 1
    w = max(1, 16 // kind.acc_nbytes)
    if raw_out:  # the split-K workspace: leading dimension m, 16-byte aligned slabs when m % w == 0
        return w if problem.m % w == 0 else 1
    ck = problem.c_kind
    if ck.nbytes < 4 or problem.m % w or problem.align_c < w * ck.nbytes:
        return 1
    return w


def tiled_spec(problem: GemmProblem, device: DeviceFacts, *, k_extent: int | None = None,
               raw_out: bool = False, cfg: TileConfig | None = None) -> GemmTiledSpec:
    """The tiled-kernel spec for ``problem`` (``k_extent``: the K each CTA covers)."""
    cfg = cfg or tile_config(problem, device)
    k_ext = problem.k if k_extent is None else k_extent
    arch = device.arch.rstrip("a")
    return spec_for(
        cfg, arch=arch, dtype=problem.dtype,
        transa="N" if problem.transa == "N" else "T", transb="N" if problem.transb == "N" else "T",
        conj_a=problem.transa == "C", conj_b=problem.transb == "C",
        vec_a=_vector_width(problem, "a", cfg, k_ext), vec_b=_vector_width(problem, "b", cfg, k_ext),
        pointer_array=problem.pointer_array, raw_out=raw_out, vec_c=_vec_c(problem, cfg, raw_out),
        c_dtype="" if raw_out or not problem.mixed else problem.c_dtype,
    )


def split_k_choice(problem: GemmProblem, device: DeviceFacts) -> tuple[TileConfig, int]:
    """(tile, splits) for split-K; splits 1 means: do not split. Split only when K is long and
    the output tiles fill less than ``split_k_fill_fraction`` of the SMs. Tiles in TILE_RATE:
    the tile and count (each split keeping ``split_k_min_chunk`` of K, the slabs within
    ``split_k_max_workspace``) with the least ``split_k_clocks``, the fewest splits among those
    within ``split_k_tie`` of it; others: the least-padding tile with the most splits that keep tiles x
    splits within ``split_k_waves`` whole waves of resident CTAs (a partial extra wave would cost
    a full one)."""
    t = THRESHOLDS
    cfg = split_k_tile(problem)
    if problem.batch != 1 or problem.pointer_array or problem.k < t["split_k_min_k"]:
        return cfg, 1
    if _tiles(problem, cfg) >= t["split_k_fill_fraction"] * device.sm_count:
        return cfg, 1
    most = min(problem.k // t["split_k_min_chunk"], t["split_k_max_splits"])
    if most < 2:
        return cfg, 1
    slab = problem.m * problem.n * cg.kind_of(problem.dtype).acc_nbytes
    most = min(most, t["split_k_max_workspace"] // max(1, slab))
    modelled = [c for c in split_k_candidates(problem, device) if c in TILE_RATE]
    if modelled and most >= 2:
        scored = [(split_k_clocks(problem, device, c, s), s, _tiles(problem, c) * c.bm * c.bn, i, c)
                  for i, c in enumerate(modelled) for s in range(2, most + 1)]
        # within the model's noise the fewest splits win (less workspace and reduction traffic);
        # then the tile padding M x N least (tiles too few to load the SMs), then the listed order
        bound = min(x[0] for x in scored) * (1 + t["split_k_tie"])
        best = min((x for x in scored if x[0] <= bound), key=lambda x: x[1:4])
        return best[4], best[1]
    want = (t["split_k_waves"] * resident_ctas(cfg) * device.sm_count) // _tiles(problem, cfg)
    splits = min(want, most)
    return cfg, (splits if splits >= 2 else 1)


def split_k_chunk(problem: GemmProblem, splits: int, bk: int) -> int:
    """K per split: a multiple of the tile's BK (so vector loads along K stay aligned)."""
    chunk = math.ceil(problem.k / splits)
    return math.ceil(chunk / bk) * bk


def split_k_plan(problem: GemmProblem, device: DeviceFacts, splits: int, cfg: TileConfig | None = None) -> GemmPlan:
    """The split-K plan with ``splits`` (rounded so that no split is empty) and tile ``cfg``
    (default: ``split_k_tile``)."""
    cfg = cfg or split_k_tile(problem)
    chunk = split_k_chunk(problem, splits, cfg.bk)
    splits = math.ceil(problem.k / chunk)
    spec = tiled_spec(problem, device, k_extent=chunk, raw_out=True, cfg=cfg)
    red = reduce_spec(problem.dtype, problem.c_dtype if problem.mixed else "", device.arch, problem.m,
                      problem.ldc, problem.align_c, splits, device.sm_count)
    return GemmPlan("split_k", spec, splits, red)


def dmma_spec(problem: GemmProblem, device: DeviceFacts, tile: tuple | None = None):
    """The DMMA spec for a float64 problem: DMMA_TILES' large tile when it fills the SMs."""
    from .gemm_dmma import TILES as DMMA_REGISTERED
    from .gemm_dmma import GemmDmmaSpec

    if tile is None:
        roles = dmma_tiles(device.arch)
        big = roles["large"]
        tiles = math.ceil(problem.m / big[0]) * math.ceil(problem.n / big[1]) * problem.batch
        tile = big if tiles >= THRESHOLDS["big_tile_min_tiles_per_sm"] * device.sm_count else roles["small"]
    if tile not in DMMA_REGISTERED:
        raise AssertionError(f"DMMA tile {tile} is not registered in gemm_dmma.TILES")
    bm, bn, bk, wm, wn, shape = tile
    cfg = TileConfig(bm, bn, bk, 1, 1)
    return GemmDmmaSpec(arch=device.arch.rstrip("a"), transa="N" if problem.transa == "N" else "T",
                        transb="N" if problem.transb == "N" else "T", bm=bm, bn=bn, bk=bk, warps_m=wm, warps_n=wn,
                        shape=shape,
                        vec_a=_vector_width(problem, "a", cfg, problem.k),
                        vec_b=_vector_width(problem, "b", cfg, problem.k))


def _dmma_ok(p: GemmProblem, device: DeviceFacts) -> bool:
    return p.dtype == "float64" and not p.pointer_array and int(device.arch[3:].rstrip("a")) >= 80


def choose_algo(problem: GemmProblem, device: DeviceFacts, algo: str | None = None) -> GemmPlan:
    """The plan for ``problem`` on ``device``; ``algo`` forces a family (ValueError when that
    family cannot run the problem)."""
    if algo is not None and algo not in ALGOS:
        raise ValueError(f"gemm: algo={algo!r}; allowed: {ALGOS} or None")
    p = problem
    if p.mixed and algo in ("naive", "gemv"):
        raise ValueError(f"gemm: algo={algo!r} cannot write {p.c_dtype} C over {p.dtype} data; the tiled, "
                         "split_k and tensor_core kernels can (or pass algo=None)")
    is_vector = (p.m == 1 or p.n == 1) and p.batch == 1 and not p.pointer_array and not p.mixed
    if algo == "gemv" or (algo is None and is_vector):
        if not is_vector:
            raise ValueError(f"gemm: algo='gemv' needs m == 1 or n == 1 and batch 1 without pointer arrays; "
                             f"got m={p.m}, n={p.n}, batch={p.batch}, pointer_array={p.pointer_array}")
        return GemmPlan("gemv")
    if algo in ("tensor_core", "wgmma") or (algo is None and wants_tensor_cores(p)):
        choice = tensor_core_choice(p, algo)
        if choice is not None:
            return GemmPlan(getattr(choice[0], "ALGO", "tensor_core"), choice[1])
        if algo is not None:
            have = [getattr(m, "ALGO", m.__name__) for m in tensor_core_modules()]
            raise ValueError(f"gemm: algo={algo!r} cannot run this problem (dtype {p.dtype}, compute {p.compute}, "
                             f"transa {p.transa}, transb {p.transb}, alignment {p.alignment}, arch {p.arch}); "
                             f"tensor-core modules available: {have or 'none'}")
    if algo == "naive" or (algo is None and not p.mixed and p.m * p.n * p.k <= THRESHOLDS["naive_max_work"]):
        from .gemm_naive import GemmNaiveSpec

        return GemmPlan("naive", GemmNaiveSpec(arch=device.arch.rstrip("a"), dtype=p.dtype,
                                               conj_a=p.transa == "C", conj_b=p.transb == "C",
                                               pointer_array=p.pointer_array))
    if algo == "split_k":
        if p.batch != 1 or p.pointer_array:
            raise ValueError(f"gemm: algo='split_k' needs batch 1 without pointer arrays; got batch={p.batch}, "
                             f"pointer_array={p.pointer_array}")
        if p.k == 0:  # no K to split: the tiled kernel writes beta * C, as every algo does
            return GemmPlan("tiled", tiled_spec(p, device))
        cfg, natural = split_k_choice(p, device)
        return split_k_plan(p, device, natural if natural > 1 else FORCED_SPLITS, cfg)
    if algo == "dmma":
        if not _dmma_ok(p, device):
            raise ValueError(f"gemm: algo='dmma' needs float64 data, no pointer arrays and sm_80+; got dtype "
                             f"{p.dtype}, pointer_array={p.pointer_array}, arch {device.arch}")
        return GemmPlan("dmma", dmma_spec(p, device))
    if algo is None:
        cfg, splits = split_k_choice(p, device)
        if splits > 1:
            return split_k_plan(p, device, splits, cfg)
        if device.arch.rstrip("a") in THRESHOLDS["float64_dmma"] and _dmma_ok(p, device):
            return GemmPlan("dmma", dmma_spec(p, device))
    return GemmPlan("tiled", tiled_spec(p, device))
