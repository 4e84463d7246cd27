"""BLAS level 3 beyond GEMM: trsm, syrk, symm, trmm at the pointer level (cuBLAS semantics,
column-major), built on ``gemm_core.gemm_colmajor``:

- trsm: B = alpha * B (one pass), then per diagonal block of ``TRSM_BLOCK`` rows/columns a
  panel solve (one thread per right-hand side) and one GEMM updating the blocks not yet solved;
- syrk: W = op(A) op(A)^T by GEMM into a workspace, then C = alpha W + beta C on the ``uplo``
  triangle only (the other triangle is never written);
- symm/trmm: the stored triangle of A expanded into a full square workspace, then one GEMM
  (trmm copies B first when C is B: cuBLAS allows in-place trmm).

Scalars are values or device pointers (``alpha_ptr``/``beta_ptr``, device pointer mode); in
device mode the GEMMs read them from device memory too, so no call synchronizes.
"""

from __future__ import annotations

from ..driver.backend import api
from ..driver.facts import device_facts
from ..memory.workspace import workspace
from ..ptx.launch_plan import PlanCache
from . import operands as op
from .flags import trans_op
from .level1_kernels import BLOCK
from .level2 import _diag, _uplo
from .level3_kernels import AxpbySpec, ExpandSpec, TrsmPanelSpec

#: PROVISIONAL (not measured on the H200): diagonal block order of the blocked trsm.
TRSM_BLOCK = 64
MAX_GRID_Y = 65535
#: launch plans of the axpby, expand and trsm panel kernels (the GEMMs have their own), by call signature
PLANS = PlanCache("blas3")

__all__ = ["PLANS", "TRSM_BLOCK", "symm_ptr", "syrk_ptr", "trmm_ptr", "trsm_ptr"]


def _gemm(*args, **kwargs) -> None:
    from .gemm_core import gemm_colmajor

    gemm_colmajor(*args, **kwargs, _owned=True)  # the *_ptr callers checked every operand's span


def _side(value: object, what: str) -> str:
    s = value.upper() if isinstance(value, str) else value
    if s not in ("L", "R"):
        raise ValueError(f"{what}: side={value!r}; allowed 'L' or 'R'")
    return s


def _scalars(alpha, alpha_ptr, what: str) -> tuple[float, float, int]:
    re, im = op.scalar_parts(alpha, what)
    return re, im, op.check_pointer(alpha_ptr, f"{what} pointer")


def _axpby(dt: str, region: str, m: int, n: int, w: int, ldw: int, c: int, ldc: int, alpha: tuple,
           beta: tuple, stream: int) -> None:
    facts = device_facts()
    plan = PLANS.single(("axpby", facts.ordinal, dt, region, m, n),
                        lambda: AxpbySpec(arch=facts.arch, dtype=dt, region=region),
                        ((m + BLOCK - 1) // BLOCK, min(n, MAX_GRID_Y)), BLOCK)
    plan.run((), (m, n, w, ldw, c, ldc, *alpha, *beta), stream)


# Scratch is requested in bytes plus a distinct odd tag: keys (stream, uint8, count) then never
# coincide with each other within one call, nor with GEMM's float-typed split-K workspaces.
_TAG_EXPANDED, _TAG_B_COPY, _TAG_ZERO, _TAG_PRODUCT = 1, 3, 5, 7


def _scratch(nbytes: int, tag: int, stream: int) -> int:
    return workspace(nbytes + tag, stream).ptr


def _expand(dt: str, uplo: str, mode: str, n: int, a: int, lda: int, stream: int) -> int:
    w = _scratch(n * n * op.itemsize(dt), _TAG_EXPANDED, stream)
    facts = device_facts()
    plan = PLANS.single(("expand", facts.ordinal, dt, uplo, mode, n),
                        lambda: ExpandSpec(arch=facts.arch, dtype=dt, uplo=uplo, mode=mode),
                        ((n + BLOCK - 1) // BLOCK, min(n, MAX_GRID_Y)), BLOCK)
    plan.run((), (n, a, lda, w), stream)
    return w


def trsm_ptr(side: str, uplo: str, trans: str, diag: str, m: int, n: int, alpha, a_ptr: int, lda: int,
             b_ptr: int, ldb: int, *, dtype: object, stream: object = None, alpha_ptr: int = 0,
             block: int | None = None) -> None:
    """Solve op(A) X = alpha B (side 'L', A m x m) or X op(A) = alpha B (side 'R', A n x n) in
    place of B (m x n). A triangular (``uplo``), op N/T/C, ``diag`` 'U': unit diagonal not read.
    ``block`` overrides TRSM_BLOCK (tests use it to reach the multi-block path on small sizes)."""
    dt = op.dtype_name(dtype, "trsm")
    sd, u, t, unit = _side(side, "trsm"), _uplo(uplo, "trsm"), trans_op(trans, "trsm"), _diag(diag, "trsm")
    t = "T" if (t == "C" and not dt.startswith("complex")) else t
    m, n = op.check_int(m, "trsm: m", minimum=0), op.check_int(n, "trsm: n", minimum=0)
    ka = m if sd == "L" else n
    lda = op.check_int(lda, "trsm: lda", minimum=max(1, ka))
    ldb = op.check_int(ldb, "trsm: ldb", minimum=max(1, m))
    a, b = op.check_pointer(a_ptr, "trsm: A"), op.check_pointer(b_ptr, "trsm: B")
    alpha_s = _scalars(alpha, alpha_ptr, "trsm: alpha")
    nb = TRSM_BLOCK if block is None else op.check_int(block, "trsm: block", minimum=1)
    if m == 0 or n == 0:
        return
    es = op.itemsize(dt)
    op.check_span(a, op.matrix_span(ka, ka, lda, es), f"trsm: A ({ka}x{ka}, lda={lda})")
    op.check_span(b, op.matrix_span(m, n, ldb, es), f"trsm: B ({m}x{n}, ldb={ldb})")
    s = op.stream_of(stream)
    with op.workspace_sequence:  # workspaces are shared per stream: no interleaving
        if alpha_s != (1.0, 0.0, 0):
            _axpby(dt, "full", m, n, b, ldb, b, ldb, alpha_s, (0.0, 0.0, 0), s)
        facts = device_facts()
        count = n if sd == "L" else m
        panel = PLANS.single(("trsm_panel", facts.ordinal, dt, sd, u, t, unit, count),
                             lambda: TrsmPanelSpec(arch=facts.arch, dtype=dt, side=sd, uplo=u, trans=t,
                                                   unit=unit),
                             (count + BLOCK - 1) // BLOCK, BLOCK)
        swap = (t != "N") != (sd == "R")
        forward = (u == "L") != swap
        starts = list(range(0, ka, nb))
        for r0 in (starts if forward else starts[::-1]):
            r1 = min(r0 + nb, ka)
            size = r1 - r0
            blk_b = b + (r0 * es if sd == "L" else r0 * ldb * es)
            panel.run((), (size, count, a + (r0 + r0 * lda) * es, lda, blk_b, ldb), s)
            rest = (r1, ka) if forward else (0, r0)
            rn = rest[1] - rest[0]
            if rn == 0:
                continue
            # op(A) restricted to (rest rows, this block's columns) for left; (block rows, rest cols) for right
            if sd == "L":
                a_blk = a + ((rest[0] + r0 * lda) if t == "N" else (r0 + rest[0] * lda)) * es
                _gemm(t, "N", rn, n, size, -1.0, a_blk, lda, blk_b, ldb, 1.0, b + rest[0] * es, ldb,
                      dtype=dt, stream=s)
            else:
                a_blk = a + ((r0 + rest[0] * lda) if t == "N" else (rest[0] + r0 * lda)) * es
                _gemm("N", t, m, rn, size, -1.0, blk_b, ldb, a_blk, lda, 1.0, b + rest[0] * ldb * es, ldb,
                      dtype=dt, stream=s)


def syrk_ptr(uplo: str, trans: str, n: int, k: int, alpha, a_ptr: int, lda: int, beta, c_ptr: int, ldc: int, *,
             dtype: object, stream: object = None, alpha_ptr: int = 0, beta_ptr: int = 0) -> None:
    """C = alpha op(A) op(A)^T + beta C on the ``uplo`` triangle of C (n x n); op(A) is n x k
    (trans 'N': A n x k; 'T': A k x n). The other triangle is never touched."""
    dt = op.dtype_name(dtype, "syrk")
    u, t = _uplo(uplo, "syrk"), trans_op(trans, "syrk")
    if t == "C":
        if dt.startswith("complex"):
            raise ValueError("syrk: trans='C' is not allowed for complex syrk (that is herk); use 'N' or 'T'")
        t = "T"
    n, k = op.check_int(n, "syrk: n", minimum=0), op.check_int(k, "syrk: k", minimum=0)
    rows_a = n if t == "N" else k
    lda = op.check_int(lda, "syrk: lda", minimum=max(1, rows_a))
    ldc = op.check_int(ldc, "syrk: ldc", minimum=max(1, n))
    a, c = op.check_pointer(a_ptr, "syrk: A"), op.check_pointer(c_ptr, "syrk: C")
    alpha_s, beta_s = _scalars(alpha, alpha_ptr, "syrk: alpha"), _scalars(beta, beta_ptr, "syrk: beta")
    if n == 0:
        return
    es = op.itemsize(dt)
    if k > 0:
        op.check_span(a, op.matrix_span(rows_a, n if t == "T" else k, lda, es), f"syrk: A (lda={lda})")
    op.check_span(c, op.matrix_span(n, n, ldc, es), f"syrk: C ({n}x{n}, ldc={ldc})")
    s = op.stream_of(stream)
    with op.workspace_sequence:  # workspaces are shared per stream: no interleaving
        w = _scratch(n * n * es, _TAG_PRODUCT, s)
        if k > 0:
            _gemm(t, "N" if t == "T" else "T", n, n, k, 1.0, a, lda, a, lda, 0.0, w, n, dtype=dt, stream=s)
        else:
            api().memset_d8(w, 0, n * n * es, s or None)
        _axpby(dt, u, n, n, w, n, c, ldc, alpha_s, beta_s, s)


def symm_ptr(side: str, uplo: str, m: int, n: int, alpha, a_ptr: int, lda: int, b_ptr: int, ldb: int, beta,
             c_ptr: int, ldc: int, *, dtype: object, hermitian: bool = False, stream: object = None,
             alpha_ptr: int = 0, beta_ptr: int = 0) -> None:
    """C = alpha A B + beta C (side 'L', A m x m) or alpha B A + beta C (side 'R', A n x n), A
    symmetric (``hermitian``: Hermitian, hemm) stored in its ``uplo`` triangle; B, C m x n."""
    dt = op.dtype_name(dtype, "symm")
    sd, u = _side(side, "symm"), _uplo(uplo, "symm")
    m, n, ka, lda, ldb, ldc, a, b, c = _side_operands("symm", sd, m, n, lda, ldb, ldc, a_ptr, b_ptr, c_ptr)
    ar, ai, ap = _scalars(alpha, alpha_ptr, "symm: alpha")
    br, bi, bp = _scalars(beta, beta_ptr, "symm: beta")
    if bool(ap) != bool(bp):
        raise ValueError("symm: alpha and beta must both be values or both device pointers")
    if m == 0 or n == 0:
        return
    _check_side_spans("symm", dt, m, n, ka, a, lda, b, ldb, c, ldc)
    s = op.stream_of(stream)
    with op.workspace_sequence:  # workspaces are shared per stream: no interleaving
        mode = "herm" if hermitian and dt.startswith("complex") else "sym"
        w = _expand(dt, u, mode, ka, a, lda, s)
        alpha_v, beta_v = complex(ar, ai) if ai else ar, complex(br, bi) if bi else br
        if sd == "L":
            _gemm("N", "N", m, n, m, alpha_v, w, ka, b, ldb, beta_v, c, ldc, dtype=dt, stream=s,
                  alpha_ptr=ap, beta_ptr=bp)
        else:
            _gemm("N", "N", m, n, n, alpha_v, b, ldb, w, ka, beta_v, c, ldc, dtype=dt, stream=s,
                  alpha_ptr=ap, beta_ptr=bp)


def _side_operands(name: str, sd: str, m, n, lda, ldb, ldc, a_ptr, b_ptr, c_ptr) -> tuple:
    """Checked (m, n, ka, lda, ldb, ldc, a, b, c) of a side-dependent level-3 call whose A is
    ka x ka (ka = m for side 'L', n for 'R') and whose B and C are m x n."""
    m, n = op.check_int(m, f"{name}: m", minimum=0), op.check_int(n, f"{name}: n", minimum=0)
    ka = m if sd == "L" else n
    lda = op.check_int(lda, f"{name}: lda", minimum=max(1, ka))
    ldb = op.check_int(ldb, f"{name}: ldb", minimum=max(1, m))
    ldc = op.check_int(ldc, f"{name}: ldc", minimum=max(1, m))
    a, b, c = (op.check_pointer(p, f"{name}: {w}") for p, w in ((a_ptr, "A"), (b_ptr, "B"), (c_ptr, "C")))
    return m, n, ka, lda, ldb, ldc, a, b, c


def _check_side_spans(name: str, dt: str, m: int, n: int, ka: int, a: int, lda: int, b: int, ldb: int,
                      c: int, ldc: int) -> int:
    """Check that A, B and C lie inside their allocations; returns the element size."""
    es = op.itemsize(dt)
    op.check_span(a, op.matrix_span(ka, ka, lda, es), f"{name}: A ({ka}x{ka}, lda={lda})")
    op.check_span(b, op.matrix_span(m, n, ldb, es), f"{name}: B ({m}x{n}, ldb={ldb})")
    op.check_span(c, op.matrix_span(m, n, ldc, es), f"{name}: C ({m}x{n}, ldc={ldc})")
    return es


def trmm_ptr(side: str, uplo: str, trans: str, diag: str, m: int, n: int, alpha, a_ptr: int, lda: int,
             b_ptr: int, ldb: int, c_ptr: int, ldc: int, *, dtype: object, stream: object = None,
             alpha_ptr: int = 0) -> None:
    """C = alpha op(A) B (side 'L', A m x m) or alpha B op(A) (side 'R', A n x n), A triangular;
    B, C m x n (cuBLAS v2 out-of-place form; C may be B)."""
    dt = op.dtype_name(dtype, "trmm")
    sd, u, t, unit = _side(side, "trmm"), _uplo(uplo, "trmm"), trans_op(trans, "trmm"), _diag(diag, "trmm")
    t = "T" if (t == "C" and not dt.startswith("complex")) else t
    m, n, ka, lda, ldb, ldc, a, b, c = _side_operands("trmm", sd, m, n, lda, ldb, ldc, a_ptr, b_ptr, c_ptr)
    ar, ai, ap = _scalars(alpha, alpha_ptr, "trmm: alpha")
    if m == 0 or n == 0:
        return
    es = _check_side_spans("trmm", dt, m, n, ka, a, lda, b, ldb, c, ldc)
    s = op.stream_of(stream)
    with op.workspace_sequence:  # workspaces are shared per stream: no interleaving
        w = _expand(dt, u, "tri_unit" if unit else "tri", ka, a, lda, s)
        b_lo, b_hi = b, b + op.matrix_span(m, n, ldb, es)
        c_lo, c_hi = c, c + op.matrix_span(m, n, ldc, es)
        if b_lo < c_hi and c_lo < b_hi:  # in place (or overlapping): GEMM needs a separate input
            bcopy = _scratch(m * n * es, _TAG_B_COPY, s)
            api().memcpy_2d(bcopy, m * es, b, ldb * es, m * es, n, s or None)
            b, ldb = bcopy, m
        alpha_v = complex(ar, ai) if ai else ar
        zero_ptr = 0
        if ap:  # device-mode alpha: GEMM then needs beta on the device too
            zero_ptr = _scratch(es, _TAG_ZERO, s)
            api().memset_d8(zero_ptr, 0, es, s or None)
        if sd == "L":
            _gemm(t, "N", m, n, m, alpha_v, w, ka, b, ldb, 0.0, c, ldc, dtype=dt, stream=s,
                  alpha_ptr=ap, beta_ptr=zero_ptr)
        else:
            _gemm("N", t, m, n, n, alpha_v, b, ldb, w, ka, 0.0, c, ldc, dtype=dt, stream=s,
                  alpha_ptr=ap, beta_ptr=zero_ptr)
