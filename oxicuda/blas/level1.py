"""BLAS level 1: axpy, scal, copy, swap, rot, dot/dotu/dotc, nrm2, asum, iamax, iamin.

Two surfaces:
- pointer level, cuBLAS semantics (``*_ptr``): sizes, device pointers as ints, increments
  (negative ones where BLAS allows them: axpy, copy, swap, rot, dot), scalars as values or device
  pointers (``alpha_ptr``), results written to a device pointer or a host address
  (``result_on_host``). The compat layers call these.
- Pythonic (``axpy(alpha, x, y)``, ``dot(x, y)``, ...): 1-D device arrays (DeviceArray, or anything
  with ``__cuda_array_interface__``/DLPack), any element stride; reductions return numpy scalars,
  or write into ``out`` (a device array) when given.

Increments <= 0 make scal a no-op and nrm2/asum/iamax/iamin return 0 (reference BLAS).
iamax/iamin compare |re| + |im| and return the smallest 1-based index of the extreme (0 for
empty input); elements that are NaN are never chosen.
"""

from __future__ import annotations

import numpy as np

from ..driver.facts import device_facts
from ..memory.array import DeviceArray, asarray
from ..memory.interop import is_cuda_dlpack_producer
from ..memory.workspace import workspace
from ..ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from . import operands as op
from .level1_kernels import BLOCK, Blas1MapSpec, Blas1ReduceSpec, real_type

#: PROVISIONAL (not measured on the H200): partial-reduction blocks per SM.
REDUCE_BLOCKS_PER_SM = 4
#: launch plans of the map (axpy, scal, copy, swap, rot) and reduction kernels, by call signature
PLANS = PlanCache("blas1")

__all__ = [
    "PLANS",
    "asum",
    "asum_ptr",
    "axpy",
    "axpy_ptr",
    "copy",
    "copy_ptr",
    "dot",
    "dot_ptr",
    "dotc",
    "dotu",
    "iamax",
    "iamax_ptr",
    "iamin",
    "iamin_ptr",
    "nrm2",
    "nrm2_ptr",
    "rot",
    "rot_ptr",
    "scal",
    "scal_ptr",
    "swap",
    "swap_ptr",
]


# -- pointer level ------------------------------------------------------------------------------
def _map(opname: str, what: str, n: object, x_ptr: object, incx: object, y_ptr: object, incy: object,
         a: object, a_ptr: object, b: object, b_ptr: object, dtype: object, stream: object,
         scalar_real: bool = False) -> None:
    dt = op.dtype_name(dtype, what)
    n = op.check_int(n, f"{what}: n")
    incx = op.check_int(incx, f"{what}: incx")
    x = op.check_pointer(x_ptr, f"{what}: x")
    uses_y = opname != "scal"
    incy = op.check_int(incy, f"{what}: incy") if uses_y else 0
    y = op.check_pointer(y_ptr, f"{what}: y") if uses_y else 0
    a_re, a_im = op.scalar_parts(a, f"{what}: alpha")
    b_re, b_im = op.scalar_parts(b, f"{what}: second scalar")
    a_ptr = op.check_pointer(a_ptr, f"{what}: alpha pointer")
    b_ptr = op.check_pointer(b_ptr, f"{what}: scalar pointer")
    if n <= 0 or (opname == "scal" and incx <= 0):
        return
    es = op.itemsize(dt)
    op.check_span(x, op.vector_span(n, incx, es), f"{what}: x (n={n}, incx={incx})")
    if uses_y:
        op.check_span(y, op.vector_span(n, incy, es), f"{what}: y (n={n}, incy={incy})")
    facts = device_facts()
    key = ("map", facts.ordinal, opname, dt, scalar_real, n)
    plan = PLANS.get(key)  # a hit builds no spec
    if plan is None:
        spec = Blas1MapSpec(arch=facts.arch, op=opname, dtype=dt, scalar_real=scalar_real)
        plan = PLANS.get_or_build(key, lambda: _map_plan(spec, n))
    plan.run((op.vector_start(x, n, incx, es), op.vector_start(y, n, incy, es) if uses_y else 0),
             (incx, incy, a_re, a_im, a_ptr, b_re, b_im, b_ptr), op.stream_of(stream))


def _map_plan(spec: Blas1MapSpec, n: int) -> LaunchPlan:
    """One thread per element: pointers (x, y), scalars (incx, incy, then the two scalars'
    re, im, device pointer)."""
    return LaunchPlan(f"{spec.kernel_name()}[{n}]", [KernelStep(
        spec, (n + BLOCK - 1) // BLOCK, BLOCK, lambda p, s, ws: (n, p[0], s[0], p[1], s[1], *s[2:]))])


def axpy_ptr(n: int, alpha: complex, x_ptr: int, incx: int, y_ptr: int, incy: int, *,
             dtype: object, stream: object = None, alpha_ptr: int = 0) -> None:
    """y[i] += alpha * x[i] for i < n (``alpha_ptr`` nonzero: alpha is read from the device)."""
    _map("axpy", "axpy", n, x_ptr, incx, y_ptr, incy, alpha, alpha_ptr, 0.0, 0, dtype, stream)


def scal_ptr(n: int, alpha: complex, x_ptr: int, incx: int, *, dtype: object,
             stream: object = None, alpha_ptr: int = 0, alpha_real: bool = False) -> None:
    """x[i] *= alpha. ``alpha_real``: a complex vector scaled by a real alpha (csscal/zdscal;
    ``alpha_ptr`` then points to one real number)."""
    _map("scal", "scal", n, x_ptr, incx, 0, 0, alpha, alpha_ptr, 0.0, 0, dtype, stream,
         scalar_real=alpha_real and op.dtype_name(dtype, "scal").startswith("complex"))


def copy_ptr(n: int, x_ptr: int, incx: int, y_ptr: int, incy: int, *, dtype: object,
             stream: object = None) -> None:
    """y[i] = x[i]."""
    _map("copy", "copy", n, x_ptr, incx, y_ptr, incy, 0.0, 0, 0.0, 0, dtype, stream)


def swap_ptr(n: int, x_ptr: int, incx: int, y_ptr: int, incy: int, *, dtype: object,
             stream: object = None) -> None:
    """Exchange x[i] and y[i]."""
    _map("swap", "swap", n, x_ptr, incx, y_ptr, incy, 0.0, 0, 0.0, 0, dtype, stream)


def rot_ptr(n: int, x_ptr: int, incx: int, y_ptr: int, incy: int, c: float, s: complex, *,
            dtype: object, stream: object = None, c_ptr: int = 0, s_ptr: int = 0,
            s_real: bool = True) -> None:
    """Plane rotation: x' = c x + s y, y' = c y - conj(s) x (c real). ``s_real`` False: complex s
    (crot/zrot); True: real s (srot/drot/csrot/zdrot)."""
    dt = op.dtype_name(dtype, "rot")
    if not isinstance(c, (int, float, np.floating, np.integer)) or isinstance(c, bool):
        raise TypeError(f"rot: c={c!r}; a real number is required")
    if s_real and isinstance(s, (complex, np.complexfloating)) and complex(s).imag != 0:
        raise ValueError(f"rot: s={s!r} has an imaginary part but s_real=True")
    _map("rot", "rot", n, x_ptr, incx, y_ptr, incy, c, c_ptr, s, s_ptr, dt, stream,
         scalar_real=s_real and dt.startswith("complex"))


def _reduce(kind: str, what: str, n: object, x_ptr: object, incx: object, y_ptr: object, incy: object,
            result_ptr: object, dtype: object, stream: object, on_host: bool) -> None:
    dt = op.dtype_name(dtype, what)
    n = op.check_int(n, f"{what}: n")
    incx = op.check_int(incx, f"{what}: incx")
    x = op.check_pointer(x_ptr, f"{what}: x")
    uses_y = kind in ("dotu", "dotc")
    incy = op.check_int(incy, f"{what}: incy") if uses_y else 0
    y = op.check_pointer(y_ptr, f"{what}: y") if uses_y else 0
    result = op.check_pointer(result_ptr, f"{what}: result")
    if result == 0:
        raise ValueError(f"{what}: the result pointer is NULL")
    rt_size = 4 if real_type(dt) == "f32" else 8
    out_bytes = 4 if kind in ("iamax", "iamin") else (op.itemsize(dt) if uses_y else rt_size)
    s = op.stream_of(stream)
    es = op.itemsize(dt)
    if not on_host:
        op.check_span(result, out_bytes, f"{what}: result")
    if n <= 0 or (not uses_y and incx <= 0):
        op.zero_result(result, out_bytes, on_host, s)
        return
    op.check_span(x, op.vector_span(n, incx, es), f"{what}: x (n={n}, incx={incx})")
    if uses_y:
        op.check_span(y, op.vector_span(n, incy, es), f"{what}: y (n={n}, incy={incy})")
    facts = device_facts()
    key = ("reduce", facts.ordinal, kind, dt, n)
    plan = PLANS.get(key)
    if plan is None:
        plan = PLANS.get_or_build(key, lambda: _reduce_plan(kind, dt, n, facts.arch, facts.sm_count))
    xs, ys = op.vector_start(x, n, incx, es), op.vector_start(y, n, incy, es) if uses_y else 0
    with op.workspace_sequence:
        out = workspace(16, s).ptr if on_host else result
        plan.run((xs, ys, out), (incx, incy), s)
        if on_host:
            op.copy_to_host(result, out, out_bytes, s)


def _reduce_plan(kind: str, dt: str, n: int, arch: str, sms: int) -> LaunchPlan:
    """A partial pass over ``blocks`` CTAs into the workspace, then one CTA folding the partials
    into the result; nrm2 in float64 first finds max |x| (its own pair of passes) to scale by.
    Pointers (x, y, result); scalars (incx, incy). The workspace holds ``2 * blocks`` float64
    partials, then the 16-byte auxiliary value (nrm2's scale)."""
    blocks = max(1, min((n + BLOCK - 1) // BLOCK, REDUCE_BLOCKS_PER_SM * sms))
    aux_off = 16 * blocks
    passes = [kind]
    if kind == "nrm2":
        passes = ["nrm2_sq"] if real_type(dt) == "f32" else ["amax_abs", "nrm2_scaled"]
    steps = []
    for p in passes:
        to_aux = p == "amax_abs"
        steps.append(KernelStep(Blas1ReduceSpec(arch=arch, op=p, dtype=dt, stage="partial"), blocks, BLOCK,
                                lambda q, s, ws: (n, q[0], s[0], q[1], s[1], ws, ws + aux_off, 0)))
        steps.append(KernelStep(Blas1ReduceSpec(arch=arch, op=p, dtype=dt, stage="final"), 1, BLOCK,
                                (lambda q, s, ws: (blocks, 0, 0, 0, 0, ws, ws + aux_off, ws + aux_off)) if to_aux
                                else (lambda q, s, ws: (blocks, 0, 0, 0, 0, ws, ws + aux_off, q[2]))))
    return LaunchPlan(f"blas1_reduce_{kind}_{dt}[{n}]", steps, workspace_bytes=aux_off + 16)


def dot_ptr(n: int, x_ptr: int, incx: int, y_ptr: int, incy: int, result_ptr: int, *, dtype: object,
            conj: bool = False, stream: object = None, result_on_host: bool = False) -> None:
    """result = sum x[i] * y[i] (``conj``: conj(x[i]) * y[i], dotc), in ``dtype``."""
    _reduce("dotc" if conj and op.dtype_name(dtype, "dot").startswith("complex") else "dotu", "dot",
            n, x_ptr, incx, y_ptr, incy, result_ptr, dtype, stream, result_on_host)


def nrm2_ptr(n: int, x_ptr: int, incx: int, result_ptr: int, *, dtype: object, stream: object = None,
             result_on_host: bool = False) -> None:
    """result = sqrt(sum |x[i]|^2) in the real type, without overflow or underflow (float32
    accumulates in float64; float64 scales by max |component| first)."""
    _reduce("nrm2", "nrm2", n, x_ptr, incx, 0, 0, result_ptr, dtype, stream, result_on_host)


def asum_ptr(n: int, x_ptr: int, incx: int, result_ptr: int, *, dtype: object, stream: object = None,
             result_on_host: bool = False) -> None:
    """result = sum |re x[i]| + |im x[i]| in the real type."""
    _reduce("asum", "asum", n, x_ptr, incx, 0, 0, result_ptr, dtype, stream, result_on_host)


def iamax_ptr(n: int, x_ptr: int, incx: int, result_ptr: int, *, dtype: object, stream: object = None,
              result_on_host: bool = False) -> None:
    """result (int32) = smallest 1-based i maximizing |re x[i]| + |im x[i]|; 0 for empty input."""
    _reduce("iamax", "iamax", n, x_ptr, incx, 0, 0, result_ptr, dtype, stream, result_on_host)


def iamin_ptr(n: int, x_ptr: int, incx: int, result_ptr: int, *, dtype: object, stream: object = None,
              result_on_host: bool = False) -> None:
    """result (int32) = smallest 1-based i minimizing |re x[i]| + |im x[i]|; 0 for empty input."""
    _reduce("iamin", "iamin", n, x_ptr, incx, 0, 0, result_ptr, dtype, stream, result_on_host)


# -- Pythonic surface ---------------------------------------------------------------------------
def _vector(v: object, what: str) -> tuple[DeviceArray, int, int]:
    """A 1-D device array, its element increment, and the BLAS base pointer (the lowest address
    the vector touches, as BLAS wants for negative increments)."""
    if not isinstance(v, DeviceArray) and not (hasattr(v, "__cuda_array_interface__")
                                               or is_cuda_dlpack_producer(v)):
        raise TypeError(f"{what}: {type(v).__name__} is not a device array; pass a DeviceArray or an "
                        "object with __cuda_array_interface__ / __dlpack__ (oxicuda.asarray copies host data)")
    arr = v if isinstance(v, DeviceArray) else asarray(v)
    if arr.ndim != 1:
        raise ValueError(f"{what}: shape {arr.shape}; a 1-D vector is required")
    op.dtype_name(arr.dtype, what)
    stride = arr.strides[0] if arr.shape[0] > 1 else arr.itemsize
    if stride % arr.itemsize or stride == 0:
        raise ValueError(f"{what}: stride {stride} bytes; a nonzero multiple of the item size {arr.itemsize} is required")
    inc = stride // arr.itemsize
    base = arr.ptr + (arr.shape[0] - 1) * stride if inc < 0 else arr.ptr
    return arr, inc, base


def _pair(x: object, y: object, what: str):
    xa, incx, xb = _vector(x, f"{what}: x")
    ya, incy, yb = _vector(y, f"{what}: y")
    if xa.shape != ya.shape:
        raise ValueError(f"{what}: x has shape {xa.shape} and y has shape {ya.shape}; they must be equal")
    if xa.dtype != ya.dtype:
        raise TypeError(f"{what}: x is {xa.dtype} and y is {ya.dtype}; the dtypes must be equal")
    return xa, incx, xb, ya, incy, yb


def _writable(arr: DeviceArray, what: str) -> None:
    if arr.readonly:
        raise ValueError(f"{what}: the array is read-only")


def axpy(alpha: complex, x: object, y: object) -> object:
    """y += alpha * x (in place on y's device memory); returns y."""
    xa, incx, xb, ya, incy, yb = _pair(x, y, "axpy")
    _writable(ya, "axpy: y")
    axpy_ptr(xa.shape[0], alpha, xb, incx, yb, incy, dtype=xa.dtype, stream=ya.stream)
    return y


def scal(alpha: complex, x: object) -> object:
    """x *= alpha in place; returns x."""
    xa, incx, xb = _vector(x, "scal: x")
    _writable(xa, "scal: x")
    scal_ptr(xa.shape[0], alpha, xb, abs(incx), dtype=xa.dtype, stream=xa.stream)
    return x


def copy(x: object, y: object) -> object:
    """y[:] = x; returns y."""
    xa, incx, xb, ya, incy, yb = _pair(x, y, "copy")
    _writable(ya, "copy: y")
    copy_ptr(xa.shape[0], xb, incx, yb, incy, dtype=xa.dtype, stream=ya.stream)
    return y


def swap(x: object, y: object) -> None:
    """Exchange the contents of x and y."""
    xa, incx, xb, ya, incy, yb = _pair(x, y, "swap")
    _writable(xa, "swap: x")
    _writable(ya, "swap: y")
    swap_ptr(xa.shape[0], xb, incx, yb, incy, dtype=xa.dtype, stream=ya.stream)


def rot(x: object, y: object, c: float, s: complex) -> None:
    """Apply the plane rotation (c real, s real or complex) to x and y in place."""
    xa, incx, xb, ya, incy, yb = _pair(x, y, "rot")
    _writable(xa, "rot: x")
    _writable(ya, "rot: y")
    real_s = not isinstance(s, (complex, np.complexfloating))
    rot_ptr(xa.shape[0], xb, incx, yb, incy, float(c), s, dtype=xa.dtype, stream=ya.stream,
            s_real=real_s)


def _result(kind: str, x: object, y: object | None, out: object | None, what: str):
    if y is not None:
        xa, incx, xb, _ya, incy, yb = _pair(x, y, what)
    else:
        (xa, incx, xb), yb, incy = _vector(x, f"{what}: x"), 0, 0
    dt = op.dtype_name(xa.dtype, what)
    rdt = np.dtype(np.int32) if kind in ("iamax", "iamin") else (
        np.dtype(dt) if y is not None else np.dtype(op.real_dtype(dt)))
    n = xa.shape[0]
    if kind in ("iamax", "iamin") and incx < 0:
        raise ValueError(f"{what}: x has element step {incx}; {what} needs a positive step "
                         "(the index is relative to the element order)")
    incx = incx if y is not None else abs(incx)
    stream = xa.stream
    if out is not None:
        oa = out if isinstance(out, DeviceArray) else asarray(out)
        if oa.size != 1 or oa.dtype != rdt:
            raise ValueError(f"{what}: out has shape {oa.shape} and dtype {oa.dtype}; one element of {rdt} is required")
        _writable(oa, f"{what}: out")
        target, on_host, host = oa.ptr, False, None
    else:
        host = np.zeros(1, rdt)
        target, on_host = host.ctypes.data, True
    args = (n, xb, incx) + ((yb, incy) if y is not None else ()) + (target,)
    fn = {"dotu": dot_ptr, "dotc": dot_ptr, "nrm2": nrm2_ptr, "asum": asum_ptr,
          "iamax": iamax_ptr, "iamin": iamin_ptr}[kind]
    kwargs = {"conj": True} if kind == "dotc" else {}
    fn(*args, dtype=dt, stream=stream, result_on_host=on_host, **kwargs)
    return out if host is None else host[0]


def dot(x: object, y: object, out: object | None = None):
    """sum x[i] * y[i] (no conjugation, like numpy.dot of vectors)."""
    return _result("dotu", x, y, out, "dot")


def dotu(x: object, y: object, out: object | None = None):
    """sum x[i] * y[i] (unconjugated)."""
    return _result("dotu", x, y, out, "dotu")


def dotc(x: object, y: object, out: object | None = None):
    """sum conj(x[i]) * y[i] (numpy.vdot)."""
    return _result("dotc", x, y, out, "dotc")


def nrm2(x: object, out: object | None = None):
    """The Euclidean norm of x, in x's real type."""
    return _result("nrm2", x, None, out, "nrm2")


def asum(x: object, out: object | None = None):
    """sum |re x[i]| + |im x[i]|, in x's real type."""
    return _result("asum", x, None, out, "asum")


def iamax(x: object, out: object | None = None):
    """The 1-based index (int32) of the first element with the largest |re| + |im| (cuBLAS's
    convention; 0 for an empty x)."""
    return _result("iamax", x, None, out, "iamax")


def iamin(x: object, out: object | None = None):
    """The 1-based index (int32) of the first element with the smallest |re| + |im| (0 for an
    empty x)."""
    return _result("iamin", x, None, out, "iamin")
