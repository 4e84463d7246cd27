"""cg, gmres and spsolve_triangular.

The vectors stay on the device; every matrix-vector product is the sparse SpMV (or the
operator's matvec) and every dot product, norm and update is oxicuda.blas level 1. What comes
back to the host per iteration is what scipy's loops branch on: a few scalars (dot products,
norms), which for GMRES also feed the Givens rotations of its small Hessenberg problem.
"""

from __future__ import annotations

import numpy as np

from oxicuda import blas
from oxicuda.memory.array import DeviceArray, asarray, zeros

from ..matrix import spmatrix
from .interface import LinearOperator, aslinearoperator


def _rhs(A: LinearOperator, b, what: str) -> DeviceArray:
    n = A.shape[0]
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"{what}: A has shape {A.shape}; a square operator is required")
    ba = b if isinstance(b, DeviceArray) else asarray(np.asarray(b, dtype=A.dtype))
    if ba.shape not in ((n,), (n, 1)):
        raise ValueError(f"{what}: b has shape {ba.shape}; A needs ({n},) or ({n}, 1)")
    ba = ba.reshape(n)  # a column (n, 1) solves as a vector, as cupyx's
    if ba.dtype != A.dtype:
        raise TypeError(f"{what}: b has dtype {ba.dtype} and A {A.dtype}; they must match")
    nb = float(blas.nrm2(ba))
    if not np.isfinite(nb):
        raise ValueError(f"{what}: b holds NaN or inf (its norm is {nb}); the solve would be meaningless")
    return ba


def _start(A, b, x0):
    x = zeros(b.shape, b.dtype) if x0 is None else (x0.copy() if isinstance(x0, DeviceArray)
                                                   else asarray(np.asarray(x0, dtype=b.dtype)))
    r = b.copy()
    if x0 is not None:
        blas.axpy(-1.0, A.matvec(x), r)
    return x, r


def cg(A, b, x0=None, *, tol: float = 1e-5, maxiter: int | None = None, M=None, callback=None,
       atol: float | None = None, rtol: float | None = None):
    """Conjugate gradients for a Hermitian positive definite A: ``(x, info)`` with info 0 on
    convergence (||r|| <= max(rtol * ||b||, atol)) and the iteration count otherwise."""
    A = aslinearoperator(A)
    b = _rhs(A, b, "cg")
    rtol = tol if rtol is None else rtol
    M = _preconditioner(M, A, "cg")
    n = b.size
    maxiter = 10 * n if maxiter is None else maxiter
    bnorm = float(blas.nrm2(b))
    limit = max(rtol * bnorm, 0.0 if atol is None else atol)
    x, r = _start(A, b, x0)
    if bnorm == 0:
        return zeros(b.shape, b.dtype), 0
    z = M.matvec(r) if M else r
    p = z.copy()
    rz = complex(blas.dotc(r, z))
    for it in range(1, maxiter + 1):
        q = A.matvec(p)
        alpha = rz / complex(blas.dotc(p, q))
        blas.axpy(_cast(alpha, b.dtype), p, x)
        blas.axpy(_cast(-alpha, b.dtype), q, r)
        if callback is not None:
            callback(x)
        if float(blas.nrm2(r)) <= limit:
            return x, 0
        z = M.matvec(r) if M else r
        rz_new = complex(blas.dotc(r, z))
        beta = rz_new / rz
        rz = rz_new
        blas.scal(_cast(beta, b.dtype), p)
        blas.axpy(1.0, z, p)
    return x, maxiter


def _cast(v: complex, dtype: np.dtype):
    return v if np.dtype(dtype).kind == "c" else float(np.real(v))


def _preconditioner(M, A: LinearOperator, what: str) -> LinearOperator | None:
    """M as an operator of A's shape and dtype (None: no preconditioning)."""
    if M is None:
        return None
    op = aslinearoperator(M)
    if op.shape != A.shape:
        raise ValueError(f"{what}: M has shape {op.shape} and A {A.shape}; they must be equal")
    if op.dtype != A.dtype:
        raise TypeError(f"{what}: M has dtype {op.dtype} and A {A.dtype}; they must match")
    return op


def gmres(A, b, x0=None, *, tol: float = 1e-5, restart: int | None = None, maxiter: int | None = None,
          M=None, callback=None, atol: float | None = None, rtol: float | None = None,
          callback_type: str | None = None):
    """Restarted GMRES for A x = b: ``(x, info)``, info 0 on convergence (||b - A x|| <=
    max(rtol ||b||, atol)), else the iteration count.

    ``M`` (a LinearOperator, sparse matrix or dense 2-D array approximating A^-1) preconditions
    from the right, as cupyx.scipy.sparse.linalg.gmres: the Arnoldi process runs on A M and the
    solution is x = x0 + M u, so the residual the loop watches is the true one. (cupyx also
    treats x0 as a guess in M's domain, returning M x0 for a converged start; here x0 is the
    guess for x, as scipy's.) ``callback`` runs once per restart cycle, with the relative
    residual ||b - A x|| / ||b|| (``callback_type='pr_norm'``, the default) or x (``'x'``).
    Arnoldi vectors on the device (modified Gram-Schmidt with blas dot/axpy); the small
    Hessenberg least-squares problem is updated by Givens rotations of the scalars those
    reductions return (cupyx solves it with numpy.linalg.lstsq on the host each restart)."""
    A = aslinearoperator(A)
    b = _rhs(A, b, "gmres")
    if callback_type is None:
        callback_type = "pr_norm"
    if callback_type not in ("x", "pr_norm"):
        raise ValueError(f"gmres: callback_type={callback_type!r}; allowed 'x' or 'pr_norm'")
    Mop = _preconditioner(M, A, "gmres")
    rtol = tol if rtol is None else rtol
    n = b.size
    restart = min(20 if restart is None else int(restart), n)
    maxiter = n if maxiter is None else maxiter
    bnorm = float(blas.nrm2(b))
    if bnorm == 0:
        return zeros(b.shape, b.dtype), 0
    limit = max(rtol * bnorm, 0.0 if atol is None else atol)
    x, r = _start(A, b, x0)
    total = 0
    cplx = b.dtype.kind == "c"
    while total < maxiter:
        beta = float(blas.nrm2(r))
        if beta <= limit:
            return x, 0
        V = [r.copy()]
        blas.scal(_cast(1.0 / beta, b.dtype), V[0])
        R = np.zeros((restart + 1, restart), np.complex128 if cplx else np.float64)
        rot = np.zeros((restart, 2), R.dtype)  # the Givens rotations (c, s) applied so far
        g = np.zeros(restart + 1, R.dtype)
        g[0] = beta
        k_used = 0
        for k in range(restart):
            w = A.matvec(Mop.matvec(V[k]) if Mop is not None else V[k])
            for i in range(k + 1):
                h = complex(blas.dotc(V[i], w))
                R[i, k] = h if cplx else h.real
                blas.axpy(_cast(-h, b.dtype), V[i], w)
            hn = float(blas.nrm2(w))
            k_used = k + 1
            total += 1
            resid = _givens_step(R, rot, g, k, hn)
            if hn == 0 or resid <= limit or total >= maxiter:
                break
            blas.scal(_cast(1.0 / hn, b.dtype), w)
            V.append(w)
        y = _back_substitute(R[:k_used, :k_used], g[:k_used])
        u = zeros(b.shape, b.dtype)
        for i in range(k_used):
            blas.axpy(_cast(y[i], b.dtype), V[i], u)
        blas.axpy(1.0, Mop.matvec(u) if Mop is not None else u, x)
        r = b.copy()
        blas.axpy(-1.0, A.matvec(x), r)
        if callback is not None:
            callback(x if callback_type == "x" else float(blas.nrm2(r)) / bnorm)
    return x, (0 if float(blas.nrm2(r)) <= limit else maxiter)


def _givens_step(R: np.ndarray, rot: np.ndarray, g: np.ndarray, k: int, hn: float) -> float:
    """Column k of the Hessenberg matrix (R[:k+1, k] and the subdiagonal ``hn``) through the
    rotations so far and a new one that zeroes ``hn``; g (the rotated ||r|| e1) follows. Returns
    |g[k+1]|, the residual norm of the least-squares solution over k+1 vectors (scalars of the
    device's dot products and norms: O(k) host arithmetic per step)."""
    for i in range(k):
        c, s = rot[i]
        a, b = R[i, k], R[i + 1, k]
        R[i, k] = c * a + s * b
        R[i + 1, k] = -np.conj(s) * a + c * b
    a = R[k, k]
    r = float(np.hypot(abs(a), hn))
    if r == 0:
        c, s = 1.0, 0.0
    elif a == 0:
        c, s, R[k, k] = 0.0, 1.0, hn
    else:
        phase = a / abs(a)
        c, s, R[k, k] = abs(a) / r, phase * hn / r, phase * r
    rot[k] = (c, s)
    g[k + 1] = -np.conj(s) * g[k]
    g[k] = c * g[k]
    return float(abs(g[k + 1]))


def _back_substitute(U: np.ndarray, g: np.ndarray) -> np.ndarray:
    """y with U y = g for the upper triangular k x k U (a zero pivot: that component 0)."""
    k = g.size
    y = np.zeros(k, U.dtype)
    for i in range(k - 1, -1, -1):
        t = g[i] - U[i, i + 1:] @ y[i + 1:]
        y[i] = t / U[i, i] if U[i, i] != 0 else 0
    return y


def spsolve_triangular(A, b, lower: bool = True, overwrite_A: bool = False, overwrite_b: bool = False,
                       unit_diagonal: bool = False):
    """Solve ``A x = b`` for a triangular sparse A (n x n; the other triangle is ignored) and a
    vector or (n, k) array b of A's dtype. The level analysis runs on the device once per matrix
    and triangle and is reused by later solves. Raises ValueError for a zero diagonal entry (non-
    unit), shapes or dtypes that do not match, before anything is written."""
    from ..matrix import csr_matrix
    from ..sptrsv import solve

    if not isinstance(A, spmatrix):
        raise TypeError(f"spsolve_triangular: A is {type(A).__name__}; a sparse matrix is required")
    m, n = A.shape
    if m != n:
        raise ValueError(f"spsolve_triangular: A has shape {A.shape}; it must be square")
    if not isinstance(A, csr_matrix):
        cache = A.__dict__.setdefault("_csr_for_solves", {})
        A = cache.setdefault("csr", A.tocsr())
    csr = A.canonical()
    ba = b if isinstance(b, DeviceArray) else asarray(np.asarray(b))
    if ba.dtype != csr.dtype:
        raise TypeError(f"spsolve_triangular: b has dtype {ba.dtype} and A {csr.dtype}; they must match")
    if ba.shape[0] != n or ba.ndim not in (1, 2):
        raise ValueError(f"spsolve_triangular: b has shape {ba.shape}; A needs ({n},) or ({n}, k)")
    if ba.ndim == 1:
        x = zeros((n,), csr.dtype)
        solve(csr, ba if ba.is_c_contiguous else ba.copy(), x, bool(lower), bool(unit_diagonal), csr.stream)
        return x
    cols = ba.T.copy()
    xt = zeros(cols.shape, csr.dtype)
    for c in range(cols.shape[0]):
        solve(csr, cols[c], xt[c], bool(lower), bool(unit_diagonal), csr.stream)
    return xt.T.copy()
