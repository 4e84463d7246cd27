"""oxicuda.solver.norm against numpy.linalg.norm: every vector ord (0, +-1, 2, +-inf, fractional
and negative p), every matrix ord (fro, nuc, +-1, +-2, +-inf), axis as an int or a pair,
keepdims, every dtype (integers, float16 and the four solver dtypes), NaN/inf/zero edge
values, the two-pass path of long rows; results poisoned first, the kernels proven by trace,
numpy.linalg never reached; bad input raising before any launch."""


from __future__ import annotations

import numpy as np
import pytest
from solver_cases import PoisonedArray, no_host_lapack, rand  # noqa: F401

import oxicuda
from oxicuda import solver as S
from oxicuda.memory.array import DeviceArray

try:
    from numpy.exceptions import AxisError
except ImportError:  # numpy < 1.25
    from numpy import AxisError

VECTOR_ORDS = [None, 0, 1, -1, 2, -2, np.inf, -np.inf, 3, 0.5, -1.5]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]
RTOL = {"float32": 2e-5, "complex64": 2e-5, "float64": 1e-12, "complex128": 1e-12}


@pytest.fixture
def poisoned_norm(monkeypatch):
    """Every array the norms allocate starts NaN."""
    from oxicuda.solver import api, layout, norms

    for mod in (api, layout, norms):
        monkeypatch.setattr(mod, "DeviceArray", PoisonedArray)


def _families(t):
    return {s.family for s in t.specs() if s is not None}


def _ours(x, *args, **kw):
    out = S.norm(oxicuda.asarray(x), *args, **kw)
    assert isinstance(out, DeviceArray)
    return out.get()


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_vector_norms_of_every_ord_along_every_axis_match_numpy(rng, dtype, poisoned_norm):
    a = rand(rng, (3, 5, 4), dtype)
    a[1, 2, 0] = 0  # an exact zero: ord 0 counts it out, negative ords see it
    for ord in VECTOR_ORDS:
        for axis in (0, 1, 2, -1):
            want = np.linalg.norm(a, ord, axis)
            got = _ours(a, ord, axis)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=RTOL[dtype], err_msg=f"ord={ord} axis={axis}")
    v = a[0, :, 1].copy()
    for ord in VECTOR_ORDS:
        np.testing.assert_allclose(_ours(v, ord), np.linalg.norm(v, ord), rtol=RTOL[dtype], err_msg=f"ord={ord}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_matrix_norms_of_every_ord_over_every_axis_pair_match_numpy(rng, dtype, poisoned_norm):
    a = rand(rng, (2, 5, 3), dtype)
    for ord in MATRIX_ORDS:
        for axis in ((1, 2), (2, 1), (0, 2), (-1, 0)):
            want = np.linalg.norm(a, ord, axis)
            got = _ours(a, ord, axis)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=10 * RTOL[dtype], err_msg=f"ord={ord} axis={axis}")
    m = a[1]
    for ord in MATRIX_ORDS:
        np.testing.assert_allclose(_ours(m, ord), np.linalg.norm(m, ord), rtol=10 * RTOL[dtype], err_msg=f"ord={ord}")


def test_keepdims_and_axis_none_shapes_match_numpy(rng):
    a = rand(rng, (2, 3, 4), "float64")
    for ord, axis in ((None, None), (None, 1), (3, 0), ("fro", (0, 2)), (np.inf, (2, 1)), (2, (0, 1))):
        want = np.linalg.norm(a, ord, axis, keepdims=True)
        got = _ours(a, ord, axis, keepdims=True)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert _ours(a).shape == () and _ours(a[0], "fro", keepdims=True).shape == (1, 1)


def test_integer_bool_and_float16_inputs_compute_like_numpy(rng):
    i = rng.integers(-9, 9, (4, 6)).astype(np.int32)
    for ord, axis in ((None, None), (1, None), (np.inf, 1), (0, 0), (3, 1)):
        got, want = _ours(i, ord, axis), np.linalg.norm(i, ord, axis)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-12)
    b = rng.random((3, 4)) > 0.5
    np.testing.assert_allclose(_ours(b, 0, 1), np.linalg.norm(b, 0, 1))
    h = rng.standard_normal((3, 7)).astype(np.float16)
    got = _ours(h, None, 1)
    assert got.dtype == np.float16
    # reduced in float64, rounded once: at least as close to the exact value as numpy's float16
    exact = np.linalg.norm(h.astype(np.float64), None, 1)
    np.testing.assert_allclose(got.astype(np.float64), exact, rtol=1e-3)


def test_nan_inf_and_zero_entries_follow_numpy():
    x = np.array([1.5, -2.0, 0.0, 4.0, 0.25])
    for bad in (np.nan, np.inf, -np.inf):
        y = x.copy()
        y[3] = bad
        for ord in (None, 0, 1, -1, np.inf, -np.inf, 3, -2):
            with np.errstate(all="ignore"):
                want = np.linalg.norm(y, ord)
            np.testing.assert_equal(_ours(y, ord), want, err_msg=f"{bad} ord={ord}")
    c = np.array([1 + 1j, np.inf + 1j, 3j])
    c[2] = complex(np.nan, np.inf)  # hypot(NaN, inf) is inf
    np.testing.assert_equal(_ours(c, np.inf), np.inf)
    np.testing.assert_equal(_ours(np.zeros(4), -1), 0.0)
    np.testing.assert_equal(_ours(np.zeros(0)), 0.0)


def test_long_rows_take_the_two_pass_path(rng):
    x = rng.standard_normal(20000).astype(np.float32)
    with oxicuda.trace() as t:
        got = S.norm(oxicuda.asarray(x), 3).get()
    specs = [s for s in t.specs() if s is not None and s.family == "solver_norm"]
    assert [(s.fn, s.fin) for s in specs] == [("pow", "none"), ("id", "root")]
    np.testing.assert_allclose(got, np.linalg.norm(x.astype(np.float64), 3), rtol=1e-6)
    for ord in (None, 1, np.inf, -np.inf):
        np.testing.assert_allclose(_ours(x, ord), np.linalg.norm(x.astype(np.float64), ord), rtol=1e-6)


def test_norms_run_on_the_device_and_reach_no_host_linalg(rng, no_host_lapack, monkeypatch):
    a = rand(rng, (4, 3), "complex128")
    want = {ord: np.linalg.norm(a, ord) for ord in MATRIX_ORDS}
    monkeypatch.setattr(np.linalg, "norm", lambda *a, **k: (_ for _ in ()).throw(AssertionError("host norm")))
    for ord in MATRIX_ORDS:
        with oxicuda.trace() as t:
            got = S.norm(oxicuda.asarray(a), ord).get()
        np.testing.assert_allclose(got, want[ord], rtol=1e-12)
        fam = _families(t)
        if ord in (2, -2):
            assert "solver_gesvdj" in fam
        elif ord == "nuc":
            assert {"solver_gesvdj", "solver_norm"} <= fam
        else:
            assert "solver_norm" in fam


def test_bad_input_raises_before_any_launch():
    a = np.ones((3, 4))
    x = oxicuda.asarray(np.ones((2, 3, 4)))
    with oxicuda.trace() as t:
        with pytest.raises(ValueError, match="invalid norm order for vectors"):
            S.norm(a, "fro", 1)
        with pytest.raises(ValueError, match="invalid norm order for matrices"):
            S.norm(a, 3)
        with pytest.raises(ValueError, match="duplicate axes"):
            S.norm(a, None, (1, 1))
        with pytest.raises(ValueError, match="improper number of dimensions"):
            S.norm(x, 2)
        with pytest.raises(AxisError):
            S.norm(a, None, 2)
        with pytest.raises(TypeError, match="axis"):
            S.norm(a, None, 1.5)
        with pytest.raises(ValueError, match="empty"):
            S.norm(np.ones((0, 3)), np.inf, 0)
    assert t.launches == []


def test_every_norm_kernel_launched_is_a_registered_configuration(rng):
    from oxicuda.driver.facts import device_facts
    from oxicuda.ptx import registry
    from oxicuda.sparse import csr_matrix
    from oxicuda.sparse import linalg as L

    registry.load_all_families()
    registered = set(registry.configurations(arch=device_facts().arch, family="solver_norm"))
    with oxicuda.trace() as t:
        for dtype in ("float32", "complex128"):
            a = oxicuda.asarray(rand(rng, (3, 4), dtype))
            for ord in ("fro", "nuc", 1, -1, np.inf, -np.inf):
                S.norm(a, ord)
            for ord in (None, 0, 1, np.inf, -np.inf, 3):
                S.norm(a, ord, 1)
            S.norm(oxicuda.asarray(rand(rng, (5000,), dtype)), 3)
            A = csr_matrix(rand(rng, (4, 5), dtype))
            for ord, axis in ((None, None), (1, None), (-np.inf, None), (np.inf, 1), (-np.inf, 0), (0, 1), (3, 0)):
                L.norm(A, ord, axis)
    launched = {s for s in t.specs() if s is not None and s.family == "solver_norm"}
    assert launched and launched <= registered, launched - registered


def test_norm_kernels_assemble_without_spills():
    from oxicuda.ptx import registry, validate

    try:
        validate.find_ptxas()
    except validate.PtxasNotFound:
        pytest.skip("no ptxas")
    registry.load_all_families()
    specs = {}
    for arch in ("sm_86", "sm_90"):
        for s in registry.configurations(arch, "solver_norm"):
            specs.setdefault((arch, s.dtype, s.fn, s.group, s.segmented), s)  # one per shape of the code
    reports = validate.assemble_many([(registry.generate_ptx(s), s.arch) for s in specs.values()])
    for s, r in zip(specs.values(), reports):
        assert r.ok, (s, r.message)
        assert r.spills == 0 and r.registers <= 64, (s, r.registers, r.spills)
