"""Use after free: once an array's block was freed (``a.memory.free()``), every use of the
array and of its views raises a clear "freed" error before touching the device, instead of
reading stale data or writing into whatever array reused the block."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.blas import gemm

FREED = "memory was freed"


@pytest.fixture
def freed():
    a = oxicuda.asarray(np.arange(16, dtype=np.float32).reshape(4, 4))
    view = a.T[1:]
    a.memory.free()
    reuser = oxicuda.asarray(np.full((4, 4), 7.0, np.float32))  # likely the same block
    return a, view, reuser


def test_a_freed_array_and_its_views_refuse_every_use(freed):
    a, view, reuser = freed
    uses = [
        lambda x: x.get(), lambda x: x.fill(1.0), lambda x: x.set(np.zeros(x.shape, np.float32)),
        lambda x: x.copy(), lambda x: x.astype(np.float64), lambda x: x.ptr, lambda x: x.data.ptr,
        lambda x: int(x.gpudata), lambda x: x.__cuda_array_interface__, lambda x: x.__dlpack__(),
        lambda x: oxicuda.asnumpy(x), lambda x: x.__setitem__((0,), 3.0),
    ]
    for arr in (a, view):
        for use in uses:
            with oxicuda.trace() as t, pytest.raises(RuntimeError, match=FREED):
                use(arr)
            assert t.launches == []
    np.testing.assert_array_equal(reuser.get(), np.full((4, 4), 7.0, np.float32))


def test_copying_into_or_from_a_freed_array_raises(freed):
    a, _, reuser = freed
    with pytest.raises(RuntimeError, match=FREED):
        reuser[...] = a
    with pytest.raises(RuntimeError, match=FREED):
        a[...] = reuser
    np.testing.assert_array_equal(reuser.get(), np.full((4, 4), 7.0, np.float32))


def test_a_freed_array_is_refused_as_a_kernel_argument(freed):
    a, _, _ = freed
    ptx = """.version 8.0
.target sm_86
.address_size 64
.visible .entry k(.param .u64 p)
{
\tret;
}
"""
    fn = oxicuda.driver.Module(ptx).get_function("k")
    with oxicuda.trace() as t, pytest.raises(RuntimeError, match=FREED):
        fn(1, 1, [a])
    assert t.launches == []


def test_gemm_with_a_freed_operand_says_freed_not_overlap(freed):
    a, _, reuser = freed
    with pytest.raises(RuntimeError, match=FREED):
        gemm(a, reuser)
    with pytest.raises(RuntimeError, match=FREED):
        gemm(reuser, reuser, a)
    np.testing.assert_array_equal(reuser.get(), np.full((4, 4), 7.0, np.float32))


def test_a_garbage_collected_array_frees_nothing_early():
    a = oxicuda.asarray(np.arange(4, dtype=np.float32))
    v = a[1:]
    del a
    np.testing.assert_array_equal(v.get(), [1, 2, 3])  # the view keeps the block alive
