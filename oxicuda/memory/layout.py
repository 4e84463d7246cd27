"""Pure shape and stride arithmetic for device arrays (numpy conventions, strides in bytes).

Nothing here touches a device: contiguity, byte spans, basic indexing and no-copy reshapes.
"""

from __future__ import annotations

import operator


def _as_dims(shape: object, what: str) -> tuple:
    try:
        return (operator.index(shape),)
    except TypeError:
        pass
    try:
        return tuple(shape)
    except TypeError:
        raise TypeError(f"{what} {shape!r} is not an int or a sequence of ints") from None


def normalize_shape(shape: object, what: str = "shape") -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints) as a tuple of non-negative ints."""
    dims = _as_dims(shape, what)
    out = []
    for d in dims:
        try:
            n = operator.index(d)
        except TypeError:
            raise TypeError(f"{what} {shape!r} holds {d!r}; dimensions must be ints") from None
        if n < 0:
            raise ValueError(f"{what} {shape!r} has a negative dimension; dimensions must be >= 0")
        out.append(n)
    return tuple(out)


def contiguous_strides(shape: tuple[int, ...], itemsize: int, order: str = "C") -> tuple[int, ...]:
    """Byte strides of a contiguous array of ``shape`` in ``order`` ("C" or "F")."""
    if order not in ("C", "F"):
        raise ValueError(f"order {order!r} is not allowed; allowed orders: 'C', 'F'")
    strides = [0] * len(shape)
    step = itemsize
    dims = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for i in dims:
        strides[i] = step
        step *= max(shape[i], 1)
    return tuple(strides)


def size_of(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def is_contiguous(
    shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int, order: str
) -> bool:
    """numpy's contiguity flag: size-1 dimensions' strides do not matter; empty arrays are both."""
    if size_of(shape) == 0:
        return True
    step = itemsize
    dims = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for i in dims:
        if shape[i] != 1:
            if strides[i] != step:
                return False
            step *= shape[i]
    return True


def basic_index(
    shape: tuple[int, ...], strides: tuple[int, ...], key: object
) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """The view selected by a basic-indexing ``key``: (shape, strides, byte offset).

    Allowed: ints (negative count from the end), slices (any step, negative too), Ellipsis and
    None (a new axis of length 1). Anything else (arrays, lists, booleans) raises TypeError.
    """
    items = key if isinstance(key, tuple) else (key,)
    n_ellipsis = sum(1 for k in items if k is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError(f"index {key!r} has {n_ellipsis} Ellipsis; at most one is allowed")
    n_consuming = sum(1 for k in items if k is not None and k is not Ellipsis)
    if n_consuming > len(shape):
        raise IndexError(
            f"index {key!r} has {n_consuming} indices for an array of {len(shape)} dimension(s)"
        )
    if n_ellipsis == 0:
        items = items + (Ellipsis,)
    out_shape: list[int] = []
    out_strides: list[int] = []
    offset = 0
    axis = 0
    for k in items:
        if k is None:
            out_shape.append(1)
            out_strides.append(0)
        elif k is Ellipsis:
            for _ in range(len(shape) - n_consuming):
                out_shape.append(shape[axis])
                out_strides.append(strides[axis])
                axis += 1
        elif isinstance(k, slice):
            start, stop, step = k.indices(shape[axis])
            n = len(range(start, stop, step))
            if n:
                offset += start * strides[axis]
            out_shape.append(n)
            out_strides.append(step * strides[axis])
            axis += 1
        elif isinstance(k, bool) or not hasattr(k, "__index__"):
            raise TypeError(
                f"index {k!r} of type {type(k).__name__} is not supported; allowed: ints, "
                "slices, Ellipsis and None (copy to the host with .get() for advanced indexing)"
            )
        else:
            i = operator.index(k)
            n = shape[axis]
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            offset += (i % n) * strides[axis]
            axis += 1
    return tuple(out_shape), tuple(out_strides), offset


def resolve_reshape(size: int, newshape: object) -> tuple[int, ...]:
    """``newshape`` with a single -1 inferred; ValueError if the sizes disagree."""
    dims = [operator.index(d) for d in _as_dims(newshape, "reshape: shape")]
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in dims):
        raise ValueError(f"reshape to {tuple(dims)}: at most one -1 and no other negative sizes")
    known = size_of(tuple(d for d in dims if d != -1))
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape an array of size {size} into shape {tuple(dims)}")
        dims[unknown[0]] = size // known
    if size_of(tuple(dims)) != size:
        raise ValueError(f"cannot reshape an array of size {size} into shape {tuple(dims)}")
    return tuple(dims)


def reshape_strides(
    shape: tuple[int, ...], strides: tuple[int, ...], newshape: tuple[int, ...], order: str
) -> tuple[int, ...] | None:
    """Strides that view (shape, strides) as ``newshape`` without a copy, or None if impossible.

    numpy's ``_attempt_nocopy_reshape``: groups of old axes that are contiguous with each other
    (in ``order``) can be split and merged freely.
    """
    old = [(n, s) for n, s in zip(shape, strides) if n != 1]
    if order == "F":
        old = old[::-1]
        new = list(newshape[::-1])
    else:
        new = list(newshape)
    if size_of(newshape) == 0:
        return None
    out = [0] * len(new)
    oi = ni = 0
    while oi < len(old) and ni < len(new):
        np_, op_ = new[ni], old[oi][0]
        oj, nj = oi + 1, ni + 1
        while np_ != op_:
            if np_ < op_:
                np_ *= new[nj]
                nj += 1
            else:
                op_ *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):  # the merged old axes must be C-contiguous among themselves
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        out[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new[k]
        ni, oi = nj, oj
    last = out[ni - 1] if ni else 0
    for k in range(ni, len(new)):  # trailing size-1 axes
        out[k] = last
    return tuple(out[::-1]) if order == "F" else tuple(out)
