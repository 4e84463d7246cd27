"""The numpy.fft-shaped functions: argument checks, then the plan lookup, then ``plan.run``.

Every function takes an oxicuda array or anything ``oxicuda.asarray`` takes; results follow
numpy's shapes and cupy's dtypes (complex64 from float32/complex64, complex128 from
float64/complex128; real outputs float32/float64). ``n``/``s``, ``axis``/``axes`` and ``norm``
("backward", "ortho", "forward") mean what they mean in numpy.fft. ``out=`` takes a C-contiguous
DeviceArray of the result's shape and dtype that does not overlap the input (c2c calls may pass
the input itself: an in-place plan). Bad input raises TypeError/ValueError before any launch.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from oxicuda.driver.facts import device_facts
from oxicuda.memory.array import DeviceArray, asarray, empty

from .config import get_plan_cache
from .plan import MAX_ELEMENTS, Buf, PlanBuilder, build_launch_plan
from .plan import c_strides as _c_strides

__all__ = [
    "Problem",
    "fft",
    "fft2",
    "fftn",
    "hfft",
    "ifft",
    "ifft2",
    "ifftn",
    "ihfft",
    "irfft",
    "irfft2",
    "irfftn",
    "plan_for",
    "rfft",
    "rfft2",
    "rfftn",
]

NORMS = ("backward", "ortho", "forward")
#: the stack of ``with plan:`` blocks per thread (user_plan.Plan pushes and pops it)
_plan_stack = threading.local()
#: input dtype -> (complex kernel dtype, complex result dtype, real result dtype)
ACCEPTED = {np.dtype(np.float32): ("c64", np.complex64, np.float32),
            np.dtype(np.complex64): ("c64", np.complex64, np.float32),
            np.dtype(np.float64): ("c128", np.complex128, np.float64),
            np.dtype(np.complex128): ("c128", np.complex128, np.float64)}


@dataclass(frozen=True)
class Problem:
    """One call's signature: everything its plan depends on (the device ordinal included)."""

    kind: str                     # "c2c", "r2c", "c2r"
    shape: tuple[int, ...]
    strides: tuple[int, ...]      # elements
    in_dtype: str                 # numpy dtype name of the input
    dtype: str                    # "c64" / "c128"
    axes: tuple[int, ...]
    lengths: tuple[int, ...]      # transform length per axis
    out_shape: tuple[int, ...]
    sign: float                   # c2c: -1 inverse; c2r: -1 conjugates the input (hfft)
    out_sign: float               # c2c: -1 inverse; r2c: -1 conjugates the output (ihfft)
    scale: float
    pairs_ok: bool                # the pointers allow real data read/written as complex pairs
    ordinal: int

    def __post_init__(self) -> None:
        # the plan cache hashes the problem on every call: compute it once
        object.__setattr__(self, "_hash", hash(tuple(getattr(self, f) for f in self.__dataclass_fields__)))

    def __hash__(self) -> int:
        return self._hash

    def compose(self, pb: PlanBuilder):
        isz = np.dtype(self.in_dtype).itemsize
        src = Buf(0, 0, self.shape, self.strides, isz)
        out_item = pb.rsize if self.kind == "c2r" else pb.esize
        dst = Buf(1, 0, self.out_shape, _c_strides(self.out_shape), out_item)
        order = list(reversed(range(len(self.axes))))
        if self.kind == "c2r":
            order = order[1:]
        cur = src
        if self.kind == "c2c" and np.dtype(self.in_dtype).kind == "f":
            a, n = self.axes[-1], self.lengths[-1]
            wide_shape = _with(cur.shape, a, n)
            wide = pb.scratch(wide_shape, a, pb.esize)
            pb.aux("gather_real", cur, wide, cur, a, n, n, min(cur.shape[a], n), widen=True)
            cur = wide
        if self.kind == "r2c":
            a, n = self.axes[-1], self.lengths[-1]
            nxt = self._target(pb, _with(cur.shape, a, n // 2 + 1), dst)
            last = not order[1:]
            pb.r2c(cur, nxt, a, n, self.out_sign, self.scale if last else 1.0, self.pairs_ok)
            cur = nxt
            order = order[1:]
        for k, i in enumerate(order):
            a, n = self.axes[i], self.lengths[i]
            last = k == len(order) - 1 and self.kind != "c2r"
            target = _with(cur.shape, a, n)
            nxt = self._target(pb, target, dst)
            signs = (self.sign, self.out_sign) if self.kind == "c2c" else \
                (1.0, 1.0) if self.kind == "r2c" else (-1.0, -1.0)
            pb.c2c(cur, nxt, a, n, signs, self.scale if last else 1.0)
            cur = nxt
        if self.kind == "c2r":
            a, n = self.axes[-1], self.lengths[-1]
            pb.c2r(cur, dst, a, n, self.sign, self.scale, self.pairs_ok)
        return pb.finish(f"fft_{self.kind}{self.shape}{self.axes}")

    def _target(self, pb: PlanBuilder, shape: tuple[int, ...], dst: Buf) -> Buf:
        if shape == dst.shape and self.kind != "c2r":
            return dst
        buf = pb.scratch(shape, len(shape) - 1, pb.esize)
        return Buf(-1, buf.offset, shape, _c_strides(shape), pb.esize)


def _with(shape: tuple[int, ...], axis: int, n: int) -> tuple[int, ...]:
    return shape[:axis] + (n,) + shape[axis + 1:]


# -- argument checks -------------------------------------------------------------------------------
def as_input(x: object, op: str) -> DeviceArray:
    """``x`` as a DeviceArray of an accepted dtype; TypeError naming the dtype otherwise."""
    if not isinstance(x, DeviceArray):
        dt = getattr(x, "dtype", None)
        if dt is None and not hasattr(x, "__cuda_array_interface__"):
            x = np.asarray(x)
            dt = x.dtype
        if dt is not None and np.dtype(dt) not in ACCEPTED:
            raise TypeError(f"{op}: the input has dtype {np.dtype(dt)}; allowed float32, float64, "
                            "complex64, complex128 (convert integers and bools first)")
        x = asarray(x)
    if x.dtype not in ACCEPTED:
        raise TypeError(f"{op}: the input has dtype {x.dtype}; allowed float32, float64, complex64, "
                        "complex128 (convert integers and bools first)")
    if x.ndim == 0:
        raise ValueError(f"{op}: the input is 0-d; it needs at least one dimension")
    return x


def norm_scale(norm: str | None, total: int, inverse: bool, op: str) -> float:
    """The factor ``norm`` puts on a transform of ``total`` points (inverse: ifft's side)."""
    norm = "backward" if norm is None else norm
    if norm not in NORMS:
        raise ValueError(f"{op}: norm={norm!r}; allowed None, 'backward', 'ortho', 'forward'")
    if norm == "ortho":
        return 1.0 / math.sqrt(total)
    return 1.0 / total if (norm == "backward") == inverse else 1.0


def _axis_list(axes, ndim: int, op: str) -> tuple[int, ...]:
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"{op}: axis {a!r} must be an int")
        if not -ndim <= a < ndim:
            raise ValueError(f"{op}: axis {a} is out of range for an array of {ndim} dimension(s); "
                             f"allowed {-ndim}..{ndim - 1}")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: axes {tuple(axes)} repeat an axis; each axis at most once")
    return tuple(out)


def _length(n, op: str, what: str = "n") -> int:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"{op}: {what}={n!r} must be an int")
    if n < 1:
        raise ValueError(f"{op}: {what}={n}; transform lengths must be >= 1")
    return int(n)


def axes_and_lengths(x: DeviceArray, s, axes, op: str, real_out: bool = False):
    """numpy's (s, axes) rules: axes default to the last len(s) (or all) axes; s to the input's
    sizes (c2r: 2*(m-1) on the last axis)."""
    if axes is None:
        axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
        if s is not None and len(s) > x.ndim:
            raise ValueError(f"{op}: s={tuple(s)} has {len(s)} entries for a {x.ndim}-d input")
    elif isinstance(axes, (int, np.integer)):
        axes = (axes,)
    ax = _axis_list(tuple(axes), x.ndim, op)
    if not ax:
        raise ValueError(f"{op}: axes is empty; give at least one axis")
    if s is None:
        lengths = [x.shape[a] for a in ax]
        if real_out:
            lengths[-1] = 2 * (x.shape[ax[-1]] - 1)
    else:
        s = tuple(s)
        if len(s) != len(ax):
            raise ValueError(f"{op}: s has {len(s)} entries and axes {len(ax)}; they must match")
        lengths = [_length(v, op, "s entry") for v in s]
    for a, n in zip(ax, lengths):
        if n < 1:
            raise ValueError(f"{op}: the transform length along axis {a} is {n}; it must be >= 1 "
                             f"(give n or s for an input of {x.shape[a]} entries)")
        if x.shape[a] < 1:
            raise ValueError(f"{op}: axis {a} has no entries; transforms need at least one")
    return ax, tuple(lengths)


def _check_out(out, shape, dtype, x: DeviceArray, op: str, inplace_ok: bool) -> DeviceArray:
    if not isinstance(out, DeviceArray):
        raise TypeError(f"{op}: out must be an oxicuda DeviceArray; got {type(out).__name__}")
    if tuple(out.shape) != tuple(shape) or out.dtype != np.dtype(dtype):
        raise ValueError(f"{op}: out has shape {tuple(out.shape)} and dtype {out.dtype}; the result "
                         f"has shape {tuple(shape)} and dtype {np.dtype(dtype)}")
    if not out.is_c_contiguous:
        raise ValueError(f"{op}: out must be C-contiguous; got strides {out.strides}")
    same = out.ptr == x.ptr and out.strides == x.strides and out.shape == x.shape and out.dtype == x.dtype
    if same and inplace_ok:
        return out
    lo, hi = _span(x)
    olo, ohi = _span(out)
    if lo < ohi and olo < hi:
        raise ValueError(f"{op}: out overlaps the input; give a separate array (only an exact alias "
                         "of a c2c input of the result's shape is an in-place plan)")
    return out


def _span(a: DeviceArray) -> tuple[int, int]:
    lo = hi = a.ptr
    for n, st in zip(a.shape, a.strides):
        if n == 0:
            return a.ptr, a.ptr
        (lo, hi) = (lo + (n - 1) * st, hi) if st < 0 else (lo, hi + (n - 1) * st)
    return lo, hi + a.dtype.itemsize


def _ordinal() -> int:
    from oxicuda.driver.context import current_device_ordinal

    return current_device_ordinal()


def _element_strides(x: DeviceArray) -> tuple[int, ...]:
    return tuple(st // x.dtype.itemsize for st in x.strides)


def current_plan():
    """The Plan of the innermost ``with plan:`` block on this thread (None outside)."""
    stack = getattr(_plan_stack, "stack", None)
    return stack[-1] if stack else None


def plan_for(problem: Problem):
    """The cached LaunchPlan of ``problem`` (built on first use)."""
    return get_plan_cache().get_or_build(problem, lambda: build_launch_plan(problem, device_facts(problem.ordinal)))


def make_problem(kind: str, xa: DeviceArray, ax, lengths, norm, inverse: bool, op: str, *,
                 out_conj: bool = False, in_conj: bool = False, norm_inverse: bool | None = None,
                 out_ptr: int | None = None) -> Problem:
    """The Problem of one checked call (``xa`` already an accepted DeviceArray)."""
    dkind, _, rdt = ACCEPTED[xa.dtype]
    shape = list(xa.shape)
    for a, n in zip(ax, lengths):
        shape[a] = n
    if kind == "r2c":
        shape[ax[-1]] = lengths[-1] // 2 + 1
    for what, count in (("input", xa.size), ("result", math.prod(shape))):
        if count > MAX_ELEMENTS:
            raise ValueError(f"{op}: the {what} has {count} elements; at most {MAX_ELEMENTS} per call "
                             "(split the batch)")
    total = math.prod(lengths)
    scale = norm_scale(norm, total, inverse if norm_inverse is None else norm_inverse, op)
    if kind == "c2c":
        sign = out_sign = -1.0 if inverse else 1.0
    else:  # c2r conjugates its input only for hfft; r2c its output only for ihfft
        sign, out_sign = (-1.0 if in_conj else 1.0), (-1.0 if out_conj else 1.0)
    rsize = np.dtype(rdt).itemsize
    if kind == "r2c":
        pairs_ok = xa.ptr % (2 * rsize) == 0
    else:  # a c2r result we allocate is aligned; a caller's out= may not be
        pairs_ok = out_ptr is None or out_ptr % (2 * rsize) == 0
    return Problem(kind, tuple(xa.shape), _element_strides(xa), xa.dtype.name, dkind, tuple(ax),
                   tuple(lengths), tuple(shape), sign, out_sign, scale, pairs_ok, _ordinal())


def _alignment(kind: str, x: DeviceArray, out) -> int:
    """The pointer bits a plan depends on: real data read (r2c) or written (c2r) as pairs."""
    if kind == "r2c":
        return x._ptr % 16
    if kind == "c2r" and isinstance(out, DeviceArray):
        return out._ptr % 16
    return 0


#: call signature -> (problem, result dtype): the checks of a signature seen before are skipped
_CHECKED: dict[tuple, tuple[Problem, np.dtype, bool]] = {}
_CHECKED_MAX = 1024


def execute(kind: str, x: object, s, axes, norm, inverse: bool, out, op: str, *, out_conj: bool = False,
            in_conj: bool = False, norm_inverse: bool | None = None, stream: object = None) -> DeviceArray:
    """Check, plan (cached) and run one transform on ``stream`` (None: the input's); the result."""
    if type(x) is DeviceArray and not getattr(_plan_stack, "stack", None):  # no ``with plan:`` block
        try:
            key = (kind, x._shape, x._strides, x._dtype, s, axes, norm, inverse, in_conj, out_conj,
                   norm_inverse, _alignment(kind, x, out), _ordinal())
            hit = _CHECKED.get(key)
        except TypeError:  # unhashable s/axes (lists): the full path
            key, hit = None, None
        if hit is not None:
            problem, out_dtype, nonempty = hit
            if stream is None:
                stream = x._stream or None
            if out is None:
                result = empty(problem.out_shape, out_dtype, stream=stream)
            else:
                result = _check_out(out, problem.out_shape, out_dtype, x, op,
                                    kind == "c2c" and problem.out_shape == problem.shape)
            if nonempty:
                plan_for(problem).run((x._ptr, result._ptr), (), stream)
            return result
    else:
        key = None
    xa = as_input(x, op)
    real_in = xa.dtype.kind == "f"
    if kind == "c2r" and real_in:
        xa = xa.astype(np.complex64 if xa.dtype == np.float32 else np.complex128)
    if kind == "r2c" and not real_in:
        raise TypeError(f"{op}: the input has dtype {xa.dtype}; a real transform takes float32 or float64")
    ax, lengths = axes_and_lengths(xa, s, axes, op, real_out=kind == "c2r")
    active = current_plan()
    if active is not None:
        active.check(kind, xa, ax, lengths)
    problem = make_problem(kind, xa, ax, lengths, norm, inverse, op, out_conj=out_conj, in_conj=in_conj,
                           norm_inverse=norm_inverse, out_ptr=out.ptr if isinstance(out, DeviceArray) else None)
    _, cdt, rdt = ACCEPTED[xa.dtype]
    out_dtype = np.dtype(rdt if kind == "c2r" else cdt)
    if key is not None and xa is x:
        if len(_CHECKED) >= _CHECKED_MAX:
            _CHECKED.clear()
        _CHECKED[key] = (problem, out_dtype, math.prod(problem.out_shape) > 0)
    if out is not None:
        result = _check_out(out, problem.out_shape, out_dtype, xa, op,
                            kind == "c2c" and problem.out_shape == tuple(xa.shape))
    stream = stream if stream is not None else (xa.stream or None)
    if out is None:
        result = empty(problem.out_shape, out_dtype, stream=stream)
    if result.size:  # an empty result has nothing to compute (and no plan)
        plan_for(problem).run((xa.ptr, result.ptr), (), stream)
    return result


# -- the numpy.fft functions -----------------------------------------------------------------------
def _one(n, op: str):
    return None if n is None else (_length(n, op, "n"),)


def fft(a, n=None, axis=-1, norm=None, out=None) -> DeviceArray:
    """The 1-D discrete Fourier transform of ``a`` along ``axis`` (length ``n``: pad/crop)."""
    return execute("c2c", a, _one(n, "fft"), (axis,), norm, False, out, "fft")


def ifft(a, n=None, axis=-1, norm=None, out=None) -> DeviceArray:
    """The 1-D inverse transform (1/n scaling with norm='backward')."""
    return execute("c2c", a, _one(n, "ifft"), (axis,), norm, True, out, "ifft")


def fftn(a, s=None, axes=None, norm=None, out=None) -> DeviceArray:
    """The N-D transform over ``axes`` (lengths ``s``)."""
    return execute("c2c", a, s, axes, norm, False, out, "fftn")


def ifftn(a, s=None, axes=None, norm=None, out=None) -> DeviceArray:
    """The N-D inverse transform over ``axes``."""
    return execute("c2c", a, s, axes, norm, True, out, "ifftn")


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None) -> DeviceArray:
    """The 2-D transform over ``axes``."""
    return execute("c2c", a, s, axes, norm, False, out, "fft2")


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None) -> DeviceArray:
    """The 2-D inverse transform over ``axes``."""
    return execute("c2c", a, s, axes, norm, True, out, "ifft2")


def rfft(a, n=None, axis=-1, norm=None, out=None) -> DeviceArray:
    """The transform of real ``a`` along ``axis``: n//2 + 1 complex outputs."""
    return execute("r2c", a, _one(n, "rfft"), (axis,), norm, False, out, "rfft")


def irfft(a, n=None, axis=-1, norm=None, out=None) -> DeviceArray:
    """The inverse of rfft: ``n`` (default 2*(m-1)) real outputs from m Hermitian inputs."""
    return execute("c2r", a, _one(n, "irfft"), (axis,), norm, True, out, "irfft")


def rfftn(a, s=None, axes=None, norm=None, out=None) -> DeviceArray:
    """The N-D real transform: r2c over the last of ``axes``, c2c over the others."""
    return execute("r2c", a, s, axes, norm, False, out, "rfftn")


def irfftn(a, s=None, axes=None, norm=None, out=None) -> DeviceArray:
    """The inverse of rfftn."""
    return execute("c2r", a, s, axes, norm, True, out, "irfftn")


def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None) -> DeviceArray:
    """The 2-D real transform."""
    return execute("r2c", a, s, axes, norm, False, out, "rfft2")


def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None) -> DeviceArray:
    """The inverse of rfft2."""
    return execute("c2r", a, s, axes, norm, True, out, "irfft2")


def hfft(a, n=None, axis=-1, norm=None, out=None) -> DeviceArray:
    """The transform of a Hermitian-symmetric signal: real output of length n (default 2*(m-1))."""
    return execute("c2r", a, _one(n, "hfft"), (axis,), norm, False, out, "hfft", in_conj=True, norm_inverse=False)


def ihfft(a, n=None, axis=-1, norm=None, out=None) -> DeviceArray:
    """The inverse of hfft: n//2 + 1 complex outputs from real input."""
    return execute("r2c", a, _one(n, "ihfft"), (axis,), norm, False, out, "ihfft", out_conj=True, norm_inverse=True)
