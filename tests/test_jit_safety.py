"""Checked kernels: out-of-bounds indices, integer division by zero and failed asserts raise
KernelError with the Python location, thread, block, index and bound; the context stays usable;
bounds_check=False removes the checks."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import oxicuda
from oxicuda.jit import KernelError, grid, thread_idx
from oxicuda.types import Array, i32, i64


def _line(fn, text):
    lines, first = inspect.getsourcelines(fn.__wrapped__)
    return first + next(k for k, ln in enumerate(lines) if text in ln)


@oxicuda.kernel
def shifted(x, out):
    i = grid(1)
    if i < len(out):
        out[i] = x[i + 1]


def test_out_of_bounds_read_reports_location_thread_index_and_bound():
    x = oxicuda.asarray(np.arange(10, dtype=np.float32))
    out = oxicuda.full(10, -1.0, np.float32)
    with pytest.raises(KernelError) as err:
        shifted[2, 8](x, out)
    e = err.value
    assert e.filename == __file__ and e.line == _line(shifted, "x[i + 1]")
    assert (e.index, e.bound) == (10, 10)
    assert e.thread == (1, 0, 0) and e.block == (1, 0, 0)
    assert "index out of bounds for axis 0" in str(e) and "x[i + 1]" in str(e)
    got = out.get()
    np.testing.assert_array_equal(got[:9], np.arange(1, 10))
    assert got[9] == -1.0  # the failing thread wrote nothing
    # the context and the kernel stay usable
    shifted[1, 9](x, out[:9])
    np.testing.assert_array_equal(out.get()[:9], np.arange(1, 10))


def test_negative_and_2d_indices_are_checked_per_axis():
    @oxicuda.kernel
    def k(a, r: i64, c: i64):
        if thread_idx.x == 0:
            a[r, c] = 1.0

    a = oxicuda.zeros((3, 4), np.float64)
    with pytest.raises(KernelError, match="axis 1: index 4, bound 4"):
        k[1, 32](a, 1, 4)
    with pytest.raises(KernelError, match="axis 0: index -1, bound 3"):
        k[1, 32](a, -1, 0)
    k[1, 32](a, 2, 3)
    assert a.get()[2, 3] == 1.0 and a.get().sum() == 1.0


def test_integer_division_by_zero_and_assert_report():
    @oxicuda.kernel
    def div(a: Array[i32], b: Array[i32]):
        i = grid(1)
        if i < len(a):
            a[i] = a[i] // b[i]

    @oxicuda.kernel
    def positive(a):
        i = grid(1)
        if i < len(a):
            assert a[i] >= 0, "inputs must be non-negative"

    a = oxicuda.asarray(np.array([6, 7, 8], np.int32))
    with pytest.raises(KernelError, match="integer division by zero") as err:
        div[1, 32](a, oxicuda.asarray(np.array([2, 0, 4], np.int32)))
    assert err.value.thread == (1, 0, 0) and err.value.index is None
    with pytest.raises(KernelError, match="assertion failed: inputs must be non-negative") as err:
        positive[1, 32](oxicuda.asarray(np.array([1.0, 2.0, -3.0])))
    assert err.value.thread == (2, 0, 0) and err.value.line == _line(positive, "assert")
    positive[1, 32](oxicuda.asarray(np.array([1.0, 2.0])))  # no failure: no error


def test_bounds_check_false_removes_checks_and_the_error_buffer():
    def body(x, out):
        i = grid(1)
        if i < len(out):
            out[i] = x[i]

    checked, unchecked = oxicuda.kernel(body), oxicuda.kernel(body, bounds_check=False)
    x = oxicuda.asarray(np.arange(8, dtype=np.float32))
    out = oxicuda.empty(8, np.float32)
    t1, t2 = checked.ptx(x, out), unchecked.ptx(x, out)
    assert "atom.global.cas" in t1 and "setp.hs.u64" in t1
    assert "atom" not in t2 and "setp.hs" not in t2 and "err" not in t2
    unchecked[1, 8](x, out)
    np.testing.assert_array_equal(out.get(), np.arange(8))


def test_check_raises_the_recorded_failure_explicitly():
    x = oxicuda.asarray(np.arange(4, dtype=np.float32))
    out = oxicuda.empty(4, np.float32)
    shifted.check()  # nothing pending: no error
    with pytest.raises(KernelError):
        shifted[1, 4](x, out)
    shifted.check()  # the report was consumed by the launch (the emulator checks at once)


def test_emulator_still_reports_faults_of_unchecked_kernels():
    @oxicuda.kernel(bounds_check=False)
    def wild(x):
        x[1 << 40] = 1.0

    with pytest.raises(Exception, match="(?i)out of bounds|fault|invalid|illegal"):
        wild[1, 1](oxicuda.zeros(4, np.float32))
    shifted[1, 3](oxicuda.asarray(np.arange(4, dtype=np.float32)), oxicuda.empty(3, np.float32))


def test_resource_errors_name_the_python_line():
    from oxicuda.jit import shared
    from oxicuda.types import f64

    @oxicuda.kernel
    def big(x):
        buf = shared.array(8192, f64)  # 64 KB of static shared memory
        buf[0] = x[0]

    with pytest.raises(oxicuda.jit.CompileError) as err:
        big[1, 1](oxicuda.zeros(2))
    assert f":{_line(big, 'shared.array')}:" in str(err.value) and "48 KB" in str(err.value)


def test_module_level_check_covers_every_kernel():
    import sys

    kernel_module = sys.modules["oxicuda.jit.kernel"]

    oxicuda.jit.check()  # nothing pending anywhere: no error
    assert shifted in set(kernel_module._ALL_KERNELS)
