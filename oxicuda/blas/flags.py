"""The one parser of BLAS transpose flags, used by every blas entry point.

``trans_op(value, where)`` -> "N", "T" or "C": the letters in either case; with ``bools`` also the
Pythonic spellings (False/None -> "N", True -> "T", numpy bools and the ints 0/1 alike).
"""

from __future__ import annotations

import numpy as np

__all__ = ["trans_op"]

_LETTERS = ("N", "T", "C")


def trans_op(value: object, where: str, *, bools: bool = False, name: str = "trans") -> str:
    """The transpose letter of ``value``; ValueError "``where``: ``name``=value; allowed ..." for
    anything else (so the message names the call and the argument)."""
    if isinstance(value, str):
        letter = value.upper()
        if letter in _LETTERS:
            return letter
    elif bools and (value is None or isinstance(value, (bool, np.bool_))
                    or (type(value) is int and value in (0, 1))):
        return "T" if value else "N"
    allowed = "False/True or 'N', 'T', 'C'" if bools else "'N', 'T' or 'C'"
    raise ValueError(f"{where}: {name}={value!r}; allowed {allowed}")
