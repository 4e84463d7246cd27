"""Householder QR on the device, at the pointer level (LAPACK/cuSOLVER semantics: column-major,
Q = H_1 H_2 ... H_k with H_i = I - tau_i v_i v_i^H, v_i(i) = 1 implicit, v_i below the diagonal
of A, R on and above it).

- ``geqrf_ptr``: panels of ``QR_NB`` columns by ``solver_geqr2``; per panel the Householder
  vectors copied out explicitly (``solver_copy`` unit_lower), T by ``solver_larft``, and the
  trailing columns updated as A2 -= V (T^H (V^H A2)) by three oxicuda.blas GEMMs (compact WY).
  A matrix no wider than a panel is one geqr2 launch for the whole batch.
- ``orgqr_ptr``: Q's first n columns from k reflectors, blocks applied backwards to the identity
  (W = V^H Q2, Q2 -= V (T W)); ``ormqr_ptr``: op(Q) C or C op(Q), blocks in the order op needs.
Workspaces come from the workspace cache; the host only sequences launches.
"""

from __future__ import annotations

from typing import NamedTuple

from ..blas.gemm_core import gemm_colmajor
from ..driver.facts import device_facts
from ..ptx.launch_plan import KernelStep, PlanCache
from . import dispatch, layout
from .kernels.common import esize
from .kernels.qr_kernels import NB_MAX, QR_THREADS, Geqr2Spec, LarftSpec
from .lu import _check_batch

PLANS = PlanCache("solver.qr")


def _nb() -> int:
    return min(dispatch.block_size("QR_NB"), NB_MAX)


class _Steps(NamedTuple):
    geqr2: KernelStep
    larft: KernelStep


def _steps(dtype: str, batch: int) -> _Steps:
    facts = device_facts()
    key = (dtype, batch, facts.ordinal)

    def build() -> _Steps:
        return _Steps(KernelStep(Geqr2Spec(arch=facts.arch, dtype=dtype), (batch,), (QR_THREADS,), bind=None),
                      KernelStep(LarftSpec(arch=facts.arch, dtype=dtype), (1,), (QR_THREADS,), bind=None))
    return PLANS.get_or_build(key, build)


def _gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, dtype, stream) -> None:
    if m and n:
        gemm_colmajor(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, dtype=dtype, stream=stream, _owned=True)


class _Block:
    """Scratch for one block of reflectors: V explicit (rows x nb), T (nb x nb), W and W2 (nb x cols)."""

    def __init__(self, dtype: str, rows: int, cols: int, stream: int) -> None:
        nb, es = _nb(), esize(dtype)
        self.es = es
        total = rows * nb + nb * nb + 2 * nb * max(cols, 1)
        base = dispatch.scratch("qr_block", total * es, stream)
        self.v = base
        self.t = base + rows * nb * es
        self.w = self.t + nb * nb * es
        self.w2 = self.w + nb * max(cols, 1) * es

    def load(self, dtype: str, steps: _Steps, a_blk: int, lda: int, tau_blk: int, rows: int, w: int,
             stream: int) -> None:
        """V (rows x w, ld rows) and T (w x w, ld nb) of the w reflectors stored at a_blk."""
        layout.copy(dtype, layout.Strided(a_blk, rows, w, 1, 1, lda, 0),
                    layout.Strided(self.v, rows, w, 1, 1, rows, 0), stream, fill="unit_lower")
        steps.larft.launch((rows, w, a_blk, lda, tau_blk, self.t, _nb()), stream)


def geqrf_ptr(m: int, n: int, a: int, lda: int, tau: int, *, dtype: str, batch: int = 1, stride_a: int = 0,
              stride_tau: int = 0, stream: int = 0) -> None:
    """QR of ``batch`` column-major m x n matrices in place (reflectors and R), tau min(m, n)
    per matrix (``stride_tau`` elements apart). Checked arguments only."""
    k = min(m, n)
    if k == 0 or batch == 0:
        return
    _check_batch(batch, "geqrf")
    steps, nb, es = _steps(dtype, batch), _nb(), esize(dtype)
    if n <= nb:
        steps.geqr2.launch((m, n, a, lda, stride_a, tau, stride_tau), stream)
        return
    single = _steps(dtype, 1)
    blk = _Block(dtype, m, n, stream)
    for z in range(batch):
        az, tz = a + z * stride_a * es, tau + z * stride_tau * es
        for j0 in range(0, k, nb):
            w = min(nb, k - j0)
            rows, cols = m - j0, n - j0 - w
            ajj, tj = az + (j0 + j0 * lda) * es, tz + j0 * es
            single.geqr2.launch((rows, w, ajj, lda, 0, tj, 0), stream)
            if cols <= 0:
                continue
            blk.load(dtype, single, ajj, lda, tj, rows, w, stream)
            a2 = ajj + w * lda * es
            # A2 -= V (T^H (V^H A2))
            _gemm("C", "N", w, cols, rows, 1.0, blk.v, rows, a2, lda, 0.0, blk.w, nb, dtype, stream)
            _gemm("C", "N", w, cols, w, 1.0, blk.t, nb, blk.w, nb, 0.0, blk.w2, nb, dtype, stream)
            _gemm("N", "N", rows, cols, w, -1.0, blk.v, rows, blk.w2, nb, 1.0, a2, lda, dtype, stream)


def orgqr_ptr(m: int, n: int, k: int, a: int, lda: int, tau: int, q: int, ldq: int, *, dtype: str,
              stream: int = 0) -> None:
    """Q (m x n, the first n columns of H_1 ... H_k, reflectors in ``a``) into ``q``; ``q`` may be
    ``a`` (cuSOLVER's in-place orgqr: Q is then built in scratch and copied over A at the end).
    Checked arguments only; m >= n >= k."""
    if m == 0 or n == 0:
        return
    es, nb = esize(dtype), _nb()
    steps = _steps(dtype, 1)
    out = q
    if q == a:
        out = dispatch.scratch("qr_q", m * n * es, stream)
        ldo = m
    else:
        ldo = ldq
    layout.eye(dtype, layout.Strided(out, m, n, 1, 1, ldo, 0), stream)
    if k:
        blk = _Block(dtype, m, n, stream)
        for j0 in reversed(range(0, k, nb)):
            w = min(nb, k - j0)
            rows, cols = m - j0, n - j0
            ajj = a + (j0 + j0 * lda) * es
            blk.load(dtype, steps, ajj, lda, tau + j0 * es, rows, w, stream)
            q2 = out + (j0 + j0 * ldo) * es
            # Q2 -= V (T (V^H Q2))
            _gemm("C", "N", w, cols, rows, 1.0, blk.v, rows, q2, ldo, 0.0, blk.w, nb, dtype, stream)
            _gemm("N", "N", w, cols, w, 1.0, blk.t, nb, blk.w, nb, 0.0, blk.w2, nb, dtype, stream)
            _gemm("N", "N", rows, cols, w, -1.0, blk.v, rows, blk.w2, nb, 1.0, q2, ldo, dtype, stream)
    if out != q:
        layout.copy(dtype, layout.Strided(out, m, n, 1, 1, ldo, 0), layout.Strided(q, m, n, 1, 1, ldq, 0), stream)


def ormqr_ptr(side: str, trans: str, m: int, n: int, k: int, a: int, lda: int, tau: int, c: int, ldc: int, *,
              dtype: str, stream: int = 0) -> None:
    """C := op(Q) C (side 'L', Q m x m from k reflectors in A, m x k) or C op(Q) (side 'R', Q
    n x n); op 'N' or 'C' ('T' for real dtypes means 'C'). Checked arguments only."""
    if m == 0 or n == 0 or k == 0:
        return
    es, nb = esize(dtype), _nb()
    steps = _steps(dtype, 1)
    herm = trans != "N"
    left = side == "L"
    nq = m if left else n
    blk = _Block(dtype, nq, n if left else m, stream)
    starts = list(range(0, k, nb))
    # Q^H C and C Q apply H_1 first; Q C and C Q^H apply H_k first
    forward = herm if left else not herm
    for j0 in (starts if forward else starts[::-1]):
        w = min(nb, k - j0)
        rows = nq - j0
        ajj = a + (j0 + j0 * lda) * es
        blk.load(dtype, steps, ajj, lda, tau + j0 * es, rows, w, stream)
        tt = "C" if herm else "N"
        if left:  # C2 (rows x n) -= V (op(T) (V^H C2))
            c2 = c + j0 * es
            _gemm("C", "N", w, n, rows, 1.0, blk.v, rows, c2, ldc, 0.0, blk.w, nb, dtype, stream)
            _gemm(tt, "N", w, n, w, 1.0, blk.t, nb, blk.w, nb, 0.0, blk.w2, nb, dtype, stream)
            _gemm("N", "N", rows, n, w, -1.0, blk.v, rows, blk.w2, nb, 1.0, c2, ldc, dtype, stream)
        else:  # C2 (m x rows) -= ((C2 V) op(T)) V^H
            c2 = c + j0 * ldc * es
            _gemm("N", "N", m, w, rows, 1.0, c2, ldc, blk.v, rows, 0.0, blk.w, m, dtype, stream)
            _gemm("N", tt, m, w, w, 1.0, blk.w, m, blk.t, nb, 0.0, blk.w2, m, dtype, stream)
            _gemm("N", "C", m, rows, w, -1.0, blk.w2, m, blk.v, rows, 1.0, c2, ldc, dtype, stream)
