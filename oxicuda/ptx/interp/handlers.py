"""Imports every built-in instruction module so that their handlers are registered."""

from . import alu, bits, collectives, compare, control, data, memops  # noqa: F401
