"""The one GEMM problem type: what dispatch, every family's ``plan`` and the call-plan cache read.

A ``GemmProblem`` is one column-major call's signature without pointer values, scalars or the
stream: sizes, dtypes, compute type, transposes, leading dimensions, batch and batch strides, the
pointer alignments the call guarantees and the device arch. It is hashable, so plans are cached
by it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import gemm_codegen as cg
from .flags import trans_op

__all__ = ["GemmProblem", "column_major_problem"]


@dataclass(frozen=True)
class GemmProblem:
    """One column-major GEMM call. ``transa``/``transb`` are "N", "T" or "C" ("C" only for
    complex dtypes; real "C" is normalized to "T"). ``align_a``/``align_b``/``align_c``: the
    largest power of two (<= 16) dividing the operand's pointer, leading dimension and batch
    stride in bytes; ``alignment`` is their minimum. ``stride_*``: batch strides in elements."""

    m: int
    n: int
    k: int
    dtype: str
    compute: str = "f32"
    transa: str = "N"
    transb: str = "N"
    lda: int = 1
    ldb: int = 1
    ldc: int = 1
    batch: int = 1
    pointer_array: bool = False
    device_scalars: bool = False
    align_a: int = 16
    align_b: int = 16
    align_c: int = 16
    arch: str = "sm_86"
    c_dtype: str = ""
    stride_a: int = 0
    stride_b: int = 0
    stride_c: int = 0

    @property
    def alignment(self) -> int:
        return min(self.align_a, self.align_b, self.align_c)

    @property
    def mixed(self) -> bool:
        """True when C's type differs from A's and B's (float32 C over float16/bfloat16 data)."""
        return bool(self.c_dtype) and self.c_dtype != self.dtype

    @property
    def c_kind(self) -> cg.ElementKind:
        return cg.kind_of(self.c_dtype or self.dtype)

    @property
    def a_transposed(self) -> bool:
        """op(A) is A^T (or A^H): A is stored k x m, contiguous along K."""
        return self.transa != "N"

    @property
    def b_transposed(self) -> bool:
        """op(B) is B^T (or B^H): B is stored n x k, contiguous along N."""
        return self.transb != "N"

    @property
    def sm(self) -> int:
        """The arch number: 86 for sm_86, 90 for sm_90a."""
        return int(self.arch[3:].rstrip("a"))


def column_major_problem(m: int, n: int, k: int, dtype: object = "float16", compute: str = "f32",
                         transa: object = False, transb: object = False, lda: int = 1, ldb: int = 1,
                         ldc: int = 1, alignment: int = 16, arch: str = "sm_86",
                         c_dtype: str = "") -> GemmProblem:
    """A batch-1 GemmProblem from the tensor-core families' short form (transposes as bools or
    "N"/"T"/"C", one ``alignment`` for all three operands), checked: ValueError naming the field
    for a negative size, an unknown compute type or transpose, or a C dtype that is not the data's
    dtype or float32 over float16/bfloat16 data."""
    from oxicuda.memory.dtypes import dtype_name, normalize_dtype

    dt = dtype_name(normalize_dtype(dtype))
    if c_dtype not in ("", dt) and not (c_dtype == "float32" and dt in ("float16", "bfloat16")):
        raise ValueError(f"GemmProblem: c_dtype={c_dtype!r} with dtype {dt}; allowed '' or 'float32' over "
                         "float16/bfloat16 data")
    ta = trans_op(transa, "GemmProblem", bools=True, name="transa")
    tb = trans_op(transb, "GemmProblem", bools=True, name="transb")
    if not cg.kind_of(dt).complex:
        ta, tb = ("T" if ta == "C" else ta), ("T" if tb == "C" else tb)
    values = {"m": m, "n": n, "k": k, "lda": lda, "ldb": ldb, "ldc": ldc, "alignment": alignment}
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"GemmProblem: {name}={v!r}; a non-negative int")
    if compute not in ("f32", "tf32", "f16", "f64"):
        raise ValueError(f"GemmProblem: compute={compute!r}; allowed 'f32', 'tf32', 'f16', 'f64'")
    al = int(alignment)
    return GemmProblem(int(m), int(n), int(k), dt, compute, ta, tb, int(lda), int(ldb), int(ldc),
                       align_a=al, align_b=al, align_c=al, arch=arch, c_dtype="" if c_dtype == dt else c_dtype)
