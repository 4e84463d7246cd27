"""The @oxicuda.kernel language, construct by construct, against Python/numpy evaluation of the
same functions (device functions are plain Python on the host, with numpy scalars) on the
emulator."""

from __future__ import annotations

import math

import numpy as np
import pytest

import oxicuda
from oxicuda.jit import block_dim, block_idx, grid, gridsize, thread_idx, unroll
from oxicuda.types import Array, In, Out, f32, f64, i8, i32, i64, u8, u32

N = 96


def _dev(a):
    return oxicuda.asarray(a)


def _host_map(fn, *arrays):
    """fn evaluated by Python on numpy scalars, element by element."""
    with np.errstate(all="ignore"):
        return np.array([fn(*(a[i] for a in arrays)) for i in range(len(arrays[0]))])


def _check_map(fn, *arrays, rtol=0.0):
    ek = oxicuda.elementwise(fn)
    got = ek(*(_dev(a) for a in arrays)).get()
    want = _host_map(fn, *arrays)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if rtol:
        np.testing.assert_allclose(got, want, rtol=rtol)
    else:
        np.testing.assert_array_equal(got, want)


def test_saxpy_kernel_writes_every_element_and_nothing_else(rng):
    @oxicuda.kernel
    def saxpy(a: f32, x: In[f32], y: In[f32], out: Out[f32]):
        i = grid(1)
        if i < len(out):
            out[i] = a * x[i] + y[i]

    x, y = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    out = oxicuda.full(N + 5, np.nan, np.float32)
    with oxicuda.trace() as t:
        saxpy[2, 64](2.5, _dev(x), _dev(y), out[:N])
    res = out.get()
    np.testing.assert_array_equal(res[:N], np.float32(2.5) * x + y)
    assert np.isnan(res[N:]).all()
    assert t.launches[0].spec.family == "jit_kernel"
    assert "ld.global.nc.f32" in saxpy.ptx(2.5, _dev(x), _dev(y), out[:N])


def test_precise_mode_has_no_contraction_and_fma_call_fuses():
    @oxicuda.kernel
    def k(x: Array[f32], y: Array[f32]):
        i = grid(1)
        y[i] = x[i] * x[i] + 1.0

    @oxicuda.kernel
    def kf(x: Array[f32], y: Array[f32]):
        i = grid(1)
        y[i] = oxicuda.jit.fma(x[i], x[i], f32(1.0))

    x = _dev(np.ones(4, np.float32))
    text = k.ptx(x, x)
    assert "mul.rn.f32" in text and "add.rn.f32" in text and "fma" not in text
    assert "fma.rn.f32" in kf.ptx(x, x)


def test_arithmetic_promotion_matches_numpy_for_mixed_types(rng):
    a = rng.integers(-100, 100, N).astype(np.int32)
    b = rng.standard_normal(N).astype(np.float32)
    c = rng.integers(1, 50, N).astype(np.int8)
    _check_map(lambda x, y: x + y, a, b)            # i32 + f32 -> f64
    _check_map(lambda x, y: x * y + 1, b, b)          # stays f32
    _check_map(lambda x, y: x + y, c, c)              # i8 wraps
    _check_map(lambda x, y: x * 3 - y, c, a)          # i8, i32 -> i32
    _check_map(lambda x, y: x / y, a, a + 1000)       # true division of ints -> f64
    _check_map(lambda x: x * 2.5, c)                  # i8 * weak float -> f64


def test_integer_floor_division_and_modulo_follow_python_signs(rng):
    a = rng.integers(-1000, 1000, N).astype(np.int64)
    b = rng.integers(-30, 30, N).astype(np.int64)
    b[b == 0] = 7
    _check_map(lambda x, y: x // y, a, b)
    _check_map(lambda x, y: x % y, a, b)
    ua, ub = a.astype(np.uint32), (np.abs(b) + 1).astype(np.uint32)
    _check_map(lambda x, y: x // y, ua, ub)
    _check_map(lambda x, y: x % y, ua, ub)


def test_integer_division_by_zero_gives_zero_like_numpy():
    a = np.array([5, -5, 7, 0], np.int32)
    b = np.array([0, 0, 2, 0], np.int32)
    got = oxicuda.elementwise(lambda x, y: x // y)(_dev(a), _dev(b)).get()
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, a // b)


def test_comparisons_and_boolean_logic(rng):
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    a[:4] = np.nan
    _check_map(lambda x, y: x < y, a, b)
    _check_map(lambda x, y: x != y, a, b)            # NaN != anything is True
    _check_map(lambda x, y: (x < y) and (y > 0), a, b)
    _check_map(lambda x, y: not (x >= y) or x == y, a, b)
    _check_map(lambda x, y: 0 < x < y, a, b)
    i = rng.integers(-5, 5, N).astype(np.int64)
    u = rng.integers(0, 2**64 - 1, N, dtype=np.uint64)
    _check_map(lambda x, y: x < y, i, u)              # signed vs u64: exact comparison


def test_bitwise_and_shifts(rng):
    a = rng.integers(0, 2**31, N).astype(np.int32)
    s = rng.integers(0, 31, N).astype(np.int32)
    _check_map(lambda x, y: (x & 0xFF) | (y << 3) ^ ~x, a, s)
    _check_map(lambda x, y: x >> y, a, s)
    b = rng.integers(0, 255, N).astype(np.uint8)
    _check_map(lambda x, y: x << 2, b, b)             # u8 wraps


@oxicuda.device
def _clamp(x, lo, hi):
    if x < lo:
        return lo
    elif x > hi:
        return hi
    else:
        return x


@oxicuda.device
def _poly(x):
    acc = f64(0)
    for k in range(5):
        acc = acc * x + k
    return acc


@oxicuda.device
def _collatz(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
        if steps > 500:
            break
    return steps


@oxicuda.device
def _sum_until(n):
    total = 0
    for k in range(100):
        if k % 3 == 0:
            continue
        if k > n:
            break
        total += k
    return total


@oxicuda.device
def _divmod_pair(a, b):
    return a // b, a % b


@oxicuda.device
def _use_pair(a, b):
    q, r = _divmod_pair(a, b)
    t = (q, r)
    return t[0] * b + t[1]


def test_if_elif_else_loops_break_continue_and_device_calls(rng):
    x = rng.standard_normal(N).astype(np.float32) * 3
    _check_map(lambda v: _clamp(v, np.float32(-1), np.float32(1)), x)
    _check_map(_poly, x.astype(np.float64))
    n = rng.integers(1, 60, N).astype(np.int64)
    _check_map(_collatz, n)
    _check_map(_sum_until, n)
    a = rng.integers(-500, 500, N).astype(np.int64)
    b = rng.integers(1, 20, N).astype(np.int64)
    _check_map(_use_pair, a, b)


def test_variable_types_unify_across_assignments(rng):
    @oxicuda.device
    def f(x):
        acc = 0
        for k in range(3):
            acc = acc + x
        return acc

    x = rng.standard_normal(N).astype(np.float32)
    _check_map(f, x)  # acc is int64 then f32 sums: numpy gives float64


def test_ifexp_and_where(rng):
    x = rng.standard_normal(N).astype(np.float32)
    _check_map(lambda v: v if v > 0 else -2 * v, x)
    got = oxicuda.elementwise(lambda v: np.where(v > 0, v, np.float32(0)))(_dev(x)).get()
    np.testing.assert_array_equal(got, np.where(x > 0, x, np.float32(0)))


@pytest.mark.parametrize("name", ["sqrt", "exp", "log", "sin", "cos", "tanh", "floor", "ceil",
                                  "fabs", "log2", "log10", "exp2", "expm1", "log1p", "tan",
                                  "sinh", "cosh", "trunc"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_math_functions_match_numpy(name, dtype, rng):
    x = (rng.standard_normal(N) * 4).astype(dtype)
    if name in ("sqrt", "log", "log2", "log10"):
        x = np.abs(x) + dtype(1e-3)
    if name == "log1p":
        x = np.abs(x) - dtype(0.5)
    x[:3] = [0.0, -0.0, 1.0] if name not in ("log", "log2", "log10") else [1.0, 2.0, 0.5]
    fn = getattr(np, name)
    got = oxicuda.elementwise(lambda v: fn(v))(_dev(x)).get()
    want = fn(x)
    assert got.dtype == want.dtype
    if dtype == np.float32:  # against the correctly rounded value (numpy's f32 forms are ~1-3 ulp)
        want = fn(x.astype(np.float64)).astype(np.float32)
    tol = 2e-7 if dtype == np.float32 else 4e-15
    # f64 sin/cos/tan reduce by a two-part pi: absolute error about |x| * 1e-16 (module docs)
    atol = 4e-15 if (dtype == np.float64 and name in ("sin", "cos", "tan")) else tol * 1e-2
    tol = 1e-12 if (dtype == np.float64 and name == "tan") else tol  # near the poles
    np.testing.assert_allclose(got, want, rtol=tol, atol=atol)
    np.testing.assert_array_equal(np.signbit(got[:2]), np.signbit(want[:2]))


def test_math_module_names_and_edge_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0], np.float64)
    for fn, ref in ((lambda v: math.exp(v), np.exp), (lambda v: math.log(v), np.log),
                    (lambda v: math.sqrt(v), np.sqrt), (lambda v: math.tanh(v), np.tanh),
                    (lambda v: math.floor(v), np.floor)):
        got = oxicuda.elementwise(fn)(_dev(x)).get()
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(got, ref(x))
    got = oxicuda.elementwise(lambda v: (math.isnan(v), 0)[0])(_dev(x)).get()
    np.testing.assert_array_equal(got, np.isnan(x))
    got = oxicuda.elementwise(lambda a, b: max(a, b))(_dev(x), _dev(x[::-1].copy())).get()
    np.testing.assert_array_equal(got, np.maximum(x, x[::-1]))


def test_negative_zero_and_casts():
    x = np.array([-0.0, 0.0, -1.5, 2.7, -2.7, 300.0, 1e10], np.float32)
    _check_map(lambda v: -v, x)
    _check_map(lambda v: i32(v), x[:5])
    _check_map(lambda v: u8(v), x[:6])
    _check_map(lambda v: i8(v), x[:6])
    _check_map(lambda v: f64(v) * 2, x)
    _check_map(lambda v: v == 0, x)


def test_powers():
    x = np.array([0.5, 2.0, 3.0, -2.0, 1.0, 0.0], np.float64)
    y = np.array([2.0, 0.5, -1.0, 3.0, 7.5, 2.0], np.float64)
    got = oxicuda.elementwise(lambda a, b: a ** b)(_dev(x), _dev(y)).get()
    np.testing.assert_allclose(got, x ** y, rtol=1e-14)
    _check_map(lambda a: a ** 2, x)
    n = np.array([0, 1, 2, 3, 10], np.int64)
    _check_map(lambda a: 3 ** a, n)


def test_thread_geometry_and_2d_grid(rng):
    @oxicuda.kernel
    def ids(out: Out[i32, 2]):
        r, c = grid(2)
        if r < out.shape[0] and c < out.shape[1]:
            out[r, c] = (block_idx.x * block_dim.x + thread_idx.x) * 1000 + block_idx.y * block_dim.y + thread_idx.y

    out = oxicuda.full((5, 7), -1, np.int32)
    ids[(2, 2), (4, 4)](out)
    r, c = np.meshgrid(np.arange(5), np.arange(7), indexing="ij")
    np.testing.assert_array_equal(out.get(), r * 1000 + c)


def test_gridsize_grid_stride_loop_and_forall(rng):
    @oxicuda.kernel
    def double(x: Array[f64]):
        i = grid(1)
        while i < x.size:
            x[i] = x[i] * 2
            i += gridsize(1)

    h = rng.standard_normal(1000)
    x = _dev(h)
    double[2, 32](x)
    np.testing.assert_array_equal(x.get(), h * 2)
    double.forall(1000)(x)
    np.testing.assert_array_equal(x.get(), h * 4)


def test_nd_arrays_any_strides_specialize_per_layout(rng):
    @oxicuda.kernel
    def transpose_add(a, b, out):
        i, j = grid(2)
        if i < out.shape[0] and j < out.shape[1]:
            out[i, j] = a[i, j] + b[j, i]

    ha = rng.standard_normal((6, 9)).astype(np.float32)
    hb = rng.standard_normal((9, 6)).astype(np.float32)
    out = oxicuda.empty((6, 9), np.float32)
    transpose_add[(1, 1), (8, 16)](_dev(ha), _dev(hb), out)
    np.testing.assert_array_equal(out.get(), ha + hb.T)
    strided = _dev(np.ascontiguousarray(hb.T).T.copy())  # C copy of hb
    view = _dev(rng.standard_normal((12, 9)).astype(np.float32))[::2]
    transpose_add[(1, 1), (8, 16)](view, strided, out)
    np.testing.assert_array_equal(out.get(), view.get() + hb.T)
    orders = sorted(s.signature[0].order for s in transpose_add.specializations)
    assert orders == ["A", "C"]


def test_unrolled_loop_with_constant_bounds(rng):
    @oxicuda.kernel
    def k(x: Array[f32], out: Array[f32]):
        i = grid(1)
        if i < len(out):
            s = f32(0)
            for j in unroll(4):
                s += x[i] * j
            for j in range(3, unroll=True):
                s += j
            out[i] = s

    h = rng.standard_normal(40).astype(np.float32)
    out = oxicuda.empty(40, np.float32)
    k[1, 64](_dev(h), out)
    want = np.zeros(40, np.float32)
    for j in range(4):
        want += h * np.float32(j)
    for j in range(3):
        want += np.float32(j)
    np.testing.assert_array_equal(out.get(), want)
    assert "jit_for" not in k.ptx(_dev(h), out)  # no runtime loop left


def test_scalar_parameters_of_every_kind(rng):
    @oxicuda.kernel
    def fill(out: Out[f64], a: i8, b: u32, c: bool, d: f32, e):
        i = grid(1)
        if i < len(out):
            out[i] = a + b * 2 + (1 if c else 0) + d + e

    out = oxicuda.empty(8, np.float64)
    fill[1, 32](out, -3, 7, True, 0.5, 10)
    np.testing.assert_array_equal(out.get(), np.full(8, -3 + 14 + 1 + 0.5 + 10.0))


def test_argument_checks_before_launch():
    @oxicuda.kernel
    def k(x: Array[f32, 1], n: i32):
        pass

    x32 = _dev(np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="'x' has dtype float64"):
        k[1, 1](_dev(np.zeros(4)), 1)
    with pytest.raises(ValueError, match="'x' has 2 dimensions"):
        k[1, 1](_dev(np.zeros((2, 2), np.float32)), 1)
    with pytest.raises(TypeError, match="must be a device array.*asarray"):
        k[1, 1](np.zeros(4, np.float32), 1)
    with pytest.raises(ValueError, match="out of range for i32"):
        k[1, 1](x32, 2**40)
    with pytest.raises(TypeError, match="takes 2 arguments"):
        k[1, 1](x32)
    with pytest.raises(ValueError, match="block"):
        k[1, 4096](x32, 1)


def test_requires_precondition_is_checked_on_the_host():
    @oxicuda.kernel(requires="len(a) == len(out)")
    def copy(a: In[f32], out: Out[f32]):
        i = grid(1)
        if i < len(out):
            out[i] = a[i]

    a = _dev(np.arange(5, dtype=np.float32))
    with pytest.raises(ValueError, match=r"precondition `len\(a\) == len\(out\)` failed.*a.shape=\(5,\)"):
        copy[1, 32](a, oxicuda.empty(6, np.float32))
    out = oxicuda.empty(5, np.float32)
    copy(a, out, grid=1, block=32)
    np.testing.assert_array_equal(out.get(), np.arange(5, dtype=np.float32))


def _lines_of(src_fn):
    import inspect

    return inspect.getsourcelines(src_fn)[1]


def test_unsupported_syntax_names_file_line_and_construct():
    def bad(x):
        y = [1, 2, 3]
        x[0] = y[0]

    k = oxicuda.kernel(bad)
    with pytest.raises(oxicuda.jit.CompileError) as err:
        k[1, 1](_dev(np.zeros(2)))
    msg = str(err.value)
    assert "test_jit_language.py:" in msg and "List" in msg
    assert f":{_lines_of(bad) + 1}:" in msg

    def bad2(x):
        x[0] = undefined_name  # noqa: F821

    with pytest.raises(oxicuda.jit.CompileError, match="undefined_name.*is not defined"):
        oxicuda.kernel(bad2)[1, 1](_dev(np.zeros(2)))

    def bad3(x: In[f64]):
        x[0] = 1.0

    with pytest.raises(oxicuda.jit.CompileError, match="read-only"):
        oxicuda.kernel(bad3)[1, 1](_dev(np.zeros(2)))

    def bad4(x):
        return 1

    with pytest.raises(oxicuda.jit.CompileError, match="cannot return a value"):
        oxicuda.kernel(bad4)[1, 1](_dev(np.zeros(2)))


def test_math_mode_is_part_of_the_cache_key_and_changes_code():
    def body(x: Array[f32]):
        i = grid(1)
        x[i] = math.exp(x[i]) / x[i]

    precise, fast = oxicuda.kernel(body), oxicuda.kernel(body, math="fast")
    x = _dev(np.ones(4, np.float32))
    tp, tf = precise.ptx(x), fast.ptx(x)
    assert "ex2.approx" in tf and "div.full.f32" in tf
    assert "ex2.approx" not in tp and "div.rn.f32" in tp
    sp = precise.specialize(precise.signature_of((x,)))
    sf = fast.specialize(fast.signature_of((x,)))
    from oxicuda.ptx.cache import cache_key

    assert sp != sf and cache_key(sp) != cache_key(sf)


def test_specialization_per_signature_and_memory_cache(rng):
    @oxicuda.kernel
    def inc(x):
        i = grid(1)
        if i < len(x):
            x[i] += 1

    a32, a64 = _dev(np.zeros(10, np.float32)), _dev(np.zeros(10, np.int64))
    inc[1, 32](a32)
    inc[1, 32](a64)
    inc[1, 32](a32)
    assert len(inc.specializations) == 2
    np.testing.assert_array_equal(a32.get(), np.full(10, 2, np.float32))
    np.testing.assert_array_equal(a64.get(), np.ones(10, np.int64))


def test_generated_ptx_assembles_with_ptxas(rng):
    from oxicuda.ptx import validate

    try:
        validate.find_ptxas()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"ptxas not available: {exc}")

    @oxicuda.kernel
    def k(x: Array[f32, 2], y: In[f64], n: i64, out: Out[u32]):
        i, j = grid(2)
        if i < x.shape[0] and j < x.shape[1]:
            v = math.tanh(x[i, j]) + math.log1p(y[j]) ** 2.5
            out[j] = u32(v) // 3 + n % 7
            x[i, j] = f32(v)

    x, y, out = _dev(np.ones((3, 4), np.float32)), _dev(np.ones(4)), _dev(np.zeros(4, np.uint32))
    for arch in ("sm_86", "sm_90"):
        text = k.ptx(x, y, 3, out, arch=arch)
        report = validate.assemble(text, arch)
        assert report.ok, report
