"""The solver's exception: numpy's LinAlgError (``except numpy.linalg.LinAlgError`` catches it),
carrying which matrix of a batch failed and LAPACK's info for it."""

from __future__ import annotations

import numpy as np


class LinAlgError(np.linalg.LinAlgError):
    """Singular or not positive-definite input (or a shape numpy.linalg refuses).

    ``index``: the batch index (a tuple over the leading dimensions) of the first failing matrix,
    or None; ``info``: LAPACK's info for it (i > 0: U(i, i) is exactly zero, or the leading minor
    of order i is not positive definite)."""

    def __init__(self, message: str, index: tuple[int, ...] | None = None, info: int = 0) -> None:
        super().__init__(message)
        self.index = index
        self.info = info
