"""oxicuda.solver svd (one-sided Jacobi, gesvdj) and norm(ord=2) on the live backend against
float64 numpy: ||A - U S V^H|| / (max(m, n) ||A|| eps), orthogonality of U and V."""


from __future__ import annotations

import numpy as np
import pytest
from solver_cases import (  # noqa: F401
    DTYPES,
    EPS,
    THRESH,
    conditioned,
    hilbert,
    no_host_lapack,
    poisoned,
    rand,
    rel,
)

import oxicuda
import oxicuda.solver as S
from oxicuda.solver import dispatch


def check_svd(a, u, s, vh):
    dt = a.dtype.name
    A, U, V = a.astype(rel(dt)), u.astype(rel(dt)), vh.astype(rel(dt))
    m, n = a.shape[-2:]
    k = min(m, n)
    norm = max(np.abs(A).sum(axis=-2).max(), np.finfo(float).tiny)
    assert np.all(np.diff(s, axis=-1) <= 0) and np.all(s >= 0)
    rec = (U[..., :, :k] * s[..., None, :]) @ V[..., :k, :]
    assert np.abs(A - rec).sum(axis=-2).max() / (max(m, n) * norm * EPS[dt]) < THRESH
    for q in (U, np.conj(np.swapaxes(V, -1, -2))):
        eye = np.eye(q.shape[-1])
        assert np.abs(np.conj(np.swapaxes(q, -1, -2)) @ q - eye).max() / (max(m, n) * EPS[dt]) < THRESH
    np.testing.assert_allclose(s, np.linalg.svd(A, compute_uv=False), atol=THRESH * max(m, n) * norm * EPS[dt])


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape, full", [((1, 1), True), ((6, 4), True), ((4, 6), False), ((3, 5, 5), False),
                                         ((3, 7), True)])
def test_svd_matches_numpy_shapes_and_backward_error(rng, poisoned, dt, shape, full):
    a = rand(rng, shape, dt)
    with oxicuda.trace() as t:
        u, s, vh = S.svd(oxicuda.asarray(a), full_matrices=full)
    assert "solver_gesvdj" in [x.family for x in t.specs() if x is not None]
    ru, rs, rvh = np.linalg.svd(a.astype(rel(dt)), full_matrices=full)
    assert u.shape == ru.shape and s.shape == rs.shape and vh.shape == rvh.shape
    assert s.dtype == np.zeros(1, dt).real.dtype
    check_svd(a, u.get(), s.get(), vh.get())


def test_svd_values_only_global_path_and_norm(rng, poisoned, monkeypatch):
    monkeypatch.setitem(dispatch.DISPATCH, "SMALL_MAX", 0)
    a = rand(rng, (2, 7, 5), "float64")
    with oxicuda.trace() as t:
        s = S.svd(oxicuda.asarray(a), compute_uv=False).get()
    assert [x.space for x in t.specs() if x is not None and x.family == "solver_gesvdj"] == ["global"]
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=1e-13)
    monkeypatch.setitem(dispatch.DISPATCH, "SMALL_MAX", 64)
    np.testing.assert_allclose(S.norm(oxicuda.asarray(a), 2, (-2, -1)).get(), np.linalg.norm(a, 2, axis=(-2, -1)), rtol=1e-13)
    np.testing.assert_allclose(S.norm(oxicuda.asarray(a), -2, (-2, -1)).get(), np.linalg.norm(a, -2, axis=(-2, -1)),
                               rtol=1e-12)


@pytest.mark.parametrize("kind", ("cond1e6", "hilbert", "rank_deficient"))
def test_hard_matrices(rng, poisoned, kind):
    n = 8
    if kind == "cond1e6":
        a = conditioned(rng, n, 1e6, "float64")
    elif kind == "hilbert":
        a = hilbert(n, "float64")
    else:
        a = rand(rng, (n, 3), "float64") @ rand(rng, (3, n), "float64")
    u, s, vh = S.svd(oxicuda.asarray(a))
    A, U, V = a, u.get(), vh.get()
    sv = s.get()
    rec = (U * sv) @ V
    assert np.abs(A - rec).sum(axis=0).max() / (n * np.abs(A).sum(axis=0).max() * EPS["float64"]) < THRESH
    np.testing.assert_allclose(sv, np.linalg.svd(a, compute_uv=False), atol=THRESH * n * np.abs(a).max() * 2.2e-16)


def test_no_host_lapack_and_bad_input(rng, no_host_lapack):
    a = rand(rng, (5, 4), "complex128")
    with oxicuda.trace() as t:
        S.svd(oxicuda.asarray(a))
        S.norm(oxicuda.asarray(a), 2)
    assert {"solver_gesvdj", "solver_geqr2"} <= {x.family for x in t.specs() if x is not None}
    with oxicuda.trace() as t:
        with pytest.raises(np.linalg.LinAlgError, match="two-dimensional"):
            S.svd(np.ones(3))
        with pytest.raises(TypeError, match="int32"):
            S.svd(np.ones((3, 3), np.int32))
        with pytest.raises(ValueError, match="ord"):
            S.norm(np.ones((3, 3)), "bad")
    assert t.launches == []


@pytest.mark.slow
@pytest.mark.parametrize("dt, shape", [("float32", (2, 70, 65)), ("complex64", (65, 65))])
def test_svd_global_path_above_small_max(rng, poisoned, dt, shape):
    """n > SMALL_MAX takes the global variant, whose column norms once lived in a static shared
    array of SMALL_MAX reals (the H200's illegal address at n = 96). Nearly orthogonal columns
    keep the emulator's sweeps few."""
    m, n = shape[-2:]
    a = (np.eye(m, n) * np.arange(n, 0, -1) + 1e-2 * rand(rng, shape, dt)).astype(dt)
    with oxicuda.trace() as t:
        u, s, vh = S.svd(oxicuda.asarray(a), full_matrices=False)
    assert [x.space for x in t.specs() if x is not None and x.family == "solver_gesvdj"] == ["global"]
    check_svd(a, u.get(), s.get(), vh.get())
