"""Batched GEMM on arrays, one launch per call (grid.z = batch): strided batches of 3-D arrays
and pointer-array batches of lists of equally shaped 2-D arrays (cuBLAS gemmStridedBatched and
gemmBatched). The kernels themselves are the ordinary GEMM kernels; their batch addressing is
``gemm_codegen.batch_operand``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oxicuda.memory.array import DeviceArray, asarray, empty
from oxicuda.memory.dtypes import dtype_name

from . import gemm_codegen as cg
from .gemm_api import _needed_op, _op_flag, as_operand, gemm_arrays
from .gemm_core import gemm_colmajor


def gemm_strided_batched(a: object, b: object, c: object = None, *, alpha=1.0, beta=0.0, transa=False,
                         transb=False, algo: str | None = None, stream=None) -> DeviceArray:
    """``c[i] = alpha * op(a[i]) @ op(b[i]) + beta * c[i]`` for 3-D arrays (axis 0 the batch; a
    batch of 1 in ``a`` or ``b`` broadcasts with stride 0), in one launch. Arguments as ``gemm``."""
    return gemm_arrays(a, b, c, alpha=alpha, beta=beta, transa=transa, transb=transb, algo=algo,
                       stream=stream, batched=True)


def _common(ops: list, what: str) -> tuple[int, bool]:
    lds = {(o.ld, o.stored_t) for o in ops}
    if len(lds) != 1:
        raise ValueError(f"gemm_batched: the matrices of {what} differ in layout {sorted(lds)}; they must share "
                         "one storage order and leading dimension")
    return lds.pop()


def gemm_batched(a: Sequence[object], b: Sequence[object], c: Sequence[object] | None = None, *, alpha=1.0,
                 beta=0.0, transa=False, transb=False, algo: str | None = None, stream=None) -> list[DeviceArray]:
    """``c[i] = alpha * op(a[i]) @ op(b[i]) + beta * c[i]`` for lists of 2-D arrays (each list's
    matrices share shape, dtype and layout), through device arrays of pointers in one launch.
    Returns the list of outputs (new C-ordered arrays when c is None, which requires beta == 0)."""
    a, b = [asarray(x) for x in a], [asarray(x) for x in b]
    if not a or len(a) != len(b):
        raise ValueError(f"gemm_batched: a has {len(a)} matrices and b {len(b)}; need the same nonzero count")
    for name, xs in (("a", a), ("b", b)):
        shapes = {(x.shape, x.dtype) for x in xs}
        if len(shapes) != 1:
            raise ValueError(f"gemm_batched: the matrices of {name} differ in shape/dtype: {sorted(map(str, shapes))}")
    ta, ca = _op_flag(transa, "transa")
    tb, cb = _op_flag(transb, "transb")
    if a[0].dtype != b[0].dtype:
        raise ValueError(f"gemm_batched: a has dtype {dtype_name(a[0].dtype)} and b {dtype_name(b[0].dtype)}")
    dt = dtype_name(a[0].dtype)
    m, ka = (a[0].shape[1], a[0].shape[0]) if ta else a[0].shape
    kb_, n = (b[0].shape[1], b[0].shape[0]) if tb else b[0].shape
    if ka != kb_:
        raise ValueError(f"gemm_batched: op(a) is {m}x{ka} but op(b) is {kb_}x{n}")
    if c is None:
        if beta != 0:
            raise ValueError(f"gemm_batched: beta={beta!r} needs c")
        c = [empty((m, n), a[0].dtype, stream=stream) for _ in a]
    else:
        c = [asarray(x) for x in c]
        if len(c) != len(a) or any(x.shape != (m, n) or x.dtype != a[0].dtype for x in c):
            raise ValueError(f"gemm_batched: c must be {len(a)} arrays of shape {(m, n)} and dtype {dt}")
    ao = [as_operand(x, "a") for x in a]
    bo = [as_operand(x, "b") for x in b]
    co = [as_operand(x, "c") for x in c]
    if any(o.array is not x for o, x in zip(co, c)):
        raise ValueError("gemm_batched: every c must have a unit stride along one axis")
    outs = {x.ptr for x in c}
    if len(outs) != len(c):
        raise ValueError("gemm_batched: two outputs share one pointer; their results would race")
    is_complex = cg.ELEMENT_KINDS[dt].complex if dt in cg.ELEMENT_KINDS else False
    (lda, sa), (ldb, sb), (ldc, sc) = _common(ao, "a"), _common(bo, "b"), _common(co, "c")
    if not sc:
        first, second, rows, cols = (ao, ta, ca, lda, sa), (bo, tb, cb, ldb, sb), m, n
    else:
        first, second, rows, cols = (bo, not tb, cb, ldb, sb), (ao, not ta, ca, lda, sa), n, m
    ops = []
    for operands, t, cj, _, _ in (first, second):
        op = _needed_op(operands[0], t, cj, is_complex)
        if op is None:
            raise ValueError("gemm_batched: a bare conjugate of this storage order needs a copy; pass "
                             "operands in the other order (C vs F) or use gemm per matrix")
        ops.append(op)
    tables = [asarray(np.array([o.ptr for o in ops_], dtype=np.uint64)) for ops_ in (first[0], second[0], co)]
    gemm_colmajor(ops[0], ops[1], rows, cols, ka, alpha, 0, first[3], 0, second[3], beta, 0, ldc, dtype=dt,
                  batch=len(a), a_array_ptr=tables[0].ptr, b_array_ptr=tables[1].ptr, c_array_ptr=tables[2].ptr,
                  stream=stream, algo=algo, _owned=True)
    return c
