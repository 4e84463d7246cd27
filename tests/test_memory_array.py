"""DeviceArray on the live backend: round trips, layouts, views, fill, astype, bad input."""

from __future__ import annotations

import numpy as np
import pytest

import oxicuda
from oxicuda.memory import BFLOAT16, SUPPORTED_DTYPES, DeviceArray, host_astype

SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 0, 4), (2, 3, 4)]


def random_host(rng, shape, dtype):
    dt = np.dtype(dtype)
    if dt == BFLOAT16:
        return rng.integers(0, 1 << 16, shape, dtype=np.uint16).view(BFLOAT16)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("name", list(SUPPORTED_DTYPES))
@pytest.mark.parametrize("shape", SHAPES)
def test_asarray_get_round_trip_is_bit_exact_for_every_dtype_and_shape(rng, name, shape):
    host = random_host(rng, shape, SUPPORTED_DTYPES[name])
    dev = oxicuda.asarray(host)
    assert dev.shape == shape and dev.dtype == host.dtype and dev.size == host.size
    assert dev.nbytes == host.nbytes and dev.ndim == len(shape)
    if host.size:
        assert dev.strides == np.asarray(host, order="C").strides
    back = dev.get()
    assert same_bits(back, np.asarray(host, order="C"))
    assert same_bits(oxicuda.asnumpy(dev), np.asarray(host, order="C"))


def test_fortran_order_arrays_keep_their_layout(rng):
    host = np.asfortranarray(rng.standard_normal((5, 7)).astype(np.float32))
    dev = oxicuda.asarray(host)
    assert dev.is_f_contiguous and not dev.is_c_contiguous
    assert dev.strides == host.strides
    back = dev.get()
    assert back.flags.f_contiguous and np.array_equal(back, host)
    c = dev.copy("C")
    assert c.is_c_contiguous and np.array_equal(c.get(), host)
    e = oxicuda.empty((4, 6), np.float64, order="F")
    assert e.strides == (8, 32)


def test_set_overwrites_every_element_and_converts_dtype(rng):
    dev = oxicuda.full((4, 9), np.nan, dtype=np.float32)
    host = rng.standard_normal((4, 9))
    dev.set(host)
    np.testing.assert_array_equal(dev.get(), host.astype(np.float32))


KEYS = [
    (slice(None, None, -1),),
    (slice(1, None, 2), slice(None, None, -3)),
    (Ellipsis, 2),
    (None, 1, slice(5, 0, -2)),
    (slice(None), None, slice(2, 3)),
    (-1, -2),
    (slice(2, 2),),
    (0, Ellipsis, None),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_basic_slicing_views_read_what_numpy_reads(rng, key):
    host = rng.standard_normal((6, 11)).astype(np.float32)
    dev = oxicuda.asarray(host)
    view = dev[key]
    assert view.base is dev
    expect = host[key]
    assert view.shape == expect.shape
    got = view.get()
    np.testing.assert_array_equal(got, expect)


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_writes_through_views_touch_exactly_the_view(rng, key):
    host = rng.standard_normal((6, 11)).astype(np.float32)
    dev = oxicuda.asarray(host)
    new = rng.standard_normal(host[key].shape).astype(np.float32)
    dev[key] = new
    expect = host.copy()
    expect[key] = new
    np.testing.assert_array_equal(dev.get(), expect)


def test_three_d_strided_views_with_negative_steps(rng):
    host = rng.integers(-1000, 1000, (5, 6, 7)).astype(np.int32)
    dev = oxicuda.asarray(host)
    key = (slice(None, None, -2), slice(1, None, 2), slice(None, None, -3))
    np.testing.assert_array_equal(dev[key].get(), host[key])
    np.testing.assert_array_equal(dev[key].copy().get(), host[key])
    np.testing.assert_array_equal(dev.transpose(2, 0, 1)[::2].get(), host.transpose(2, 0, 1)[::2])


def test_reshape_and_transpose_of_contiguous_arrays_are_views(rng):
    host = rng.standard_normal((4, 6)).astype(np.float32)
    dev = oxicuda.asarray(host)
    r = dev.reshape(2, 3, 4)
    assert r.ptr == dev.ptr and r.base is dev
    np.testing.assert_array_equal(r.get(), host.reshape(2, 3, 4))
    t = dev.T
    assert t.ptr == dev.ptr and t.strides == host.T.strides
    np.testing.assert_array_equal(t.get(), host.T)
    np.testing.assert_array_equal(dev.reshape(-1, 8).get(), host.reshape(-1, 8))
    f = dev.reshape((6, 4), order="F")
    np.testing.assert_array_equal(f.get(), host.reshape((6, 4), order="F"))
    tt = dev.T.reshape(24)  # not expressible as a view: a copy
    assert tt.ptr != dev.ptr
    np.testing.assert_array_equal(tt.get(), host.T.reshape(24))
    np.testing.assert_array_equal(dev.ravel().get(), host.ravel())


def test_pointer_spellings_agree_and_views_offset_the_pointer():
    dev = oxicuda.zeros((3, 4), np.float64)
    assert dev.data.ptr == int(dev.gpudata) == dev.ptr != 0
    assert dev[1, 2].ptr == dev.ptr + 1 * 32 + 2 * 8
    assert dev[::-1].ptr == dev.ptr + 2 * 32
    assert len(dev) == 3
    assert repr(dev).startswith("DeviceArray([[0., 0., 0., 0.],")


@pytest.mark.parametrize("name", list(SUPPORTED_DTYPES))
def test_fill_sets_every_element_to_the_converted_value(name):
    dt = SUPPORTED_DTYPES[name]
    value = {"b": True, "c": 1.5 - 2.25j}.get(dt.kind, 3)
    if dt == BFLOAT16:
        value = 1.25
    for shape in [(5, 3), (7,)]:
        dev = oxicuda.empty(shape, dt)
        dev.fill(value)
        expect = np.full(shape, host_astype(np.asarray(value), dt))
        assert same_bits(dev.get(), expect)


def test_fill_of_a_strided_view_leaves_the_rest_untouched(rng):
    host = rng.standard_normal((6, 8))
    dev = oxicuda.asarray(host)
    dev[1::2, ::3].fill(-7.5)
    host[1::2, ::3] = -7.5
    np.testing.assert_array_equal(dev.get(), host)


def test_zeros_full_and_likes():
    np.testing.assert_array_equal(oxicuda.zeros((3, 2), np.int16).get(), np.zeros((3, 2), np.int16))
    f = oxicuda.full((2, 5), 2.5)
    assert f.dtype == np.float64 and np.array_equal(f.get(), np.full((2, 5), 2.5))
    assert oxicuda.empty(4).dtype == np.float32
    from oxicuda.memory import empty_like, full_like, zeros_like

    base = oxicuda.empty((3, 4), np.float64, order="F")
    z = zeros_like(base)
    assert z.is_f_contiguous and z.dtype == np.float64 and not z.get().any()
    assert empty_like(base, dtype=np.int8).dtype == np.int8
    np.testing.assert_array_equal(full_like(base, 9).get(), np.full((3, 4), 9.0))


@pytest.mark.parametrize("src,dst", [("float32", "float16"), ("float64", "int32"),
                                     ("int16", "float64"), ("float32", "bfloat16"),
                                     ("bfloat16", "float32"), ("complex64", "complex128"),
                                     ("float32", "bool")])
def test_astype_matches_the_host_cast(rng, src, dst):
    host = random_host(rng, (4, 5), SUPPORTED_DTYPES[src])
    if SUPPORTED_DTYPES[src].kind == "f":
        host = (host * 100).astype(host.dtype)
    dev = oxicuda.asarray(host)
    out = dev.astype(dst)
    assert out.dtype == SUPPORTED_DTYPES[dst] and out.ptr != dev.ptr
    assert same_bits(out.get(), host_astype(host, dst))
    assert dev.astype(src, copy=False) is dev


def test_np_asarray_copies_to_host_and_asarray_passes_device_arrays_through(rng):
    host = rng.standard_normal((3, 3)).astype(np.float32)
    dev = oxicuda.asarray(host)
    np.testing.assert_array_equal(np.asarray(dev), host)
    assert oxicuda.asarray(dev) is dev
    assert oxicuda.asarray(dev, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(dev, copy=False)


def test_big_endian_and_noncontiguous_host_input(rng):
    host = rng.standard_normal((4, 6)).astype(">f8")[:, ::2]
    dev = oxicuda.asarray(host)
    assert dev.dtype == np.float64
    np.testing.assert_array_equal(dev.get(), host.astype(np.float64))


def test_bad_input_raises_before_touching_the_device(monkeypatch):
    from oxicuda.driver import backend

    drv = backend.api()
    stats = oxicuda.memory.get_pool().stats()

    def boom(*a, **k):
        raise AssertionError("the device was touched")

    monkeypatch.setattr(drv, "mem_alloc", boom)
    with pytest.raises(ValueError, match="negative"):
        oxicuda.empty((3, -1))
    with pytest.raises(TypeError, match="allowed dtypes"):
        oxicuda.zeros(3, dtype="object")
    with pytest.raises(TypeError, match="allowed dtypes"):
        oxicuda.asarray(["a", "b"])
    with pytest.raises(ValueError, match="allowed orders"):
        oxicuda.empty(3, order="X")
    with pytest.raises(TypeError, match="dimensions must be ints"):
        oxicuda.empty((2.5,))
    assert oxicuda.memory.get_pool().stats()["allocated_bytes"] == stats["allocated_bytes"]


def test_bad_views_and_set_shapes_raise():
    dev = oxicuda.zeros((3, 4))
    with pytest.raises(ValueError, match=r"shape \(4, 3\).*\(3, 4\)"):
        dev.set(np.zeros((4, 3)))
    with pytest.raises(IndexError, match="out of bounds"):
        dev[3]
    with pytest.raises(TypeError, match="not supported"):
        dev[[0, 1]]
    with pytest.raises(IndexError, match="indices"):
        dev[0, 0, 0]
    with pytest.raises(ValueError, match="cannot reshape"):
        dev.reshape(5, 2)
    with pytest.raises(ValueError, match="permutation"):
        dev.transpose(0, 0)
    with pytest.raises(TypeError, match="scalar"):
        dev.fill([1, 2])
    with pytest.raises(TypeError):
        len(dev[0, 0])
    np.testing.assert_array_equal(dev.get(), np.zeros((3, 4), np.float32))


@pytest.mark.slow
def test_explicit_device_array_constructor_and_views_keep_memory_alive(rng):
    host = rng.standard_normal(10).astype(np.float32)
    view = oxicuda.asarray(host)[2:7]
    import gc

    gc.collect()
    np.testing.assert_array_equal(view.get(), host[2:7])
    d = DeviceArray((2, 3), "int64", "F")
    assert d.strides == (8, 16) and d.base is None and d.memory is not None


from hypothesis import given, settings
from hypothesis import strategies as st


def _slices(n):
    bound = st.none() | st.integers(-n - 1, n + 1)
    return st.builds(slice, bound, bound, st.none() | st.sampled_from([1, 2, 3, -1, -2, -3]))


@st.composite
def _view_cases(draw):
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    key = tuple(draw(_slices(n)) for n in shape)
    perm = draw(st.permutations(range(len(shape))))
    order = draw(st.sampled_from("CF"))
    return shape, key, tuple(perm), order


@settings(max_examples=60, deadline=None)
@given(_view_cases(), st.integers(0, 2**32 - 1))
def test_random_strided_views_read_copy_and_write_like_numpy(case, seed):
    shape, key, perm, order = case
    rng = np.random.default_rng(seed)
    host = np.asarray(rng.standard_normal(shape).astype(np.float32), order=order)
    dev = oxicuda.asarray(host)
    view, expect = dev[key].transpose(perm), host[key].transpose(perm)
    np.testing.assert_array_equal(view.get(), expect)
    np.testing.assert_array_equal(view.copy().get(), expect)
    flat = view.reshape(-1)
    np.testing.assert_array_equal(flat.get(), expect.reshape(-1))
    new = rng.standard_normal(expect.shape).astype(np.float32)
    view.set(new)
    host_after = host.copy()
    host_after[key].transpose(perm)[...] = new
    np.testing.assert_array_equal(dev.get(), host_after)
