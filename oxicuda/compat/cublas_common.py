"""What the CuPy- and scikit-cuda-shaped cuBLAS surfaces share: cuBLAS's integer constants and
status codes, the translation of integer/char enum arguments, and ``run(status_error, ...)``
which maps oxicuda's exceptions onto a cuBLAS status (bad arguments -> INVALID_VALUE, unknown
handle -> NOT_INITIALIZED, unsupported type combinations -> NOT_SUPPORTED, driver failures ->
EXECUTION_FAILED), and ``pointer_arg``, the one check of every raw pointer argument (a
non-pointer raises TypeError, as CuPy's typed arguments do)."""

from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np

from ..blas.handle import InvalidHandle
from ..driver.errors import CudaError

STATUS_SUCCESS = 0
STATUS_NOT_INITIALIZED = 1
STATUS_ALLOC_FAILED = 3
STATUS_INVALID_VALUE = 7
STATUS_ARCH_MISMATCH = 8
STATUS_MAPPING_ERROR = 11
STATUS_EXECUTION_FAILED = 13
STATUS_INTERNAL_ERROR = 14
STATUS_NOT_SUPPORTED = 15
STATUS_LICENSE_ERROR = 16
STATUS_NAMES = {
    0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED",
    7: "CUBLAS_STATUS_INVALID_VALUE", 8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
    13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR",
    15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR",
}

OPS = {0: "N", 1: "T", 2: "C"}
FILL = {0: "L", 1: "U"}
SIDE = {0: "L", 1: "R"}
DIAG = {0: "N", 1: "U"}

#: the data dtype and the real dtype of each BLAS/LAPACK name prefix (scikit-cuda's names spell it
#: upper case), and the prefix of the real-valued reductions (nrm2, asum: Sc/Dz on complex data)
PREFIX_DTYPE = {"s": "float32", "d": "float64", "c": "complex64", "z": "complex128"}
PREFIX_REAL = {"s": "float32", "d": "float64", "c": "float32", "z": "float64"}
REDUCTION_PREFIX = {"s": "s", "d": "d", "c": "sc", "z": "dz"}

# cudaDataType_t
CUDA_R_16F, CUDA_C_16F, CUDA_R_16BF, CUDA_C_16BF = 2, 6, 14, 15
CUDA_R_32F, CUDA_C_32F, CUDA_R_64F, CUDA_C_64F = 0, 4, 1, 5
CUDA_R_8I, CUDA_C_8I, CUDA_R_32I, CUDA_C_32I = 3, 7, 10, 11
DATA_TYPES = {CUDA_R_16F: "float16", CUDA_R_16BF: "bfloat16", CUDA_R_32F: "float32",
              CUDA_R_64F: "float64", CUDA_C_32F: "complex64", CUDA_C_64F: "complex128"}
# cublasComputeType_t
COMPUTE_16F, COMPUTE_16F_PEDANTIC = 64, 65
COMPUTE_32F, COMPUTE_32F_PEDANTIC = 68, 69
COMPUTE_32F_FAST_16F, COMPUTE_32F_FAST_16BF, COMPUTE_32F_FAST_TF32 = 74, 75, 77
COMPUTE_64F, COMPUTE_64F_PEDANTIC = 70, 71
COMPUTE_32I, COMPUTE_32I_PEDANTIC = 72, 73


class UnsupportedByOxicuda(ValueError):
    """A valid cuBLAS argument combination that oxicuda does not implement (NOT_SUPPORTED)."""


class PointerTypeError(TypeError):
    """A pointer argument got something that is not an address (a float, an array, None...).
    Raised as is, not as a cuBLAS status: CuPy's ``size_t`` arguments raise TypeError there."""


_ADDRESS_LIMIT = 1 << 64
#: what a pointer argument never is: values (numbers, strings) and arrays (pass their address)
_NOT_POINTERS = (bool, float, complex, str, bytes, np.ndarray, np.generic)


def pointer_arg(value: object, what: str) -> int:
    """The address a raw pointer argument holds, typed as CuPy's ``size_t`` arguments are: an
    int (``a.data.ptr``, ``a.ptr``, ``host_array.ctypes.data``) or an object that converts to
    one (PyCUDA's ``gpudata``, oxicuda's ``.gpudata``). A float, a numpy array or scalar, a
    device array itself (its ``int()`` is its value, not its address), None or any other object
    raises PointerTypeError naming the argument; a negative or >= 2**64 int raises
    OverflowError (INVALID_VALUE)."""
    if type(value) is int:
        v = value
    elif isinstance(value, np.integer):
        v = int(value)
    elif (value is None or isinstance(value, _NOT_POINTERS) or hasattr(value, "__cuda_array_interface__")
          or hasattr(value, "__dlpack__") or hasattr(value, "__array_interface__")):
        raise PointerTypeError(
            f"{what}={_short(value)} ({type(value).__name__}) is not a pointer; pass an address: an int "
            "such as array.ptr / array.data.ptr / host_array.ctypes.data, or a gpudata object")
    else:
        try:
            v = operator.index(value)
        except TypeError:
            to_int = getattr(type(value), "__int__", None)
            if to_int is None:
                raise PointerTypeError(f"{what}={_short(value)} ({type(value).__name__}) is not a pointer; "
                                       "pass an int address or an object with __int__ (gpudata)") from None
            v = to_int(value)
        if type(v) is not int:
            raise PointerTypeError(f"{what}: int() of {type(value).__name__} gave {type(v).__name__}, not an address")
    if not 0 <= v < _ADDRESS_LIMIT:
        raise OverflowError(f"{what}={v} is not a 64-bit address (0 <= address < 2**64)")
    return v


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def enum_arg(table: dict, value: object, what: str, chars: bool = False) -> str:
    """An enum argument (int code; with ``chars``, also scikit-cuda's 'n'/'T'/... letters)."""
    if chars and isinstance(value, str) and len(value) == 1:
        for code, letter in table.items():
            if value.upper() == letter or (table is SIDE and value.upper() == "LR"[code]):
                return letter
    if isinstance(value, int) and not isinstance(value, bool) and value in table:
        return table[value]
    allowed = sorted(table) + ([f"'{v}'" for v in table.values()] if chars else [])
    raise ValueError(f"{what}={value!r}; allowed: {allowed}")


def run(error: Callable[[int, str], Exception], call: Callable[[], object]) -> object:
    """Run ``call`` and raise ``error(status, detail)`` for the cuBLAS status its failure maps to."""
    try:
        return call()
    except PointerTypeError:
        raise
    except InvalidHandle as exc:
        raise error(STATUS_NOT_INITIALIZED, str(exc)) from exc
    except UnsupportedByOxicuda as exc:
        raise error(STATUS_NOT_SUPPORTED, str(exc)) from exc
    except NotImplementedError as exc:
        raise error(STATUS_NOT_SUPPORTED, str(exc)) from exc
    except (ValueError, TypeError, OverflowError) as exc:
        raise error(STATUS_INVALID_VALUE, str(exc)) from exc
    except CudaError as exc:
        raise error(STATUS_EXECUTION_FAILED, str(exc)) from exc
