"""cuBLAS's element-wise matrix extensions: geam (C = alpha op(A) + beta op(B)), dgmm (C = A
diag(x) or diag(x) A) and the triangle packing conversions trttp/tpttr.

Pointer level (cuBLAS semantics, column-major): ``geam_ptr``, ``dgmm_ptr``, ``trttp_ptr``,
``tpttr_ptr``. Array level (numpy-shaped, row- or column-major 2-D device arrays, results in a
new array or ``out``): ``geam``, ``dgmm``. Every call checks arguments and spans before any
launch and runs a cached launch plan of the ``blas_geam``/``blas_dgmm``/``blas_pack`` kernels.
"""

from __future__ import annotations

import numpy as np

from ..driver.facts import device_facts
from ..memory.array import DeviceArray, asarray, empty
from ..ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from . import operands as op
from .flags import trans_op
from .geam_kernels import DgmmSpec, GeamSpec, PackSpec
from .level1_kernels import BLOCK
from .level2 import _nonzero_inc, _uplo

MAX_GRID_Y = 65535
PLANS = PlanCache("blas_geam")

__all__ = ["PLANS", "colmajor_view", "dgmm", "dgmm_ptr", "geam", "geam_ptr", "tpttr_ptr", "trttp_ptr"]


def _grid(m: int, n: int) -> tuple[int, int]:
    return (m + BLOCK - 1) // BLOCK, min(n, MAX_GRID_Y)


def _plan(key: tuple, make_spec, m: int, n: int, bind) -> LaunchPlan:
    """The cached one-step plan of ``key`` (call signature and device ordinal); on a miss
    ``make_spec(arch)`` gives the spec. A hit is one dict lookup: no spec is built per call."""
    plan = PLANS.get(key)
    if plan is None:
        arch = device_facts().arch
        plan = PLANS.get_or_build(key, lambda: LaunchPlan(key[0], [KernelStep(make_spec(arch), _grid(m, n), BLOCK,
                                                                                bind(m, n))]))
    return plan


def _bind_geam(m: int, n: int):
    return lambda p, s, ws: (m, n, p[0], s[0], p[1], s[1], p[2], s[2], *s[3:])


def _bind_dgmm(m: int, n: int):
    return lambda p, s, ws: (m, n, p[0], s[0], p[1], s[1], p[2], s[2])


def _bind_pack(n: int, _n: int):
    return lambda p, s, ws: (n, p[0], s[0], p[1])


def _spans_overlap(p: int, p_bytes: int, q: int, q_bytes: int) -> bool:
    return p_bytes > 0 and q_bytes > 0 and p < q + q_bytes and q < p + p_bytes


def geam_ptr(transa: str, transb: str, m: int, n: int, alpha, a_ptr: int, lda: int, beta, b_ptr: int, ldb: int,
             c_ptr: int, ldc: int, *, dtype: object, stream: object = None, alpha_ptr: int = 0,
             beta_ptr: int = 0) -> None:
    """C = alpha op(A) + beta op(B), C m x n column-major; a zero alpha (beta) never reads A (B).
    C may be A (or B) only with op 'N' and the same leading dimension, as cuBLAS allows."""
    dt = op.dtype_name(dtype, "geam")
    ta, tb = trans_op(transa, "geam", name="transa"), trans_op(transb, "geam", name="transb")
    if not dt.startswith("complex"):
        ta, tb = ("T" if ta == "C" else ta), ("T" if tb == "C" else tb)
    m, n = op.check_int(m, "geam: m", minimum=0), op.check_int(n, "geam: n", minimum=0)
    lda = op.check_int(lda, "geam: lda", minimum=max(1, m if ta == "N" else n))
    ldb = op.check_int(ldb, "geam: ldb", minimum=max(1, m if tb == "N" else n))
    ldc = op.check_int(ldc, "geam: ldc", minimum=max(1, m))
    a, b, c = (op.check_pointer(p, f"geam: {w}") for p, w in ((a_ptr, "A"), (b_ptr, "B"), (c_ptr, "C")))
    ar, ai = op.scalar_parts(alpha, "geam: alpha")
    br, bi = op.scalar_parts(beta, "geam: beta")
    ap, bp = op.check_pointer(alpha_ptr, "geam: alpha pointer"), op.check_pointer(beta_ptr, "geam: beta pointer")
    if bool(ap) != bool(bp):
        raise ValueError("geam: alpha and beta must both be values or both device pointers")
    if m == 0 or n == 0:
        return
    es = op.itemsize(dt)
    c_bytes = op.matrix_span(m, n, ldc, es)
    op.check_span(c, c_bytes, f"geam: C ({m}x{n}, ldc={ldc})")
    # device-mode scalars are unknown here: their matrices must then be valid
    read_a, read_b = bool(ap) or (ar, ai) != (0.0, 0.0), bool(bp) or (br, bi) != (0.0, 0.0)
    for ptr, t, ld, name, read in ((a, ta, lda, "A", read_a), (b, tb, ldb, "B", read_b)):
        if not read:
            continue
        rows, cols = (m, n) if t == "N" else (n, m)
        nbytes = op.matrix_span(rows, cols, ld, es)
        op.check_span(ptr, nbytes, f"geam: {name} ({rows}x{cols}, ld={ld})")
        if _spans_overlap(ptr, nbytes, c, c_bytes) and not (ptr == c and t == "N" and ld == ldc):
            raise ValueError(f"geam: C overlaps {name}; in place is allowed only with C == {name}, "
                             f"op 'N' and ld{name.lower()} == ldc")
    key = ("blas_geam", device_facts().ordinal, dt, ta, tb, m, n)
    plan = _plan(key, lambda arch: GeamSpec(arch=arch, dtype=dt, transa=ta, transb=tb), m, n, _bind_geam)
    plan.run((a, b, c), (lda, ldb, ldc, ar, ai, ap, br, bi, bp), op.stream_of(stream))


def dgmm_ptr(side: str, m: int, n: int, a_ptr: int, lda: int, x_ptr: int, incx: int, c_ptr: int, ldc: int, *,
             dtype: object, stream: object = None) -> None:
    """C = diag(x) A (side 'L', x of length m) or A diag(x) (side 'R', x of length n); A, C
    m x n column-major; C may be A with lda == ldc."""
    dt = op.dtype_name(dtype, "dgmm")
    sd = side.upper() if isinstance(side, str) else side
    if sd not in ("L", "R"):
        raise ValueError(f"dgmm: side={side!r}; allowed 'L' or 'R'")
    m, n = op.check_int(m, "dgmm: m", minimum=0), op.check_int(n, "dgmm: n", minimum=0)
    lda = op.check_int(lda, "dgmm: lda", minimum=max(1, m))
    ldc = op.check_int(ldc, "dgmm: ldc", minimum=max(1, m))
    incx = _nonzero_inc(incx, "dgmm: incx")
    a, x, c = (op.check_pointer(p, f"dgmm: {w}") for p, w in ((a_ptr, "A"), (x_ptr, "x"), (c_ptr, "C")))
    if m == 0 or n == 0:
        return
    es = op.itemsize(dt)
    nx = m if sd == "L" else n
    a_bytes, c_bytes = op.matrix_span(m, n, lda, es), op.matrix_span(m, n, ldc, es)
    op.check_span(a, a_bytes, f"dgmm: A ({m}x{n}, lda={lda})")
    op.check_span(c, c_bytes, f"dgmm: C ({m}x{n}, ldc={ldc})")
    op.check_span(x, op.vector_span(nx, incx, es), f"dgmm: x (n={nx}, incx={incx})")
    if _spans_overlap(a, a_bytes, c, c_bytes) and not (a == c and lda == ldc):
        raise ValueError("dgmm: C overlaps A; in place is allowed only with C == A and lda == ldc")
    key = ("blas_dgmm", device_facts().ordinal, dt, sd, m, n)
    plan = _plan(key, lambda arch: DgmmSpec(arch=arch, dtype=dt, side=sd), m, n, _bind_dgmm)
    plan.run((a, op.vector_start(x, nx, incx, es), c), (lda, incx, ldc), op.stream_of(stream))


def _pack(direction: str, name: str, uplo, n, a_ptr, lda, ap_ptr, dtype, stream) -> None:
    dt = op.dtype_name(dtype, name)
    u = _uplo(uplo, name)
    n = op.check_int(n, f"{name}: n", minimum=0)
    lda = op.check_int(lda, f"{name}: lda", minimum=max(1, n))
    a, ap = op.check_pointer(a_ptr, f"{name}: A"), op.check_pointer(ap_ptr, f"{name}: AP")
    if n == 0:
        return
    es = op.itemsize(dt)
    op.check_span(a, op.matrix_span(n, n, lda, es), f"{name}: A ({n}x{n}, lda={lda})")
    op.check_span(ap, n * (n + 1) // 2 * es, f"{name}: AP (n={n}, packed)")
    key = ("blas_pack", device_facts().ordinal, dt, u, direction, n)
    plan = _plan(key, lambda arch: PackSpec(arch=arch, dtype=dt, uplo=u, direction=direction), n, n, _bind_pack)
    plan.run((a, ap), (lda,), op.stream_of(stream))


def trttp_ptr(uplo: str, n: int, a_ptr: int, lda: int, ap_ptr: int, *, dtype: object, stream: object = None) -> None:
    """AP = the ``uplo`` triangle of A (n x n, full storage) packed column by column."""
    _pack("tr2tp", "trttp", uplo, n, a_ptr, lda, ap_ptr, dtype, stream)


def tpttr_ptr(uplo: str, n: int, ap_ptr: int, a_ptr: int, lda: int, *, dtype: object, stream: object = None) -> None:
    """The ``uplo`` triangle of A = the packed AP; the other triangle of A is not written."""
    _pack("tp2tr", "tpttr", uplo, n, a_ptr, lda, ap_ptr, dtype, stream)


# -- array level --------------------------------------------------------------------------------
def colmajor_view(x: object, what: str) -> tuple[DeviceArray, int, int, bool]:
    """(array, pointer, leading dimension, transposed) of a 2-D device array read as a
    column-major matrix: a Fortran-ordered array as itself, a C-ordered one as its transpose
    (``transposed`` True). Other layouts raise ValueError naming the strides."""
    if not isinstance(x, DeviceArray) and not hasattr(x, "__cuda_array_interface__") and not hasattr(x, "__dlpack__"):
        raise TypeError(f"{what}: {type(x).__name__} is not a device array; pass a DeviceArray or an object with "
                        "__cuda_array_interface__ / __dlpack__ (oxicuda.asarray copies host data)")
    arr = x if isinstance(x, DeviceArray) else asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"{what}: shape {arr.shape}; a 2-D matrix is required")
    op.dtype_name(arr.dtype, what)
    es = arr.itemsize
    rows, cols = arr.shape
    s0, s1 = arr.strides
    if (s0 == es or rows <= 1) and s1 % es == 0 and s1 >= es * max(rows, 1):
        return arr, arr.ptr, max(1, s1 // es if cols > 1 else rows), False
    if (s1 == es or cols <= 1) and s0 % es == 0 and s0 >= es * max(cols, 1):
        return arr, arr.ptr, max(1, s0 // es if rows > 1 else cols), True
    raise ValueError(f"{what}: shape {arr.shape} with strides {arr.strides}; one axis must be contiguous "
                     "(a C- or Fortran-ordered matrix, or a slice of one)")


def _op_on_view(trans: str, transposed: bool, out_transposed: bool, what: str) -> str:
    """The cuBLAS op on X's column-major view (X itself, or X^T when ``transposed``) that gives
    op(X) (``trans`` N/T/C), or op(X)^T when the output is computed transposed."""
    flip, conj = trans != "N", trans == "C"
    if out_transposed:
        flip = not flip
    if flip != transposed:
        return "C" if conj else "T"
    if conj:
        raise ValueError(f"{what}: this conjugate needs conj(X) without a transpose, which cuBLAS has no op "
                         "for; pass the operand and out in the same memory order")
    return "N"


def _output(out, shape: tuple[int, int], dtype, order: str, what: str) -> DeviceArray:
    if out is None:
        return empty(shape, dtype, order=order)
    o = out if isinstance(out, DeviceArray) else asarray(out)
    if o.dtype != np.dtype(dtype):
        raise TypeError(f"{what}: out is {o.dtype}; {np.dtype(dtype)} is required")
    if o.shape != shape:
        raise ValueError(f"{what}: out has shape {o.shape}; {shape} is required")
    if o.readonly:
        raise ValueError(f"{what}: out is read-only")
    return o


def geam(a: object, b: object, *, alpha=1.0, beta=1.0, transa=False, transb=False, out: object = None) -> DeviceArray:
    """alpha op(a) + beta op(b) for 2-D device arrays (op: ``transa``/``transb`` False/True or
    'N'/'T'/'C'), in a new array (Fortran order) or in ``out`` (any order, may be a or b when
    that operand is not transposed). Shapes must agree (ValueError); dtypes must be equal
    (TypeError)."""
    av, a_ptr, lda, a_t = colmajor_view(a, "geam: a")
    bv, b_ptr, ldb, b_t = colmajor_view(b, "geam: b")
    if av.dtype != bv.dtype:
        raise TypeError(f"geam: a is {av.dtype} and b is {bv.dtype}; the dtypes must be equal")
    ta = trans_op(transa, "geam", bools=True, name="transa")
    tb = trans_op(transb, "geam", bools=True, name="transb")
    sa = av.shape if ta == "N" else av.shape[::-1]
    sb = bv.shape if tb == "N" else bv.shape[::-1]
    if sa != sb:
        raise ValueError(f"geam: op(a) has shape {sa} and op(b) has shape {sb}; they must be equal")
    order = None
    if out is None:  # a new result takes a memory order in which both ops exist
        order = "F"
        try:
            _op_on_view(ta, a_t, False, "geam: a"), _op_on_view(tb, b_t, False, "geam: b")
        except ValueError:
            order = "C"
    o = _output(out, sa, av.dtype, order, "geam")
    ov, c_ptr, ldc, c_t = colmajor_view(o, "geam: out")
    opa, opb = _op_on_view(ta, a_t, c_t, "geam: a"), _op_on_view(tb, b_t, c_t, "geam: b")
    m, n = sa if not c_t else sa[::-1]
    geam_ptr(opa, opb, m, n, alpha, a_ptr, lda, beta, b_ptr, ldb, c_ptr, ldc, dtype=av.dtype, stream=ov.stream)
    return o


def dgmm(a: object, x: object, *, side: str = "L", out: object = None) -> DeviceArray:
    """diag(x) @ a (side 'L', len(x) == a.shape[0]) or a @ diag(x) (side 'R', len(x) ==
    a.shape[1]) for a 2-D device array a and a 1-D device array x of its dtype; the result has
    a's layout (a new array, or ``out`` of the same shape and order)."""
    from .level1 import _vector

    av, a_ptr, lda, a_t = colmajor_view(a, "dgmm: a")
    xv, incx, x_base = _vector(x, "dgmm: x")
    if xv.dtype != av.dtype:
        raise TypeError(f"dgmm: a is {av.dtype} and x is {xv.dtype}; the dtypes must be equal")
    sd = side.upper() if isinstance(side, str) else side
    if sd not in ("L", "R"):
        raise ValueError(f"dgmm: side={side!r}; allowed 'L' or 'R'")
    need = av.shape[0] if sd == "L" else av.shape[1]
    if xv.shape[0] != need:
        raise ValueError(f"dgmm: a has shape {av.shape} and x has length {xv.shape[0]}; side '{sd}' needs "
                         f"len(x) == a.shape[{0 if sd == 'L' else 1}] == {need}")
    o = _output(out, av.shape, av.dtype, "C" if a_t else "F", "dgmm")
    ov, c_ptr, ldc, c_t = colmajor_view(o, "dgmm: out")
    if c_t != a_t:
        raise ValueError("dgmm: out must have the same memory order (C or Fortran) as a")
    m, n = av.shape[::-1] if a_t else av.shape
    cm_side = {"L": "R", "R": "L"}[sd] if a_t else sd
    dgmm_ptr(cm_side, m, n, a_ptr, lda, x_base, incx, c_ptr, ldc, dtype=av.dtype, stream=ov.stream)
    return o
