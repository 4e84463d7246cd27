"""``oxicuda.cuda.cufft``: shaped like ``cupy.cuda.cufft`` (see ``oxicuda.compat.cufft``)."""

from oxicuda.compat.cufft import *
from oxicuda.compat.cufft import __all__  # noqa: F401
