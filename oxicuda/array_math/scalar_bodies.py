"""The scalar bodies of the array operations, written in the ``@oxicuda.kernel`` language.

Each function is compiled by ``oxicuda.elementwise`` (or used as a map/reduce step of
``oxicuda.reduction``) for the dtypes it is called with. The dispatch layer casts every array
operand to the ufunc's loop dtype (numpy's ``resolve_dtypes``) before the call, so a body sees
one dtype per operand and computes in it; the bodies follow numpy's definitions of the loops
(``npy_divmod`` for float floor division and remainder, 0 for an integer division by zero,
NaN-propagating maximum/minimum, ...). One ``return`` per body, at its end: the subset of the
language every backend of the compiler takes.
"""

# ruff: noqa: PLR0124, SIM102  (x != x is the NaN test of the kernel language; nested ifs
# keep each body in the subset every backend of the compiler takes)

from __future__ import annotations

import math

# -- arithmetic -------------------------------------------------------------------------------


def add(x, y):
    return x + y


def subtract(x, y):
    return x - y


def multiply(x, y):
    return x * y


def true_divide(x, y):
    return x / y


def logical_or2(x, y):  # add of bools
    return x or y


def logical_and2(x, y):  # multiply of bools
    return x and y


def floor_divide_int(x, y):
    r = x - x
    if y != 0:
        r = x // y
    return r


def remainder_int(x, y):
    r = x - x
    if y != 0:
        r = x % y
    return r


def floor_divide_float(x, y):
    # numpy's npy_divmod: the quotient consistent with fmod, rounded to the nearest integer
    r = x / y
    if y != 0:
        mod = math.fmod(x, y)
        div = (x - mod) / y
        if mod != 0:
            if (y < 0) != (mod < 0):
                div = div - 1
        if div != 0:
            r = math.floor(div)
            if div - r > 0.5:
                r = r + 1
        else:
            r = math.copysign(0.0, x / y)
    return r


def remainder_float(x, y):
    mod = math.fmod(x, y)
    if y != 0:
        if mod != 0:
            if (y < 0) != (mod < 0):
                mod = mod + y
        else:
            mod = math.copysign(0.0, y)
    return mod


def power_float(x, y):
    return x ** y


def power_int(x, y):
    # exponentiation by squaring in the dtype (wraps like numpy); a negative exponent gives
    # 1/x truncated: 1 for x == 1, +-1 for x == -1, else 0 (numpy refuses it for scalars)
    r = x - x + 1
    b = x
    e = y
    if e < 0:
        r = x - x
        if x == 1:
            r = x
        if x == -1:
            r = x
            if e % 2 == 0:
                r = -x
        e = e - e
    while e > 0:
        if e % 2 == 1:
            r = r * b
        b = b * b
        e = e // 2
    return r


def negative(x):
    return -x


def positive(x):
    return +x


def absolute(x):
    return abs(x)


def identity(x):
    return x


def sign_float(x):  # NaN stays NaN, -0.0 gives 0.0, infinities +-1
    r = x
    if x > 0:
        r = 1.0
    if x < 0:
        r = -1.0
    if x == 0:
        r = 0.0
    return r


def sign_int(x):
    r = x - x
    if x > 0:
        r = r + 1
    if x < 0:
        r = r - 1
    return r


# -- transcendental ---------------------------------------------------------------------------


def exp(x):
    return math.exp(x)


def exp2(x):
    return math.exp2(x)


def expm1(x):
    return math.expm1(x)


def log(x):
    return math.log(x)


def log2(x):
    return math.log2(x)


def log10(x):
    return math.log10(x)


def log1p(x):
    return math.log1p(x)


def sqrt(x):
    return math.sqrt(x)


def sin(x):
    return math.sin(x)


def cos(x):
    return math.cos(x)


def tan(x):
    return math.tan(x)


def tanh(x):
    return math.tanh(x)


def arcsin(x):
    return math.asin(x)


def arccos(x):
    return math.acos(x)


def arctan(x):
    return math.atan(x)


def arctan2(y, x):
    return math.atan2(y, x)


def floor(x):
    return math.floor(x)


def ceil(x):
    return math.ceil(x)


# -- maximum / minimum ------------------------------------------------------------------------


def maximum(x, y):  # NaN in either operand gives NaN (x first, as numpy)
    r = y
    if x >= y or x != x:
        r = x
    return r


def minimum(x, y):
    r = y
    if x <= y or x != x:
        r = x
    return r


def fmax(x, y):  # NaN only where both are NaN
    r = x
    if x < y or x != x:
        r = y
    return r


def fmin(x, y):
    r = x
    if x > y or x != x:
        r = y
    return r


# -- comparisons and logic --------------------------------------------------------------------


def equal(x, y):
    return x == y


def not_equal(x, y):
    return x != y


def less(x, y):
    return x < y


def less_equal(x, y):
    return x <= y


def greater(x, y):
    return x > y


def greater_equal(x, y):
    return x >= y


def logical_and(x, y):
    return x != 0 and y != 0


def logical_or(x, y):
    return x != 0 or y != 0


def logical_xor(x, y):
    return (x != 0) != (y != 0)


def logical_not(x):
    return x == 0


def isnan(x):
    return x != x


def isinf(x):
    return x == math.inf or x == -math.inf


def isfinite(x):
    return x == x and x != math.inf and x != -math.inf


def never(x):  # isnan / isinf of integers and bools
    return x != x


def always(x):  # isfinite of integers and bools
    return x == x


# -- bitwise ----------------------------------------------------------------------------------


def bitwise_and(x, y):
    return x & y


def bitwise_or(x, y):
    return x | y


def bitwise_xor(x, y):
    return x ^ y


def invert(x):
    return ~x


def left_shift(x, y):
    return x << y


def right_shift(x, y):
    return x >> y


# -- selection --------------------------------------------------------------------------------


def where(c, x, y):
    r = y
    if c:
        r = x
    return r


def clip(x, lo, hi):  # numpy's clip: minimum(maximum(x, lo), hi), NaN propagating
    r = x
    if r < lo or lo != lo:
        r = lo
    if r > hi or hi != hi:
        r = hi
    if x != x:
        r = x
    return r


# -- reduction steps --------------------------------------------------------------------------


def nonzero(x):
    return x != 0


def or_step(a, b):
    return a or b


def and_step(a, b):
    return a and b


def mean_post(value, count):
    return value / count


def match_index(x, m, i, n):
    # argmax/argmin second pass: the index of an element equal to the extremum m (a NaN counts
    # as the match when m is NaN), else n (larger than every index)
    r = n
    if x == m or x != x:
        r = i
    return r
