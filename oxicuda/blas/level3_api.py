"""Array-level level 3 calls beside the pointer forms: ``trsm``, ``trmm``, ``symm`` and ``syrk``
on 2-D device arrays, numpy-shaped (``a`` k x k, ``b`` m x n in the usual mathematical sense),
row-major (C-ordered) or column-major (Fortran-ordered) alike.

A C-ordered matrix is its transpose in column-major terms, so each call is mapped onto one
pointer-level call: transposing the whole equation when the right-hand side or output is
C-ordered (side and the stored triangle flip), and reading a C-ordered A through the transposed
op. The only case without a cuBLAS op is a conjugate of A that needs no transpose (complex A of
one order with trans='C' against a right-hand side of the other order, or a Hermitian A whose
order differs from C's): that raises ValueError asking for one order. Shapes and layouts that do
not fit raise ValueError; dtypes that differ raise TypeError; nothing is written on failure.
"""

from __future__ import annotations

from ..memory.array import DeviceArray, zeros
from .flags import trans_op
from .geam_dgmm import _output, colmajor_view
from .level3 import symm_ptr, syrk_ptr, trmm_ptr, trsm_ptr

__all__ = ["symm", "syrk", "trmm", "trsm"]

_FLIP_UPLO = {"L": "U", "U": "L"}
_FLIP_SIDE = {"L": "R", "R": "L"}


def _word(value: object, allowed: tuple[str, ...], what: str) -> str:
    v = value.upper() if isinstance(value, str) else value
    if v not in allowed:
        raise ValueError(f"{what}={value!r}; allowed {allowed}")
    return v


def _op_of_a(trans: str, a_transposed: bool, equation_transposed: bool, what: str) -> str:
    """The op on A's column-major view that yields op(A), or op(A)^T in a transposed equation."""
    flip, conj = trans != "N", trans == "C"
    if equation_transposed:
        flip = not flip
    if flip != a_transposed:
        return "C" if conj else "T"
    if conj:
        raise ValueError(f"{what}: trans='C' with a and b in different memory orders needs conj(A) without a "
                         "transpose, which cuBLAS has no op for; pass a and b in the same order")
    return "N"


def _same_dtype(what: str, *arrays: DeviceArray) -> None:
    first = arrays[0].dtype
    for other in arrays[1:]:
        if other.dtype != first:
            raise TypeError(f"{what}: operands are {first} and {other.dtype}; the dtypes must be equal")


def _square(av: DeviceArray, need: int, what: str) -> None:
    if av.shape != (need, need):
        raise ValueError(f"{what}: a has shape {av.shape}; a square {need} x {need} matrix is required")


def trsm(a: object, b: object, *, side: str = "L", uplo: str = "L", trans: object = "N", diag: str = "N",
         alpha=1.0, overwrite_b: bool = False) -> DeviceArray:
    """Solve op(A) X = alpha B (side 'L') or X op(A) = alpha B (side 'R') for X (the shape of b),
    A triangular (``uplo`` triangle read; ``diag`` 'U': unit diagonal not read). Returns X in a new
    array of b's memory order, or in b itself with ``overwrite_b``."""
    sd, u, d = _word(side, ("L", "R"), "trsm: side"), _word(uplo, ("L", "U"), "trsm: uplo"), \
        _word(diag, ("N", "U"), "trsm: diag")
    t = trans_op(trans, "trsm", bools=True)
    av, a_ptr, lda, a_t = colmajor_view(a, "trsm: a")
    bv, _, _, b_t = colmajor_view(b, "trsm: b")
    _same_dtype("trsm", av, bv)
    _square(av, bv.shape[0] if sd == "L" else bv.shape[1], "trsm")
    op_a = _op_of_a(t, a_t, b_t, "trsm")
    x = bv if overwrite_b else bv.copy(order="C" if b_t else "F")
    xv, x_ptr, ldx, x_t = colmajor_view(x, "trsm: b")
    m, n = xv.shape[::-1] if x_t else xv.shape
    trsm_ptr(_FLIP_SIDE[sd] if x_t else sd, _FLIP_UPLO[u] if a_t else u, op_a, d, m, n, alpha, a_ptr, lda,
             x_ptr, ldx, dtype=av.dtype, stream=xv.stream)
    return x


def trmm(a: object, b: object, *, side: str = "L", uplo: str = "L", trans: object = "N", diag: str = "N",
         alpha=1.0, out: object = None) -> DeviceArray:
    """alpha op(A) B (side 'L') or alpha B op(A) (side 'R'), A triangular; a new array of b's
    memory order, or ``out`` (same shape and order as b; may be b)."""
    sd, u, d = _word(side, ("L", "R"), "trmm: side"), _word(uplo, ("L", "U"), "trmm: uplo"), \
        _word(diag, ("N", "U"), "trmm: diag")
    t = trans_op(trans, "trmm", bools=True)
    av, a_ptr, lda, a_t = colmajor_view(a, "trmm: a")
    bv, b_ptr, ldb, b_t = colmajor_view(b, "trmm: b")
    _same_dtype("trmm", av, bv)
    _square(av, bv.shape[0] if sd == "L" else bv.shape[1], "trmm")
    op_a = _op_of_a(t, a_t, b_t, "trmm")
    o = _output(out, bv.shape, bv.dtype, "C" if b_t else "F", "trmm")
    ov, c_ptr, ldc, c_t = colmajor_view(o, "trmm: out")
    if c_t != b_t:
        raise ValueError("trmm: out must have the same memory order (C or Fortran) as b")
    m, n = bv.shape[::-1] if b_t else bv.shape
    trmm_ptr(_FLIP_SIDE[sd] if b_t else sd, _FLIP_UPLO[u] if a_t else u, op_a, d, m, n, alpha, a_ptr, lda, b_ptr,
             ldb, c_ptr, ldc, dtype=av.dtype, stream=ov.stream)
    return o


def symm(a: object, b: object, c: object = None, *, side: str = "L", uplo: str = "L", alpha=1.0, beta=0.0,
         hermitian: bool = False) -> DeviceArray:
    """alpha A B + beta C (side 'L') or alpha B A + beta C (side 'R'), A symmetric (``hermitian``:
    Hermitian) read from its ``uplo`` triangle. ``c`` (same shape and order as b) is updated in
    place and returned; without it a new array of b's order is returned (beta ignored). A
    Hermitian A must have c's memory order."""
    sd, u = _word(side, ("L", "R"), "symm: side"), _word(uplo, ("L", "U"), "symm: uplo")
    av, a_ptr, lda, a_t = colmajor_view(a, "symm: a")
    bv, b_ptr, ldb, b_t = colmajor_view(b, "symm: b")
    _same_dtype("symm", av, bv)
    _square(av, bv.shape[0] if sd == "L" else bv.shape[1], "symm")
    if c is None:
        o, beta = _output(None, bv.shape, bv.dtype, "C" if b_t else "F", "symm"), 0.0
    else:
        o = _output(c, bv.shape, bv.dtype, None, "symm")
    ov, c_ptr, ldc, c_t = colmajor_view(o, "symm: c")
    if c_t != b_t:
        raise ValueError("symm: c must have the same memory order (C or Fortran) as b")
    if hermitian and a_t != c_t:
        raise ValueError("symm: a Hermitian a must have the same memory order as b and c (its transpose is "
                         "its conjugate, which cuBLAS's hemm cannot read)")
    m, n = bv.shape[::-1] if b_t else bv.shape
    symm_ptr(_FLIP_SIDE[sd] if b_t else sd, _FLIP_UPLO[u] if a_t else u, m, n, alpha, a_ptr, lda, b_ptr, ldb, beta,
             c_ptr, ldc, dtype=av.dtype, hermitian=hermitian, stream=ov.stream)
    return o


def syrk(a: object, c: object = None, *, uplo: str = "L", trans: object = "N", alpha=1.0, beta=0.0) -> DeviceArray:
    """alpha op(A) op(A)^T + beta C on the ``uplo`` triangle of the symmetric n x n C (op(A) is
    n x k: ``trans`` 'N' a is n x k, 'T' a is k x n). ``c`` is updated in place and returned (its
    other triangle untouched); without it a new Fortran-ordered array whose other triangle is
    zero is returned (beta ignored)."""
    u = _word(uplo, ("L", "U"), "syrk: uplo")
    t = trans_op(trans, "syrk", bools=True)
    if t == "C":
        raise ValueError("syrk: trans='C' is herk's; use 'N' or 'T'")
    av, a_ptr, lda, a_t = colmajor_view(a, "syrk: a")
    n, k = av.shape if t == "N" else av.shape[::-1]
    if c is None:
        o, beta = zeros((n, n), av.dtype, order="F"), 0.0
    else:
        o = _output(c, (n, n), av.dtype, None, "syrk")
    ov, c_ptr, ldc, c_t = colmajor_view(o, "syrk: c")
    op_a = "T" if (t != "N") != a_t else "N"
    syrk_ptr(_FLIP_UPLO[u] if c_t else u, op_a, n, k, alpha, a_ptr, lda, beta, c_ptr, ldc, dtype=av.dtype,
             stream=ov.stream)
    return o
