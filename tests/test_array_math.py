"""Device arrays that compute (issue 21, item 3): operators, ufuncs, where/clip, reductions
and @ against numpy, for every dtype class, broadcast shapes, views, in-place and out=.

Each test runs in two modes: ``device`` (the generated kernels of oxicuda.elementwise /
oxicuda.reduction; skipped while the build has none; trace() proves the kernels ran) and
``model`` (tests/array_math_host_model.py stands in for those two calls, so the dispatch layer's
dtype, broadcast, out= and axis logic and the scalar bodies are checked against numpy now).
Full sum/max/min/argmax/argmin run oxicuda.primitives on the device in both modes.
"""

from __future__ import annotations

import operator

import array_math_host_model
import ml_dtypes
import numpy as np
import pytest

import oxicuda
from oxicuda.array_math import ufuncs as U
from oxicuda.array_math.complex_parts import COMPLEX_BODIES
from oxicuda.array_math.operands import provided
from oxicuda.memory.array import DeviceArray

BF16 = np.dtype(ml_dtypes.bfloat16)
ALL_DTYPES = [np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                    "uint32", "uint64", "float16", "float32", "float64",
                                    "complex64", "complex128")] + [BF16]
# a pair of each class: same dtype, mixed sign, int-float, narrow-wide float, bool-int, complex
PAIRS = [(d, d) for d in ALL_DTYPES] + [
    (np.dtype(a), np.dtype(b)) for a, b in [
        ("int8", "uint8"), ("uint64", "int64"), ("int32", "float32"), ("bool", "int16"),
        ("float16", "float32"), ("int64", "float64"), ("complex64", "float64"),
        ("uint16", "int32"), ("float32", "float64")]] + [(BF16, np.dtype(np.float32))]

BINARY = [np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide, np.remainder,
          np.power, np.maximum, np.minimum, np.fmax, np.fmin, np.arctan2, np.equal,
          np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal, np.logical_and,
          np.logical_or, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.left_shift,
          np.right_shift]
UNARY = [np.conjugate, np.negative, np.positive, np.absolute, np.exp, np.log, np.log2, np.log10, np.sqrt,
         np.sin, np.cos, np.tan, np.tanh, np.arcsin, np.arccos, np.arctan, np.exp2, np.expm1,
         np.log1p, np.logical_not, np.isnan, np.isinf, np.isfinite, np.sign, np.floor, np.ceil,
         np.invert]


@pytest.fixture(params=["model", "device"])
def mode(request, monkeypatch):
    if request.param == "device":
        if provided("elementwise") is None:
            pytest.skip("this build has no oxicuda.elementwise (issue 21 items 1-2, s8-jit)")
    else:
        array_math_host_model.install(monkeypatch)
    return request.param


def needs_reduction(mode: str, generated: bool) -> None:
    """Skip a device-mode case that needs oxicuda.reduction while the build has none."""
    if mode == "device" and generated and provided("reduction") is None:
        pytest.skip("this build has no oxicuda.reduction (issue 21 items 1-2, s8-jit)")


def values(rng, dt: np.dtype, shape, *, special: bool = True) -> np.ndarray:
    """Random values of dt; floats get NaN/inf/-0 sprinkled in when ``special``."""
    n = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "b":
        h = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -9
        h = rng.integers(lo, 10, n).astype(dt)
    elif dt.kind == "c":
        h = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    else:
        h = (rng.standard_normal(n) * 3).astype(np.float32)
        if special and n >= 4:
            h[rng.integers(0, n)] = np.nan
            h[rng.integers(0, n)] = np.inf
            h[rng.integers(0, n)] = -0.0
        h = h.astype(dt)
    return h.reshape(shape)


def tolerance(dt: np.dtype) -> float:
    if dt in (np.dtype(np.float16), BF16):
        return 2e-2
    if dt in (np.dtype(np.float32), np.dtype(np.complex64)):
        return 2e-6
    return 1e-12


def check(got: object, want: np.ndarray) -> None:
    assert isinstance(got, DeviceArray), type(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    h = got.get()
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(h, want)
    else:
        tol = tolerance(want.dtype)
        np.testing.assert_allclose(h.astype(np.complex128 if want.dtype.kind == "c" else np.float64),
                                   want.astype(np.complex128 if want.dtype.kind == "c" else np.float64),
                                   rtol=tol, atol=tol, equal_nan=True)


def numpy_or_error(fn, *args, **kw):
    with np.errstate(all="ignore"):
        try:
            return fn(*args, **kw), None
        except (TypeError, ValueError, OverflowError) as exc:
            return None, exc


def expect(fn_ours, fn_np, args_ours, args_np, ufunc=None):
    want, err = numpy_or_error(fn_np, *args_np)
    if err is not None:
        with pytest.raises(type(err) if not isinstance(err, TypeError) else TypeError):
            fn_ours(*args_ours)
        return None
    try:
        got = fn_ours(*args_ours)
    except NotImplementedError:
        # only the loops the table lacks (complex transcendental, ...) may refuse
        assert ufunc is not None
        loop = U.resolve(ufunc, [oxicuda.asarray(a) if isinstance(a, np.ndarray) else
                                 U.operand(a) for a in args_np])
        assert U.kind(loop[0]) not in U.TABLE[ufunc]
        assert not (U.kind(loop[0]) == "c" and ufunc in COMPLEX_BODIES)
        return None
    check(got, np.asarray(want))
    return got


def binary_inputs(rng, ufunc, da, db, shape=(2, 3)):
    a, b = values(rng, da, shape), values(rng, db, shape)
    if ufunc is np.power and db.kind in "iu":
        b = (np.abs(b) % 4).astype(db)
        if da.kind in "iu":  # numpy refuses negative integer exponents (operands swap)
            a = (np.abs(a) % 4).astype(da)
    if ufunc in (np.left_shift, np.right_shift) and db.kind in "iu":
        b = (np.abs(b.astype(np.int64)) % (8 * min(da.itemsize, db.itemsize))).astype(db)
    return a, b


@pytest.mark.parametrize("ufunc", BINARY, ids=lambda u: u.__name__)
@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
def test_binary_ufunc_matches_numpy_for_dtype_pairs(mode, rng, ufunc, pair):
    a, b = binary_inputs(rng, ufunc, *pair)
    with oxicuda.trace() as t:
        got = expect(lambda x, y: ufunc(oxicuda.asarray(x), oxicuda.asarray(y)), ufunc, (a, b),
                     (a, b), ufunc)
    if got is not None and mode == "device":
        assert any(getattr(r.spec, "family", None) == "jit_elementwise" for r in t.launches)


@pytest.mark.parametrize("ufunc", UNARY, ids=lambda u: u.__name__)
@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_unary_ufunc_matches_numpy_for_every_dtype(mode, rng, ufunc, dt):
    a = values(rng, dt, (2, 3))
    expect(lambda x: ufunc(oxicuda.asarray(x)), ufunc, (a,), (a,), ufunc)


OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
             operator.mod, operator.pow, operator.eq, operator.ne, operator.lt, operator.le,
             operator.gt, operator.ge, operator.and_, operator.or_, operator.xor,
             operator.lshift, operator.rshift]
_OP_UFUNC = {operator.add: np.add, operator.sub: np.subtract, operator.mul: np.multiply,
             operator.truediv: np.true_divide, operator.floordiv: np.floor_divide,
             operator.mod: np.remainder, operator.pow: np.power, operator.eq: np.equal,
             operator.ne: np.not_equal, operator.lt: np.less, operator.le: np.less_equal,
             operator.gt: np.greater, operator.ge: np.greater_equal,
             operator.and_: np.bitwise_and, operator.or_: np.bitwise_or,
             operator.xor: np.bitwise_xor, operator.lshift: np.left_shift,
             operator.rshift: np.right_shift}


@pytest.mark.parametrize("op", OPERATORS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("dt", ["bool", "int16", "uint32", "float32", "float64", "complex64"])
def test_operators_match_numpy_with_arrays_and_reflected_scalars(mode, rng, op, dt):
    dt = np.dtype(dt)
    a, b = binary_inputs(rng, _OP_UFUNC[op], dt, dt)
    da, db = oxicuda.asarray(a), oxicuda.asarray(b)
    ufunc = _OP_UFUNC[op]
    expect(op, op, (da, db), (a, b), ufunc)
    for scalar in (2, 3.5, True, np.float32(2), np.int8(3)):
        expect(op, op, (da, scalar), (a, scalar), ufunc)
        expect(op, op, (scalar, da), (scalar, a), ufunc)
    expect(op, op, (b, da), (b, a), ufunc)  # numpy array on the left: __array_ufunc__


@pytest.mark.parametrize("dt", ["int8", "uint16", "float32", "float64", "bool", "complex128"])
def test_unary_operators(mode, rng, dt):
    a = values(rng, np.dtype(dt), (5,))
    for op, uf in [(operator.neg, np.negative), (operator.pos, np.positive),
                   (abs, np.absolute), (operator.invert, np.invert)]:
        expect(op, op, (oxicuda.asarray(a),), (a,), uf)


def test_python_scalars_are_weak_and_numpy_scalars_strong(mode):
    i8 = oxicuda.asarray(np.array([1, -2, 3], np.int8))
    f32 = oxicuda.asarray(np.array([1.5, 2.5], np.float32))
    assert (i8 + 1).dtype == np.int8
    assert (i8 + 1.5).dtype == np.float64
    assert (f32 * 2.0).dtype == np.float32
    assert (f32 * np.float64(2.0)).dtype == np.float64
    assert (i8 + np.int64(1)).dtype == np.int64
    assert (f32 + 1j).dtype == np.complex64
    with pytest.raises(OverflowError):
        i8 + 300
    u8 = oxicuda.asarray(np.array([1, 2], np.uint8))
    with pytest.raises(OverflowError):
        u8 + (-1)
    check(i8 * 100, np.array([1, -2, 3], np.int8) * np.int8(100))  # wraps like numpy
    h = np.array([1, -2, 3], np.int8)
    for big in (300, -(2**40), 2**63, 2**70):  # numpy 2 compares out-of-range ints exactly
        check(i8 == big, h == big)
        check(i8 < big, h < big)


@pytest.mark.parametrize("sa,sb", [((3, 1), (1, 4)), ((), (2, 3)), ((1,), (4,)), ((0,), (1,)),
                                   ((2, 0, 3), (3,)), ((4, 1, 2), (3, 1))])
def test_broadcasting_matches_numpy(mode, rng, sa, sb):
    a, b = values(rng, np.dtype(np.float32), sa), values(rng, np.dtype(np.float32), sb)
    check(oxicuda.asarray(a) + oxicuda.asarray(b), a + b)
    check(np.maximum(oxicuda.asarray(a), oxicuda.asarray(b)), np.maximum(a, b))


def test_shapes_that_do_not_broadcast_raise_before_any_launch(mode):
    with oxicuda.trace() as t, pytest.raises(ValueError, match="could not be broadcast"):
        oxicuda.zeros((3, 2)) + oxicuda.zeros((3,))
    assert t.launches == []


def test_views_with_steps_negative_strides_and_transposes(mode, rng):
    h = values(rng, np.dtype(np.float64), (6, 8))
    d = oxicuda.asarray(h)
    check(d[::2, 1::3] * d[1::2, ::3], h[::2, 1::3] * h[1::2, ::3])
    check(d[::-1] - d, h[::-1] - h)
    check(d.T + 1.0, h.T + 1.0)
    check(np.exp(d[:, ::-2]), np.exp(h[:, ::-2]))


def test_inplace_operators_write_into_the_array_and_refuse_unsafe_casts(mode, rng):
    h = values(rng, np.dtype(np.int32), (3, 4))
    d = oxicuda.asarray(h)
    same = d
    d += 2
    d *= oxicuda.asarray(h)
    d -= np.int8(1)
    assert d is same
    want = (h + 2) * h - 1
    check(d, want)
    with pytest.raises(TypeError, match="same_kind"):
        d += 1.5
    with pytest.raises(TypeError, match="same_kind"):
        d /= 2
    check(d, want)  # nothing written by the refused ones
    f = oxicuda.asarray(h.astype(np.float32))
    f += oxicuda.asarray(h.astype(np.int64))  # int64 -> float32 is same_kind
    check(f, (h.astype(np.float32) + h.astype(np.int64)).astype(np.float32))
    with pytest.raises(ValueError):
        f += oxicuda.zeros((2, 3, 4))  # the result would not fit f's shape


def test_inplace_with_an_overlapping_view_reads_the_old_values(mode, rng):
    h = values(rng, np.dtype(np.float32), (10,), special=False)
    d = oxicuda.asarray(h)
    d[1:] += d[:-1]
    h[1:] += h[:-1]
    check(d, h)


def test_out_argument_of_ufuncs(mode, rng):
    a, b = values(rng, np.dtype(np.float32), (3, 4)), values(rng, np.dtype(np.float32), (4,))
    c = oxicuda.full((3, 4), np.nan, np.float64)
    r = np.maximum(oxicuda.asarray(a), oxicuda.asarray(b), out=c)
    assert r is c
    check(c, np.maximum(a, b).astype(np.float64))
    with pytest.raises(ValueError, match="out has shape"):
        np.add(oxicuda.asarray(a), 1, out=oxicuda.empty((4,), np.float32))
    with pytest.raises(TypeError, match="same_kind"):
        np.add(oxicuda.asarray(a), 1, out=oxicuda.empty((3, 4), np.int32))
    with pytest.raises(TypeError):  # a host out would mean a host result: refused
        np.add(oxicuda.asarray(a), 1, out=np.empty((3, 4), np.float32))
    e = np.exp(oxicuda.asarray(a), dtype=np.float64)
    check(e, np.exp(a, dtype=np.float64))


def test_comparisons_return_bool_arrays_and_truth_stays_numpy_s(mode, rng):
    h = values(rng, np.dtype(np.float32), (4,), special=False)
    d = oxicuda.asarray(h)
    check(d < 0, h < 0)
    e = oxicuda.asarray(h)
    check(d == e, h == h.copy())
    with pytest.raises(ValueError, match="truth value"):
        bool(d == e)
    assert bool(d[:1] == d[:1])
    assert (d == "text") is False and (d != "text") is True
    with pytest.raises(TypeError):
        _ = d < "text"
    assert {d: 1}[d] == 1


def test_unsupported_ufuncs_and_methods_raise_numpy_s_type_error(mode):
    # (numpy's message holds the array's repr: a read for the text, no computation)
    d = oxicuda.asarray(np.arange(4, dtype=np.float32))
    with pytest.raises(TypeError):
        np.sinh(d)
    with pytest.raises(TypeError):
        np.add.accumulate(d)
    with pytest.raises(TypeError):
        np.divmod(d, 2)
    with pytest.raises(TypeError):
        np.add(d, 1, where=np.array([True, False, True, True]))


def test_missing_loops_raise_numpy_s_type_error(mode):
    b = oxicuda.asarray(np.array([True, False]))
    f = oxicuda.asarray(np.array([1.0, 2.0]))
    with pytest.raises(TypeError):
        b - b
    with pytest.raises(TypeError):
        _ = -b
    with pytest.raises(TypeError):
        f & f
    with pytest.raises(TypeError):
        f << 1


# -- where / clip --------------------------------------------------------------------------


def test_where_and_clip_match_numpy(mode, rng):
    h = values(rng, np.dtype(np.float32), (3, 4))
    c = h > 0
    d = oxicuda.asarray(h)
    check(oxicuda.where(oxicuda.asarray(c), d, 0), np.where(c, h, 0))
    check(oxicuda.where(oxicuda.asarray(c), d, oxicuda.asarray(h.astype(np.float64).T[:4, :3].T)),
          np.where(c, h, h.astype(np.float64).T[:4, :3].T))
    check(oxicuda.where(oxicuda.asarray(c[:1]), 1, 2), np.where(c[:1], 1, 2))
    check(oxicuda.where(True, d, -d), np.where(True, h, -h))
    b = oxicuda.asarray(c)
    check(oxicuda.where(b, True, b), np.where(c, True, c))
    check(oxicuda.clip(d, -1, 1), np.clip(h, -1, 1))
    check(d.clip(min=0), np.clip(h, 0, None))
    check(d.clip(max=0.5), np.clip(h, None, 0.5))
    i = values(rng, np.dtype(np.int16), (5,))
    check(oxicuda.clip(oxicuda.asarray(i), -3, 4), np.clip(i, -3, 4))
    with pytest.raises(ValueError):
        oxicuda.clip(d)
    with pytest.raises(NotImplementedError, match="nonzero"):
        oxicuda.where(d)


# -- reductions ----------------------------------------------------------------------------

AXES = [None, 0, 1, -1, (0, 2), (-1, 0), (0, 1, 2)]
RED_DTYPES = ["bool", "int8", "int32", "uint32", "int64", "float16", "float32", "float64"]


def reduction_input(rng, dt, shape=(3, 4, 2)):
    h = values(rng, np.dtype(dt), shape, special=False)
    return h


@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "max", "min", "any", "all"])
def test_reductions_match_numpy_for_all_axes_and_keepdims(mode, rng, name, axis, keepdims):
    needs_reduction(mode, name in ("prod", "mean", "any", "all"))
    for dt in RED_DTYPES:
        if name == "prod" and dt == "float16":
            continue  # numpy accumulates float16 products in float16: a different rounding
        h = reduction_input(rng, dt)
        d = oxicuda.asarray(h)
        want = getattr(np, name)(h, axis=axis, keepdims=keepdims)
        got = getattr(d, name)(axis=axis, keepdims=keepdims)
        check(got, np.asarray(want))
        check(getattr(oxicuda, name)(d, axis=axis, keepdims=keepdims), np.asarray(want))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_argmax_argmin_match_numpy(mode, rng, name, axis):
    needs_reduction(mode, axis is not None)
    for dt in ["int8", "uint16", "int32", "float16", "float32", "float64", "bool"]:
        h = reduction_input(rng, dt, (4, 5))
        d = oxicuda.asarray(h)
        check(getattr(d, name)(axis=axis), np.asarray(getattr(np, name)(h, axis=axis)))
        check(getattr(d, name)(axis=axis, keepdims=True),
              np.asarray(getattr(np, name)(h, axis=axis, keepdims=True)))


def test_reduction_dtype_rules_are_numpy_s(mode, rng):
    needs_reduction(mode, True)
    i32 = oxicuda.asarray(np.array([2**31 - 1, 1], np.int32))
    assert i32.sum().dtype == np.int64 and int(i32.sum()) == 2**31
    assert oxicuda.asarray(np.ones(3, bool)).sum().dtype == np.int64
    assert oxicuda.asarray(np.ones(3, np.uint8)).sum().dtype == np.uint64
    assert oxicuda.asarray(np.ones(3, np.int16)).mean().dtype == np.float64
    assert oxicuda.asarray(np.ones(3, np.float16)).mean().dtype == np.float16
    h = values(rng, np.dtype(np.int32), (3, 4))
    check(oxicuda.asarray(h).sum(axis=0, dtype=np.float32), h.sum(axis=0, dtype=np.float32))
    out = oxicuda.full((4,), np.nan, np.float64)
    assert oxicuda.asarray(h).sum(axis=0, out=out) is out
    check(out, h.sum(axis=0).astype(np.float64))


def test_max_min_propagate_nan_and_full_reductions_run_on_the_device(mode, rng):
    h = values(rng, np.dtype(np.float32), (64,), special=False)
    h[17] = np.nan
    d = oxicuda.asarray(h)
    with oxicuda.trace() as t:
        m = d.max()
        s = d.sum()
    assert np.isnan(float(m)) and np.isnan(float(s))
    assert len(t.launches) >= 2
    assert int(d.argmax()) == 17 and int(d.argmin()) == 17
    check(d.reshape(8, 8).max(axis=1), h.reshape(8, 8).max(axis=1))


def test_empty_reductions(mode):
    e = oxicuda.zeros((0, 3), np.float32)
    check(e.sum(), np.asarray(np.zeros((0, 3), np.float32).sum()))
    check(e.sum(axis=0), np.zeros((0, 3), np.float32).sum(axis=0))
    check(e.max(axis=1), np.zeros((0, 3), np.float32).max(axis=1))
    for fn in ("max", "min"):
        with pytest.raises(ValueError, match="zero-size array"):
            getattr(e, fn)()
        with pytest.raises(ValueError, match="zero-size array"):
            getattr(e, fn)(axis=0)
    for fn in ("argmax", "argmin"):
        with pytest.raises(ValueError, match="empty sequence"):
            getattr(e, fn)()


def test_bad_axes_raise_numpy_s_errors(mode):
    d = oxicuda.zeros((2, 3))
    with pytest.raises(np.exceptions.AxisError):
        d.sum(axis=2)
    with pytest.raises(ValueError, match="duplicate"):
        d.sum(axis=(0, -2))
    with pytest.raises(TypeError):
        d.argmax(axis=(0, 1))
    with pytest.raises(ValueError, match="out has shape"):
        d.sum(axis=0, out=oxicuda.empty((2,)))


def test_numpy_functions_and_ufunc_reduce_dispatch_to_the_device(mode, rng):
    h = values(rng, np.dtype(np.float64), (3, 5), special=False)
    d = oxicuda.asarray(h)
    check(np.sum(d, axis=1), h.sum(axis=1))
    check(np.max(d), np.asarray(h.max()))
    check(np.add.reduce(d), np.add.reduce(h))
    check(np.maximum.reduce(d, axis=1, keepdims=True), np.maximum.reduce(h, axis=1, keepdims=True))


# -- matmul --------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", ["float32", "float64", "complex64", "complex128", "float16",
                                "bfloat16"])
@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((4,), (4, 2)), ((3, 4), (4,)),
                                   ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 2)),
                                   ((2, 3, 4), (1, 4, 5))])
def test_matmul_matches_numpy(rng, dt, sa, sb):
    dt = BF16 if dt == "bfloat16" else np.dtype(dt)
    a, b = values(rng, dt, sa, special=False), values(rng, dt, sb, special=False)
    wide = np.complex128 if dt.kind == "c" else np.float64
    with oxicuda.trace() as t:
        got = oxicuda.asarray(a) @ oxicuda.asarray(b)
    assert t.launches
    want = a.astype(wide) @ b.astype(wide)
    assert got.shape == want.shape and got.dtype == dt
    tol = 3e-2 if dt.itemsize == 2 else 1e-4
    np.testing.assert_allclose(got.get().astype(wide), want, rtol=tol, atol=tol * 4)


def test_matmul_refuses_other_dtypes_and_shapes():
    i = oxicuda.zeros((2, 2), np.int32)
    with pytest.raises(TypeError, match="not supported by oxicuda.blas"):
        i @ i
    f = oxicuda.zeros((2, 3))
    with pytest.raises(ValueError, match="mismatch"):
        f @ f
    with pytest.raises(ValueError):
        f @ 2.0


# -- scalars and text ----------------------------------------------------------------------


def test_item_and_repr_show_values():
    d = oxicuda.asarray(np.array([1.5, 2.5], np.float32))
    assert d[1].item() == 2.5
    assert repr(d) == "DeviceArray([1.5, 2.5], dtype=float32)"
    with pytest.raises(ValueError):
        d.item()


def test_without_elementwise_kernels_operations_refuse_before_touching_the_device(monkeypatch):
    array_math_host_model.remove(monkeypatch, "elementwise")
    d = oxicuda.zeros(3)
    with oxicuda.trace() as t, pytest.raises(NotImplementedError, match="oxicuda.elementwise"):
        d + 1
    assert t.launches == []


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (1, 2)])
@pytest.mark.parametrize("dt", ["int32", "uint8", "float16", "float32", "float64", "complex64"])
def test_sum_max_min_run_on_primitives_without_generated_reductions(monkeypatch, rng, axis, dt):
    # primitives' device-wide and segmented reduce, no oxicuda.reduction in the build
    array_math_host_model.remove(monkeypatch, "reduction")
    h = values(rng, np.dtype(dt), (3, 4, 5), special=False)
    d = oxicuda.asarray(h)
    views = [(d, h), (d[::-1, :, ::2], h[::-1, :, ::2])]
    for dv, hv in views:
        with oxicuda.trace() as t:
            got = dv.sum(axis=axis)
        assert any("prim" in k for k in t.kernels())
        check(got, np.asarray(hv.sum(axis=axis)))
        if dt != "complex64":
            check(dv.max(axis=axis), np.asarray(hv.max(axis=axis)))
            check(dv.min(axis=axis, keepdims=True), np.asarray(hv.min(axis=axis, keepdims=True)))
    hn = h.astype(np.float32)
    hn[1, 2, 3] = np.nan
    check(oxicuda.asarray(hn).max(axis=2), hn.max(axis=2))


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_ufuncs_on_the_parts_match_numpy_with_specials_and_out(mode, rng, dt):
    dt = np.dtype(dt)
    a, b = values(rng, dt, (3, 4)), values(rng, dt, (4,))
    a[0, 0], a[1, 1], b[2] = complex(np.nan, 1), complex(np.inf, -2), 0
    da, db = oxicuda.asarray(a), oxicuda.asarray(b)
    with np.errstate(all="ignore"):
        for uf in (np.add, np.subtract, np.multiply, np.true_divide, np.equal, np.not_equal):
            check(uf(da, db), uf(a, b))
            check(uf(da[:, ::-1], 2.5j), uf(a[:, ::-1], 2.5j))
        for uf in (np.negative, np.absolute, np.conjugate, np.isnan, np.isinf, np.isfinite,
                   np.logical_not):
            check(uf(da.T), uf(a.T))
        c = oxicuda.full((3, 4), np.nan, np.complex128)
        assert np.multiply(da, db, out=c) is c
        check(c.astype(dt), a * b)  # (computed in the loop dtype, then widened)
    with pytest.raises(NotImplementedError, match="complex"):
        np.exp(da)


def test_operations_run_generated_kernels_and_read_nothing_back(mode, rng, monkeypatch):
    from oxicuda.memory import array as array_module

    if mode == "model":
        pytest.skip("the host model reads its operands back by design")
    h = values(rng, np.dtype(np.float32), (4, 6), special=False)
    i = values(rng, np.dtype(np.int16), (4, 6))
    d, di = oxicuda.asarray(h), oxicuda.asarray(i)
    monkeypatch.setattr(array_module, "copy_device_to_host",
                        lambda *a, **k: pytest.fail("an operation read device data back"))
    with oxicuda.trace() as t:
        r = [d * 2 + di, np.exp(d), d < 0, oxicuda.where(d > 0, d, 0.0), d.clip(-1, 1),
             d.mean(axis=0), di.prod(axis=1), (d > 0).any(axis=1), d.argmax(axis=0),
             d.max(axis=0), d.sum(), abs(-d), d.T @ d]
        d += 1
    families = {getattr(rec.spec, "family", None) for rec in t.launches}
    assert {"jit_elementwise", "jit_reduction"} <= families
    monkeypatch.undo()
    check(r[0], h * 2 + i)
    check(r[5], h.mean(axis=0))
    check(r[8], h.argmax(axis=0))
    check(d, h + 1)


def test_real_imag_views_and_conj(mode, rng):
    h = values(rng, np.dtype(np.complex64), (3, 4))
    d = oxicuda.asarray(h)
    check(d.real, h.real)
    check(d.imag, h.imag)
    d.imag[...] = 5.0  # a view: writes the array's imaginary parts
    h.imag[...] = 5.0
    check(d, h)
    check(d.conj(), h.conj())
    f = oxicuda.asarray(h.real.copy())
    assert f.real is f
    check(f.imag, np.zeros((3, 4), np.float32))


def test_host_operands_are_not_copied_when_the_call_is_refused(mode, monkeypatch):
    from oxicuda.memory import array as array_module

    b = oxicuda.asarray(np.array([True, False, True]))
    f = oxicuda.zeros((3,), np.float32)
    monkeypatch.setattr(array_module, "copy_host_to_device",
                        lambda *a, **k: pytest.fail("a refused call copied its operand"))
    with oxicuda.trace() as t:
        with pytest.raises(TypeError):
            b - np.array([True, True, False])
        with pytest.raises(ValueError, match="broadcast"):
            f + np.ones((2, 2), np.float32)
        with pytest.raises(TypeError, match="same_kind"):
            np.add(f, np.ones(3), out=oxicuda.empty((3,), np.int32))
        with pytest.raises(TypeError, match="not supported by oxicuda.blas"):
            oxicuda.zeros((2, 2), np.int32) @ np.ones((2, 2), np.int32)
    assert t.launches == []
