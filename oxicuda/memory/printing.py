"""numpy's text of a DeviceArray: ``repr`` and ``str`` with the values, as numpy prints them.

Arrays up to numpy's print threshold are read whole. Larger ones are summarized as numpy does
(``edgeitems`` from each end of every long axis, ``...`` between) and only those edges are read
from the device, so the text of a huge array costs a few small copies.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from .dtypes import dtype_name


def _edges(arr, edge: int) -> np.ndarray:
    """The host array numpy summarizes exactly like ``arr``: every axis longer than 2*edge keeps
    its first and last ``edge`` entries with one filler between (numpy prints ``...`` there)."""
    long_axes = [ax for ax, n in enumerate(arr.shape) if n > 2 * edge]
    pieces = {}
    for ends in itertools.product((0, 1), repeat=len(long_axes)):
        key = [slice(None)] * arr.ndim
        for ax, end in zip(long_axes, ends):
            key[ax] = slice(0, edge) if end == 0 else slice(arr.shape[ax] - edge, None)
        pieces[ends] = arr[tuple(key)].get()

    def assemble(prefix: tuple[int, ...]) -> np.ndarray:
        depth = len(prefix)
        if depth == len(long_axes):
            return pieces[prefix]
        head, tail = assemble(prefix + (0,)), assemble(prefix + (1,))
        ax = long_axes[depth]
        filler = np.take(head, [edge - 1], axis=ax)
        return np.concatenate([head, filler, tail], axis=ax)

    return assemble(())


def array_text(arr, format_array: Callable[[np.ndarray], str], prefix: str) -> str:
    """``format_array`` (``numpy.array_repr`` or ``numpy.array_str``) of ``arr``'s values, with
    numpy's ``array(`` replaced by ``prefix`` (and continuation lines indented to match)."""
    block = arr._block
    if block is not None and block.released:
        return (f"{prefix or 'DeviceArray('}<freed>, shape={arr.shape}, "
                f"dtype={dtype_name(arr.dtype)})")
    opts = np.get_printoptions()
    if arr.size <= opts["threshold"]:
        host = arr.get()
        summarized = False
    else:
        host = _edges(arr, opts["edgeitems"])
        summarized = True
    with np.printoptions(threshold=0 if summarized else opts["threshold"]):
        text = format_array(host)
    if summarized and prefix:  # numpy >= 2.2 names the shape of a summarized array: ours
        stand_in = f"shape={host.shape}"
        text = (text.replace(stand_in, f"shape={arr.shape}", 1) if stand_in in text
                else text[:-1] + f", shape={arr.shape})")
    if not prefix:
        return text
    return prefix + text[len("array("):].replace("\n" + " " * len("array("), "\n" + " " * len(prefix))
