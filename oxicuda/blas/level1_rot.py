"""BLAS level 1 rotations beyond rot, at the pointer level with cuBLAS semantics:

- ``rotm_ptr``: apply the modified Givens rotation of ``param`` (5 values: flag, h11, h21, h12,
  h22) to x and y;
- ``rotg_ptr``: construct a Givens rotation from (a, b): writes r to a (and z to b for real
  dtypes), c and s;
- ``rotmg_ptr``: construct a modified Givens rotation from (d1, d2, x1, y1): writes d1, d2, x1
  and param.

Scalars live at host addresses (``on_host``, cuBLAS's host pointer mode) or in device memory.
The construction runs on the device either way (one-thread kernels, ``blas1_rotg``/
``blas1_rotmg``); in host mode the scalars travel through a small workspace and the call returns
once the results are back on the host.
"""

from __future__ import annotations

import ctypes

from ..driver.backend import api
from ..driver.facts import device_facts
from ..memory.workspace import workspace_ptr
from ..ptx.launch_plan import KernelStep, LaunchPlan, PlanCache
from . import operands as op
from .level1_kernels import BLOCK
from .level1_rot_kernels import REAL_DTYPES, RotgSpec, RotmgSpec, RotmSpec

PLANS = PlanCache("blas1_rot")
_CTYPES = {"float32": ctypes.c_float, "float64": ctypes.c_double}

__all__ = ["PLANS", "rotg_ptr", "rotm_ptr", "rotmg_ptr"]


def _real_dtype(dtype: object, what: str) -> str:
    dt = op.dtype_name(dtype, what)
    if dt not in REAL_DTYPES:
        raise TypeError(f"{what}: dtype {dt}; BLAS defines it for float32/float64 only")
    return dt


def _single(spec, nargs: int) -> LaunchPlan:
    facts = device_facts()
    return PLANS.get_or_build((facts.ordinal, spec), lambda: LaunchPlan(spec.kernel_name(), [KernelStep(
        spec, 1, 32, lambda p, s, ws: tuple(p[:nargs]))]))


def rotm_ptr(n: int, x_ptr: int, incx: int, y_ptr: int, incy: int, param_ptr: int, *, dtype: object,
             stream: object = None, param_on_host: bool = True) -> None:
    """x' = h11 x + h12 y, y' = h21 x + h22 y for i < n, H from the 5 values at ``param_ptr``
    (a host address with ``param_on_host``, else device memory) as BLAS's rotm defines them."""
    dt = _real_dtype(dtype, "rotm")
    n = op.check_int(n, "rotm: n")
    incx, incy = op.check_int(incx, "rotm: incx"), op.check_int(incy, "rotm: incy")
    x, y = op.check_pointer(x_ptr, "rotm: x"), op.check_pointer(y_ptr, "rotm: y")
    param = op.check_pointer(param_ptr, "rotm: param")
    if param == 0:
        raise ValueError("rotm: the param pointer is NULL")
    es = op.itemsize(dt)
    if not param_on_host:
        op.check_span(param, 5 * es, "rotm: param (5 values)")
    if n <= 0:
        return
    if param_on_host:
        vals = [_CTYPES[dt].from_address(param + q * es).value for q in range(5)]
        if vals[0] == -2.0:
            return
        dev_param = 0
    else:
        vals, dev_param = [0.0] * 5, param
    op.check_span(x, op.vector_span(n, incx, es), f"rotm: x (n={n}, incx={incx})")
    op.check_span(y, op.vector_span(n, incy, es), f"rotm: y (n={n}, incy={incy})")
    facts = device_facts()
    spec = RotmSpec(arch=facts.arch, dtype=dt)
    grid = (n + BLOCK - 1) // BLOCK
    plan = PLANS.get_or_build((facts.ordinal, spec, n), lambda: LaunchPlan(spec.kernel_name(), [KernelStep(
        spec, grid, BLOCK, lambda p, s, ws: (n, p[0], s[0], p[1], s[1], *s[2:]))]))
    plan.run((op.vector_start(x, n, incx, es), op.vector_start(y, n, incy, es)),
             (incx, incy, *vals, dev_param), op.stream_of(stream))


def _staged(nbytes_each: list[int], host: list[int], writes: list[bool], stream: int, run) -> None:
    """Run ``run(device_ptrs)`` on device copies of host scalars; copy the written ones back."""
    total = sum(nbytes_each)
    base = workspace_ptr(total + 9, stream)  # odd size: a key of its own in the workspace cache
    drv = api()
    ptrs, off = [], 0
    for addr, nb in zip(host, nbytes_each):
        ptrs.append(base + off)
        drv.memcpy_htod(base + off, addr, nb, stream or None)
        off += nb
    run(ptrs)
    for addr, ptr, nb, w in zip(host, ptrs, nbytes_each, writes):
        if w:
            drv.memcpy_dtoh(addr, ptr, nb, stream or None)
    if stream:
        drv.stream_synchronize(stream)


def rotg_ptr(a_ptr: int, b_ptr: int, c_ptr: int, s_ptr: int, *, dtype: object, stream: object = None,
             on_host: bool = True) -> None:
    """The Givens rotation [[c, s], [-conj(s), c]] taking (a, b) to (r, 0): r is written to a
    (real dtypes also write z, the reconstruction value, to b); c is real."""
    dt = op.dtype_name(dtype, "rotg")
    ptrs = [op.check_pointer(p, f"rotg: {w}") for p, w in ((a_ptr, "a"), (b_ptr, "b"), (c_ptr, "c"), (s_ptr, "s"))]
    if 0 in ptrs:
        raise ValueError("rotg: a, b, c and s must all be non-NULL")
    es, rs = op.itemsize(dt), op.itemsize(op.real_dtype(dt))
    sizes = [es, es, rs, es]
    s = op.stream_of(stream)
    facts = device_facts()
    plan = _single(RotgSpec(arch=facts.arch, dtype=dt), 4)
    if on_host:
        _staged(sizes, ptrs, [True, not dt.startswith("complex"), True, True], s, lambda d: plan.run(d, (), s))
        return
    for p, nb, w in zip(ptrs, sizes, "abcs"):
        op.check_span(p, nb, f"rotg: {w}")
    plan.run(ptrs, (), s)


def rotmg_ptr(d1_ptr: int, d2_ptr: int, x1_ptr: int, y1_ptr: int, param_ptr: int, *, dtype: object,
              stream: object = None, on_host: bool = True) -> None:
    """The modified Givens rotation zeroing the second entry of (sqrt(d1) x1, sqrt(d2) y1):
    updates d1, d2, x1 and writes param (flag, h11, h21, h12, h22) as BLAS's rotmg does."""
    dt = _real_dtype(dtype, "rotmg")
    ptrs = [op.check_pointer(p, f"rotmg: {w}") for p, w in
            ((d1_ptr, "d1"), (d2_ptr, "d2"), (x1_ptr, "x1"), (y1_ptr, "y1"), (param_ptr, "param"))]
    if 0 in ptrs:
        raise ValueError("rotmg: d1, d2, x1, y1 and param must all be non-NULL")
    es = op.itemsize(dt)
    sizes = [es, es, es, es, 5 * es]
    s = op.stream_of(stream)
    facts = device_facts()
    plan = _single(RotmgSpec(arch=facts.arch, dtype=dt), 5)
    if on_host:
        _staged(sizes, ptrs, [True, True, True, False, True], s, lambda d: plan.run(d, (), s))
        return
    for p, nb, w in zip(ptrs, sizes, ("d1", "d2", "x1", "y1", "param")):
        op.check_span(p, nb, f"rotmg: {w}")
    plan.run(ptrs, (), s)
