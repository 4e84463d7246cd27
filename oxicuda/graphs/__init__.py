"""oxicuda.graphs: CUDA graph capture and replay of oxicuda work (``oxicuda.graph``)."""

from __future__ import annotations

from .capture import Graph, GraphCaptureError, graph

__all__ = ["Graph", "GraphCaptureError", "graph"]


def __dir__() -> list[str]:
    return sorted(set(__all__) | {n for n in globals() if n.startswith("__")})
