"""``oxicuda.cuda.cufft``: shaped like ``cupy.cuda.cufft`` (see ``oxicuda.compat.cufft``)."""

from oxicuda.compat.cufft import *  # noqa: F401,F403
from oxicuda.compat.cufft import __all__  # noqa: F401
