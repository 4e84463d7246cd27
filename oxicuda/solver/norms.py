"""numpy.linalg.norm on the device: every ord, ``axis`` an int or a pair, ``keepdims``.

The reductions run in ``solver_norm`` (kernels/norm_kernels.py) over rows of a C-ordered copy
whose reduced axes are the last ones (the strided copy kernel makes it); the matrix 2-norms and
the nuclear norm take the singular values of the device SVD (gesvdj). ``reduce_rows`` is the
engine, also used by oxicuda.sparse.linalg.norm over CSR/CSC segments. Host work: sizes, the
choice of kernels, and the result's shape.
"""

from __future__ import annotations

import operator

import numpy as np

from ..driver.facts import device_facts
from ..memory.array import DeviceArray
from ..memory.workspace import workspace
from ..ptx.launch_plan import KernelStep, PlanCache
from .kernels.norm_kernels import NORM_THREADS, NormSpec

try:
    from numpy.exceptions import AxisError
except ImportError:  # numpy < 1.25
    from numpy import AxisError  # type: ignore[attr-defined,no-redef]

PLANS = PlanCache("solver.norm")
_REAL = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}
#: groups of work (rows x chunks) per SM a long reduction is split into; chunk at least this
#: many elements per lane
_UNITS_PER_SM, _ITEMS_PER_LANE = 8, 16


def _launch(spec: NormSpec, units: int, args: tuple, stream: object) -> None:
    per_cta = NORM_THREADS // spec.group
    grid = (-(-units // per_cta),)
    facts = device_facts()
    step = PLANS.get_or_build((facts.ordinal, spec, grid),
                              lambda: KernelStep(spec, grid, (NORM_THREADS,), bind=None))
    step.launch(args, stream)


def reduce_rows(x: DeviceArray, rows: int, fn: str, op: str, fin: str = "none", *, p: float = 0.0,
                offsets: DeviceArray | None = None, full: int = 0, out_dtype: str | None = None,
                stream: object = 0) -> DeviceArray:
    """``out[r] = fin(op_j fn(x_r[j]))`` for the ``rows`` rows of the flat C-contiguous ``x``:
    uniform rows of ``x.size // rows`` elements, or the segments ``offsets[r]:offsets[r + 1]``
    (int32). Returns a (rows,) array of ``out_dtype`` (default: x's real dtype). ``full``: with
    segments and op max/min, a segment shorter than ``full`` also folds in a 0. The caller
    checks that max/min rows are not empty."""
    dt = x.dtype.name
    out_dtype = out_dtype or _REAL[dt]
    out = DeviceArray((rows,), out_dtype)
    if rows == 0:
        return out
    seg = offsets is not None
    length = 0 if seg else x.size // rows
    avg = x.size / rows
    group = 256 if avg > 1024 else 32
    units_wanted = max(1, device_facts().sm_count * _UNITS_PER_SM // rows)
    chunks = max(1, min(int(avg // (group * _ITEMS_PER_LANE)), units_wanted, 65535))
    off_ptr = offsets.ptr if seg else 0
    base = {"dtype": dt, "fn": fn, "op": op, "group": group, "segmented": seg}
    if chunks == 1:
        _launch(NormSpec(arch=device_facts().arch, fin=fin, out=out_dtype, **base), rows,
                (x.ptr, off_ptr, out.ptr, rows, 1, length, full, float(p)), stream)
        return out
    partial = workspace((np.float64, rows * chunks), stream)
    _launch(NormSpec(arch=device_facts().arch, fin="none", out="float64", **base), rows * chunks,
            (x.ptr, off_ptr, partial.ptr, rows, chunks, length, full, float(p)), stream)
    second = NormSpec(arch=device_facts().arch, dtype="float64", fn="id", op=op, fin=fin, out=out_dtype,
                      group=32 if chunks <= 1024 else 256)
    _launch(second, rows, (partial.ptr, 0, out.ptr, rows, 1, chunks, 0, float(p)), stream)
    return out


def _prepare(x: object) -> tuple[DeviceArray, np.dtype]:
    """x on the device in a dtype the kernels read, and the dtype of the result: numpy's
    (integers and bools as float64; float16 and bfloat16 computed from float32 and returned in
    their own dtype)."""
    from ..memory.array import asarray

    a = x if isinstance(x, DeviceArray) else asarray(np.asarray(x))
    dt = a.dtype
    if dt.name in _REAL:
        return a, np.dtype(_REAL[dt.name])
    if dt.kind in "iub":
        return a.astype(np.float64), np.dtype(np.float64)
    if dt.kind == "f" or dt.name == "bfloat16":
        return a.astype(np.float32), dt
    raise TypeError(f"norm: x has dtype {dt}; numeric dtypes are allowed")


def _axes(axis: object, nd: int) -> tuple[int, ...]:
    if isinstance(axis, tuple):
        try:
            ax = tuple(operator.index(v) for v in axis)
        except TypeError:
            raise TypeError(f"norm: axis={axis!r}; 'axis' must be None, an integer or a tuple of integers") from None
    else:
        try:
            ax = (operator.index(axis),)
        except TypeError:
            raise TypeError(f"norm: axis={axis!r}; 'axis' must be None, an integer or a tuple of integers") from None
    for v in ax:
        if not -nd <= v < nd:
            raise AxisError(v, nd)
    return tuple(v % nd for v in ax)


def _vector_kernel(ord: object) -> tuple[str, str, str, float]:
    """(fn, op, fin, p) of the vector norm of order ``ord`` (numpy's table)."""
    if isinstance(ord, str):
        raise ValueError(f"norm: ord={ord!r}; invalid norm order for vectors")  # noqa: TRY004 (numpy's type)
    if ord is None or ord == 2:
        return "sq", "sum", "sqrt", 2.0
    try:
        o = float(ord)
    except (TypeError, ValueError):
        raise ValueError(f"norm: ord={ord!r}; invalid norm order for vectors") from None
    if o == np.inf:
        return "abs", "max", "none", o
    if o == -np.inf:
        return "abs", "min", "none", o
    if o == 0:
        return "nonzero", "sum", "none", o
    if o == 1:
        return "abs", "sum", "none", o
    if np.isnan(o):
        raise ValueError(f"norm: ord={ord!r}; invalid norm order for vectors")
    return "pow", "sum", "root", o


def _moved(a: DeviceArray, last: tuple[int, ...]) -> tuple[DeviceArray, tuple[int, ...]]:
    """A C-ordered copy of ``a`` with the axes ``last`` moved to the end, and the shape of the
    axes kept."""
    keep = tuple(i for i in range(a.ndim) if i not in last)
    t = a.transpose(keep + last)
    t = t if t.is_c_contiguous else t.copy()
    return t.reshape(-1), tuple(a.shape[i] for i in keep)


def _check_nonempty(count: int, op: str, what: str) -> None:
    if count == 0 and op != "sum":
        raise ValueError(f"norm: {what} reduces an empty axis with {op}; zero-size array to reduction "
                         "operation which has no identity (numpy raises too)")


def _shape(res: DeviceArray, kept: tuple[int, ...], nd: int, axes: tuple[int, ...], keepdims: bool,
           final: np.dtype) -> DeviceArray:
    if keepdims:
        kept_iter = iter(kept)
        shape = tuple(1 if i in axes else next(kept_iter) for i in range(nd))
    else:
        shape = kept
    res = res.reshape(shape)
    return res if res.dtype == final else res.astype(final)


def norm(x: object, ord: object = None, axis: object = None, keepdims: bool = False) -> DeviceArray:
    """The matrix or vector norm of x (numpy.linalg.norm / cupy.linalg.norm), as a device array.

    Vector norms (``axis`` an int, or None with a 1-D x): ord None/2, inf, -inf, 0 (the count
    of nonzeros), 1, and any other number p (sum |x|^p)^(1/p). Matrix norms (``axis`` a pair, or
    None with a 2-D x): None/'fro', 'nuc', 1, -1, 2, -2, inf, -inf (2, -2 and 'nuc' from the
    device SVD). ``axis=None`` with ``ord=None`` is the 2-norm of all elements, any ndim.
    Integer and bool input is computed as float64; the result has x's real dtype (float16 and
    bfloat16 are reduced in float64 and returned in their dtype). Raises ValueError for an
    invalid ord, duplicate axes, or an ndim the ord cannot take; AxisError (a ValueError) for
    an axis out of range; all before any launch."""
    a, final = _prepare(x)
    nd = a.ndim
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            flat = a if a.is_c_contiguous else a.copy()
            res = reduce_rows(flat.reshape(-1), 1, "sq", "sum", "sqrt")
            return _shape(res, (), nd, tuple(range(nd)), keepdims, final)
        axes = tuple(range(nd))
    else:
        axes = _axes(axis, nd)
    if len(axes) == 1:
        fn, op, fin, p = _vector_kernel(ord)
        flat, kept = _moved(a, axes)
        count = a.shape[axes[0]]
        _check_nonempty(count, op, f"ord={ord!r} over axis {axes[0]}")
        rows = int(np.prod(kept, dtype=np.int64))
        res = reduce_rows(flat, rows, fn, op, fin, p=p)
        return _shape(res, kept, nd, axes, keepdims, final)
    if len(axes) == 2:
        r, c = axes
        if r == c:
            raise ValueError(f"norm: axis={axis!r}; duplicate axes given")
        return _shape(_matrix_norm(a, ord, r, c), tuple(a.shape[i] for i in range(nd) if i not in axes), nd,
                      axes, keepdims, final)
    raise ValueError(f"norm: x has {nd} dimensions and axis={axis!r}; improper number of dimensions to norm "
                     "(one axis for a vector norm, two for a matrix norm)")


def _matrix_norm(a: DeviceArray, ord: object, r: int, c: int) -> DeviceArray:
    """The flat (batch,) result of a matrix norm over the axes (r, c)."""
    m, n = a.shape[r], a.shape[c]
    batch = int(np.prod([a.shape[i] for i in range(a.ndim) if i not in (r, c)], dtype=np.int64))
    real = _REAL[a.dtype.name]
    if ord in (None, "fro", "f"):
        flat, _ = _moved(a, (r, c))
        return reduce_rows(flat, batch, "sq", "sum", "sqrt")
    if ord in (2, -2, "nuc"):
        from .api import svd

        keep = tuple(i for i in range(a.ndim) if i not in (r, c))
        t = a.transpose(keep + (r, c))
        k = min(m, n)
        if k == 0:
            if ord != "nuc":
                raise ValueError(f"norm: ord={ord!r} of an empty ({m}, {n}) matrix; zero-size array to "
                                 "reduction operation which has no identity (numpy raises too)")
            out = DeviceArray((batch,), real)
            out.fill(0)
            return out
        s = svd(t.reshape(batch, m, n) if t.is_c_contiguous else t.copy().reshape(batch, m, n), compute_uv=False)
        if ord == "nuc":
            return reduce_rows(s.reshape(-1), batch, "id", "sum")
        return (s[:, 0] if ord == 2 else s[:, k - 1]).copy()
    if ord in (1, -1, np.inf, -np.inf) and not isinstance(ord, str):
        op = "max" if ord > 0 else "min"
        # ord +-1: extreme column sum (sum over the rows axis r); +-inf: extreme row sum
        summed, other = ((c, r), n) if ord in (1, -1) else ((r, c), m)
        _check_nonempty(other, op, f"ord={ord!r}")
        flat, _ = _moved(a, summed)
        sums = reduce_rows(flat, batch * other, "abs", "sum", out_dtype="float64")
        return reduce_rows(sums, batch, "id", op, out_dtype=real)
    raise ValueError(f"norm: ord={ord!r}; invalid norm order for matrices (allowed None, 'fro', 'nuc', 1, -1, "
                     "2, -2, inf, -inf)")
