"""Probe the real cuRAND (through ``cupy.cuda.curand``) for what its documentation leaves unstated:
the output ordering of every host generator, how offsets and consecutive calls advance it, and
how uniform-double, normal, log-normal and Poisson values are made from the raw stream.

    python3 benches/probe_curand.py --out probe-curand.npz [--sobol-out probe-curand-sobol.npz]

Prints, for seed 1234 (and 0 and 2^40 + 5), every generator and every ordering it accepts, and
offsets 0, 1, 5 and 4097: the first values of generate / generateUniform / generateUniformDouble /
generateNormal(Double) / generateLogNormal / generatePoisson, plus the verdict of each ordering
hypothesis that tests/rand_reference.py can check (the numpy oracle of our generators) when it is
importable. Every array goes into the ``--out`` npz (keys ``gen|ordering|seed|offset|call``) so
that the ordering can be established afterwards on a machine without a GPU.

The ``--sobol-out`` file holds, per quasi generator, the first 4 points of every dimension
(cuRAND's limit, 20000) and x[2^k] ^ x[2^k - 1] per dimension for every bit k (which, for a
Gray-code Sobol generator, is the k-th direction vector of that dimension).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

RNG = {"xorwow": 101, "mrg32k3a": 121, "mtgp32": 141, "mt19937": 142, "philox": 161,
       "sobol32": 201, "scrambled_sobol32": 202, "sobol64": 203, "scrambled_sobol64": 204}
ORDERINGS = {"best": 100, "default": 101, "seeded": 102, "legacy": 103, "dynamic": 104, "quasi": 201}
SEEDS = (1234, 0, (1 << 40) + 5)
OFFSETS = (0, 1, 5, 4097)
N_RAW = 3 * 4096 + 7          # odd, crosses a 4096-thread interleave three times
N_NORMAL = 3 * 4096 + 6       # even (normal calls need an even length)
POISSON_LAMBDAS = (0.5, 4.0, 30.0, 500.0, 1.0e5)
MAX_DIMS = 20000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="probe-curand.npz")
    ap.add_argument("--sobol-out", default="probe-curand-sobol.npz")
    ap.add_argument("--sobol-dims", type=int, default=MAX_DIMS)
    args = ap.parse_args()

    import cupy
    from cupy.cuda import curand

    from oxicuda.rand.bench_cases import vendor_set_dimensions as set_dims

    try:
        import rand_reference as ref
    except ImportError:
        ref = None
    print(f"cuRAND version {curand.getVersion()}, cupy {cupy.__version__}, "
          f"device {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    store: dict[str, np.ndarray] = {}
    t0 = time.time()

    def call(gen_name, ordering, seed, offset, what, n, dtype, fn):
        key = f"{gen_name}|{ordering}|{seed}|{offset}|{what}"
        gen = curand.createGenerator(RNG[gen_name])
        try:
            if not gen_name.startswith(("sobol", "scrambled")):
                curand.setPseudoRandomGeneratorSeed(gen, seed)
            if ordering is not None:
                curand.setGeneratorOrdering(gen, ORDERINGS[ordering])
            if offset:
                curand.setGeneratorOffset(gen, offset)
            outs = []
            for part in (n if isinstance(n, tuple) else (n,)):
                buf = cupy.full(part, np.nan if np.dtype(dtype).kind == "f" else 0, dtype=dtype)
                fn(gen, buf.data.ptr, part)
                outs.append(cupy.asnumpy(buf))
            arr = np.concatenate(outs)
        except Exception as exc:
            print(f"{key}: {type(exc).__name__}: {exc}")
            return None
        finally:
            curand.destroyGenerator(gen)
        store[key] = arr
        head = arr[:6]
        shown = " ".join(f"{int(v):#x}" for v in head) if arr.dtype.kind == "u" else \
            " ".join(repr(float(v)) for v in head)
        print(f"{key}: n={arr.size} first {shown}")
        return arr

    pseudo = ("philox", "xorwow", "mrg32k3a", "mtgp32", "mt19937")
    for g in pseudo:
        for ordering in (None, "best", "default", "seeded", "legacy", "dynamic"):
            for seed in SEEDS:
                offsets = OFFSETS if (seed == 1234 and ordering in (None, "legacy")) else (0,)
                for off in offsets:
                    raw = call(g, ordering, seed, off, "raw", N_RAW, np.uint32, curand.generate)
                    call(g, ordering, seed, off, "uniform", N_RAW, np.float32, curand.generateUniform)
                    call(g, ordering, seed, off, "uniform_double", N_RAW, np.float64,
                         curand.generateUniformDouble)
                    call(g, ordering, seed, off, "normal", N_NORMAL, np.float32,
                         lambda h, p, n: curand.generateNormal(h, p, n, 0.0, 1.0))
                    call(g, ordering, seed, off, "normal_double", N_NORMAL, np.float64,
                         lambda h, p, n: curand.generateNormalDouble(h, p, n, 0.0, 1.0))
                    if ordering is None and seed == 1234:
                        call(g, ordering, seed, off, "normal_m2s3", N_NORMAL, np.float32,
                             lambda h, p, n: curand.generateNormal(h, p, n, 2.0, 3.0))
                        call(g, ordering, seed, off, "lognormal", N_NORMAL, np.float32,
                             lambda h, p, n: curand.generateLogNormal(h, p, n, 0.5, 0.75))
                        call(g, ordering, seed, off, "lognormal_double", N_NORMAL, np.float64,
                             lambda h, p, n: curand.generateLogNormalDouble(h, p, n, 0.5, 0.75))
                        for lam in POISSON_LAMBDAS:
                            call(g, ordering, seed, off, f"poisson{lam:g}", N_RAW, np.uint32,
                                 lambda h, p, n, lam=lam: curand.generatePoisson(h, p, n, lam))
                        # how consecutive calls continue the stream
                        call(g, ordering, seed, off, "raw_two_calls_1001_12295", (1001, N_RAW),
                             np.uint32, curand.generate)
                        call(g, ordering, seed, off, "raw_one_call_13296", 1001 + N_RAW, np.uint32,
                             curand.generate)
                        call(g, ordering, seed, off, "normal_two_calls_1000_2000", (1000, 2000),
                             np.float32, lambda h, p, n: curand.generateNormal(h, p, n, 0.0, 1.0))
                        call(g, ordering, seed, off, "uniform_double_two_calls_1001_2001",
                             (1001, 2001), np.float64, curand.generateUniformDouble)
                    if raw is not None and ref is not None and off == 0 and seed == 1234:
                        report_hypotheses(ref, g, ordering, seed, raw)
    for g in ("sobol32", "scrambled_sobol32"):
        for dims in (1, 3, 8):
            for off in (0, 1, 5):
                def gen_dims(h, p, n, dims=dims):
                    set_dims(h, dims)
                    curand.generate(h, p, n)
                call(g, None, 0, off, f"raw_dims{dims}", 1031 * dims, np.uint32, gen_dims)

                def uni_dims(h, p, n, dims=dims):
                    set_dims(h, dims)
                    curand.generateUniform(h, p, n)
                call(g, None, 0, off, f"uniform_dims{dims}", 1031 * dims, np.float32, uni_dims)

                def dbl_dims(h, p, n, dims=dims):
                    set_dims(h, dims)
                    curand.generateUniformDouble(h, p, n)
                call(g, None, 0, off, f"uniform_double_dims{dims}", 1031 * dims, np.float64, dbl_dims)

                def nrm_dims(h, p, n, dims=dims):
                    set_dims(h, dims)
                    curand.generateNormal(h, p, n, 0.0, 1.0)
                call(g, None, 0, off, f"normal_dims{dims}", 1030 * dims, np.float32, nrm_dims)
    for g in ("sobol64", "scrambled_sobol64"):
        for dims in (1, 3):
            def ll_dims(h, p, n, dims=dims):
                set_dims(h, dims)
                curand.generateLongLong(h, p, n)
            call(g, None, 0, 0, f"longlong_dims{dims}", 1031 * dims, np.uint64, ll_dims)

            def d64_dims(h, p, n, dims=dims):
                set_dims(h, dims)
                curand.generateUniformDouble(h, p, n)
            call(g, None, 0, 0, f"uniform_double_dims{dims}", 1031 * dims, np.float64, d64_dims)
    statuses(cupy, curand)
    np.savez_compressed(args.out, **store)
    print(f"wrote {len(store)} arrays to {args.out} ({time.time() - t0:.1f} s)")
    if args.sobol_dims:
        sobol_tables(cupy, curand, args.sobol_dims, args.sobol_out)


def statuses(cupy, curand) -> None:
    """cuRAND's answer to each bad input the issue lists (printed: status or 'accepted')."""
    from oxicuda.rand.bench_cases import vendor_set_dimensions as set_dims

    buf = cupy.zeros(64, dtype=np.float64)
    p = buf.data.ptr
    cases = [
        ("philox", "generateUniform at ptr+2", lambda g: curand.generateUniform(g, p + 2, 4)),
        ("philox", "generateUniform at ptr+4", lambda g: curand.generateUniform(g, p + 4, 4)),
        ("philox", "generateUniformDouble at ptr+4", lambda g: curand.generateUniformDouble(g, p + 4, 4)),
        ("philox", "generateNormal at ptr+4", lambda g: curand.generateNormal(g, p + 4, 4, 0.0, 1.0)),
        ("philox", "generateNormal n=7", lambda g: curand.generateNormal(g, p, 7, 0.0, 1.0)),
        ("philox", "generateNormalDouble n=7", lambda g: curand.generateNormalDouble(g, p, 7, 0.0, 1.0)),
        ("philox", "generateNormal stddev=-1", lambda g: curand.generateNormal(g, p, 4, 0.0, -1.0)),
        ("philox", "generateNormal stddev=nan", lambda g: curand.generateNormal(g, p, 4, 0.0, float("nan"))),
        ("philox", "generatePoisson lambda=-1", lambda g: curand.generatePoisson(g, p, 4, -1.0)),
        ("philox", "generatePoisson lambda=0", lambda g: curand.generatePoisson(g, p, 4, 0.0)),
        ("philox", "generatePoisson lambda=nan", lambda g: curand.generatePoisson(g, p, 4, float("nan"))),
        ("philox", "generateLongLong", lambda g: curand.generateLongLong(g, p, 4)),
        ("philox", "setQuasiRandomGeneratorDimensions 3", lambda g: set_dims(g, 3)),
        ("philox", "setGeneratorOrdering QUASI_DEFAULT", lambda g: curand.setGeneratorOrdering(g, 201)),
        ("philox", "setGeneratorOrdering 999", lambda g: curand.setGeneratorOrdering(g, 999)),
        ("xorwow", "generate at ptr+2", lambda g: curand.generate(g, p + 2, 4)),
        ("xorwow", "generateNormal n=7", lambda g: curand.generateNormal(g, p, 7, 0.0, 1.0)),
        ("sobol32", "setPseudoRandomGeneratorSeed", lambda g: curand.setPseudoRandomGeneratorSeed(g, 5)),
        ("sobol32", "setQuasiRandomGeneratorDimensions 0", lambda g: set_dims(g, 0)),
        ("sobol32", "setQuasiRandomGeneratorDimensions 20001",
         lambda g: set_dims(g, 20001)),
        ("sobol32", "generate n=7 with 3 dims", lambda g: (set_dims(g, 3),
                                                             curand.generate(g, p, 7))),
        ("sobol32", "generateLongLong", lambda g: curand.generateLongLong(g, p, 4)),
        ("sobol64", "generate (32-bit)", lambda g: curand.generate(g, p, 4)),
        ("sobol32", "setGeneratorOrdering PSEUDO_DEFAULT", lambda g: curand.setGeneratorOrdering(g, 101)),
    ]
    for gen_name, what, fn in cases:
        gen = curand.createGenerator(RNG[gen_name])
        try:
            fn(gen)
            cupy.cuda.runtime.deviceSynchronize()
            print(f"status {gen_name} {what}: accepted")
        except Exception as exc:
            print(f"status {gen_name} {what}: {type(exc).__name__}: {exc}")
        finally:
            curand.destroyGenerator(gen)
    try:
        curand.createGenerator(77)
        print("status createGenerator(77): accepted")
    except Exception as exc:
        print(f"status createGenerator(77): {type(exc).__name__}: {exc}")


def report_hypotheses(ref, gen_name, ordering, seed, raw) -> None:
    """Print which of the oracle's orderings reproduces ``raw`` (and from which index it fails)."""
    for name, fn in ref.ORDERING_HYPOTHESES.get(gen_name, {}).items():
        try:
            want = fn(seed, 0, raw.size)
        except Exception as exc:
            print(f"  hypothesis {gen_name}/{name}: oracle failed: {exc}")
            continue
        bad = np.flatnonzero(want != raw)
        verdict = "MATCH" if bad.size == 0 else f"differs from index {bad[0]} ({bad.size} of {raw.size})"
        print(f"  hypothesis {gen_name}/{ordering}/{name}: {verdict}")


def sobol_tables(cupy, curand, dims: int, path: str) -> None:
    """First points of every dimension and x[2^k] ^ x[2^k - 1] for each bit k."""
    from oxicuda.rand.bench_cases import vendor_set_dimensions as set_dims

    out = {}
    for g, bits, dtype, fn in (("sobol32", 32, np.uint32, curand.generate),
                               ("scrambled_sobol32", 32, np.uint32, curand.generate),
                               ("sobol64", 64, np.uint64, curand.generateLongLong),
                               ("scrambled_sobol64", 64, np.uint64, curand.generateLongLong)):
        def points(offset, count, g=g, dtype=dtype, fn=fn):
            gen = curand.createGenerator(RNG[g])
            try:
                set_dims(gen, dims)
                if offset:
                    curand.setGeneratorOffset(gen, offset)
                buf = cupy.zeros(count * dims, dtype=dtype)
                fn(gen, buf.data.ptr, count * dims)
                return cupy.asnumpy(buf).reshape(dims, count)
            finally:
                curand.destroyGenerator(gen)
        try:
            out[f"{g}|first4"] = points(0, 4)
            vk = np.empty((dims, bits), dtype=dtype)
            for k in range(bits):
                pair = points((1 << k) - 1, 2)
                vk[:, k] = pair[:, 1] ^ pair[:, 0]
            out[f"{g}|xor_pow2"] = vk
            print(f"{g}: first point of dims 0..3: {[hex(int(v)) for v in out[g + '|first4'][:4, 0]]}, "
                  f"x[1]^x[0] of dims 0..3: {[hex(int(v)) for v in vk[:4, 0]]}")
        except Exception as exc:
            print(f"{g} tables: {type(exc).__name__}: {exc}")
    np.savez_compressed(path, **out)
    print(f"wrote {len(out)} Sobol tables to {path}")


if __name__ == "__main__":
    main()
