"""oxicuda.dnn: cuDNN-like operations.

Element-wise and reduction ops (this package's softmax, norms, activations and pooling modules)
import eagerly; ``conv2d`` and ``attention`` come from ``oxicuda.dnn.conv`` and
``oxicuda.dnn.attention_api`` on first access (as do the backward passes, from their
``*_backward``/``*_bwd`` modules), so a missing or broken one never breaks
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
    "attention_backward": "oxicuda.dnn.attention_bwd",
    "softmax_backward": "oxicuda.dnn.softmax_bwd",
    "log_softmax_backward": "oxicuda.dnn.softmax_bwd",
    "layer_norm_backward": "oxicuda.dnn.norms_backward",
    "rms_norm_backward": "oxicuda.dnn.norms_backward",
    "relu_backward": "oxicuda.dnn.activations_backward",
    "gelu_backward": "oxicuda.dnn.activations_backward",
    "silu_backward": "oxicuda.dnn.activations_backward",
    "sigmoid_backward": "oxicuda.dnn.activations_backward",
    "tanh_backward": "oxicuda.dnn.activations_backward",
}

#: modules whose import registers kernel families (``oxicuda.ptx.registry.load_all_families``)
KERNEL_MODULES = tuple(
    ["softmax", "norms", "activations", "pooling", "softmax_bwd", "norms_backward", "activations_backward"]
    + [m for m in ("conv", "attention_api", "attention_bwd", "attention_bwd_mma") if importlib.util.find_spec(f"oxicuda.dnn.{m}") is not None]
)

__all__ = [
    "attention",
    "attention_backward",
    "avg_pool2d",
    "batch_norm",
    "conv2d",
    "conv2d_backward_data",
    "conv2d_backward_filter",
    "gelu",
    "gelu_backward",
    "layer_norm",
    "layer_norm_backward",
    "log_softmax",
    "log_softmax_backward",
    "max_pool2d",
    "relu",
    "relu_backward",
    "rms_norm",
    "rms_norm_backward",
    "sigmoid",
    "sigmoid_backward",
    "silu",
    "silu_backward",
    "softmax",
    "softmax_backward",
    "tanh",
    "tanh_backward",
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
