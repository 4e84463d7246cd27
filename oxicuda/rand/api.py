"""The numpy-Generator-shaped surface: ``default_rng(seed=None, generator="philox")`` returns a
``Generator`` whose methods fill device arrays with cuRAND's bits.

    rng = oxicuda.rand.default_rng(1234)
    x = rng.standard_normal((1024, 1024), dtype=np.float32)   # = cuRAND generateNormal(..., 0, 1)
    u = rng.random(10, dtype=np.float64)                       # = generateUniformDouble

Differences from numpy, on purpose (they are cuRAND's): ``random`` and ``uniform`` draw from
(0, 1] (cuRAND's interval), not [0, 1); float32 normals come in Box-Muller pairs (an odd size
uses one more stream word than it writes). Every value is computed on the device; nothing is
copied to or from the host. Bad arguments raise ValueError/TypeError naming the value, before any
launch, and nothing is written.
"""

from __future__ import annotations

import math
import os

import numpy as np

from oxicuda.memory.array import DeviceArray, empty

from .generator import ORDERING_DEFAULT, ORDERING_LEGACY, Engine

#: cuRAND's generateUniformDouble for each generator: the distribution of rand_philox it matches
DOUBLE_UNIFORM = {"philox": "uniform_f64_hq", "xorwow": "uniform_f64_hq", "mrg32k3a": "uniform_f64",
                  "sobol32": "uniform_f64", "sobol64": "uniform_f64"}
_FLOATS = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_INTS = {np.dtype(np.int32): "bounded_s32", np.dtype(np.int64): "bounded_s64"}
_BITS = {np.dtype(np.uint32): "raw32", np.dtype(np.uint64): "raw64"}
_COUNTS = {np.dtype(np.int64): "s64", np.dtype(np.uint32): "u32"}


def _shape(size) -> tuple[int, ...]:
    if size is None:
        return ()
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    for s in shape:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool) or s < 0:
            raise ValueError(f"rand: size={size!r}; sizes must be non-negative ints")
    return tuple(int(s) for s in shape)


def _finite(name: str, value: object, method: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"Generator.{method}: {name}={value!r} is not a real number") from None
    if not math.isfinite(v):
        raise ValueError(f"Generator.{method}: {name}={value!r}; it must be finite")
    return v


class Generator:
    """A cuRAND-stream generator (``generator``: "philox", "xorwow", "mrg32k3a" (cuRAND's
    PSEUDO_LEGACY stream), "sobol32", "sobol64"). ``seed``: 64-bit int (None: from the
    operating system's entropy); ``offset``: stream values to skip; ``stream``: where launches go.
    Setting ``seed`` restarts the stream at offset 0, as cuRAND's setPseudoRandomGeneratorSeed
    followed by a fresh generator does."""

    def __init__(self, seed: int | None = None, generator: str = "philox", *, offset: int = 0,
                 stream: object = None) -> None:
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        # MRG32k3a: cuRAND's PSEUDO_LEGACY stream, the one of its orderings reproduced here
        ordering = ORDERING_LEGACY if generator == "mrg32k3a" else ORDERING_DEFAULT
        self._engine = Engine(generator, self._check_seed(seed), self._check_offset(offset),
                              ordering=ordering, stream=stream)

    @staticmethod
    def _check_seed(seed: object) -> int:
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or not 0 <= seed < 2 ** 64:
            raise ValueError(f"Generator: seed={seed!r}; an int in [0, 2**64)")
        return int(seed)

    @staticmethod
    def _check_offset(offset: object) -> int:
        if not isinstance(offset, (int, np.integer)) or isinstance(offset, bool) or not 0 <= offset < 2 ** 64:
            raise ValueError(f"Generator: offset={offset!r}; an int in [0, 2**64)")
        return int(offset)

    generator = property(lambda self: self._engine.rng_type, doc="The generator's name.")

    @property
    def seed(self) -> int:
        return self._engine.seed

    @seed.setter
    def seed(self, value: int) -> None:
        self._engine.seed = self._check_seed(value)
        self._engine.offset = 0

    @property
    def offset(self) -> int:
        """Stream words used so far (cuRAND's generator offset)."""
        return self._engine.offset

    @offset.setter
    def offset(self, value: int) -> None:
        self._engine.offset = self._check_offset(value)

    @property
    def stream(self) -> object:
        return self._engine.stream

    @stream.setter
    def stream(self, value: object) -> None:
        self._engine.stream = value

    def __repr__(self) -> str:
        return f"Generator({self.generator}, seed={self.seed}, offset={self.offset})"

    # -- the methods ------------------------------------------------------------------------
    def _target(self, method: str, size, dtype, out, allowed: dict) -> tuple[DeviceArray, str]:
        dt = np.dtype(dtype)
        if dt not in allowed:
            raise TypeError(f"Generator.{method}: dtype={dt}; allowed {[str(d) for d in allowed]}")
        if out is None:
            return empty(_shape(size), dt, stream=self._engine.stream), allowed[dt]
        if not isinstance(out, DeviceArray) or not out.is_c_contiguous:
            raise ValueError(f"Generator.{method}: out must be a C-contiguous DeviceArray; got {out!r}")
        if out.dtype != dt:
            raise TypeError(f"Generator.{method}: out has dtype {out.dtype}; this call makes {dt}")
        if size is not None and _shape(size) != out.shape:
            raise ValueError(f"Generator.{method}: size={size!r} but out has shape {out.shape}")
        return out, allowed[dt]

    def _fill(self, out: DeviceArray, dist: str, a=None, b=None) -> DeviceArray:
        self._engine.fill(dist, out.ptr, out.size, a, b)
        return out

    def random(self, size=None, dtype=np.float64, out: DeviceArray | None = None) -> DeviceArray:
        """Uniform values in (0, 1] (cuRAND's generateUniform / generateUniformDouble)."""
        return self.uniform(0.0, 1.0, size, dtype, out, method="random")

    def uniform(self, low: float = 0.0, high: float = 1.0, size=None, dtype=np.float64,
                out: DeviceArray | None = None, *, method: str = "uniform") -> DeviceArray:
        """``low + (high - low) * u`` with u uniform in (0, 1] (one fma on the device)."""
        lo, hi = _finite("low", low, method), _finite("high", high, method)
        arr, kind = self._target(method, size, dtype, out, _FLOATS)
        dist = "uniform_f32" if kind == "f32" else DOUBLE_UNIFORM[self.generator]
        return self._fill(arr, dist, lo, hi - lo)

    def standard_normal(self, size=None, dtype=np.float64, out: DeviceArray | None = None) -> DeviceArray:
        """Standard normals (cuRAND's Box-Muller: generateNormal(gen, out, n, 0, 1))."""
        return self.normal(0.0, 1.0, size, dtype, out, method="standard_normal")

    def normal(self, loc: float = 0.0, scale: float = 1.0, size=None, dtype=np.float64,
               out: DeviceArray | None = None, *, method: str = "normal") -> DeviceArray:
        """``loc + scale * z`` (cuRAND's generateNormal / generateNormalDouble)."""
        mu, sigma = _finite("loc", loc, method), _finite("scale", scale, method)
        if sigma < 0:
            raise ValueError(f"Generator.{method}: scale={scale!r}; it must be >= 0")
        arr, kind = self._target(method, size, dtype, out, _FLOATS)
        return self._fill(arr, f"normal_{kind}", mu, sigma)

    def lognormal(self, mean: float = 0.0, sigma: float = 1.0, size=None, dtype=np.float64,
                  out: DeviceArray | None = None) -> DeviceArray:
        """``exp(mean + sigma * z)`` (cuRAND's generateLogNormal / generateLogNormalDouble)."""
        mu, s = _finite("mean", mean, "lognormal"), _finite("sigma", sigma, "lognormal")
        if s < 0:
            raise ValueError(f"Generator.lognormal: sigma={sigma!r}; it must be >= 0")
        arr, kind = self._target("lognormal", size, dtype, out, _FLOATS)
        return self._fill(arr, f"lognormal_{kind}", mu, s)

    def integers(self, low: int, high: int | None = None, size=None, dtype=np.int64,
                 endpoint: bool = False, out: DeviceArray | None = None) -> DeviceArray:
        """Integers in [low, high) ([low, high] with ``endpoint``), one stream word each by
        Lemire's multiply-shift; the range must be below 2^32 (int32: fit in int32)."""
        if high is None:
            low, high = 0, low
        for name, v in (("low", low), ("high", high)):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise TypeError(f"Generator.integers: {name}={v!r} is not an int")
        low, high = int(low), int(high) + (1 if endpoint else 0)
        span = high - low
        if span <= 0:
            raise ValueError(f"Generator.integers: low={low} and high={high}; the range is empty")
        if span >= 2 ** 32:
            raise ValueError(f"Generator.integers: the range has {span} values; at most 2**32 - 1")
        arr, dist = self._target("integers", size, dtype, out, _INTS)
        info = np.iinfo(arr.dtype)
        if low < info.min or high - 1 > info.max:
            raise ValueError(f"Generator.integers: [{low}, {high}) does not fit {arr.dtype}")
        return self._fill(arr, dist, low, span)

    def bits(self, size=None, dtype=np.uint32, out: DeviceArray | None = None) -> DeviceArray:
        """Raw stream words (uint32: cuRAND's generate) or pairs of them (uint64: low word
        first)."""
        arr, dist = self._target("bits", size, dtype, out, _BITS)
        return self._fill(arr, dist)

    def poisson(self, lam: float = 1.0, size=None, dtype=np.int64,
                out: DeviceArray | None = None) -> DeviceArray:
        """Poisson(lam) counts (int64, or uint32 as cuRAND's generatePoisson writes): exact
        samplers (Knuth below lambda 12, Hoermann's PTRS above), one Philox stream per value:
        statistically identical to cuRAND's Poisson, not its bits. lam in [0, 1e10]."""
        lam_v = _finite("lam", lam, "poisson")
        if not 0 <= lam_v <= 1e10:
            raise ValueError(f"Generator.poisson: lam={lam!r}; it must be in [0, 1e10]")
        arr, kind = self._target("poisson", size, dtype, out, _COUNTS)
        if kind == "u32" and lam_v > 1e9:
            raise ValueError(f"Generator.poisson: lam={lam!r} is too large for uint32 counts")
        self._engine.fill_poisson(arr.ptr, arr.size, lam_v, kind)
        return arr


def default_rng(seed: int | None = None, generator: str = "philox") -> Generator:
    """A new ``Generator`` (numpy's ``default_rng`` shape; ``generator``: "philox")."""
    return Generator(seed, generator)
