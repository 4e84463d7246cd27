"""Python scalars from arrays follow numpy: int(), float(), complex(), bool(), .item() and
operator.index of a one-element array give its value (read from the device), other sizes raise
numpy's errors, comparisons raise until arrays compute, and the pointer lives at .ptr,
.data.ptr and .gpudata."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import oxicuda


def test_conversions_of_a_one_element_view_give_its_value():
    host = np.arange(12, dtype=np.float32).reshape(3, 4) + 0.25
    a = oxicuda.asarray(host)
    assert int(a[1, 2]) == 6 and float(a[1, 2]) == 6.25 and complex(a[1, 2]) == 6.25 + 0j
    assert a[1, 2].item() == 6.25 and type(a[1, 2].item()) is float
    assert bool(a[0, 0]) is True and bool(oxicuda.zeros(1)) is False
    assert int(a[1:2, 2:3]) == 6  # any size-1 shape
    i = oxicuda.asarray(np.array(7, np.int64))
    assert operator.index(i) == 7 and [10, 11, 12, 13, 14, 15, 16, 17][i] == 17


def test_conversions_of_other_sizes_raise_numpys_errors():
    a = oxicuda.zeros((3, 4))
    for conv in (int, float, complex):
        with pytest.raises(TypeError, match="only size-1 arrays can be converted to Python scalars"):
            conv(a)
    with pytest.raises(ValueError, match="truth value of an array with more than one element is ambiguous"):
        bool(a)
    with pytest.raises(ValueError, match="truth value of an empty array is ambiguous"):
        bool(oxicuda.zeros(0))
    with pytest.raises(ValueError, match="can only convert an array of size 1 to a Python scalar"):
        a.item()
    with pytest.raises(TypeError, match="only integer scalar arrays can be converted to a scalar index"):
        operator.index(oxicuda.zeros((), np.float32))
    with pytest.raises(TypeError, match="only integer scalar arrays"):
        operator.index(oxicuda.zeros(1, np.int32))


def test_a_large_array_is_not_read_to_refuse_a_conversion(monkeypatch):
    a = oxicuda.zeros((64, 64))
    monkeypatch.setattr(type(a), "get", lambda self, stream=None: pytest.fail("read the array"))
    with pytest.raises(TypeError):
        int(a)
    with pytest.raises(ValueError):
        bool(a)


@pytest.mark.parametrize("op", ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"])
def test_comparisons_are_elementwise_never_identity(op):
    # (elementwise semantics are tests/test_array_math.py's; here: no identity answer, and
    # the truth of a multi-element result is numpy's error)
    a = oxicuda.zeros(3)
    try:
        r = getattr(a, op)(a)
    except NotImplementedError as exc:  # a build without oxicuda.elementwise
        assert "oxicuda.elementwise" in str(exc)
        return
    assert isinstance(r, oxicuda.DeviceArray) and r.dtype == np.bool_ and r.shape == (3,)
    with pytest.raises(ValueError, match="truth value"):
        bool(r)


def test_arrays_stay_hashable_by_identity():
    a, b = oxicuda.zeros(3), oxicuda.zeros(3)
    d = {a: 1, b: 2}
    assert d[a] == 1 and d[b] == 2 and hash(a) != hash(b)


def test_the_pointer_keeps_its_three_spellings():
    a = oxicuda.zeros((3, 4), np.float64)
    assert a.ptr != 0
    assert a.data.ptr == a.ptr and int(a.gpudata) == a.ptr and operator.index(a.gpudata) == a.ptr
    assert a[1].data.ptr == a.ptr + 32
    assert a.__cuda_array_interface__["data"][0] == a.ptr


def test_pointer_taking_calls_read_the_pointer_not_the_value():
    """A one-element array passed where a pointer goes (a raw kernel argument, a cuBLAS
    pointer) is its address, never int() of its value."""
    from oxicuda.blas.operands import check_pointer
    from oxicuda.driver.params import _to_pointer_or_int

    one = oxicuda.asarray(np.array([5.0], np.float32))
    assert check_pointer(one, "x") == one.ptr
    assert check_pointer(one.gpudata, "x") == one.ptr
    assert _to_pointer_or_int(one) == one.ptr


def test_repr_shows_values_like_numpy():
    a = oxicuda.asarray(np.array([1.0, 2.0], np.float32))
    assert repr(a) == "DeviceArray([1., 2.], dtype=float32)"
    assert str(a) == "[1. 2.]"
    b = oxicuda.asarray(np.arange(6.0).reshape(2, 3))
    assert repr(b) == "DeviceArray([[0., 1., 2.],\n             [3., 4., 5.]])"


def test_repr_of_a_large_array_is_summarized_from_its_edges():
    host = np.arange(100_000, dtype=np.int32).reshape(100, 1000)
    a = oxicuda.asarray(host)
    read = []
    real_get = oxicuda.DeviceArray.get
    oxicuda.DeviceArray.get = lambda self, stream=None: read.append(self.size) or real_get(self, stream)
    try:
        text = repr(a)
    finally:
        oxicuda.DeviceArray.get = real_get
    expected = np.array_repr(host).replace("array(", "DeviceArray(").replace("\n      ", "\n            ")
    assert text == expected
    assert "..." in text and "99999" in text
    assert read and max(read) <= 9  # only the corners (3 x 3 each) crossed the bus


def test_repr_of_a_freed_array_says_so():
    a = oxicuda.zeros(3)
    a.memory.free()
    assert "<freed>" in repr(a)
