"""Raw pointer arguments of both cuBLAS compat modules are typed as CuPy types them (``size_t``):
a Python float, a numpy array or scalar, a device array itself, None or another non-pointer
raises TypeError naming the argument, before anything is read or written; ints and
PyCUDA-style ``gpudata`` objects (``__int__``) are addresses."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import oxicuda
from oxicuda.cuda import cublas as cp
from oxicuda.skcuda import cublas as sk


class GpuData:
    """Like PyCUDA's DeviceAllocation: an address behind __int__."""

    def __init__(self, ptr: int) -> None:
        self._ptr = ptr

    def __int__(self) -> int:
        return self._ptr


#: parameter names that are raw pointers in CuPy's module (cupy_backends/cuda/libs/cublas.pyx
#: types them size_t) and in scikit-cuda's (passed through int() to a c_void_p)
CUPY_POINTERS = {"A", "B", "C", "x", "y", "AP", "Aarray", "Barray", "Carray", "alpha", "beta",
                 "result", "c", "s", "a", "b", "d1", "d2", "x1", "y1", "param", "PivotArray",
                 "infoArray", "devIpiv", "info"}
SKCUDA_POINTERS = {"A", "B", "C", "x", "y", "AP", "Aarray", "Barray", "Carray", "P", "info"}
NOT_POINTERS = [1.5, np.zeros((), np.float32), np.float64(2.0), None, "0x1000", 2.5 + 0j]


def _public_functions(module, prefix: str = ""):
    return sorted(name for name, fn in vars(module).items()
                  if callable(fn) and not isinstance(fn, type) and name.startswith(prefix)
                  and not name.startswith("_") and getattr(fn, "__module__", "").startswith("oxicuda"))


def _arguments(fn, handle, pointer_names, host, device):
    """Valid-looking arguments for every parameter of ``fn``: the handle, 0 for enums and modes,
    1 for sizes, a host scalar address or a device address for pointers, 1.0 for values."""
    out = {}
    for name in inspect.signature(fn).parameters:
        if name == "handle":
            out[name] = handle
        elif name in pointer_names:
            out[name] = host if name in ("alpha", "beta", "result", "c", "s", "a", "b", "d1", "d2", "x1", "y1",
                                         "param") else device
        elif name in ("trans", "transa", "transb", "uplo", "side", "diag", "mode"):
            out[name] = 0
        elif name in ("alpha", "beta", "c", "s"):
            out[name] = 1.0
        elif name in ("Atype", "Btype", "Ctype"):
            out[name] = 0  # CUDA_R_32F
        elif name == "computeType":
            out[name] = 68  # CUBLAS_COMPUTE_32F
        elif name == "algo":
            out[name] = -1
        else:
            out[name] = 1
    return out


def _named(param: str) -> str:
    """The message names the argument (pointer arrays by their matrix: Aarray -> A)."""
    return rf"\b{param.removesuffix('array')}(array)?\b"


@pytest.fixture(scope="module")
def buffers():
    host = np.zeros(64, np.float64)
    dev = oxicuda.zeros((512,), np.float64)
    return host, dev


def _pointer_cases(module, prefix, pointer_names):
    cases = []
    for name in _public_functions(module, prefix):
        params = inspect.signature(getattr(module, name)).parameters
        if "handle" not in params:
            continue
        cases += [(name, p) for p in params if p in pointer_names]
    return cases


@pytest.mark.parametrize("name,param", _pointer_cases(cp, "", CUPY_POINTERS))
def test_cupy_module_pointer_arguments_reject_non_pointers(buffers, name, param):
    host, dev = buffers
    fn = getattr(cp, name)
    h = cp.create()
    try:
        args = _arguments(fn, h, CUPY_POINTERS, host.ctypes.data, dev.ptr)
        before = dev.get()
        for bad in NOT_POINTERS + [dev]:
            args[param] = bad
            with pytest.raises(TypeError, match=_named(param)):
                fn(**args)
        assert np.array_equal(dev.get(), before)
    finally:
        cp.destroy(h)


@pytest.mark.parametrize("name,param", _pointer_cases(sk, "cublas", SKCUDA_POINTERS))
def test_skcuda_module_pointer_arguments_reject_non_pointers(buffers, name, param):
    host, dev = buffers
    fn = getattr(sk, name)
    h = sk.cublasCreate()
    try:
        args = _arguments(fn, h, SKCUDA_POINTERS, host.ctypes.data, dev.ptr)
        for bad in NOT_POINTERS + [dev]:
            args[param] = bad
            with pytest.raises(TypeError, match=_named(param)):
                fn(**args)
    finally:
        sk.cublasDestroy(h)


def test_alpha_as_a_python_float_raises_type_error_instead_of_crashing(rng):
    a = oxicuda.asarray(rng.standard_normal((4, 4)).astype(np.float32))
    c = oxicuda.full((4, 4), np.nan, np.float32)
    h = cp.create()
    try:
        with pytest.raises(TypeError, match="alpha"):
            cp.sgemm(h, 0, 0, 4, 4, 4, 1.0, a.ptr, 4, a.ptr, 4, 0.0, c.ptr, 4)
        assert np.all(np.isnan(c.get()))
        result = np.zeros((), np.float32)
        with pytest.raises(TypeError, match="result"):
            cp.sdot(h, 4, a.ptr, 1, a.ptr, 1, result)
        cp.sdot(h, 4, a.ptr, 1, a.ptr, 1, result.ctypes.data)  # its address is right
        col = a.get().ravel()[:4].astype(np.float64)  # the first 4 elements in memory
        assert abs(float(result) - col @ col) < 1e-4
    finally:
        cp.destroy(h)


def test_gpudata_objects_and_numpy_integers_are_addresses(rng):
    x = rng.standard_normal(8).astype(np.float32)
    dx = oxicuda.asarray(x)
    h = sk.cublasCreate()
    try:
        assert abs(sk.cublasSnrm2(h, 8, GpuData(dx.ptr), 1) - np.linalg.norm(x)) < 1e-5
        assert abs(sk.cublasSnrm2(h, 8, np.uint64(dx.ptr), 1) - np.linalg.norm(x)) < 1e-5
        with pytest.raises(TypeError, match="x"):
            sk.cublasSnrm2(h, 8, float(dx.ptr), 1)
    finally:
        sk.cublasDestroy(h)
