"""Imports every built-in instruction module so that their handlers are registered."""

from . import alu, bits, collectives, compare, control, data, memops  # noqa: F401
from . import integer_extended  # noqa: F401  (after alu: wraps add/sub/mad for .cc)
