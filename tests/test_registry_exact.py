"""The registry is exactly what can run (issue 15, item 5).

Launched => registered: a matrix of public calls (GEMM in every dtype, transpose, alignment,
batch and algo; gemv; softmax, norms, pooling, activations; attention; conv forward and backward
with every algo) runs with the kernel cache's ``load`` replaced by a recorder, so that the host
side (validation, dispatch, plans, workspaces) runs for real and no kernel is generated or
emulated; every spec a call asked for must be a registered configuration of its family and arch.

Registered => reachable: every registered configuration of the families that take an explicit
configuration (GEMM ``algo=spec``, attention ``config=``) is planned through that public call
with the same recorder and must be the spec the call launches.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

import oxicuda
from oxicuda import dnn
from oxicuda.blas import gemm_core
from oxicuda.blas.gemm_core import gemm_colmajor
from oxicuda.blas.transpose_kernels import TransposeSpec
from oxicuda.dnn import conv as conv_module
from oxicuda.dnn.attention_api import attention
from oxicuda.dnn.attention_kernels import REGISTERED_HEAD_DIMS
from oxicuda.driver.facts import device_facts
from oxicuda.memory.dtypes import BFLOAT16
from oxicuda.ptx import cache, launch_plan, registry

registry.load_all_families()


class _Recorded:
    """A stand-in for a loaded Function: records the specs that calls launch."""

    def __init__(self, spec, log):
        self.spec, self.name, self.handle, self._log = spec, spec.kernel_name(), 0, log
        self.dynamic_optin = 0

    def prepared_launch(self, grid, block, shared_mem=0):
        def launch(args, stream=None):
            self._log.append(self.spec)
        return launch

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        self._log.append(self.spec)

    def set_max_dynamic_shared_memory(self, nbytes):
        self.dynamic_optin = max(self.dynamic_optin, nbytes)


@pytest.fixture
def launched(monkeypatch):
    """Specs launched by public calls, with no kernel generated or run."""
    log: list = []
    monkeypatch.setattr(cache, "load", lambda spec: _Recorded(spec, log))
    for mod in ("oxicuda.blas.transpose_kernels",):  # modules that bound ``cache`` itself
        with contextlib.suppress(AttributeError):
            monkeypatch.setattr(sys.modules[mod].cache, "load", lambda spec: _Recorded(spec, log))
    clear_plans()
    yield log
    clear_plans()


def clear_plans():
    gemm_core.clear_plan_cache()
    conv_module.clear_call_plans()
    for mod in list(sys.modules.values()):
        for name in ("PLANS", "LAUNCH_PLANS", "BATCH_PLANS", "_LAUNCHES"):
            plans = getattr(mod, name, None)
            if isinstance(plans, launch_plan.PlanCache):
                plans.clear()


#: launched configurations that are generated on first use instead of registered, and why
ON_DEMAND = {
    # the SIMT attention kernel bakes head_dim, which a call may choose freely in 1..256;
    # REGISTERED_HEAD_DIMS are registered (and assembled by kernels --validate)
    "attention_fwd_simt": lambda spec: spec.head_dim not in REGISTERED_HEAD_DIMS,
}


def _unregistered(specs) -> list[str]:
    missing = []
    known: dict[tuple[str, str], set] = {}
    for spec in dict.fromkeys(specs):
        fam = registry.family_of(spec).name
        key = (fam, spec.arch)
        if key not in known:
            known[key] = set(registry.configurations(spec.arch, fam)) if spec.arch in registry.family(fam).archs \
                else set()
        if spec not in known[key] and not ON_DEMAND.get(fam, lambda s: False)(spec):
            missing.append(f"{fam}: {spec.key() if hasattr(spec, 'key') else spec}")
    return missing


def _refused():
    """Arguments that a family refuses (ValueError/TypeError) are skipped."""
    return contextlib.suppress(ValueError, TypeError)


GEMM_DTYPES = ("float32", "float64", "float16", "bfloat16", "complex64", "complex128")
GEMM_SHAPES = ((5, 6, 7), (40, 1, 7), (1, 40, 9), (64, 64, 64), (100, 20, 72), (130, 260, 40), (64, 64, 8192),
               (33, 17, 5000))
GEMM_ALGOS = (None, "naive", "tiled", "split_k", "gemv", "tensor_core", "wgmma", "dmma")


def _gemm_matrix():
    buf = oxicuda.empty((1 << 22,), np.float64)  # 32 MiB: room for every operand below
    base = buf.ptr
    for dtype, (m, n, k), algo in itertools.product(GEMM_DTYPES, GEMM_SHAPES, GEMM_ALGOS):
        es = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "complex64": 8, "complex128": 16}[dtype]
        ops = ("N", "T", "C") if dtype.startswith("complex") else ("N", "T")
        for ta, tb, off in itertools.product(ops, ops, (0, 1)):
            lda = (m if ta == "N" else k) + off
            ldb = (k if tb == "N" else n) + off
            a, b = base + off * es, base + (8 << 20)
            c = base + (20 << 20)
            for compute in ((None, "tf32") if dtype == "float32" else (None,)):
                with _refused():
                    gemm_colmajor(ta, tb, m, n, k, 1.0, a, max(lda, 1), b, max(ldb, 1), 0.5, c,
                                                   max(m, 1), dtype=dtype, compute=compute, algo=algo)
            if dtype in ("float16", "bfloat16") and off == 0:
                with _refused():
                    gemm_colmajor(ta, tb, m, n, k, 1.0, a, max(lda, 1), b, max(ldb, 1), 0.0, c,
                                                   max(m, 1), dtype=dtype, c_dtype="float32", algo=algo)
        if (m, n, k) in ((64, 64, 64), (5, 6, 7)) and algo in (None, "tiled", "naive", "split_k"):
            arrays = base + (30 << 20)  # 3 pointers each for A, B and C (their values are never read)
            for ta, tb in itertools.product(("N", "T"), repeat=2):
                with _refused():
                    gemm_colmajor(ta, tb, m, n, k, 1.0, 0, 64, 0, 64, 0.0, 0, 64, dtype=dtype, batch=3,
                                                   a_array_ptr=arrays, b_array_ptr=arrays + 64, c_array_ptr=arrays + 128,
                                                   algo=algo)
        if (m, n, k) == (64, 64, 64) and algo in (None, "tiled", "naive"):
            stride = 64 * 64
            with _refused():
                gemm_colmajor("N", "N", m, n, k, 1.0, base, m, base + (8 << 20), k, 0.0,
                                               base + (20 << 20), m, dtype=dtype, batch=3, stride_a=stride,
                                               stride_b=stride, stride_c=stride, algo=algo)
    return buf


def _transpose_matrix():
    buf = oxicuda.empty((1 << 16,), np.float64)
    for es, (rows, cols), off, tile in itertools.product((2, 4, 8), ((8, 12), (6, 10), (5, 7), (64, 3)), (0, 1),
                                                         (32, 64)):
        with _refused():
            oxicuda.blas.transpose(rows, cols, buf.ptr + off * es, rows + off, buf.ptr + (1 << 18), cols,
                                   elem_bytes=es, tile=tile)


def _dnn_matrix():
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float16, BFLOAT16):
        for shape in ((4, 32), (3, 1024), (2, 5000), (2, 3, 6)):
            x = oxicuda.asarray(rng.standard_normal(shape).astype(dt))
            for axis in (-1, 0):
                with _refused():
                    dnn.softmax(x, axis=axis)
                with _refused():
                    dnn.softmax(x, axis=axis, log=True)
            for algo in (None, "warp", "block", "online"):
                with _refused():
                    dnn.softmax(x, algo=algo)
            w = oxicuda.asarray(rng.standard_normal(shape[-1]).astype(dt))
            for algo in (None, "warp", "block"):
                with _refused():
                    dnn.layer_norm(x, weight=w, bias=w, algo=algo)
                with _refused():
                    dnn.layer_norm(x, algo=algo)
                with _refused():
                    dnn.rms_norm(x, weight=w, algo=algo)
                with _refused():
                    dnn.rms_norm(x, algo=algo)
            for op in ("relu", "gelu", "silu", "sigmoid", "tanh"):
                with _refused():
                    getattr(dnn, op)(x)
                with _refused():
                    getattr(dnn, op)(x, bias=w)
            odd = oxicuda.asarray(rng.standard_normal(7).astype(dt))
            with _refused():
                dnn.relu(odd)
        img = oxicuda.asarray(rng.standard_normal((2, 4, 9, 9)).astype(dt))
        ch = oxicuda.asarray(rng.standard_normal(4).astype(dt))
        for layout in ("NCHW", "NHWC"):
            with _refused():
                dnn.max_pool2d(img, 3, 2, 1, layout=layout)
            for include in (True, False):
                with _refused():
                    dnn.avg_pool2d(img, 3, 2, 1, layout=layout, count_include_pad=include)
            with _refused():
                dnn.batch_norm(img, ch, ch, layout=layout)
            with _refused():
                dnn.batch_norm(img, ch, ch, ch, ch, layout=layout)
        for d, causal, lse, algo in itertools.product((24, 32, 64, 128), (False, True), (False, True),
                                                      (None, "simt", "mma", "wgmma")):
            q = oxicuda.asarray(rng.standard_normal((1, 2, 40, d)).astype(dt))
            with _refused():
                attention(q, q, q, causal=causal, return_lse=lse, algo=algo)


def _conv_matrix():
    rng = np.random.default_rng(1)
    algos = (None, "implicit_gemm", "implicit_gemm_tc", "implicit_gemm_simt", "winograd", "winograd_2x2",
             "winograd_4x4", "im2col")
    for dt in (np.float32, np.float16, BFLOAT16):
        for layout, (c, k), act, bias in itertools.product(("NCHW", "NHWC"), ((8, 16), (3, 8)),
                                                           (None, "relu"), (False, True)):
            xs = (1, c, 10, 10) if layout == "NCHW" else (1, 10, 10, c)
            ws = (k, c, 3, 3) if layout == "NCHW" else (k, 3, 3, c)
            x = oxicuda.asarray(rng.standard_normal(xs).astype(dt))
            w = oxicuda.asarray(rng.standard_normal(ws).astype(dt))
            b = oxicuda.asarray(rng.standard_normal(k).astype(dt)) if bias else None
            for algo in algos:
                with _refused():
                    dnn.conv2d(x, w, b, padding=1, layout=layout, activation=act, algo=algo)
            with _refused():
                dnn.conv2d(x, w, b, stride=2, layout=layout, activation=act)
            if act is None and not bias:
                y = dnn.conv2d(x, w, padding=1, layout=layout, algo="implicit_gemm_simt")
                with _refused():
                    conv_module.conv2d_backward_data(y, w, xs, padding=1, layout=layout)
                with _refused():
                    conv_module.conv2d_backward_filter(x, y, ws, padding=1, layout=layout)


def test_every_configuration_public_calls_launch_is_registered(launched):
    keep = _gemm_matrix()
    _transpose_matrix()
    _dnn_matrix()
    _conv_matrix()
    del keep
    assert len(launched) > 100
    missing = _unregistered(launched)
    assert not missing, f"{len(missing)} launched configurations are not registered:\n" + "\n".join(missing)


_NP = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": BFLOAT16,
       "complex64": np.complex64, "complex128": np.complex128, "f32": np.float32, "f16": np.float16,
       "bf16": BFLOAT16}


def _op(trans: str, conj: bool) -> str:
    return "C" if conj else trans


def _tiled_call(spec, buf):
    """gemm_colmajor(algo=spec) on a 64^3 problem that ``spec`` fits (split-K partials through a
    forced split-K plan, pointer-array specs with pointer arrays)."""
    from oxicuda.blas import gemm_dispatch as gd

    m = n = k = 64
    p, arch = buf.ptr, device_facts().arch
    kw = {"dtype": spec.dtype, "c_dtype": spec.c_dtype or None}
    algo = spec
    if spec.raw_out:
        algo = gd.GemmPlan("split_k", spec, 2, gd.reduce_spec(spec.dtype, "", arch, m, m, 16, 2, 132))
    if spec.pointer_array:
        kw.update(batch=2, a_array_ptr=p + (30 << 20), b_array_ptr=p + (30 << 20) + 64, c_array_ptr=p + (30 << 20) + 128)
    gemm_colmajor(_op(spec.transa, spec.conj_a), _op(spec.transb, spec.conj_b), m, n, k, 1.0, p, 64,
                  p + (8 << 20), 64, 0.0, p + (20 << 20), 64, algo=algo, **kw)


def _reach(spec, buf):
    """Launch ``spec`` through a public call that takes it explicitly."""
    from oxicuda.blas import gemm_dispatch as gd
    from oxicuda.blas.gemm_dmma import GemmDmmaSpec
    from oxicuda.blas.gemm_naive import GemmNaiveSpec
    from oxicuda.blas.gemm_splitk import GemmSplitKReduceSpec
    from oxicuda.blas.gemm_tensorcore import GemmTensorCoreSpec
    from oxicuda.blas.gemm_tiled import GemmTiledSpec
    from oxicuda.blas.gemm_wgmma import GemmWgmmaSpec

    p, arch = buf.ptr, device_facts().arch
    a, b, c = p, p + (8 << 20), p + (20 << 20)
    if isinstance(spec, GemmTiledSpec):
        _tiled_call(spec, buf)
    elif isinstance(spec, GemmNaiveSpec):
        kw = {}
        if spec.pointer_array:
            kw = {"batch": 2, "a_array_ptr": p + (30 << 20), "b_array_ptr": p + (30 << 20) + 64,
                  "c_array_ptr": p + (30 << 20) + 128}
        gemm_colmajor(_op("N", spec.conj_a), _op("N", spec.conj_b), 8, 8, 8, 1.0, a, 8, b, 8, 0.0, c, 8,
                      dtype=spec.dtype, algo=spec, **kw)
    elif isinstance(spec, GemmDmmaSpec):
        gemm_colmajor(spec.transa, spec.transb, 64, 64, 64, 1.0, a, 64, b, 64, 0.0, c, 64, dtype="float64", algo=spec)
    elif isinstance(spec, GemmSplitKReduceSpec):
        cdt = spec.c_dtype or ""
        problem = gd.GemmProblem(64, 64, 64, spec.dtype, arch=arch, c_dtype=cdt)
        part = gd.split_k_plan(problem, device_facts(), 2)
        gemm_colmajor("N", "N", 64, 64, 64, 1.0, a, 64, b, 64, 0.0, c, 64, dtype=spec.dtype, c_dtype=cdt or None,
                      algo=gd.GemmPlan("split_k", part.spec, part.splits, spec))
    elif isinstance(spec, (GemmTensorCoreSpec, GemmWgmmaSpec)):
        dtype = {"f16": "float16", "bf16": "bfloat16", "tf32": "float32"}[spec.dtype]
        ta, tb = ("T" if spec.a_kmajor else "N"), ("N" if spec.b_kmajor else "T")
        cdt = "float32" if getattr(spec, "c_f32", False) else None
        gemm_colmajor(ta, tb, 64, 64, 64, 1.0, a, 64, b, 64, 0.0, c, 64, dtype=dtype,
                      compute="tf32" if spec.dtype == "tf32" else None, c_dtype=cdt, algo=spec)
    elif isinstance(spec, TransposeSpec):
        # sizes whose widest whole, aligned vector is exactly the spec's: 3 x the width
        rows, cols = 3 * spec.vec_in, 3 * spec.vec_out
        oxicuda.blas.transpose(rows, cols, a, rows, c, cols, elem_bytes=spec.elem_bytes, tile=spec.tile)
    else:  # attention
        q = oxicuda.asarray(np.zeros((1, 2, 40, spec.head_dim), _NP[spec.dtype]))
        attention(q, q, q, causal=spec.causal, return_lse=spec.lse, config=spec)


#: families whose every registered configuration a public call takes explicitly
EXPLICIT = ("transpose", "gemm_tiled", "gemm_naive", "gemm_dmma", "gemm_splitk_reduce", "gemm_tensor_core", "gemm_wgmma",
            "attention_fwd_simt", "attention_fwd_mma", "attention_fwd_wgmma")


def test_every_registered_gemm_and_attention_configuration_is_reachable(launched):
    arch = device_facts().arch
    buf = oxicuda.empty((1 << 22,), np.float64)
    unreached = []
    for fam in EXPLICIT:
        entry = registry.family(fam)
        for a in (arch, arch + "a"):
            if a not in entry.archs:
                continue
            for spec in registry.configurations(a, fam):
                if fam in ("gemm_tensor_core", "attention_fwd_mma") and spec.arch != _tc_arch(arch):
                    continue  # the arch these families build for this device
                del launched[:]
                try:
                    _reach(spec, buf)
                except (ValueError, TypeError) as exc:
                    unreached.append(f"{fam}: {spec.key()}: {exc}")
                    continue
                if spec not in launched:
                    unreached.append(f"{fam}: {spec.key()}: launched {[s.key() for s in launched]}")
    assert not unreached, f"{len(unreached)} registered configurations unreachable:\n" + "\n".join(unreached[:30])


def _tc_arch(arch: str) -> str:
    sm = int(arch[3:].rstrip("a"))
    return "sm_90" if sm >= 90 else "sm_86" if sm >= 86 else "sm_80"


def test_registry_exact_tests_pass_on_an_emulated_sm90():
    if oxicuda.get_backend() != "emulator" or device_facts().arch == "sm_90":
        pytest.skip("the tests above run directly on this backend")
    env = dict(os.environ, OXICUDA_EMULATOR_ARCH="sm_90", OXICUDA_BACKEND="emulator")
    root = os.path.dirname(os.path.dirname(__file__))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                           "-k", "not emulated_sm90"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False)
    tail = (proc.stdout + proc.stderr)[-3000:]
    assert proc.returncode == 0, tail
