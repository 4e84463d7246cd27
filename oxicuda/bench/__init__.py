"""oxicuda.bench: the side-by-side benchmark harness behind ``python -m oxicuda bench``."""

from .case import Case, Prepared, cases, register_case

__all__ = ["Case", "Prepared", "cases", "register_case"]
