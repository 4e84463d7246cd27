"""BLAS level 2 on banded, packed and triangular storage, at the pointer level with cuBLAS
semantics (column-major, leading dimensions and increments in elements, negative increments
as BLAS defines them, scalars as values or device pointers):

- matrix-vector: ``gbmv_ptr``, ``sbmv_ptr`` (``hermitian``: hbmv), ``spmv_ptr`` (hpmv),
  ``trmv_ptr``, ``tbmv_ptr``, ``tpmv_ptr``;
- triangular solves: ``tbsv_ptr``, ``tpsv_ptr`` (trsv lives in ``level2``);
- rank updates: ``syr_ptr``/``syr2_ptr`` (``hermitian``: her/her2), ``spr_ptr``/``spr2_ptr``
  (hpr/hpr2).

Every call checks its arguments (ValueError/TypeError naming the value and the rule) and the
device spans before any launch, then runs a cached launch plan (``oxicuda.ptx.launch_plan``) of
the ``blas2_mv``/``blas2_sv``/``blas2_rank`` kernels. trmv/tbmv/tpmv copy x into a workspace
first (one ``blas1_map`` copy), so the product never reads an element it already overwrote.
"""

from __future__ import annotations

from ..driver.facts import device_facts
from ..ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from . import operands as op
from .flags import trans_op
from .level1_kernels import BLOCK, Blas1MapSpec
from .level2 import _diag, _nonzero_inc, _uplo
from .level2_packed_kernels import MvSpec, RankSpec, SvSpec

MAX_GRID_Y = 65535
PLANS = PlanCache("blas2_packed")

__all__ = ["PLANS", "gbmv_ptr", "sbmv_ptr", "spmv_ptr", "spr2_ptr", "spr_ptr", "syr2_ptr", "syr_ptr",
           "tbmv_ptr", "tbsv_ptr", "tpmv_ptr", "tpsv_ptr", "trmv_ptr"]


def _op_for(dt: str, trans: object, what: str) -> str:
    t = trans_op(trans, what)
    return "T" if (t == "C" and not dt.startswith("complex")) else t


def _alpha_beta(alpha, alpha_ptr, beta, beta_ptr, what: str) -> tuple:
    ar, ai = op.scalar_parts(alpha, f"{what}: alpha")
    br, bi = op.scalar_parts(beta, f"{what}: beta")
    ap = op.check_pointer(alpha_ptr, f"{what}: alpha pointer")
    bp = op.check_pointer(beta_ptr, f"{what}: beta pointer")
    if bool(ap) != bool(bp):
        raise ValueError(f"{what}: alpha and beta must both be values or both device pointers")
    return ar, ai, ap, br, bi, bp


# -- plans --------------------------------------------------------------------------------------
def _mv_plan(spec: MvSpec, rows: int, ncols: int, lo_w: int, hi_w: int, copy_len: int) -> LaunchPlan:
    """``rows`` threads of ``spec``; with ``copy_len``, x is first copied into the workspace
    (contiguous) and the product reads the copy (trmv/tbmv/tpmv: x is also the output)."""
    grid = (rows + BLOCK - 1) // BLOCK

    def bind_mv(p, s, ws):
        x, incx = (ws, 1) if copy_len else (p[1], s[3])
        return (rows, ncols, p[0], s[0], s[1], s[2], lo_w, hi_w, x, incx, p[2], s[4], *s[5:])

    steps = [KernelStep(spec, grid, BLOCK, bind_mv)]
    if copy_len:
        copy = Blas1MapSpec(arch=spec.arch, op="copy", dtype=spec.dtype)
        steps.insert(0, KernelStep(copy, (copy_len + BLOCK - 1) // BLOCK, BLOCK,
                                   lambda p, s, ws: (copy_len, p[1], s[3], ws, 1, 0.0, 0.0, 0, 0.0, 0.0, 0)))
    return LaunchPlan(f"{spec.kernel_name()}[{rows}x{ncols}]", steps,
                      workspace_bytes=copy_len * op.itemsize(spec.dtype))


def _run_mv(spec_fields: dict, rows: int, ncols: int, lo_w: int, hi_w: int, copy_len: int, a: int, lda: int,
            k: int, order: int, x: int, incx: int, y: int, incy: int, scalars: tuple, stream: object) -> None:
    facts = device_facts()
    key = ("mv", facts.ordinal, *spec_fields.values(), rows, ncols, lo_w, hi_w, copy_len)
    plan = PLANS.get(key)  # a hit builds no spec
    if plan is None:
        spec = MvSpec(arch=facts.arch, **spec_fields)
        plan = PLANS.get_or_build(key, lambda: _mv_plan(spec, rows, ncols, lo_w, hi_w, copy_len))
    plan.run((a, x, y), (lda, k, order, incx, incy, *scalars), op.stream_of(stream))


def _check_vec(ptr: int, n: int, inc: int, es: int, what: str) -> int:
    op.check_span(ptr, op.vector_span(n, inc, es), f"{what} (n={n}, inc={inc})")
    return op.vector_start(ptr, n, inc, es)


# -- matrix-vector ------------------------------------------------------------------------------
def gbmv_ptr(trans: str, m: int, n: int, kl: int, ku: int, alpha, a_ptr: int, lda: int, x_ptr: int, incx: int,
             beta, y_ptr: int, incy: int, *, dtype: object, stream: object = None, alpha_ptr: int = 0,
             beta_ptr: int = 0) -> None:
    """y = alpha op(A) x + beta y, A m x n general banded (kl sub-, ku super-diagonals) stored
    in BLAS band form (lda >= kl + ku + 1). beta == 0 never reads y."""
    dt = op.dtype_name(dtype, "gbmv")
    t = _op_for(dt, trans, "gbmv")
    m, n = op.check_int(m, "gbmv: m", minimum=0), op.check_int(n, "gbmv: n", minimum=0)
    kl, ku = op.check_int(kl, "gbmv: kl", minimum=0), op.check_int(ku, "gbmv: ku", minimum=0)
    lda = op.check_int(lda, "gbmv: lda", minimum=kl + ku + 1)
    incx, incy = _nonzero_inc(incx, "gbmv: incx"), _nonzero_inc(incy, "gbmv: incy")
    a, x, y = (op.check_pointer(p, f"gbmv: {w}") for p, w in ((a_ptr, "A"), (x_ptr, "x"), (y_ptr, "y")))
    scalars = _alpha_beta(alpha, alpha_ptr, beta, beta_ptr, "gbmv")
    rows, cols = (m, n) if t == "N" else (n, m)
    if rows == 0:
        return
    es = op.itemsize(dt)
    if cols:
        op.check_span(a, op.matrix_span(kl + ku + 1, n, lda, es), f"gbmv: A (band {kl + ku + 1}x{n}, lda={lda})")
    xs = _check_vec(x, cols, incx, es, "gbmv: x")
    ys = _check_vec(y, rows, incy, es, "gbmv: y")
    lo_w, hi_w = (kl, ku) if t == "N" else (ku, kl)
    _run_mv({"dtype": dt, "kind": "gb", "storage": "band", "uplo": "L", "trans": t}, rows, cols,
            min(lo_w, rows), min(hi_w, cols), 0, a, lda, ku, 0, xs, incx, ys, incy, scalars, stream)


def _symmetric_mv(name: str, storage: str, uplo, n, k, alpha, a_ptr, lda, x_ptr, incx, beta, y_ptr, incy,
                  dtype, hermitian, stream, alpha_ptr, beta_ptr) -> None:
    dt = op.dtype_name(dtype, name)
    u = _uplo(uplo, name)
    herm = bool(hermitian)
    if dt.startswith("complex") != herm:
        raise TypeError(f"{name}: dtype {dt} with hermitian={herm}; the symmetric form takes float32/float64, "
                        "the Hermitian form complex64/complex128")
    n = op.check_int(n, f"{name}: n", minimum=0)
    k = op.check_int(k, f"{name}: k", minimum=0) if storage == "band" else n
    if storage == "band":
        lda = op.check_int(lda, f"{name}: lda", minimum=k + 1)
    incx, incy = _nonzero_inc(incx, f"{name}: incx"), _nonzero_inc(incy, f"{name}: incy")
    a, x, y = (op.check_pointer(p, f"{name}: {w}") for p, w in ((a_ptr, "A"), (x_ptr, "x"), (y_ptr, "y")))
    scalars = _alpha_beta(alpha, alpha_ptr, beta, beta_ptr, name)
    if n == 0:
        return
    es = op.itemsize(dt)
    if storage == "band":
        op.check_span(a, op.matrix_span(k + 1, n, lda, es), f"{name}: A (band {k + 1}x{n}, lda={lda})")
    else:
        op.check_span(a, n * (n + 1) // 2 * es, f"{name}: AP (n={n}, packed)")
    xs, ys = _check_vec(x, n, incx, es, f"{name}: x"), _check_vec(y, n, incy, es, f"{name}: y")
    w = min(k, n)
    _run_mv({"dtype": dt, "kind": "he" if herm else "sy", "storage": storage, "uplo": u, "trans": "N"}, n, n,
            w, w, 0, a, lda if storage == "band" else 1, k, n, xs, incx, ys, incy, scalars, stream)


def sbmv_ptr(uplo: str, n: int, k: int, alpha, a_ptr: int, lda: int, x_ptr: int, incx: int, beta, y_ptr: int,
             incy: int, *, dtype: object, hermitian: bool = False, stream: object = None, alpha_ptr: int = 0,
             beta_ptr: int = 0) -> None:
    """y = alpha A x + beta y, A n x n symmetric banded (``hermitian``: Hermitian, hbmv) with k
    super-/sub-diagonals, the ``uplo`` triangle stored in BLAS band form (lda >= k + 1)."""
    _symmetric_mv("hbmv" if hermitian else "sbmv", "band", uplo, n, k, alpha, a_ptr, lda, x_ptr, incx, beta,
                  y_ptr, incy, dtype, hermitian, stream, alpha_ptr, beta_ptr)


def spmv_ptr(uplo: str, n: int, alpha, ap_ptr: int, x_ptr: int, incx: int, beta, y_ptr: int, incy: int, *,
             dtype: object, hermitian: bool = False, stream: object = None, alpha_ptr: int = 0,
             beta_ptr: int = 0) -> None:
    """y = alpha A x + beta y, A n x n symmetric (``hermitian``: Hermitian, hpmv) with its
    ``uplo`` triangle packed column by column in AP (n (n + 1) / 2 elements)."""
    _symmetric_mv("hpmv" if hermitian else "spmv", "packed", uplo, n, 0, alpha, ap_ptr, 0, x_ptr, incx, beta,
                  y_ptr, incy, dtype, hermitian, stream, alpha_ptr, beta_ptr)


def _triangular(name: str, storage: str, uplo, trans, diag, n, k, a_ptr, lda, x_ptr, incx, dtype) -> tuple:
    dt = op.dtype_name(dtype, name)
    u, t, unit = _uplo(uplo, name), _op_for(dt, trans, name), _diag(diag, name)
    n = op.check_int(n, f"{name}: n", minimum=0)
    k = op.check_int(k, f"{name}: k", minimum=0) if storage == "band" else n
    if storage == "band":
        lda = op.check_int(lda, f"{name}: lda", minimum=k + 1)
    elif storage == "full":
        lda = op.check_int(lda, f"{name}: lda", minimum=max(1, n))
    else:
        lda = 1
    incx = _nonzero_inc(incx, f"{name}: incx")
    a, x = op.check_pointer(a_ptr, f"{name}: A"), op.check_pointer(x_ptr, f"{name}: x")
    es = op.itemsize(dt)
    if n:
        if storage == "band":
            op.check_span(a, op.matrix_span(k + 1, n, lda, es), f"{name}: A (band {k + 1}x{n}, lda={lda})")
        elif storage == "full":
            op.check_span(a, op.matrix_span(n, n, lda, es), f"{name}: A ({n}x{n}, lda={lda})")
        else:
            op.check_span(a, n * (n + 1) // 2 * es, f"{name}: AP (n={n}, packed)")
    xs = _check_vec(x, n, incx, es, f"{name}: x") if n else x
    return dt, u, t, unit, n, k, lda, a, xs, incx


def _tr_mv(name: str, storage: str, uplo, trans, diag, n, k, a_ptr, lda, x_ptr, incx, dtype, stream) -> None:
    dt, u, t, unit, n, k, lda, a, xs, incx = _triangular(name, storage, uplo, trans, diag, n, k, a_ptr, lda,
                                                          x_ptr, incx, dtype)
    if n == 0:
        return
    w = min(k, n)
    lower_of_op = (u == "L") == (t == "N")
    lo_w, hi_w = (w, 0) if lower_of_op else (0, w)
    _run_mv({"dtype": dt, "kind": "tr", "storage": storage, "uplo": u, "trans": t, "unit": unit}, n, n,
            lo_w, hi_w, n, a, lda, k, n, xs, incx, xs, incx, (1.0, 0.0, 0, 0.0, 0.0, 0), stream)


def trmv_ptr(uplo: str, trans: str, diag: str, n: int, a_ptr: int, lda: int, x_ptr: int, incx: int, *,
             dtype: object, stream: object = None) -> None:
    """x = op(A) x, A n x n triangular (full storage, ``uplo`` triangle; ``diag`` 'U': unit)."""
    _tr_mv("trmv", "full", uplo, trans, diag, n, 0, a_ptr, lda, x_ptr, incx, dtype, stream)


def tbmv_ptr(uplo: str, trans: str, diag: str, n: int, k: int, a_ptr: int, lda: int, x_ptr: int, incx: int, *,
             dtype: object, stream: object = None) -> None:
    """x = op(A) x, A n x n triangular banded (k off-diagonals, BLAS band form, lda >= k + 1)."""
    _tr_mv("tbmv", "band", uplo, trans, diag, n, k, a_ptr, lda, x_ptr, incx, dtype, stream)


def tpmv_ptr(uplo: str, trans: str, diag: str, n: int, ap_ptr: int, x_ptr: int, incx: int, *,
             dtype: object, stream: object = None) -> None:
    """x = op(A) x, A n x n triangular, packed in AP (n (n + 1) / 2 elements)."""
    _tr_mv("tpmv", "packed", uplo, trans, diag, n, 0, ap_ptr, 1, x_ptr, incx, dtype, stream)


def _tr_sv(name: str, storage: str, uplo, trans, diag, n, k, a_ptr, lda, x_ptr, incx, dtype, stream) -> None:
    dt, u, t, unit, n, k, lda, a, xs, incx = _triangular(name, storage, uplo, trans, diag, n, k, a_ptr, lda,
                                                          x_ptr, incx, dtype)
    if n == 0:
        return
    facts = device_facts()
    spec = SvSpec(arch=facts.arch, dtype=dt, storage=storage, uplo=u, trans=t, unit=unit)
    key = ("sv", facts.ordinal, spec)
    plan = PLANS.get_or_build(key, lambda: LaunchPlan(spec.kernel_name(), [KernelStep(
        spec, 1, BLOCK, lambda p, s, ws: (s[0], p[0], s[1], s[2], p[1], s[3]))]))
    plan.run((a, xs), (n, lda, min(k, n), incx), op.stream_of(stream))


def tbsv_ptr(uplo: str, trans: str, diag: str, n: int, k: int, a_ptr: int, lda: int, x_ptr: int, incx: int, *,
             dtype: object, stream: object = None) -> None:
    """Solve op(A) x = b in place (x holds b), A triangular banded (k off-diagonals). No
    singularity check (like cuBLAS)."""
    _tr_sv("tbsv", "band", uplo, trans, diag, n, k, a_ptr, lda, x_ptr, incx, dtype, stream)


def tpsv_ptr(uplo: str, trans: str, diag: str, n: int, ap_ptr: int, x_ptr: int, incx: int, *,
             dtype: object, stream: object = None) -> None:
    """Solve op(A) x = b in place, A triangular packed in AP."""
    _tr_sv("tpsv", "packed", uplo, trans, diag, n, 0, ap_ptr, 1, x_ptr, incx, dtype, stream)


# -- rank updates -------------------------------------------------------------------------------
def _rank(name: str, rop: str, storage: str, uplo, n, alpha, x_ptr, incx, y_ptr, incy, a_ptr, lda, dtype,
          alpha_ptr, stream) -> None:
    dt = op.dtype_name(dtype, name)
    u = _uplo(uplo, name)
    if rop.startswith("her") and not dt.startswith("complex"):
        raise TypeError(f"{name}: dtype {dt}; the Hermitian update takes complex64/complex128")
    if storage == "packed" and rop.startswith("syr") and dt.startswith("complex"):
        raise TypeError(f"{name}: dtype {dt}; BLAS has no complex symmetric packed update (use hpr/hpr2)")
    n = op.check_int(n, f"{name}: n", minimum=0)
    lda = op.check_int(lda, f"{name}: lda", minimum=max(1, n)) if storage == "full" else 1
    two = rop.endswith("2")
    incx = _nonzero_inc(incx, f"{name}: incx")
    incy = _nonzero_inc(incy, f"{name}: incy") if two else 1
    x = op.check_pointer(x_ptr, f"{name}: x")
    y = op.check_pointer(y_ptr, f"{name}: y") if two else 0
    a = op.check_pointer(a_ptr, f"{name}: A")
    re, im = op.scalar_parts(alpha, f"{name}: alpha")
    if rop == "her" and im != 0:
        raise ValueError(f"{name}: alpha={alpha!r}; the Hermitian rank-1 update takes a real alpha")
    ap = op.check_pointer(alpha_ptr, f"{name}: alpha pointer")
    if n == 0:
        return
    es = op.itemsize(dt)
    if storage == "full":
        op.check_span(a, op.matrix_span(n, n, lda, es), f"{name}: A ({n}x{n}, lda={lda})")
    else:
        op.check_span(a, n * (n + 1) // 2 * es, f"{name}: AP (n={n}, packed)")
    xs = _check_vec(x, n, incx, es, f"{name}: x")
    ys = _check_vec(y, n, incy, es, f"{name}: y") if two else xs
    facts = device_facts()
    spec = RankSpec(arch=facts.arch, dtype=dt, op=rop, storage=storage, uplo=u)
    grid = ((n + BLOCK - 1) // BLOCK, min(n, MAX_GRID_Y))
    key = ("rank", facts.ordinal, spec, n)
    plan = PLANS.get_or_build(key, lambda: LaunchPlan(spec.kernel_name(), [KernelStep(
        spec, grid, BLOCK, lambda p, s, ws: (n, p[0], s[0], p[1], s[1], p[2], s[2], s[3], s[4], s[5]))]))
    plan.run((xs, ys, a), (incx, incy if two else incx, lda, re, im, ap), op.stream_of(stream))


def syr_ptr(uplo: str, n: int, alpha, x_ptr: int, incx: int, a_ptr: int, lda: int, *, dtype: object,
            hermitian: bool = False, stream: object = None, alpha_ptr: int = 0) -> None:
    """A += alpha x x^T on the ``uplo`` triangle (``hermitian``: her, A += alpha x x^H with a
    real alpha and the diagonal kept real)."""
    _rank("her" if hermitian else "syr", "her" if hermitian else "syr", "full", uplo, n, alpha, x_ptr, incx, 0,
          1, a_ptr, lda, dtype, alpha_ptr, stream)


def syr2_ptr(uplo: str, n: int, alpha, x_ptr: int, incx: int, y_ptr: int, incy: int, a_ptr: int, lda: int, *,
             dtype: object, hermitian: bool = False, stream: object = None, alpha_ptr: int = 0) -> None:
    """A += alpha x y^T + alpha y x^T (``hermitian``: her2, A += alpha x y^H + conj(alpha) y x^H)."""
    _rank("her2" if hermitian else "syr2", "her2" if hermitian else "syr2", "full", uplo, n, alpha, x_ptr, incx,
          y_ptr, incy, a_ptr, lda, dtype, alpha_ptr, stream)


def spr_ptr(uplo: str, n: int, alpha, x_ptr: int, incx: int, ap_ptr: int, *, dtype: object,
            hermitian: bool = False, stream: object = None, alpha_ptr: int = 0) -> None:
    """syr (her) on packed storage AP."""
    _rank("hpr" if hermitian else "spr", "her" if hermitian else "syr", "packed", uplo, n, alpha, x_ptr, incx,
          0, 1, ap_ptr, 1, dtype, alpha_ptr, stream)


def spr2_ptr(uplo: str, n: int, alpha, x_ptr: int, incx: int, y_ptr: int, incy: int, ap_ptr: int, *,
             dtype: object, hermitian: bool = False, stream: object = None, alpha_ptr: int = 0) -> None:
    """syr2 (her2) on packed storage AP."""
    _rank("hpr2" if hermitian else "spr2", "her2" if hermitian else "syr2", "packed", uplo, n, alpha, x_ptr,
          incx, y_ptr, incy, ap_ptr, 1, dtype, alpha_ptr, stream)
