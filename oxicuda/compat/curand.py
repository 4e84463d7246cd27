"""CuPy-shaped cuRAND (``cupy.cuda.curand``) over oxicuda.rand's generators: the same function
names, argument order, constants and ``CURANDError`` (with cuRAND's status names), so a script
that calls ``cupy.cuda.curand`` switches by changing its import to ``oxicuda.cuda.curand``.

A generator handle is an int, as in CuPy. ``outputPtr`` is a device address (an int), or any
object with ``.data.ptr``/``.ptr`` (whose dtype, when it has one, is checked against the call).
Every check that cuRAND makes raises ``CURANDError`` with cuRAND's status before any launch:
an unknown generator type (TYPE_ERROR), a destroyed or unknown handle (NOT_INITIALIZED), a
quasi call on a pseudo generator or the reverse (TYPE_ERROR), dimensions outside 1..20000
(OUT_OF_RANGE), an odd length for a normal call (LENGTH_NOT_MULTIPLE), a pointer not aligned to
the element (LENGTH_NOT_MULTIPLE: cuRAND's answer is being probed on the GPU), a negative or NaN
stddev or lambda (OUT_OF_RANGE), an output array of the wrong dtype (TYPE_ERROR).
"""

from __future__ import annotations

import itertools
import math
import threading

from oxicuda.rand.api import DOUBLE_UNIFORM
from oxicuda.rand.generator import IMPLEMENTED, NOT_IMPLEMENTED, Engine
from oxicuda.rand.sobol_tables import MAX_DIMENSIONS

# -- constants (curand.h) -------------------------------------------------------------------------
CURAND_RNG_TEST = 0
CURAND_RNG_PSEUDO_DEFAULT = 100
CURAND_RNG_PSEUDO_XORWOW = 101
CURAND_RNG_PSEUDO_MRG32K3A = 121
CURAND_RNG_PSEUDO_MTGP32 = 141
CURAND_RNG_PSEUDO_MT19937 = 142
CURAND_RNG_PSEUDO_PHILOX4_32_10 = 161
CURAND_RNG_QUASI_DEFAULT = 200
CURAND_RNG_QUASI_SOBOL32 = 201
CURAND_RNG_QUASI_SCRAMBLED_SOBOL32 = 202
CURAND_RNG_QUASI_SOBOL64 = 203
CURAND_RNG_QUASI_SCRAMBLED_SOBOL64 = 204

CURAND_ORDERING_PSEUDO_BEST = 100
CURAND_ORDERING_PSEUDO_DEFAULT = 101
CURAND_ORDERING_PSEUDO_SEEDED = 102
CURAND_ORDERING_PSEUDO_LEGACY = 103
CURAND_ORDERING_PSEUDO_DYNAMIC = 104
CURAND_ORDERING_QUASI_DEFAULT = 201

CURAND_DIRECTION_VECTORS_32_JOEKUO6 = 101
CURAND_SCRAMBLED_DIRECTION_VECTORS_32_JOEKUO6 = 102
CURAND_DIRECTION_VECTORS_64_JOEKUO6 = 103
CURAND_SCRAMBLED_DIRECTION_VECTORS_64_JOEKUO6 = 104

CURAND_STATUS_SUCCESS = 0
CURAND_STATUS_VERSION_MISMATCH = 100
CURAND_STATUS_NOT_INITIALIZED = 101
CURAND_STATUS_ALLOCATION_FAILED = 102
CURAND_STATUS_TYPE_ERROR = 103
CURAND_STATUS_OUT_OF_RANGE = 104
CURAND_STATUS_LENGTH_NOT_MULTIPLE = 105
CURAND_STATUS_DOUBLE_PRECISION_REQUIRED = 106
CURAND_STATUS_LAUNCH_FAILURE = 201
CURAND_STATUS_PREEXISTING_FAILURE = 202
CURAND_STATUS_INITIALIZATION_FAILED = 203
CURAND_STATUS_ARCH_MISMATCH = 204
CURAND_STATUS_INTERNAL_ERROR = 999

#: status code -> cuRAND's name (the message of CURANDError, as in CuPy)
STATUS = {v: k for k, v in dict(globals()).items() if k.startswith("CURAND_STATUS_")}

#: the cuRAND version this surface is shaped after (curandGetVersion of CUDA 12.x's cuRAND 10.3)
VERSION = 10300

_TYPES = {CURAND_RNG_PSEUDO_DEFAULT: "xorwow", CURAND_RNG_PSEUDO_XORWOW: "xorwow",
          CURAND_RNG_PSEUDO_MRG32K3A: "mrg32k3a", CURAND_RNG_PSEUDO_MTGP32: "mtgp32",
          CURAND_RNG_PSEUDO_MT19937: "mt19937", CURAND_RNG_PSEUDO_PHILOX4_32_10: "philox",
          CURAND_RNG_QUASI_DEFAULT: "sobol32", CURAND_RNG_QUASI_SOBOL32: "sobol32",
          CURAND_RNG_QUASI_SCRAMBLED_SOBOL32: "scrambled_sobol32",
          CURAND_RNG_QUASI_SOBOL64: "sobol64", CURAND_RNG_QUASI_SCRAMBLED_SOBOL64: "scrambled_sobol64"}
_PSEUDO_ORDERINGS = (CURAND_ORDERING_PSEUDO_BEST, CURAND_ORDERING_PSEUDO_DEFAULT,
                     CURAND_ORDERING_PSEUDO_LEGACY)


class CURANDError(RuntimeError):
    """A cuRAND status other than success: ``.status`` is the code, the message its name."""

    def __init__(self, status: int, detail: str = "") -> None:
        self.status = status
        self.detail = detail
        name = STATUS.get(status, f"CURAND_STATUS_{status}")
        super().__init__(f"{name}: {detail}" if detail else name)

    def __reduce__(self):
        # rebuilt from the constructor's arguments, detail included (it is part of the message)
        return (type(self), (self.status, self.detail))


def check_status(status: int) -> None:
    if status != CURAND_STATUS_SUCCESS:
        raise CURANDError(status)


_lock = threading.Lock()
_handles: dict[int, Engine] = {}
_next_handle = itertools.count(0x5EED0001)


def _engine(generator: int) -> Engine:
    engine = _handles.get(generator)
    if engine is None:
        raise CURANDError(CURAND_STATUS_NOT_INITIALIZED,
                          f"generator {generator!r} was destroyed or never created")
    return engine


def _is_quasi(engine: Engine) -> bool:
    return "sobol" in engine.rng_type


def _pointer(output: object, want: str, call: str) -> int:
    """The address of ``output`` (an int, or an array whose dtype must be ``want``)."""
    if isinstance(output, int) and not isinstance(output, bool):
        return output
    dtype = getattr(output, "dtype", None)
    if dtype is not None and str(dtype) != want:
        raise CURANDError(CURAND_STATUS_TYPE_ERROR, f"{call}: the output has dtype {dtype}; it writes {want}")
    data = getattr(output, "data", None)
    ptr = getattr(data, "ptr", None) if data is not None and not isinstance(data, memoryview) else None
    ptr = ptr if ptr is not None else getattr(output, "ptr", None)
    if ptr is None:
        raise TypeError(f"{call}: outputPtr={output!r}; a device address (int) or a device array")
    return int(ptr)


def _fill(generator: int, call: str, dist: str, output: object, n: int, want: str,
          a: float | None = None, b: float | None = None, pairs: int = 1, quasi: bool = True) -> None:
    engine = _engine(generator)
    if _is_quasi(engine) and not quasi:
        raise NotImplementedError(f"{call} on the {engine.rng_type} generator (cuRAND's inverse-CDF "
                                  f"quasi-random normals) is not implemented yet (issue 17)")
    if engine.rng_type == "sobol64" and want == "uint32":
        raise CURANDError(CURAND_STATUS_TYPE_ERROR, f"{call}: the sobol64 generator makes 64-bit words")
    ptr = _pointer(output, want, call)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"{call}: num={n!r}; a non-negative int")
    if n % pairs:
        raise CURANDError(CURAND_STATUS_LENGTH_NOT_MULTIPLE,
                          f"{call}: n={n}; it must be a multiple of {pairs}")
    if _is_quasi(engine) and n % engine.dimensions:
        raise CURANDError(CURAND_STATUS_LENGTH_NOT_MULTIPLE,
                          f"{call}: n={n}; it must be a multiple of the {engine.dimensions} dimensions")
    size = 8 if want in ("float64", "uint64") else 4
    if ptr % size:
        raise CURANDError(CURAND_STATUS_LENGTH_NOT_MULTIPLE,
                          f"{call}: outputPtr={ptr:#x} is not aligned to {size} bytes")
    engine.fill(dist, ptr, n, a, b)


def _scale(call: str, mean: float, stddev: float) -> tuple[float, float]:
    mean, stddev = float(mean), float(stddev)
    if not (math.isfinite(mean) and math.isfinite(stddev)) or stddev < 0:
        raise CURANDError(CURAND_STATUS_OUT_OF_RANGE,
                          f"{call}: mean={mean}, stddev={stddev}; both finite and stddev >= 0")
    return mean, stddev


# -- the functions ----------------------------------------------------------------------------------
def createGenerator(rng_type: int) -> int:
    """A new generator of cuRAND type ``rng_type``; returns its handle."""
    name = _TYPES.get(rng_type)
    if name is None:
        raise CURANDError(CURAND_STATUS_TYPE_ERROR, f"createGenerator: rng_type={rng_type!r} is unknown")
    if name not in IMPLEMENTED:
        raise NotImplementedError(f"createGenerator: the {name} generator is not implemented "
                                  f"({NOT_IMPLEMENTED[name]}; issue 17); implemented: {IMPLEMENTED}")
    engine = Engine(name)
    with _lock:
        handle = next(_next_handle)
        _handles[handle] = engine
    return handle


def destroyGenerator(generator: int) -> None:
    with _lock:
        engine = _handles.pop(generator, None)
    if engine is None:
        raise CURANDError(CURAND_STATUS_NOT_INITIALIZED, f"destroyGenerator: {generator!r}")
    engine.destroyed = True


def getVersion() -> int:
    return VERSION


def setStream(generator: int, stream: object) -> None:
    _engine(generator).stream = stream or None


def setPseudoRandomGeneratorSeed(generator: int, seed: int) -> None:
    engine = _engine(generator)
    if _is_quasi(engine):
        raise CURANDError(CURAND_STATUS_TYPE_ERROR, "setPseudoRandomGeneratorSeed on a quasi generator")
    engine.seed = int(seed) & ((1 << 64) - 1)
    engine.offset = 0


def setGeneratorOffset(generator: int, offset: int) -> None:
    offset = int(offset)
    if not 0 <= offset < 1 << 64:
        raise CURANDError(CURAND_STATUS_OUT_OF_RANGE, f"setGeneratorOffset: offset={offset}")
    _engine(generator).offset = offset


def setGeneratorOrdering(generator: int, order: int) -> None:
    engine = _engine(generator)
    allowed = (CURAND_ORDERING_QUASI_DEFAULT,) if _is_quasi(engine) else _PSEUDO_ORDERINGS
    if order in (CURAND_ORDERING_PSEUDO_SEEDED, CURAND_ORDERING_PSEUDO_DYNAMIC) and not _is_quasi(engine):
        raise NotImplementedError(f"setGeneratorOrdering: ordering {order} (seeded/dynamic) is not "
                                  f"reproduced; use PSEUDO_DEFAULT or PSEUDO_LEGACY")
    if order not in allowed:
        raise CURANDError(CURAND_STATUS_OUT_OF_RANGE, f"setGeneratorOrdering: order={order!r}")
    engine.ordering = order


def setQuasiRandomGeneratorDimensions(generator: int, num_dimensions: int) -> None:
    engine = _engine(generator)
    if not _is_quasi(engine):
        raise CURANDError(CURAND_STATUS_TYPE_ERROR,
                          "setQuasiRandomGeneratorDimensions on a pseudo-random generator")
    if not 1 <= int(num_dimensions) <= MAX_DIMENSIONS:
        raise CURANDError(CURAND_STATUS_OUT_OF_RANGE,
                          f"num_dimensions={num_dimensions}; allowed 1..{MAX_DIMENSIONS}")
    engine.dimensions = int(num_dimensions)


def generate(generator: int, outputPtr: object, num: int) -> None:
    """``num`` raw 32-bit words."""
    _fill(generator, "generate", "raw32", outputPtr, num, "uint32")


def generateLongLong(generator: int, outputPtr: object, num: int) -> None:
    """64-bit words: the 64-bit quasi generators only (TYPE_ERROR for the others, as cuRAND)."""
    engine = _engine(generator)
    if engine.rng_type != "sobol64":
        raise CURANDError(CURAND_STATUS_TYPE_ERROR,
                          f"generateLongLong: the {engine.rng_type} generator makes 32-bit words")
    _fill(generator, "generateLongLong", "raw64", outputPtr, num, "uint64")


def generateUniform(generator: int, outputPtr: object, num: int) -> None:
    """``num`` float32 uniforms in (0, 1]."""
    _fill(generator, "generateUniform", "uniform_f32", outputPtr, num, "float32", 0.0, 1.0)


def generateUniformDouble(generator: int, outputPtr: object, num: int) -> None:
    """``num`` float64 uniforms in (0, 1]."""
    dist = DOUBLE_UNIFORM[_engine(generator).rng_type]
    _fill(generator, "generateUniformDouble", dist, outputPtr, num, "float64", 0.0, 1.0)


def generateNormal(generator: int, outputPtr: object, n: int, mean: float, stddev: float) -> None:
    """``n`` (even) float32 normals."""
    a, b = _scale("generateNormal", mean, stddev)
    _fill(generator, "generateNormal", "normal_f32", outputPtr, n, "float32", a, b, pairs=2, quasi=False)


def generateNormalDouble(generator: int, outputPtr: object, n: int, mean: float, stddev: float) -> None:
    """``n`` (even) float64 normals."""
    a, b = _scale("generateNormalDouble", mean, stddev)
    _fill(generator, "generateNormalDouble", "normal_f64", outputPtr, n, "float64", a, b, pairs=2, quasi=False)


def generateLogNormal(generator: int, outputPtr: object, n: int, mean: float, stddev: float) -> None:
    """``n`` (even) float32 log-normals ``exp(mean + stddev * z)``."""
    a, b = _scale("generateLogNormal", mean, stddev)
    _fill(generator, "generateLogNormal", "lognormal_f32", outputPtr, n, "float32", a, b, pairs=2, quasi=False)


def generateLogNormalDouble(generator: int, outputPtr: object, n: int, mean: float, stddev: float) -> None:
    """``n`` (even) float64 log-normals."""
    a, b = _scale("generateLogNormalDouble", mean, stddev)
    _fill(generator, "generateLogNormalDouble", "lognormal_f64", outputPtr, n, "float64", a, b, pairs=2, quasi=False)


def generatePoisson(generator: int, outputPtr: object, n: int, lam: float) -> None:
    """``n`` unsigned Poisson(lam) counts: exact samplers on one Philox stream per value,
    statistically identical to cuRAND's, not its bits (oxicuda.rand.kernels.poisson)."""
    engine = _engine(generator)
    lam = float(lam)
    if not 0 < lam <= 1e9 or not math.isfinite(lam):
        raise CURANDError(CURAND_STATUS_OUT_OF_RANGE, f"generatePoisson: lambda={lam}; it must be in (0, 1e9]")
    if _is_quasi(engine):
        raise NotImplementedError(f"generatePoisson on the {engine.rng_type} generator is not implemented")
    ptr = _pointer(outputPtr, "uint32", "generatePoisson")
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"generatePoisson: n={n!r}; a non-negative int")
    if ptr % 4:
        raise CURANDError(CURAND_STATUS_LENGTH_NOT_MULTIPLE, f"generatePoisson: outputPtr={ptr:#x} is not aligned to 4 bytes")
    engine.fill_poisson(ptr, n, lam, "u32")


def generateSeeds(generator: int) -> None:
    """Generator setup happens at the first generate call; nothing to do (as for Philox)."""
    _engine(generator)
