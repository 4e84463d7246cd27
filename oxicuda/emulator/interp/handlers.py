"""Imports every built-in instruction module so that their handlers are registered."""

from . import (  # noqa: F401
    alu,
    bits,
    collectives,
    compare,
    control,
    data,
    integer_extended,
    memops,
)
