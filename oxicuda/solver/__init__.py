"""oxicuda.solver: the cuSOLVER counterpart. Not implemented yet: the package exists so the layout is
stable, and every name looked up in it raises an AttributeError that says so."""

from __future__ import annotations


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"oxicuda.solver.{name}: the cuSOLVER counterpart (oxicuda.solver) is not implemented yet; "
        "only oxicuda.blas and oxicuda.dnn have kernels today"
    )
