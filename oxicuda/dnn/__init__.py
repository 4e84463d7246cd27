"""oxicuda.dnn: cuDNN-like operations.

Element-wise and reduction ops (this package's softmax, norms, activations and pooling modules)
import eagerly; ``conv2d`` and ``attention`` come from ``oxicuda.dnn.conv`` and
``oxicuda.dnn.attention_api`` on first access, so a missing or broken one never breaks
``import oxicuda.dnn``. ``conv2d_backward_data`` and ``conv2d_backward_filter`` (the gradients
of ``conv2d`` with respect to its input and its filter) come with ``conv2d``.
"""

from __future__ import annotations

import importlib
import importlib.util

from .activations import gelu, relu, sigmoid, silu, tanh
from .norms import batch_norm, layer_norm, rms_norm
from .pooling import avg_pool2d, max_pool2d
from .softmax import log_softmax, softmax

_LAZY = {
    "conv2d": "oxicuda.dnn.conv",
    "conv2d_backward_data": "oxicuda.dnn.conv",
    "conv2d_backward_filter": "oxicuda.dnn.conv",
    "attention": "oxicuda.dnn.attention_api",
}

#: modules whose import registers kernel families (``oxicuda.ptx.registry.load_all_families``)
KERNEL_MODULES = tuple(
    ["softmax", "norms", "activations", "pooling"]
    + [m for m in ("conv", "attention_api") if importlib.util.find_spec(f"oxicuda.dnn.{m}") is not None]
)

__all__ = [
    "attention",
    "avg_pool2d",
    "batch_norm",
    "conv2d",
    "conv2d_backward_data",
    "conv2d_backward_filter",
    "gelu",
    "layer_norm",
    "log_softmax",
    "max_pool2d",
    "relu",
    "rms_norm",
    "sigmoid",
    "silu",
    "softmax",
    "tanh",
]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'oxicuda.dnn' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    # the lazy names are listed before their first access, so that tab completion and help()
    # show them; module attributes (dunders) stay listed as for any module
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__")})
