"""The one stateful generator behind both call surfaces (the numpy-shaped ``Generator`` and the
cuRAND-shaped ``oxicuda.cuda.curand``): type, seed, offset, ordering, stream, and ``fill``.

``fill(dist, ptr, n, a, b)`` checks the pointer, takes the launch plan of the call's signature
from ``plan.PLANS`` and runs it on the generator's stream (nothing is allocated per call), then
advances the offset by n: the offset counts values of the generator's stream (Philox: values
of the distribution in units of four, 65536 subsequences; XORWOW, MRG32k3a: values of the
4096-way interleaved stream; Sobol: points per dimension), and a second call continues where the
first stopped, as cuRAND's host generators do (tests/test_rand_gpu.py checks it against
cupy.cuda.curand). Whatever the distribution, the offset skips one word (Philox: one block) of
each subsequence per value (unit) of it before the offset; a distribution taking several words
a value takes them from there (kernels/philox.py, kernels/xorwow.py: measured on the H200).
XORWOW and MRG32k3a subsequences then carry on from call to call (``Engine.extra_words``), as
cuRAND's kept states do, until the seed or the offset is set again.
"""

from __future__ import annotations

from .kernels import mrg32k3a as M
from .kernels import sobol as S
from .kernels import xorwow as X
from .kernels.philox import OUTPUT_TYPE, WORDS_PER_OUTPUT
from .plan import (
    PLANS,
    PhiloxProblem,
    PoissonProblem,
    SobolProblem,
    SubsequenceProblem,
    philox_plan,
    poisson_plan,
    sobol_plan,
    subsequence_plan,
)

#: generator types with device kernels today
IMPLEMENTED = ("philox", "xorwow", "mrg32k3a", "sobol32", "sobol64")
#: the distributions each generator's kernels make
DISTRIBUTIONS = {"philox": frozenset(WORDS_PER_OUTPUT), "xorwow": frozenset(X.DISTS),
                 "mrg32k3a": frozenset(M.DISTS), "sobol32": frozenset(S.DISTS[32]),
                 "sobol64": frozenset(S.DISTS[64])}
#: cuRAND's ordering constants (curand.h)
ORDERING_BEST, ORDERING_DEFAULT, ORDERING_LEGACY = 100, 101, 103
#: the orderings whose streams each generator reproduces bit for bit (H200, against cuRAND):
#: Philox and XORWOW give one stream under BEST, DEFAULT and LEGACY; MRG32k3a's DEFAULT and BEST
#: use more subsequences than its LEGACY 4096 (they agree with it for the first 4096 values
#: only), a layout not reproduced here, so an MRG32k3a generator under them raises at generation
REPRODUCED_ORDERINGS = {"philox": (ORDERING_BEST, ORDERING_DEFAULT, ORDERING_LEGACY),
                        "xorwow": (ORDERING_BEST, ORDERING_DEFAULT, ORDERING_LEGACY),
                        "mrg32k3a": (ORDERING_LEGACY,)}
#: every cuRAND type name this package knows (the rest raise NotImplementedError when created)
KNOWN = ("philox", "xorwow", "mrg32k3a", "mtgp32", "mt19937", "sobol32", "scrambled_sobol32",
         "sobol64", "scrambled_sobol64")
#: why each known generator is missing
NOT_IMPLEMENTED = {
    "mtgp32": "cuRAND's host MTGP32 layout (its parameter sets and block/thread split) is not "
              "established, so its bits could not be reproduced",
    "mt19937": "cuRAND's host MT19937 stream layout (its jump polynomials and thread split) is "
               "not established, so its bits could not be reproduced",
    "scrambled_sobol32": "cuRAND's scramble constants come only from its library "
                         "(curandGetScrambleConstants32) and no published copy was found",
    "scrambled_sobol64": "cuRAND's scramble constants come only from its library "
                         "(curandGetScrambleConstants64) and no published copy was found",
}
_ARCH: dict[int, str] = {}
#: per device: 4096 zero s64 words, the extra words of a generator whose subsequences all stand
#: at one word per value of the offset
_ZEROS: dict[int, object] = {}


def _values_before(offset: int, t):
    """p0(t): the values k < offset of subsequence t (k mod 4096 = t)."""
    import numpy as np

    return np.where(offset > t, (offset - t + X.SUBSEQUENCES - 1) // X.SUBSEQUENCES, 0)
_ORDERING_NAMES = {100: "PSEUDO_BEST", 101: "PSEUDO_DEFAULT", 102: "PSEUDO_SEEDED", 103: "PSEUDO_LEGACY",
                   104: "PSEUDO_DYNAMIC"}


def _device():
    from oxicuda.driver.context import current_device_ordinal
    from oxicuda.driver.facts import device_facts
    from oxicuda.ptx.target import device_arch

    ordinal = current_device_ordinal()
    arch = _ARCH.get(ordinal)
    if arch is None:
        arch = _ARCH[ordinal] = device_arch(ordinal)
    return ordinal, arch, device_facts(ordinal)


class Engine:
    """A generator's state. ``seed`` (64 bits), ``offset`` (stream values already used),
    ``ordering`` (cuRAND's constant), ``stream`` (None: the default stream)."""

    __slots__ = ("_extra", "_extra_dev", "_offset", "_seed", "destroyed", "dimensions", "ordering",
                 "rng_type", "stream")

    def __init__(self, rng_type: str = "philox", seed: int = 0, offset: int = 0,
                 ordering: int = 101, stream: object = None) -> None:
        if rng_type not in KNOWN:
            raise ValueError(f"rand: generator {rng_type!r} is unknown; known: {KNOWN}")
        if rng_type not in IMPLEMENTED:
            raise NotImplementedError(
                f"rand: the {rng_type!r} generator is not implemented ({NOT_IMPLEMENTED[rng_type]}; "
                f"issue 17); implemented: {IMPLEMENTED}")
        self.rng_type = rng_type
        self._extra = None
        self._extra_dev = None
        self.seed = int(seed) & ((1 << 64) - 1)
        self.offset = int(offset)
        self.ordering = ordering
        self.stream = stream
        self.dimensions = 1
        self.destroyed = False

    # Setting the seed or the offset restarts every subsequence from the offset (cuRAND sets its
    # XORWOW/MRG32k3a states up again at the next call); calls in between carry them on.
    @property
    def seed(self) -> int:
        return self._seed

    @seed.setter
    def seed(self, value: int) -> None:
        self._seed = value
        self._extra = None

    @property
    def offset(self) -> int:
        return self._offset

    @offset.setter
    def offset(self, value: int) -> None:
        self._offset = value
        self._extra = None

    @property
    def extra_words(self):
        """None, or (4096,) int64: for XORWOW and MRG32k3a, the words (draws) each subsequence t
        has advanced beyond p0(t), one per value before the offset, in the calls since the seed
        or the offset was set. cuRAND's host generator keeps its 4096 states between calls, so a
        call starts each subsequence where the last one left it: a double (two words a value)
        or a normal pair (a pair's words taken by the subsequence owning the pair, not by those
        of its two values) moves it on by other than one word per value."""
        return self._extra

    def _advance_subsequences(self, dist: str, offset: int, n: int) -> None:
        """Account for a call of n values of ``dist`` at ``offset`` (kernels/xorwow.py layout)."""
        import numpy as np

        wpv = X.WORDS_PER_VALUE[dist] if self.rng_type == "xorwow" else 1
        if wpv == 1 and dist not in X.PAIRED:
            return
        t = np.arange(X.SUBSEQUENCES, dtype=np.int64)
        per_value = _values_before(offset + n, t) - _values_before(offset, t)
        if dist in X.PAIRED:
            pairs = -(-n // 2)
            r = (t - offset) % X.SUBSEQUENCES
            taken = 2 * wpv * np.where(pairs > r, (pairs - r + X.SUBSEQUENCES - 1) // X.SUBSEQUENCES, 0)
        else:
            taken = wpv * per_value
        extra = (0 if self._extra is None else self._extra) + taken - per_value
        self._extra = extra if extra.any() else None

    def _extra_pointer(self, ordinal: int, stream: object) -> int:
        """Device address of the 4096 s64 extra words (a shared zero table when there are none)."""
        import numpy as np

        import oxicuda

        if self._extra is None:
            zero = _ZEROS.get(ordinal)
            if zero is None:
                zero = _ZEROS[ordinal] = oxicuda.asarray(np.zeros(X.SUBSEQUENCES, np.int64))
            return zero.ptr
        # one buffer per (device, stream): a copy is ordered after the last call's init on its stream
        if self._extra_dev is None:
            self._extra_dev = {}
        key = (ordinal, id(stream))
        buf = self._extra_dev.get(key)
        if buf is None:
            buf = self._extra_dev[key] = oxicuda.asarray(np.zeros(X.SUBSEQUENCES, np.int64))
        buf.set(self._extra, stream)
        return buf.ptr

    def fill(self, dist: str, ptr: int, n: int, a: object = None, b: object = None,
             stream: object = None) -> None:
        """Write ``n`` values of ``dist`` to device address ``ptr`` (aligned to the element) and
        advance the offset. The caller has checked ``n`` and the scalars."""
        if n == 0:
            return
        esize = 8 if OUTPUT_TYPE[dist] in ("u64", "f64", "s64") else 4
        if ptr % esize:
            raise ValueError(f"rand: output pointer {ptr:#x} is not aligned to {esize} bytes "
                             f"(the element size of {dist})")
        if dist not in DISTRIBUTIONS[self.rng_type]:
            raise NotImplementedError(f"rand: the {self.rng_type} generator has no {dist} kernel yet "
                                      f"(issue 17); it makes {sorted(DISTRIBUTIONS[self.rng_type])}")
        self.check_ordering()
        ordinal, arch, facts = _device()
        word0 = self.offset
        seed = self.seed
        if self.rng_type in ("sobol32", "sobol64"):
            from .sobol_tables import device_vectors

            bits = 32 if self.rng_type == "sobol32" else 64
            dims = self.dimensions
            sproblem = SobolProblem(bits, dist, n // dims, dims, arch, ordinal)
            plan = PLANS.get_or_build(sproblem, lambda: sobol_plan(sproblem, facts, device_vectors(ordinal, bits)))
            plan.run((ptr,), (word0,) if a is None else (word0, a, b), self.stream if stream is None else stream)
            self.offset = word0 + n // dims
            return
        if self.rng_type in ("xorwow", "mrg32k3a"):
            if self.rng_type == "xorwow":
                from .xorwow_tables import device_tables
            else:
                from .mrg32k3a_tables import device_tables

            problem = SubsequenceProblem(self.rng_type, dist, n, arch, ordinal)
            plan = PLANS.get_or_build(problem, lambda: subsequence_plan(problem, facts, device_tables(ordinal)))
            run_stream = self.stream if stream is None else stream
            extra = self._extra_pointer(ordinal, run_stream)
            scalars = (seed & 0xFFFFFFFF, seed >> 32, word0, extra) if a is None else \
                (seed & 0xFFFFFFFF, seed >> 32, word0, extra, a, b)
            plan.run((ptr,), scalars, run_stream)
            self._advance_subsequences(dist, word0, n)
            self._offset = word0 + n
            return
        problem = PhiloxProblem(dist, n, word0 % 4 == 0, ptr % 16 == 0, arch, ordinal)
        plan = PLANS.get_or_build(problem, lambda: philox_plan(problem, facts))
        scalars = (word0, seed & 0xFFFFFFFF, seed >> 32) if a is None else \
            (word0, seed & 0xFFFFFFFF, seed >> 32, a, b)
        plan.run((ptr,), scalars, self.stream if stream is None else stream)
        self.offset = word0 + n

    def check_ordering(self) -> None:
        """Raise NotImplementedError when this generator's ordering gives a stream this package
        does not reproduce (MRG32k3a under PSEUDO_DEFAULT or BEST), rather than other bits."""
        allowed = REPRODUCED_ORDERINGS.get(self.rng_type)
        if allowed is not None and self.ordering not in allowed:
            raise NotImplementedError(
                f"rand: cuRAND's {self.rng_type} stream under ordering {self.ordering} "
                f"({_ORDERING_NAMES.get(self.ordering, '?')}) is not reproduced (issue 17); "
                f"set CURAND_ORDERING_PSEUDO_LEGACY (103) for cuRAND's legacy stream, bit for bit")

    def fill_poisson(self, ptr: int, n: int, lam: float, out_type: str = "u32", stream: object = None) -> None:
        """Write ``n`` Poisson(lam) counts (u32 or s64) to ``ptr``; the offset advances by n.
        Each output q = offset + i draws from its own Philox stream keyed by the seed (for every
        pseudo generator type: see kernels/poisson.py)."""
        if n == 0:
            return
        from .kernels.poisson import host_constants

        esize = 4 if out_type == "u32" else 8
        if ptr % esize:
            raise ValueError(f"rand: output pointer {ptr:#x} is not aligned to {esize} bytes")
        ordinal, arch, facts = _device()
        method, consts = host_constants(lam)
        problem = PoissonProblem(method, out_type, n, arch, ordinal)
        plan = PLANS.get_or_build(problem, lambda: poisson_plan(problem, facts))
        seed = self.seed
        plan.run((ptr,), (self.offset, seed & 0xFFFFFFFF, seed >> 32, lam, *consts),
                 self.stream if stream is None else stream)
        self._offset += n
