"""The scalar bodies of the array operations, written in the ``@oxicuda.kernel`` language.

Each function is compiled by ``oxicuda.elementwise`` (or used as a map/reduce step of
``oxicuda.reduction``) for the dtypes it is called with. The dispatch layer casts every array
operand to the ufunc's loop dtype (numpy's ``resolve_dtypes``) before the call, so a body sees
one dtype per operand and computes in it; the bodies follow numpy's definitions of the loops
(``npy_divmod`` for float floor division and remainder, 0 for an integer division by zero,
NaN-propagating maximum/minimum, ...). One ``return`` per body, at its end: the subset of the
language every backend of the compiler takes.
"""

# ruff: noqa: PLR0124  (x != x is the NaN test of the kernel language; nested ifs
# keep each body in the subset every backend of the compiler takes)

from __future__ import annotations

import math

from oxicuda.jit.kernel import device  # shared steps of several bodies, inlined

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
    # numpy's npy_divmod: the quotient consistent with fmod (fmod as x - trunc(x / y) * y, exact
    # while the quotient has fewer bits than the mantissa), rounded to the nearest integer
    r = x / y
    if y != 0:
        mod = x - math.trunc(x / y) * y
        if (y == math.inf or y == -math.inf) and x - x == 0:
            mod = x  # fmod(finite, inf) is x
        div = (x - mod) / y
        if mod != 0 and (y < 0) != (mod < 0):
            div = div - 1
        if div != 0:
            r = math.floor(div)
            if div - r > 0.5:
                r = r + 1
        else:
            r = math.copysign(0.0, x / y)
    return r


def remainder_float(x, y):
    # numpy's npy_divmod remainder: fmod (as above), moved into the divisor's sign
    mod = x - math.trunc(x / y) * y
    if (y == math.inf or y == -math.inf) and x - x == 0:
        mod = x
    if y != 0:
        if mod != 0:
            if (y < 0) != (mod < 0):
                mod = mod + y
        else:
            mod = math.copysign(0.0, y)
    else:
        mod = x - x + math.nan
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


def power_uint(x, y):  # power_int without the negative exponents unsigned types cannot have
    r = x - x + 1
    b = x
    e = y
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


@device
def atan_core(x):
    # Cephes' atan: reduce |x| to [0, 0.66] (pi/2 - atan(1/x), pi/4 + atan((x-1)/(x+1))), then a
    # 4/5 rational in x^2; accurate to an ulp or two in the dtype it runs in
    a = abs(x)
    base = math.copysign(0.0, a)  # a zero of x's dtype (a - a would be NaN for infinities)
    extra = base
    if a > 2.414213562373095:
        base = base + 1.5707963267948966
        extra = extra + 6.123233995736766e-17
        a = -1.0 / a
    elif a > 0.66:
        base = base + 0.7853981633974483
        extra = extra + 3.061616997868383e-17
        a = (a - 1.0) / (a + 1.0)
    z = a * a
    p = ((((-8.750608600031904e-01 * z - 1.6157537187333652e+01) * z - 7.500855792314705e+01) * z
          - 1.2288666844901361e+02) * z - 6.485021904942025e+01)
    q = (((((z + 2.485846490142306e+01) * z + 1.6502700983169885e+02) * z + 4.328810604912903e+02)
          * z + 4.853903996359137e+02) * z + 1.9455065714826139e+02)
    r = base + (a * (z * p / q) + a + extra)
    if x < 0:
        r = -r
    if x == 0:
        r = x  # keeps -0.0
    return r


def arctan(x):
    return atan_core(x)


@device
def atan2_core(y, x):
    # C99/numpy atan2: quadrants from the signs (signed zeros included), infinities exact
    r = atan_core(y / x)
    if x < 0 or (x == 0 and math.copysign(1.0, x) < 0):
        r = r + math.copysign(3.141592653589793, y)
    if x == 0:
        r = math.copysign(1.5707963267948966, y)
        if y == 0:
            r = y
            if math.copysign(1.0, x) < 0:
                r = math.copysign(3.141592653589793, y)
    if (x == math.inf or x == -math.inf) and (y == math.inf or y == -math.inf):
        r = math.copysign(0.7853981633974483, y)
        if x < 0:
            r = math.copysign(2.356194490192345, y)
    if x != x or y != y:
        r = x + y
    return r


def arctan2(y, x):
    return atan2_core(y, x)


def arcsin(x):
    return atan2_core(x, math.sqrt((1.0 - x) * (1.0 + x)))


def arccos(x):
    return atan2_core(math.sqrt((1.0 - x) * (1.0 + x)), x)


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


def left_shift(x, y, bits):  # numpy: a count outside [0, bits) gives 0
    r = x - x
    if y >= 0 and y < bits:
        r = x << y
    return r


def right_shift(x, y, bits):  # numpy: a count outside [0, bits) gives 0, or -1 for x < 0
    r = x - x
    if x < 0:
        r = r - 1
    if y >= 0 and y < bits:
        r = x >> y
    return r


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


# -- complex, on the real and imaginary parts (the compiler has no complex type) ---------------


def cmul_re(xr, xi, yr, yi):
    return xr * yr - xi * yi


def cmul_im(xr, xi, yr, yi):
    return xr * yi + xi * yr


def cdiv_re(xr, xi, yr, yi):
    # Smith's algorithm, as numpy's complex division (a zero divisor gives inf/NaN parts)
    ar = abs(yr)
    r = xr / ar
    if ar >= abs(yi):
        if ar != 0:
            q = yi / yr
            r = (xr + xi * q) / (yr + yi * q)
    else:
        q = yr / yi
        r = (xr * q + xi) / (yi + yr * q)
    return r


def cdiv_im(xr, xi, yr, yi):
    ar = abs(yr)
    r = xi / ar
    if ar >= abs(yi):
        if ar != 0:
            q = yi / yr
            r = (xi - xr * q) / (yr + yi * q)
    else:
        q = yr / yi
        r = (xi * q - xr) / (yi + yr * q)
    return r


def cequal(xr, xi, yr, yi):
    return xr == yr and xi == yi


def cnot_equal(xr, xi, yr, yi):
    return xr != yr or xi != yi


def cabs(xr, xi):  # C99's hypot: an infinite part gives inf even beside a NaN
    r = math.hypot(xr, xi)
    if xr != xr or xi != xi:
        r = xr + xi
    if xr == math.inf or xr == -math.inf or xi == math.inf or xi == -math.inf:
        r = math.inf
    return r


def cisnan(xr, xi):
    return xr != xr or xi != xi


def cisinf(xr, xi):
    return xr == math.inf or xr == -math.inf or xi == math.inf or xi == -math.inf


def cisfinite(xr, xi):
    return xr - xr == 0 and xi - xi == 0


def cnonzero(xr, xi):
    return xr != 0 or xi != 0


def ciszero(xr, xi):
    return xr == 0 and xi == 0
