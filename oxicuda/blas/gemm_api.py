"""``gemm`` and ``matmul`` on arrays: row-major (C order), column-major (F order) and strided views.

No copies to change layouts: a 2-D view with unit stride along one axis is a column-major matrix
(the array itself, or its transpose for row-major storage) with a leading dimension, and a
row-major result ``C = A @ B`` is computed as the column-major ``C^T = B^T @ A^T`` by swapping the
operands of ``gemm_colmajor``. Only views without a unit stride, and a conjugate that the stored
orientation cannot express, are copied.
"""

from __future__ import annotations

from dataclasses import dataclass

from oxicuda.memory.array import DeviceArray, asarray, empty
from oxicuda.memory.dtypes import dtype_name

from . import gemm_codegen as cg
from .flags import trans_op
from .gemm_core import gemm_colmajor


@dataclass(frozen=True)
class Operand:
    """A matrix X as column-major storage: ``stored_t`` False -> the storage is X (ld along
    axis 1), True -> the storage is X^T (row-major X). ``stride`` is the batch stride in elements."""

    array: DeviceArray
    ptr: int
    ld: int
    stored_t: bool
    stride: int = 0


def _op_flag(value: object, what: str) -> tuple[bool, bool]:
    """(transpose, conjugate) of a Pythonic transa/transb: False/True or 'N'/'T'/'C'."""
    op = trans_op(value, "gemm", bools=True, name=what)
    return op != "N", op == "C"


def as_operand(x: DeviceArray, what: str, batched: bool = False) -> Operand:
    """The column-major description of a 2-D array (3-D when ``batched``: axis 0 is the batch),
    copying only when neither matrix axis has unit stride."""
    nd = 3 if batched else 2
    if x.ndim != nd:
        raise ValueError(f"gemm: {what} has shape {x.shape}; a {nd}-D array is needed")
    es = x.itemsize
    rows, cols = x.shape[-2:]
    s0, s1 = x.strides[-2:]
    bstride = 0
    if batched:
        if x.strides[0] % es:
            raise ValueError(f"gemm: {what} batch stride {x.strides[0]} bytes is not a multiple of {es}")
        bstride = x.strides[0] // es if x.shape[0] > 1 else 0
        if bstride < 0:
            x = x.copy()
            return as_operand(x, what, batched)
    col_ok = (s0 == es or rows <= 1) and s1 % es == 0 and (s1 // es >= max(1, rows) or cols <= 1)
    row_ok = (s1 == es or cols <= 1) and s0 % es == 0 and (s0 // es >= max(1, cols) or rows <= 1)
    if col_ok and not (row_ok and x.is_c_contiguous and not x.is_f_contiguous):
        return Operand(x, x.ptr, max(1, rows, s1 // es if cols > 1 else 1), False, bstride)
    if row_ok:
        return Operand(x, x.ptr, max(1, cols, s0 // es if rows > 1 else 1), True, bstride)
    copy = x.copy(order="C")
    return as_operand(copy, what, batched)


def _needed_op(operand: Operand, transpose: bool, conj: bool, is_complex: bool) -> str | None:
    """The gemm_colmajor op that turns the operand's storage into X with (transpose, conj)
    applied, or None when that would be a conjugate without a transpose."""
    conj = conj and is_complex
    t = transpose != operand.stored_t
    if conj and not t:
        return None
    return "C" if conj else ("T" if t else "N")


def _flipped(operand: Operand, what: str, batched: bool) -> Operand:
    """The operand copied into the other storage orientation (for a bare conjugate)."""
    x = operand.array
    if batched:
        x = x.transpose(0, 2, 1).copy(order="C").transpose(0, 2, 1) if operand.stored_t else x.copy(order="C")
    else:
        x = x.copy(order="F") if operand.stored_t else x.copy(order="C")
    out = as_operand(x, what, batched)
    if out.stored_t == operand.stored_t:
        raise AssertionError(f"gemm: could not re-layout {what} for a conjugate")
    return out


@dataclass(frozen=True)
class GemmLayoutPlan:
    """How one signature of array operands (shapes, strides, dtypes, transposes) maps onto
    ``gemm_colmajor`` when no operand needs a copy: ``swap`` True runs C^T = op(B)^T op(A)^T
    (row-major C), so B's pointer goes first."""

    swap: bool
    op1: str
    op2: str
    rows: int
    cols: int
    k: int
    ld1: int
    ld2: int
    ldc: int
    stride1: int
    stride2: int
    stride_c: int
    batch: int
    dtype: str
    out_shape: tuple


#: Layout plans by operand signature; cleared whole at the limit.
LAYOUT_PLAN_LIMIT = 4096
_layout_plans: dict[tuple, GemmLayoutPlan] = {}
_FLAG_TYPES = (bool, str)


def clear_layout_plan_cache() -> None:
    """Forget the cached array-layout plans of ``gemm``/``gemm_strided_batched``."""
    _layout_plans.clear()


def gemm_arrays(a: object, b: object, c: object = None, *, alpha=1.0, beta=0.0, transa=False, transb=False,
                algo: str | None = None, stream=None, batched: bool = False) -> DeviceArray:
    """The shared body of ``gemm`` (2-D) and ``gemm_strided_batched`` (3-D, axis 0 the batch)."""
    key = None
    # The hot path: DeviceArrays whose shapes, strides and dtypes, with these transposes, were
    # mapped before without copies reuse that mapping; the per-array facts that the signature
    # does not fix (pointers, read-only) are checked here and in gemm_colmajor.
    if (type(a) is DeviceArray and type(b) is DeviceArray and (c is None or type(c) is DeviceArray)
            and type(transa) in _FLAG_TYPES and type(transb) in _FLAG_TYPES):
        try:
            key = (a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype,
                   None if c is None else (c.shape, c.strides, c.dtype), transa, transb, algo, batched)
            plan = _layout_plans.get(key)
        except TypeError:  # an unhashable algo: the full path says what is wrong
            key = plan = None
        if plan is not None:
            if c is None:
                if not (type(beta) is float and beta == 0.0):
                    return _gemm_arrays_checked(a, b, c, alpha, beta, transa, transb, algo, stream, batched, None)
                c = empty(plan.out_shape, a.dtype, stream=stream if stream is not None else a.stream or None)
            elif c.readonly:
                raise ValueError("gemm: c is read-only")
            p1, p2 = (b.ptr, a.ptr) if plan.swap else (a.ptr, b.ptr)
            gemm_colmajor(plan.op1, plan.op2, plan.rows, plan.cols, plan.k, alpha, p1, plan.ld1, p2, plan.ld2, beta,
                          c.ptr, plan.ldc, dtype=plan.dtype, batch=plan.batch, stride_a=plan.stride1,
                          stride_b=plan.stride2, stride_c=plan.stride_c, stream=stream, algo=algo, _owned=True,
                          _swapped=plan.swap)
            return c
    return _gemm_arrays_checked(a, b, c, alpha, beta, transa, transb, algo, stream, batched, key)


def _gemm_arrays_checked(a, b, c, alpha, beta, transa, transb, algo, stream, batched: bool,
                         key: tuple | None) -> DeviceArray:
    """Every check of ``gemm_arrays``, the operand mapping (copying where a layout needs it),
    and the launch; stores the mapping under ``key`` when no operand was copied."""
    a, b = asarray(a), asarray(b)
    ta, ca = _op_flag(transa, "transa")
    tb, cb = _op_flag(transb, "transb")
    if a.dtype != b.dtype:
        raise TypeError(f"gemm: a has dtype {dtype_name(a.dtype)} and b has {dtype_name(b.dtype)}; they must match")
    dt = dtype_name(a.dtype)
    if dt not in cg.ELEMENT_KINDS:
        raise TypeError(f"gemm: dtype {dt} is not supported; allowed: {cg.GEMM_DTYPES}")
    nd = 3 if batched else 2
    for name, x in (("a", a), ("b", b)):
        if x.ndim != nd:
            raise ValueError(f"gemm: {name} has shape {x.shape}; a {nd}-D array is needed")
    m, ka = (a.shape[-1], a.shape[-2]) if ta else (a.shape[-2], a.shape[-1])
    kb_, n = (b.shape[-1], b.shape[-2]) if tb else (b.shape[-2], b.shape[-1])
    if ka != kb_:
        raise ValueError(f"gemm: a has shape {a.shape} and b has shape {b.shape} (transa={transa}, "
                         f"transb={transb}); op(a) has {ka} columns but op(b) has {kb_} rows")
    batch = 1
    if batched:
        batch = max(a.shape[0], b.shape[0])
        for name, x in (("a", a), ("b", b)):
            if x.shape[0] not in (1, batch):
                raise ValueError(f"gemm: {name} has batch {x.shape[0]}; allowed 1 or {batch} "
                                 f"(a has shape {a.shape}, b {b.shape})")
    out_shape = ((batch,) if batched else ()) + (m, n)
    if c is None:
        if beta != 0:
            raise ValueError(f"gemm: beta={beta!r} needs an input c; pass c or beta=0")
        c = empty(out_shape, a.dtype, stream=stream if stream is not None else a.stream or None)
    else:
        c = asarray(c)
        if c.shape != out_shape:
            raise ValueError(f"gemm: c has shape {c.shape}; op(a) @ op(b) has shape {out_shape}")
        if c.dtype != a.dtype:
            raise TypeError(f"gemm: c has dtype {dtype_name(c.dtype)}; it must be {dt} like a and b")
        if c.readonly:
            raise ValueError("gemm: c is read-only")
    co = as_operand(c, "c", batched)
    if co.array is not c:
        raise ValueError(f"gemm: c (strides {c.strides}) has no unit stride along either matrix axis; "
                         "pass a C- or F-ordered output")
    if batched and c.shape[0] > 1 and co.stride == 0:
        raise ValueError("gemm: c has batch stride 0; batch entries of the output would overlap")
    ao, bo = as_operand(a, "a", batched), as_operand(b, "b", batched)
    is_complex = cg.ELEMENT_KINDS[dt].complex
    # column-major C: C = op(A) op(B); row-major C: C^T = op(B)^T op(A)^T (operands swapped)
    if not co.stored_t:
        first, second = (ao, ta, ca, "a"), (bo, tb, cb, "b")
        rows, cols = m, n
    else:
        first, second = (bo, not tb, cb, "b"), (ao, not ta, ca, "a")
        rows, cols = n, m
    ops = []
    resolved = []
    copied = ao.array is not a or bo.array is not b
    for operand, t, cj, name in (first, second):
        op = _needed_op(operand, t, cj, is_complex)
        if op is None:
            operand = _flipped(operand, name, batched)
            op = _needed_op(operand, t, cj, is_complex)
            copied = True
        ops.append(op)
        resolved.append(operand)
    (o1, o2), (op1, op2) = resolved, ops
    gemm_colmajor(op1, op2, rows, cols, ka, alpha, o1.ptr, o1.ld, o2.ptr, o2.ld, beta, co.ptr, co.ld, dtype=dt,
                  batch=batch, stride_a=o1.stride, stride_b=o2.stride, stride_c=co.stride,
                  stream=stream, algo=algo, _owned=True, _swapped=co.stored_t)
    if key is not None and not copied:
        if len(_layout_plans) >= LAYOUT_PLAN_LIMIT:
            _layout_plans.clear()
        _layout_plans[key] = GemmLayoutPlan(co.stored_t, op1, op2, rows, cols, ka, o1.ld, o2.ld, co.ld, o1.stride,
                                            o2.stride, co.stride, batch, dt, out_shape)
    return c




def gemm(a: object, b: object, c: object = None, *, alpha=1.0, beta=0.0, transa=False, transb=False,
         algo: str | None = None, stream=None) -> DeviceArray:
    """``alpha * op(a) @ op(b) + beta * c`` for 2-D arrays; returns c (a new C-ordered
    DeviceArray when c is None, which requires beta == 0).

    ``a``, ``b``, ``c``: DeviceArrays or anything ``oxicuda.asarray`` takes (zero copy for
    ``__cuda_array_interface__``/DLPack producers), C or F order or strided views with a unit
    stride along one axis; dtype float32, float64, float16, bfloat16, complex64 or complex128,
    the same for all. ``transa``/``transb``: False/True or "N"/"T"/"C" (conjugate transpose).
    ``algo``: "naive", "tiled", "split_k", "gemv", "tensor_core", "wgmma", "dmma" (float64 on tensor
    cores, sm_80+) or None (dispatch).
    Raises ValueError (shapes, dtypes, overlapping output) before touching the device."""
    return gemm_arrays(a, b, c, alpha=alpha, beta=beta, transa=transa, transb=transb, algo=algo, stream=stream)


def matmul(a: object, b: object, *, algo: str | None = None, stream=None) -> DeviceArray:
    """``a @ b`` as a new DeviceArray: 2-D @ 2-D, 1-D operands promoted like numpy (the added
    axis removed from the result), 3-D @ 3-D (or 3-D with 2-D) as one strided-batched launch."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: operands must have at least 1 dimension; got shapes {a.shape} and {b.shape}")
    if a.ndim > 3 or b.ndim > 3:
        raise ValueError(f"matmul: at most 3-D operands are supported; got shapes {a.shape} and {b.shape}")
    squeeze_a, squeeze_b = a.ndim == 1, b.ndim == 1
    if squeeze_a:
        a = a.reshape(1, a.shape[0])
    if squeeze_b:
        b = b.reshape(b.shape[0], 1)
    if a.ndim == 2 and b.ndim == 2:
        out = gemm(a, b, algo=algo, stream=stream)
    else:
        if a.ndim == 2:
            a = a.reshape(1, *a.shape)
        if b.ndim == 2:
            b = b.reshape(1, *b.shape)
        out = gemm_arrays(a, b, algo=algo, stream=stream, batched=True)
    if squeeze_a:
        out = out.reshape(*out.shape[:-2], out.shape[-1])
    if squeeze_b:
        out = out.reshape(*out.shape[:-1])
    return out
