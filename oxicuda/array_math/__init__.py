"""Device arrays that compute (issue 21, item 3): numpy's operators, ufuncs and reductions on
``DeviceArray`` through generated elementwise and reduction kernels.

``DeviceArray``'s operators and ``__array_ufunc__`` call into this package; the module
functions here are also ``oxicuda.where``, ``oxicuda.clip``, ``oxicuda.sum`` and the others.
"""

from .complex_parts import imag, real
from .matmul import matmul
from .protocol import array_ufunc
from .reductions import all, any, argmax, argmin, max, mean, min, prod, sum
from .selection import clip, where
from .ufuncs import apply, binary, inplace, power, unary

__all__ = ["all", "any", "apply", "argmax", "argmin", "array_ufunc", "binary", "clip", "imag", "inplace",
           "matmul", "max", "mean", "min", "power", "prod", "real", "sum", "unary", "where"]
