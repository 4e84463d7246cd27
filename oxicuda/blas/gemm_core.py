"""``gemm_colmajor``: the one column-major, pointer-level GEMM entry every surface calls (the
Pythonic ``gemm``/``matmul``, the cuBLAS- and CuPy-shaped compat layers, level-3 routines).

Semantics are cuBLAS's: ``C = alpha * op(A) @ op(B) + beta * C`` on column-major matrices,
``op`` in "N" (none), "T" (transpose), "C" (conjugate transpose; the same as "T" for real
dtypes); leading dimensions and batch strides in elements; beta == 0 never reads C. Every check
runs before anything touches the device and raises ValueError naming the argument (compat
layers map that to CUBLAS_STATUS_INVALID_VALUE).
"""

from __future__ import annotations

import functools
import numbers

from oxicuda.driver import backend as _backend
from oxicuda.driver import context as _context
from oxicuda.driver.facts import DeviceFacts, device_facts
from oxicuda.memory.dtypes import dtype_name, normalize_dtype
from oxicuda.ptx.launch_plan import LaunchPlan

from . import gemm_codegen as cg
from . import gemm_tensorcore, gemm_wgmma
from .flags import trans_op
from .gemm_dispatch import GemmPlan, GemmProblem, choose_algo
from .gemm_dmma import GemmDmmaSpec
from .gemm_naive import GemmNaiveSpec
from .gemm_naive import plan as naive_plan
from .gemm_splitk import plan as split_k_plan
from .gemm_tiled import MIXED_OUTPUTS, GemmTiledSpec
from .gemm_tiled import plan as tiled_plan
from .gemv import plan as gemv_plan
from .operands import check_span

OPS = ("N", "T", "C")
COMPUTE_TYPES = {
    "float32": ("f32", "tf32"),
    "float64": ("f64",),
    "float16": ("f32",),
    "bfloat16": ("f32",),
    "complex64": ("f32",),
    "complex128": ("f64",),
}
MAX_GRID_Z = 65535


def scalar_dtype(dtype: object, compute: str | None = None) -> str:
    """The dtype of alpha/beta behind ``alpha_ptr``/``beta_ptr``: the accumulator type
    (float32 for float16/bfloat16 data, like cublasGemmEx with CUBLAS_COMPUTE_32F)."""
    name = dtype_name(dtype)
    return cg.ACC_DTYPES.get(name, name)


#: dtype strings already known to name themselves (the hot path skips normalize_dtype)
_DTYPE_NAMES = {name: name for name in ("float32", "float64", "float16", "bfloat16", "complex64", "complex128")}


def _op(value: object, what: str, complex_: bool) -> str:
    op = trans_op(value, "gemm", name=what)
    return "T" if (op == "C" and not complex_) else op


def _int(value: object, what: str, minimum: int) -> int:
    if type(value) is int and value >= minimum:  # the common case, without the abc checks
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"gemm: {what}={value!r} must be an int")  # noqa: TRY004 - gemm's one error type for bad arguments
    if int(value) < minimum:
        raise ValueError(f"gemm: {what}={int(value)} must be >= {minimum}")
    return int(value)


def _scalar(value: object, what: str, complex_: bool) -> object:
    if type(value) is float and not complex_:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        raise ValueError(f"gemm: {what}={value!r} must be a number")  # noqa: TRY004 - as above
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        if not complex_ and complex(value).imag != 0:
            raise ValueError(f"gemm: {what}={value!r} is complex but the dtype is real")
        return complex(value) if complex_ else complex(value).real
    return complex(value) if complex_ else float(value)  # type: ignore[arg-type]


def _align(*values: int) -> int:
    """The largest power of two <= 16 dividing every value (0 divides by anything)."""
    a = 16
    for v in values:
        while a > 1 and v % a:
            a //= 2
    return a


def _extent(ptr: int, rows: int, cols: int, ld: int, es: int, batch: int, stride: int) -> tuple[int, int]:
    last = (cols - 1) * ld + rows + (batch - 1) * stride
    return ptr, ptr + last * es


def _overlaps(c: tuple, other: tuple) -> bool:
    """Whether two operands' bytes may overlap: ``(lo, hi, ld_bytes, row_bytes, cols, batch)``.
    Exact for single matrices sharing a leading dimension (disjoint blocks of one matrix pass);
    conservative (extent intersection) otherwise."""
    (c_lo, c_hi, c_ld, c_rows, c_cols, c_batch), (o_lo, o_hi, o_ld, o_rows, o_cols, o_batch) = c, other
    if c_hi <= o_lo or o_hi <= c_lo:
        return False
    if c_batch == 1 and o_batch == 1 and c_ld == o_ld:
        origin = min(c_lo, o_lo)
        c_c0, c_r0 = divmod(c_lo - origin, c_ld)
        o_c0, o_r0 = divmod(o_lo - origin, o_ld)
        if c_r0 + c_rows <= c_ld and o_r0 + o_rows <= o_ld:
            rows = c_r0 < o_r0 + o_rows and o_r0 < c_r0 + c_rows
            cols = c_c0 < o_c0 + o_cols and o_c0 < c_c0 + c_cols
            return rows and cols
    return True


def gemm_colmajor(transa: str, transb: str, m: int, n: int, k: int, alpha, a_ptr: int, lda: int,
                  b_ptr: int, ldb: int, beta, c_ptr: int, ldc: int, *, dtype, compute=None,
                  batch: int = 1, stride_a: int = 0, stride_b: int = 0, stride_c: int = 0,
                  a_array_ptr: int = 0, b_array_ptr: int = 0, c_array_ptr: int = 0,
                  alpha_ptr: int = 0, beta_ptr: int = 0, stream=None, algo: str | None = None,
                  c_dtype=None, _owned: bool = False, _swapped: bool = False) -> None:
    """``C = alpha * op(A) @ op(B) + beta * C`` for column-major A (lda), B (ldb), C (ldc, m x n).

    ``dtype``: float32, float64, float16, bfloat16, complex64 or complex128 (A, B and C alike).
    ``c_dtype``: None (C has ``dtype``) or "float32" over float16/bfloat16 data (cublasGemmEx's
    CUDA_R_16F/16BF inputs with a CUDA_R_32F C; run by the SIMT tiled and split-K kernels).
    ``compute``: None (the accumulator type: f32 for float32/16/bf16 data, f64 for float64) or
    "tf32" (float32 data through TF32 tensor cores when available; the SIMT fallback computes
    in full f32). ``batch`` > 1: strided batch (``stride_*`` in elements) or, when
    ``a_array_ptr``/``b_array_ptr``/``c_array_ptr`` are nonzero, device arrays of ``batch``
    pointers (``a_ptr``/``b_ptr``/``c_ptr`` are then ignored). ``alpha_ptr``/``beta_ptr``
    nonzero: the kernels read the scalars (of ``scalar_dtype(dtype)``) from device memory.
    ``algo``: force "naive", "tiled", "split_k", "gemv", "tensor_core", "wgmma", "dmma" (float64 on
    tensor cores, sm_80+), or pass any registered ``GemmTiledSpec``/``GemmNaiveSpec``/
    ``GemmDmmaSpec``/``GemmTensorCoreSpec``/``GemmWgmmaSpec`` to run that exact configuration, or a split-K
    ``GemmPlan`` from ``gemm_dispatch.split_k_plan`` (benchmark sweeps). One launch covers the
    whole batch (two for split_k). Raises ValueError on bad arguments, before any launch,
    among them pointers whose operand does not lie inside one device allocation of the current
    context (freed, foreign or too short; ``GemmCallPlan.check_memory``). ``_owned``: the caller
    passes pointers of live DeviceArrays it has checked (``gemm_arrays``), which skips that check.
    ``_swapped``: the caller is a row-major array call that passed its b as A and its a as B
    (errors name them so).
    """
    # The hot path: a call whose signature (everything but pointer values, scalars and the
    # stream) was validated before reuses that call's plan. Only plain ints qualify (64.0 and
    # True hash like 64 and 1 but must still be refused); anything unusual takes the full path.
    key = None
    if (type(m) is int and type(n) is int and type(k) is int and type(lda) is int and type(ldb) is int
            and type(ldc) is int and type(batch) is int and type(stride_a) is int and type(stride_b) is int
            and type(stride_c) is int and type(a_ptr) is int and type(b_ptr) is int and type(c_ptr) is int
            and type(alpha_ptr) is int and type(beta_ptr) is int and type(a_array_ptr) is int
            and type(b_array_ptr) is int and type(c_array_ptr) is int
            and not (a_array_ptr or b_array_ptr or c_array_ptr)):
        try:
            key = (_backend._api, getattr(_context._local, "ctx", None), transa, transb, m, n, k, lda, ldb,
                   ldc, dtype, compute, batch, stride_a, stride_b, stride_c, algo, alpha_ptr != 0,
                   beta_ptr != 0, a_ptr & 15, b_ptr & 15, c_ptr & 15, c_dtype)
            plan = _plans.get(key)
        except TypeError:  # an unhashable dtype/algo: the full path says what is wrong
            key = plan = None
        if plan is not None and plan.accepts(a_ptr, b_ptr, c_ptr, alpha_ptr, beta_ptr):
            if not _owned:
                plan.check_memory(a_ptr, b_ptr, c_ptr, alpha_ptr, beta_ptr)
            plan.run(alpha, beta, a_ptr, b_ptr, c_ptr, alpha_ptr, beta_ptr, stream)
            return
    validated = _validated_plan(transa, transb, m, n, k, alpha, a_ptr, lda, b_ptr, ldb, beta, c_ptr, ldc, dtype,
                                compute, batch, stride_a, stride_b, stride_c, a_array_ptr, b_array_ptr,
                                c_array_ptr, alpha_ptr, beta_ptr, algo, c_dtype, check_memory=not _owned,
                                swapped=_swapped)
    if validated is None:  # nothing to compute
        return
    plan, (a, b, c, alpha_p, beta_p) = validated
    if key is not None:
        if len(_plans) >= PLAN_CACHE_LIMIT:
            _plans.clear()
        _plans[(key[0], getattr(_context._local, "ctx", None)) + key[2:]] = plan
    plan.run(alpha, beta, a, b, c, alpha_p, beta_p, stream)


def _validated_plan(transa, transb, m, n, k, alpha, a_ptr, lda, b_ptr, ldb, beta, c_ptr, ldc, dtype, compute,
                    batch, stride_a, stride_b, stride_c, a_array_ptr, b_array_ptr, c_array_ptr, alpha_ptr,
                    beta_ptr, algo, c_dtype=None, check_memory=True, swapped=False) -> tuple[GemmCallPlan, tuple[int, ...]] | None:
    """Every check of ``gemm_colmajor`` (raising ValueError before any launch), then the plan
    that runs this call with the validated (a, b, c, alpha_ptr, beta_ptr) pointers (the pointer
    arrays for pointer-array batches); None when there is nothing to compute (m, n or batch is 0).
    ``check_memory``: also check that every operand lies inside one allocation, before the
    overlap test (a C too short for its shape is reported as such, not as an overlap with
    whatever allocation follows it)."""
    dt = _DTYPE_NAMES.get(dtype) if isinstance(dtype, str) else None
    if dt is None:
        try:
            dt = dtype_name(normalize_dtype(dtype))
        except TypeError as exc:
            raise TypeError(f"gemm: dtype={dtype!r} is not supported; allowed: {cg.GEMM_DTYPES}") from exc
    if dt not in cg.ELEMENT_KINDS:
        raise TypeError(f"gemm: dtype={dt!r} is not supported; allowed: {cg.GEMM_DTYPES}")
    kind = cg.ELEMENT_KINDS[dt]
    cdt = _c_dtype(c_dtype, dt)
    ces = cg.ELEMENT_KINDS[cdt or dt].nbytes
    ta, tb = _op(transa, "transa", kind.complex), _op(transb, "transb", kind.complex)
    m, n, k = _int(m, "m", 0), _int(n, "n", 0), _int(k, "k", 0)
    batch = _int(batch, "batch", 0)
    rows_a, cols_a = (m, k) if ta == "N" else (k, m)
    rows_b, cols_b = (k, n) if tb == "N" else (n, k)
    lda = _int(lda, "lda", max(1, rows_a))
    ldb = _int(ldb, "ldb", max(1, rows_b))
    ldc = _int(ldc, "ldc", max(1, m))
    stride_a, stride_b, stride_c = (_int(s, w, 0) for s, w in
                                    ((stride_a, "stride_a"), (stride_b, "stride_b"), (stride_c, "stride_c")))
    compute = COMPUTE_TYPES[dt][0] if compute is None else compute
    if compute not in COMPUTE_TYPES[dt]:
        raise ValueError(f"gemm: compute={compute!r} for dtype {dt}; allowed: {COMPUTE_TYPES[dt]}")
    alpha = _scalar(alpha, "alpha", kind.complex)
    beta = _scalar(beta, "beta", kind.complex)
    ptrs = {name: _int(v, name, 0) for name, v in (
        ("a_ptr", a_ptr), ("b_ptr", b_ptr), ("c_ptr", c_ptr), ("a_array_ptr", a_array_ptr),
        ("b_array_ptr", b_array_ptr), ("c_array_ptr", c_array_ptr), ("alpha_ptr", alpha_ptr),
        ("beta_ptr", beta_ptr))}
    arrays = [ptrs["a_array_ptr"], ptrs["b_array_ptr"], ptrs["c_array_ptr"]]
    pointer_array = any(arrays)
    if pointer_array and not all(arrays):
        raise ValueError(f"gemm: pointer-array batches need a_array_ptr, b_array_ptr and c_array_ptr all "
                         f"nonzero; got {arrays}")
    es = kind.nbytes
    if m == 0 or n == 0 or batch == 0:
        return None
    needed = ["c"] + (["a", "b"] if k > 0 else [])
    for name in needed:
        p = ptrs[f"{name}_array_ptr" if pointer_array else f"{name}_ptr"]
        if p == 0:
            raise ValueError(f"gemm: {name}_{'array_' if pointer_array else ''}ptr is 0 (a null pointer)")
        nes = ces if name == "c" else es
        if not pointer_array and p % nes:
            raise ValueError(f"gemm: {name}_ptr=0x{p:x} is not aligned to the {nes}-byte "
                             f"{cdt if name == 'c' and cdt else dt} element")
    if pointer_array and any(p % 8 for p in arrays):
        raise ValueError(f"gemm: pointer arrays must be 8-byte aligned; got {[hex(p) for p in arrays]}")
    if batch > 1 and not pointer_array and stride_c < ldc * (n - 1) + m:
        raise ValueError(f"gemm: stride_c={stride_c} makes batch entries of C overlap; it must be >= "
                         f"ldc * (n - 1) + m = {ldc * (n - 1) + m} (or use batch=1)")
    info = device_facts()
    if pointer_array:
        align_a = align_b = align_c = min(8, es)
    else:
        align_a = _align(ptrs["a_ptr"], lda * es, stride_a * es)
        align_b = _align(ptrs["b_ptr"], ldb * es, stride_b * es)
        align_c = _align(ptrs["c_ptr"], ldc * ces, stride_c * ces)
    problem = GemmProblem(m, n, k, dt, compute, ta, tb, lda, ldb, ldc, batch, pointer_array,
                          bool(ptrs["alpha_ptr"] or ptrs["beta_ptr"]), align_a, align_b, align_c, info.arch, cdt,
                          stride_a, stride_b, stride_c)
    if isinstance(algo, (GemmTiledSpec, GemmNaiveSpec)):
        plan = GemmPlan("tiled" if isinstance(algo, GemmTiledSpec) else "naive", algo)
        _check_forced_spec(algo, problem)
    elif isinstance(algo, GemmPlan):
        _check_forced_plan(algo, problem)
        plan = algo
    elif isinstance(algo, GemmDmmaSpec):
        _check_forced_dmma(algo, problem)
        plan = GemmPlan("dmma", algo)
    elif isinstance(algo, (gemm_tensorcore.GemmTensorCoreSpec, gemm_wgmma.GemmWgmmaSpec)):
        plan = GemmPlan(_check_forced_tensor_core(algo, problem), algo)
    else:
        plan = _cached_choice(problem, info, algo)
    call_plan = GemmCallPlan(plan, problem, info)
    if check_memory:
        if pointer_array:
            call_plan.check_memory(*arrays, ptrs["alpha_ptr"], ptrs["beta_ptr"])
        else:
            call_plan.check_memory(ptrs["a_ptr"], ptrs["b_ptr"], ptrs["c_ptr"], ptrs["alpha_ptr"], ptrs["beta_ptr"])
    if not pointer_array and k > 0:
        c_ext = (*_extent(ptrs["c_ptr"], m, n, ldc, ces, batch, stride_c), ldc * ces, m * ces, n, batch)
        for name, rows, cols, ld, stride in (("a", rows_a, cols_a, lda, stride_a), ("b", rows_b, cols_b, ldb, stride_b)):
            ext = (*_extent(ptrs[f"{name}_ptr"], rows, cols, ld, es, batch, stride), ld * es, rows * es, cols, batch)
            if _overlaps(c_ext, ext) and swapped:  # a row-major array call: A here is its b
                user = "b" if name == "a" else "a"
                raise ValueError(f"gemm: the output c (0x{ptrs['c_ptr']:x}) overlaps input {user} "
                                 f"(0x{ptrs[name + '_ptr']:x}); cuBLAS results would be undefined: pass a "
                                 "separate output")
            if _overlaps(c_ext, ext):
                raise ValueError(f"gemm: the output C (0x{ptrs['c_ptr']:x}, {m}x{n}, ldc={ldc}) overlaps input "
                                 f"{name.upper()} (0x{ptrs[name + '_ptr']:x}, {rows}x{cols}, ld{name}={ld}); "
                                 f"cuBLAS results would be undefined: pass a separate output")

    if pointer_array:
        return call_plan, (*arrays, ptrs["alpha_ptr"], ptrs["beta_ptr"])
    return call_plan, (ptrs["a_ptr"], ptrs["b_ptr"], ptrs["c_ptr"], ptrs["alpha_ptr"], ptrs["beta_ptr"])


#: Call plans by signature; cleared whole when it reaches the limit (signatures are few in practice).
PLAN_CACHE_LIMIT = 4096
_plans: dict[tuple, GemmCallPlan] = {}


def clear_plan_cache() -> None:
    """Forget every cached GEMM call plan: the next call of each signature is validated and
    dispatched again (needed after changing dispatch thresholds at run time)."""
    _plans.clear()
    _cached_choice.cache_clear()


def plan_cache_size() -> int:
    """How many GEMM call signatures have a cached plan."""
    return len(_plans)


class GemmCallPlan:
    """What one validated call signature runs: the dispatch choice (``gemm_plan``), its
    ``LaunchPlan`` (kernels loaded, geometry checked, argument binds fixed once) and the byte
    spans of A, B and C for the per-call overlap and memory checks. Pointer values, scalars and
    the stream come with each call."""

    __slots__ = ("_names", "_run", "a_span", "b_span", "c_span", "gemm_plan", "info", "is_complex",
                 "launch_plan", "problem", "reads_ab", "scalar_bytes")

    def __init__(self, plan: GemmPlan, problem: GemmProblem, info: DeviceFacts) -> None:
        p = problem
        kind = cg.ELEMENT_KINDS[p.dtype]
        es = kind.nbytes
        ces = p.c_kind.nbytes
        self.gemm_plan, self.problem, self.info = plan, p, info
        self.is_complex = kind.complex
        self.reads_ab = p.k > 0
        rows_a, cols_a = (p.m, p.k) if p.transa == "N" else (p.k, p.m)
        rows_b, cols_b = (p.k, p.n) if p.transb == "N" else (p.n, p.k)
        self.a_span = _extent(0, rows_a, cols_a, p.lda, es, p.batch, p.stride_a)[1]
        self.b_span = _extent(0, rows_b, cols_b, p.ldb, es, p.batch, p.stride_b)[1]
        self.c_span = _extent(0, p.m, p.n, p.ldc, ces, p.batch, p.stride_c)[1]
        self.scalar_bytes = cg.ELEMENT_KINDS[scalar_dtype(p.dtype)].nbytes
        batch = f", batch={p.batch}" if p.batch > 1 else ""
        if p.pointer_array:
            self._names = tuple(f"gemm: {x}_array_ptr (a device array of {p.batch} pointers)" for x in "abc")
        else:
            self._names = (f"gemm: A ({rows_a}x{cols_a}, lda={p.lda}{batch})",
                           f"gemm: B ({rows_b}x{cols_b}, ldb={p.ldb}{batch})",
                           f"gemm: C ({p.m}x{p.n}, ldc={p.ldc}{batch})")
        self.launch_plan = family_plan(plan, p, info)
        self._run = self.launch_plan.runner()

    def accepts(self, a: int, b: int, c: int, alpha_ptr: int, beta_ptr: int) -> bool:
        """Whether these pointers pass the pointer checks by plain arithmetic (none negative, C
        and, when K > 0, A and B non-null, C's bytes clear of A's and B's); False sends the call
        through the full checks, which raise the precise error or accept what only the exact
        overlap test can clear."""
        if c <= 0 or a < 0 or b < 0 or alpha_ptr < 0 or beta_ptr < 0:
            return False
        if not self.reads_ab:
            return True
        if not a or not b:
            return False
        c_end = c + self.c_span
        return (c_end <= a or a + self.a_span <= c) and (c_end <= b or b + self.b_span <= c)

    def check_memory(self, a: int, b: int, c: int, alpha_ptr: int, beta_ptr: int) -> None:
        """Every byte the call reads or writes lies inside one device allocation of the current
        context (``cuMemGetAddressRange``), so a freed, foreign or too-short buffer raises
        ValueError here instead of faulting the kernel (a fault poisons the context). For
        pointer-array batches this checks the arrays of pointers, not the matrices they name."""
        if self.problem.pointer_array:
            n = self.problem.batch * 8
            spans = (n, n, n)
        else:
            spans = (self.a_span, self.b_span, self.c_span)
        check_span(c, spans[2], self._names[2])
        if self.reads_ab:
            check_span(a, spans[0], self._names[0])
            check_span(b, spans[1], self._names[1])
        if alpha_ptr:
            check_span(alpha_ptr, self.scalar_bytes, "gemm: alpha_ptr")
        if beta_ptr:
            check_span(beta_ptr, self.scalar_bytes, "gemm: beta_ptr")

    def run(self, alpha, beta, a: int, b: int, c: int, alpha_ptr: int, beta_ptr: int, stream) -> None:
        """Launch this plan on validated pointers; alpha/beta are checked here (ValueError
        before any launch)."""
        if self.is_complex:
            al = alpha if type(alpha) is complex else _scalar(alpha, "alpha", True)
            be = beta if type(beta) is complex else _scalar(beta, "beta", True)
            self._run((a, b, c, alpha_ptr, beta_ptr), (al.real, al.imag, be.real, be.imag), stream)
        else:
            al = alpha if type(alpha) is float else _scalar(alpha, "alpha", False)
            be = beta if type(beta) is float else _scalar(beta, "beta", False)
            self._run((a, b, c, alpha_ptr, beta_ptr), (al, be), stream)


def family_plan(choice: GemmPlan, p: GemmProblem, info: DeviceFacts) -> LaunchPlan:
    """The LaunchPlan of dispatch's ``choice`` for ``p``: each family's ``plan`` (the one place
    where the algo name selects code)."""
    algo = choice.algo
    if algo == "gemv":
        return gemv_plan(p, info)
    if algo in TENSOR_CORE_PLANS:
        return TENSOR_CORE_PLANS[algo](p, info, choice.spec)
    _check_32bit_indexing(p)
    if algo == "split_k":
        return split_k_plan(choice.spec, choice.reduce, choice.splits, p, info)
    if algo == "naive":
        return naive_plan(choice.spec, p, info)
    return tiled_plan(choice.spec, p, info)  # tiled and dmma take the same arguments


#: tensor-core algo -> its family's ``plan(problem, device, spec)``
TENSOR_CORE_PLANS = {gemm_tensorcore.ALGO: gemm_tensorcore.plan, gemm_wgmma.ALGO: gemm_wgmma.plan}


def _check_32bit_indexing(p: GemmProblem) -> None:
    if p.m * p.n >= 1 << 32 or max(p.m, p.n, p.k) >= 1 << 31:
        raise ValueError(f"gemm: m={p.m}, n={p.n}, k={p.k}: the SIMT kernels index m*n (< 2**32) and each "
                         f"dimension (< 2**31) in 32 bits; split the problem into smaller GEMMs")


@functools.lru_cache(maxsize=4096)
def _cached_choice(problem: GemmProblem, info: DeviceFacts, algo: str | None) -> GemmPlan:
    """choose_algo is a pure function of its arguments, so repeated problems reuse the plan."""
    return choose_algo(problem, info, algo)


def _c_dtype(c_dtype: object, dt: str) -> str:
    """"" when C has the data's dtype, else the validated name of C's dtype."""
    if c_dtype is None:
        return ""
    try:
        cdt = dtype_name(normalize_dtype(c_dtype))
    except TypeError as exc:
        raise TypeError(f"gemm: c_dtype={c_dtype!r} is not a dtype") from exc
    if cdt == dt:
        return ""
    if (dt, cdt) not in MIXED_OUTPUTS:
        raise TypeError(f"gemm: c_dtype={cdt} with {dt} data is not supported; allowed: C of the data's dtype, "
                         f"or the pairs (data, C) {MIXED_OUTPUTS}")
    return cdt


def _check_forced_dmma(spec: GemmDmmaSpec, p: GemmProblem) -> None:
    """A forced DMMA spec must match the call: float64, its transposes, aligned vector loads."""
    if p.dtype != "float64" or p.pointer_array:
        raise ValueError(f"gemm: forced spec {spec.key()} runs float64 without pointer arrays; got dtype {p.dtype}, "
                         f"pointer_array {p.pointer_array}")
    if (spec.transa, spec.transb) != ("N" if p.transa == "N" else "T", "N" if p.transb == "N" else "T"):
        raise ValueError(f"gemm: forced spec {spec.key()} does not match transa={p.transa}, transb={p.transb}")
    for name, v, align in (("vec_a", spec.vec_a, p.align_a), ("vec_b", spec.vec_b, p.align_b)):
        if v > 1 and align < 8 * v:
            raise ValueError(f"gemm: forced spec {name}={v} needs {8 * v}-byte aligned operands; got {align}")


def _check_forced_tensor_core(spec, p: GemmProblem) -> str:
    """A forced mma.sync or wgmma spec must be one its family would run for this call (dtype,
    compute, operand layouts, C type) on a device it supports; returns the family's algo."""
    module = gemm_wgmma if isinstance(spec, gemm_wgmma.GemmWgmmaSpec) else gemm_tensorcore
    if not module.supports(p) or (p.mixed and not getattr(module, "MIXED_C", False)):
        raise ValueError(f"gemm: forced spec {spec.key()} cannot run this call (dtype {p.dtype}, compute "
                         f"{p.compute}, alignment {p.alignment}, arch {p.arch}, c_dtype {p.c_dtype or p.dtype})")
    natural = module.choose_spec(p)
    fields = ("dtype", "a_kmajor", "b_kmajor") + (("c_f32",) if module is gemm_tensorcore else ())
    if any(getattr(spec, f) != getattr(natural, f) for f in fields):
        raise ValueError(f"gemm: forced spec {spec.key()} has {[(f, getattr(spec, f)) for f in fields]}; this call "
                         f"needs {[(f, getattr(natural, f)) for f in fields]}")
    return module.ALGO


def _check_forced_plan(plan: GemmPlan, p: GemmProblem) -> None:
    """A forced GemmPlan must be a split-K plan built for this problem's dtypes and transposes."""
    if plan.algo != "split_k" or plan.reduce is None or p.batch != 1 or p.pointer_array:
        raise ValueError(f"gemm: a forced GemmPlan must be a split_k plan (from gemm_dispatch.split_k_plan) "
                         f"for a batch-1 call; got algo {plan.algo!r}, batch {p.batch}")
    _check_forced_spec(plan.spec, p, raw_ok=True)
    red = plan.reduce
    if red.dtype != p.dtype or (red.c_dtype or "") != p.c_dtype:
        raise ValueError(f"gemm: forced reduction {red.key()} does not match dtype {p.dtype}, c_dtype {p.c_dtype!r}")
    if red.vec > 1 and (p.m % red.vec or p.ldc % red.vec or p.align_c < red.vec * p.c_kind.nbytes):
        raise ValueError(f"gemm: forced reduction vec={red.vec} needs m, ldc and C aligned to it; got m={p.m}, "
                         f"ldc={p.ldc}, C alignment {p.align_c} bytes")
    spec = plan.spec
    if spec.vec_c > 1 and p.m % spec.vec_c:
        raise ValueError(f"gemm: forced split-K partials with vec_c={spec.vec_c} need m % {spec.vec_c} == 0")


def _check_forced_spec(spec, p: GemmProblem, raw_ok: bool = False) -> None:
    if spec.dtype != p.dtype or spec.pointer_array != p.pointer_array:
        raise ValueError(f"gemm: forced spec {spec.key()} does not match dtype {p.dtype}, "
                         f"pointer_array {p.pointer_array}")
    if isinstance(spec, GemmNaiveSpec) and p.mixed:
        raise ValueError(f"gemm: the naive kernel writes {p.dtype} C; c_dtype {p.c_dtype} needs a tiled spec")
    if isinstance(spec, GemmTiledSpec):
        if (spec.transa, spec.conj_a) != ("N" if p.transa == "N" else "T", p.transa == "C") or \
                (spec.transb, spec.conj_b) != ("N" if p.transb == "N" else "T", p.transb == "C"):
            raise ValueError(f"gemm: forced spec {spec.key()} does not match transa={p.transa}, transb={p.transb}")
        if spec.raw_out and not raw_ok:
            raise ValueError("gemm: a forced tiled spec must not be a split-K partial (raw_out)")
        if not spec.raw_out and (spec.c_dtype or p.dtype) != (p.c_dtype or p.dtype):
            raise ValueError(f"gemm: forced spec {spec.key()} writes C as {spec.c_dtype or spec.dtype}; this call's C is "
                             f"{p.c_dtype or p.dtype}")
        if not spec.raw_out and spec.vec_c > 1 and (p.m % spec.vec_c or p.align_c < spec.vec_c * p.c_kind.nbytes):
            raise ValueError(f"gemm: forced spec vec_c={spec.vec_c} needs m and C aligned to {spec.vec_c} elements; "
                             f"got m={p.m}, C alignment {p.align_c} bytes")
        kind = cg.ELEMENT_KINDS[p.dtype]
        for name, v, align in (("vec_a", spec.vec_a, p.align_a), ("vec_b", spec.vec_b, p.align_b)):
            if v > 1 and align < v * kind.nbytes:
                raise ValueError(f"gemm: forced spec {name}={v} needs {v * kind.nbytes}-byte aligned operands; "
                                 f"got {align}")


ACC_DTYPES = cg.ACC_DTYPES  # (re-exported: the tests and the split-K sweep read it here)
