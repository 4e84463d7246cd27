"""Backward passes of softmax, log_softmax, layer_norm, rms_norm and the activations on the live
backend: against float64 numpy references of the same formulas (outputs and workspaces poisoned
with NaN first), against finite differences of float64 forwards and of our own device forwards,
dispatch proven with oxicuda.trace(), bad input raising before any launch, and every registered
configuration assembling with ptxas."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from scipy.special import erf

import oxicuda
from oxicuda import dnn
from oxicuda.dnn import activations_backward, norms_backward, softmax_bwd
from oxicuda.memory.array import empty as real_empty
from oxicuda.memory.dtypes import host_astype
from oxicuda.ptx import launch_plan

workspace_module = importlib.import_module("oxicuda.memory.workspace")

DTYPES = ["float32", "float16", "bfloat16"]
TOL = {"float32": (2e-5, 2e-5), "float16": (1e-2, 1e-2), "bfloat16": (4e-2, 4e-2)}


@pytest.fixture(autouse=True)
def poisoned(monkeypatch):
    """Every result and workspace the backward calls allocate starts as NaN."""
    def empty_nan(shape, dtype, *args, **kwargs):
        a = real_empty(shape, dtype, *args, **kwargs)
        if a.size:
            a.fill(np.nan)
        return a

    def workspace_nan(request, stream=None):
        ws = workspace_module.workspace(request, stream)
        ws.fill(255)  # 0xffffffff is a float32 NaN
        return ws.ptr

    for mod in (softmax_bwd, norms_backward, activations_backward):
        monkeypatch.setattr(mod, "empty", empty_nan)
    monkeypatch.setattr(launch_plan, "_workspace_source", workspace_nan)


FAMILIES = ("dnn_softmax_bwd", "dnn_norm_bwd", "dnn_norm_param_grad", "dnn_norm_param_reduce", "dnn_activation_bwd")


def mine(t):
    """The backward kernels a trace saw (host-to-device conversions launch copy kernels too)."""
    return [s for s in t.specs() if s is not None and s.family in FAMILIES]


def dev(a, dtype):
    return oxicuda.asarray(host_astype(a, dtype))


def f64(a):
    """The values a device array of a half type really holds, as float64."""
    return host_astype(np.asarray(a), "float32").astype(np.float64)


def rounded(a, dtype):
    return f64(host_astype(a, dtype))


def softmax_np(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


# -- softmax ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("algo,shape", [("warp", (1, 1)), ("warp", (3, 7)), ("warp", (9, 64)),
                                        ("block", (2, 1031)), ("block", (3, 4))])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward_matches_float64(rng, dtype, algo, shape, log):
    x = rng.standard_normal(shape) * 3
    y = rounded(np.log(softmax_np(x)) if log else softmax_np(x), dtype)
    dy = rounded(rng.standard_normal(shape), dtype)
    fn = dnn.log_softmax_backward if log else dnn.softmax_backward
    with oxicuda.trace() as t:
        got = fn(dev(dy, dtype), dev(y, dtype), algo=algo)
    assert [(s.family, s.variant, s.log) for s in mine(t)] == [("dnn_softmax_bwd", algo, log)]
    ref = dy - np.exp(y) * dy.sum(-1, keepdims=True) if log else y * (dy - (dy * y).sum(-1, keepdims=True))
    assert got.dtype == dev(y, dtype).dtype and got.shape == shape
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(f64(got.get()), ref, rtol=rtol, atol=atol * max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward_non_last_axis_uses_the_strided_kernel(rng, log):
    x = rng.standard_normal((3, 5, 4))
    y = np.log(softmax_np(x, 1)) if log else softmax_np(x, 1)
    dy = rng.standard_normal(x.shape)
    fn = dnn.log_softmax_backward if log else dnn.softmax_backward
    with oxicuda.trace() as t:
        got = fn(dy.astype(np.float32), y.astype(np.float32), axis=1).get()
    assert [s.variant for s in mine(t)] == ["strided"]
    ref = dy - np.exp(y) * dy.sum(1, keepdims=True) if log else y * (dy - (dy * y).sum(1, keepdims=True))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_softmax_backward_dispatch_and_vector_width(rng):
    for dtype, cols, variant, vec in (("float32", 1024, "warp", 4), ("float32", 1025, "block", 1),
                                      ("float32", 6, "warp", 1), ("float16", 6, "warp", 2),
                                      ("bfloat16", 12, "warp", 4)):
        y = dev(np.full((2, cols), 1.0 / cols), dtype)
        with oxicuda.trace() as t:
            dnn.softmax_backward(y, y)
        spec = mine(t)[0]
        assert (spec.variant, spec.vec) == (variant, vec), (dtype, cols)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward_is_the_gradient_of_the_device_forward(rng, log):
    # directional finite difference of L(x) = <dy, softmax(x)> through our own float32 forward
    # (and the float64 one): <dx, v> = (L(x + h v) - L(x - h v)) / 2h
    x = rng.standard_normal((4, 33))
    dy, v = rng.standard_normal(x.shape), rng.standard_normal(x.shape)
    fwd = dnn.log_softmax if log else dnn.softmax
    y = fwd(x.astype(np.float32))
    dx = (dnn.log_softmax_backward if log else dnn.softmax_backward)(dy.astype(np.float32), y).get()
    h = 1e-2
    fd_dev = [(dy * (fwd((x + h * v).astype(np.float32)).get() - fwd((x - h * v).astype(np.float32)).get())).sum()
              / (2 * h)]
    ref = (lambda z: np.log(softmax_np(z))) if log else softmax_np
    fd64 = (dy * (ref(x + 1e-5 * v) - ref(x - 1e-5 * v))).sum() / 2e-5
    np.testing.assert_allclose((dx * v).sum(), fd64, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose((dx * v).sum(), fd_dev[0], rtol=1e-2, atol=1e-2)


# -- norms ---------------------------------------------------------------------------------------
def layer_norm_grads(dy, x, w, eps, axes=(-1,)):
    m = x.mean(axes, keepdims=True)
    r = 1 / np.sqrt(((x - m) ** 2).mean(axes, keepdims=True) + eps)
    xh = (x - m) * r
    g = dy * (1 if w is None else w)
    dx = r * (g - g.mean(axes, keepdims=True) - xh * (g * xh).mean(axes, keepdims=True))
    lead = tuple(range(x.ndim - len(axes)))
    return dx, (dy * xh).sum(lead), dy.sum(lead)


def rms_norm_grads(dy, x, w, eps):
    r = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    xh = x * r
    g = dy * (1 if w is None else w)
    dx = r * (g - xh * (g * xh).mean(-1, keepdims=True))
    return dx, (dy * xh).sum(tuple(range(x.ndim - 1)))


def _close(got, ref, dtype, scale=None):
    rtol, atol = TOL[dtype]
    scale = max(1.0, np.abs(ref).max()) if scale is None else scale
    np.testing.assert_allclose(f64(got.get()), ref, rtol=rtol, atol=atol * scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("algo,shape", [("warp", (1, 1)), ("warp", (5, 7)), ("warp", (33, 40)),
                                        ("block", (3, 1030)), ("block", (2, 5))])
@pytest.mark.parametrize("stats", [False, True])
def test_layer_norm_backward_matches_float64(rng, dtype, algo, shape, stats):
    x = rounded(rng.standard_normal(shape) * 2 + 3, dtype)
    dy = rounded(rng.standard_normal(shape), dtype)
    w = rounded(rng.standard_normal(shape[-1]), dtype)
    xd, wd = dev(x, dtype), dev(w, dtype)
    kw = {}
    if stats:
        _, mean, rstd = dnn.layer_norm(xd, None, wd, wd, return_stats=True)
        assert mean.shape == rstd.shape == (shape[0], 1) and mean.dtype == np.float32
        np.testing.assert_allclose(mean.get()[:, 0], x.mean(-1), rtol=1e-5, atol=1e-5)
        kw = {"mean": mean, "rstd": rstd}
    with oxicuda.trace() as t:
        dx, dw, db = dnn.layer_norm_backward(dev(dy, dtype), xd, None, wd, wd, algo=algo, **kw)
    fams = [(s.family, getattr(s, "variant", None), getattr(s, "stats_in", None)) for s in mine(t)]
    assert fams == [("dnn_norm_bwd", algo, stats), ("dnn_norm_param_grad", None, None),
                    ("dnn_norm_param_reduce", None, None)]
    rdx, rdw, rdb = layer_norm_grads(dy, x, w, 1e-5)
    assert dx.dtype == xd.dtype and dw.shape == db.shape == (shape[-1],)
    _close(dx, rdx, dtype)
    _close(dw, rdw, dtype)
    _close(db, rdb, dtype)


def test_layer_norm_backward_without_affine_and_over_several_dims(rng):
    x = rng.standard_normal((3, 4, 5))
    dy = rng.standard_normal(x.shape)
    with oxicuda.trace() as t:
        dx, dw, db = dnn.layer_norm_backward(dy.astype(np.float32), x.astype(np.float32), (4, 5))
    assert dw is None and db is None and [s.family for s in mine(t)] == ["dnn_norm_bwd"]
    np.testing.assert_allclose(dx.get(), layer_norm_grads(dy, x, None, 1e-5, (-2, -1))[0], rtol=1e-4, atol=1e-5)
    w = rng.standard_normal((4, 5))
    dx, dw, db = dnn.layer_norm_backward(dy.astype(np.float32), x.astype(np.float32), (4, 5), w.astype(np.float32))
    rdx, rdw, _ = layer_norm_grads(dy, x, w, 1e-5, (-2, -1))
    assert db is None and dw.shape == (4, 5)
    np.testing.assert_allclose(dx.get(), rdx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dw.get(), rdw, rtol=1e-4, atol=1e-5)


def test_layer_norm_param_grads_reduce_over_many_chunks(rng, monkeypatch):
    # a small chunk limit forces several partial rows per column; the sum is in chunk order
    monkeypatch.setattr(norms_backward, "MAX_CHUNKS", 7)
    x, dy = rng.standard_normal((61, 300)), rng.standard_normal((61, 300))
    w = rng.standard_normal(300)
    norms_backward.PLANS.clear()
    per, chunks = norms_backward.chunking(61, 300, 132)
    assert chunks > 1 and per * chunks >= 61
    _, dw, db = dnn.layer_norm_backward(dy.astype(np.float32), x.astype(np.float32), None,
                                        w.astype(np.float32), w.astype(np.float32))
    _, rdw, rdb = layer_norm_grads(dy, x, w, 1e-5)
    np.testing.assert_allclose(dw.get(), rdw, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db.get(), rdb, rtol=1e-4, atol=1e-4)
    again = dnn.layer_norm_backward(dy.astype(np.float32), x.astype(np.float32), None, w.astype(np.float32),
                                    w.astype(np.float32))
    assert np.array_equal(again[1].get(), dw.get()), "the parameter gradients must be deterministic"
    norms_backward.PLANS.clear()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("algo,shape", [("warp", (1, 1)), ("warp", (6, 33)), ("block", (3, 1030))])
@pytest.mark.parametrize("stats", [False, True])
def test_rms_norm_backward_matches_float64(rng, dtype, algo, shape, stats):
    x = rounded(rng.standard_normal(shape) + 0.5, dtype)
    dy = rounded(rng.standard_normal(shape), dtype)
    w = rounded(rng.standard_normal(shape[-1]), dtype)
    xd, wd = dev(x, dtype), dev(w, dtype)
    kw = {}
    if stats:
        _, rstd = dnn.rms_norm(xd, wd, return_stats=True)
        kw = {"rstd": rstd}
    with oxicuda.trace() as t:
        dx, dw = dnn.rms_norm_backward(dev(dy, dtype), xd, wd, algo=algo, **kw)
    assert [s.family for s in mine(t)] == ["dnn_norm_bwd", "dnn_norm_param_grad", "dnn_norm_param_reduce"]
    assert mine(t)[0].kind == "rms" and mine(t)[0].stats_in == stats
    rdx, rdw = rms_norm_grads(dy, x, w, 1e-6)
    _close(dx, rdx, dtype)
    _close(dw, rdw, dtype)


@pytest.mark.parametrize("kind", ["layer", "rms"])
def test_norm_backward_is_the_gradient_of_the_device_forward(rng, kind):
    x = rng.standard_normal((5, 24)) + 1
    w = rng.standard_normal(24)
    b = rng.standard_normal(24)
    dy, v, vw, vb = (rng.standard_normal(s) for s in (x.shape, x.shape, 24, 24))

    def loss64(xx, ww, bb):
        if kind == "layer":
            m = xx.mean(-1, keepdims=True)
            y = (xx - m) / np.sqrt(((xx - m) ** 2).mean(-1, keepdims=True) + 1e-5) * ww + bb
        else:
            y = xx / np.sqrt((xx * xx).mean(-1, keepdims=True) + 1e-6) * ww
        return (dy * y).sum()

    def loss_dev(xx, ww, bb):
        f32 = (xx.astype(np.float32), ww.astype(np.float32), bb.astype(np.float32))
        y = dnn.layer_norm(f32[0], None, f32[1], f32[2]) if kind == "layer" else dnn.rms_norm(f32[0], f32[1])
        return (dy * y.get()).sum()

    if kind == "layer":
        dx, dw, db = dnn.layer_norm_backward(dy.astype(np.float32), x.astype(np.float32), None,
                                             w.astype(np.float32), b.astype(np.float32))
        db = db.get()
    else:
        dx, dw = dnn.rms_norm_backward(dy.astype(np.float32), x.astype(np.float32), w.astype(np.float32))
        db, vb = np.zeros(24), np.zeros(24)
    directional = (dx.get() * v).sum() + (dw.get() * vw).sum() + (db * vb).sum()
    for loss, h, tol in ((loss64, 1e-5, 1e-5), (loss_dev, 1e-2, 2e-2)):
        fd = (loss(x + h * v, w + h * vw, b + h * vb) - loss(x - h * v, w - h * vw, b - h * vb)) / (2 * h)
        np.testing.assert_allclose(directional, fd, rtol=tol, atol=tol)


# -- activations ---------------------------------------------------------------------------------
def activation_case(op, x):
    """(saved tensor z, derivative at x) of each op in float64."""
    phi = np.exp(-x * x / 2) / np.sqrt(2 * np.pi)
    s = 1 / (1 + np.exp(-x))
    k = np.sqrt(2 / np.pi)
    t = np.tanh(k * (x + 0.044715 * x ** 3))
    return {
        "relu": (np.maximum(x, 0), (x > 0).astype(float)),
        "gelu": (x, 0.5 * (1 + erf(x / np.sqrt(2))) + x * phi),
        "gelu_tanh": (x, 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)),
        "silu": (x, s * (1 + x * (1 - s))),
        "sigmoid": (s, s * (1 - s)),
        "tanh": (np.tanh(x), 1 - np.tanh(x) ** 2),
    }[op]


def call_backward(op, dy, z):
    if op == "gelu_tanh":
        return dnn.gelu_backward(dy, z, approximate="tanh")
    return getattr(dnn, f"{op}_backward")(dy, z)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", activations_backward.OPS)
@pytest.mark.parametrize("n", [1, 6, 203])
def test_activation_backward_matches_float64(rng, dtype, op, n):
    x = rng.standard_normal(n) * 3
    z, _ = activation_case(op, x)
    z = rounded(z, dtype)
    dy = rounded(rng.standard_normal(n), dtype)
    # the derivative at the saved tensor the kernel sees (the rounded z)
    if op in ("gelu", "gelu_tanh", "silu"):
        deriv = activation_case(op, z)[1]
    elif op == "relu":
        deriv = (z > 0).astype(float)
    else:
        deriv = z * (1 - z) if op == "sigmoid" else 1 - z * z
    with oxicuda.trace() as t:
        got = call_backward(op, dev(dy, dtype), dev(z, dtype))
    assert [(s.family, s.op) for s in mine(t)] == [("dnn_activation_bwd", op)]
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(f64(got.get()), dy * deriv, rtol=rtol, atol=atol)


@pytest.mark.parametrize("op", activations_backward.OPS)
def test_activation_backward_is_the_gradient_of_the_device_forward(rng, op):
    x = rng.standard_normal(64) * 2
    x = x[np.abs(x) > 0.05]  # away from relu's kink
    dy = rng.standard_normal(x.size)
    fwd = {"gelu_tanh": lambda a: dnn.gelu(a, approximate="tanh")}.get(op, getattr(dnn, op.split("_")[0]))
    z = x.astype(np.float32) if op in ("gelu", "gelu_tanh", "silu") else fwd(x.astype(np.float32))
    got = call_backward(op, dy.astype(np.float32), z).get()
    h = 1e-2
    fd = dy * (fwd((x + h).astype(np.float32)).get().astype(float) - fwd((x - h).astype(np.float32)).get()) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(got, dy * activation_case(op, x)[1], rtol=1e-5, atol=1e-5)


def test_activation_backward_vector_widths(rng):
    for n, vec in ((8, 4), (6, 2), (7, 1)):
        with oxicuda.trace() as t:
            dnn.tanh_backward(np.ones(n, np.float32), np.zeros(n, np.float32))
        assert mine(t)[0].vec == vec


# -- bad input -----------------------------------------------------------------------------------
def test_bad_input_raises_before_any_launch():
    f32, f16 = np.ones((2, 3), np.float32), host_astype(np.ones((2, 3)), "float16")
    cases = [
        (TypeError, lambda: dnn.softmax_backward(oxicuda.asarray(f32), oxicuda.asarray(f16))),
        (ValueError, lambda: dnn.softmax_backward(f32, np.ones((3, 2), np.float32))),
        (ValueError, lambda: dnn.softmax_backward(f32, f32, axis=2)),
        (ValueError, lambda: dnn.softmax_backward(f32, f32, algo="online")),
        (ValueError, lambda: dnn.softmax_backward(np.ones((2, 3, 4), np.float32), np.ones((2, 3, 4), np.float32),
                                                  axis=1, algo="warp")),
        (TypeError, lambda: dnn.log_softmax_backward(np.ones((2, 3), np.int32), f32)),
        (ValueError, lambda: dnn.layer_norm_backward(f32, f32, 4)),
        (ValueError, lambda: dnn.layer_norm_backward(f32, f32, None, np.ones(4, np.float32))),
        (TypeError, lambda: dnn.layer_norm_backward(f32, f32, None, oxicuda.asarray(host_astype(np.ones(3),
                                                                                                "float16")))),
        (ValueError, lambda: dnn.layer_norm_backward(f32, f32, mean=np.zeros(2, np.float32))),
        (ValueError, lambda: dnn.layer_norm_backward(f32, f32, mean=np.zeros(3, np.float32),
                                                     rstd=np.zeros(3, np.float32))),
        (TypeError, lambda: dnn.layer_norm_backward(f32, f32, mean=np.zeros(2), rstd=np.zeros(2))),
        (ValueError, lambda: dnn.layer_norm_backward(f32, f32, eps=-1.0)),
        (ValueError, lambda: dnn.rms_norm_backward(f32, np.ones((2, 4), np.float32))),
        (ValueError, lambda: dnn.rms_norm_backward(f32, f32, algo="tiled")),
        (ValueError, lambda: dnn.gelu_backward(f32, f32, approximate="erf")),
        (ValueError, lambda: dnn.silu_backward(f32, np.ones(6, np.float32))),
        (TypeError, lambda: dnn.tanh_backward(oxicuda.asarray(f16), oxicuda.asarray(f32))),
    ]
    for exc, call in cases:
        with oxicuda.trace() as t, pytest.raises(exc):
            call()
        assert mine(t) == [], call


def test_empty_inputs_launch_nothing_and_zero_the_parameter_grads():
    x = np.ones((0, 5), np.float32)
    with oxicuda.trace() as t:
        dx, dw, db = dnn.layer_norm_backward(x, x, None, np.ones(5, np.float32), np.ones(5, np.float32))
        dnn.softmax_backward(x, x)
    assert dx.shape == (0, 5) and np.array_equal(dw.get(), np.zeros(5)) and np.array_equal(db.get(), np.zeros(5))
    assert mine(t) == []


# -- registry and assembly -----------------------------------------------------------------------

def test_every_launched_backward_spec_is_registered(rng):
    from oxicuda.ptx import registry

    arch = oxicuda.driver.facts.device_facts().arch
    registered = set()
    for fam in FAMILIES:
        registered |= set(registry.configurations(arch, fam))
    with oxicuda.trace() as t:
        for dtype in DTYPES:
            for cols in (4, 6, 7, 1025):
                a = dev(rng.standard_normal((2, cols)), dtype)
                w = dev(rng.standard_normal(cols), dtype)
                dnn.softmax_backward(a, a)
                dnn.log_softmax_backward(a, a)
                _, m, r = dnn.layer_norm(a, None, w, w, return_stats=True)
                dnn.layer_norm_backward(a, a, None, w, w)
                dnn.layer_norm_backward(a, a, None, w, mean=m, rstd=r)
                dnn.rms_norm_backward(a, a, w)
                dnn.rms_norm_backward(a, a)
                for op in activations_backward.OPS:
                    call_backward(op, a, a)
            a3 = dev(rng.standard_normal((2, 3, 2)), dtype)
            dnn.softmax_backward(a3, a3, axis=1)
    launched = set(mine(t))
    assert launched and launched <= registered, launched - registered


def test_backward_kernels_assemble_without_spills():
    from oxicuda.ptx import registry, validate

    try:
        validate.find_ptxas()
    except validate.PtxasNotFound:
        pytest.skip("no ptxas")
    specs = {}
    for arch in ("sm_80", "sm_86", "sm_90"):
        for fam in FAMILIES:
            for s in registry.configurations(arch, fam):
                # one per shape of the code: dtype, variant, vec, flags
                key = (arch, fam, *(v for k, v in s.fields().items() if k not in ("arch", "math")))
                specs.setdefault(key, s)
    items = list(specs.values())
    reports = validate.assemble_many([(registry.generate_ptx(s), s.arch) for s in items])
    for s, r in zip(items, reports):
        assert r.ok, (s, r.message)
        assert r.spills == 0, (s, r.registers, r.spills)
