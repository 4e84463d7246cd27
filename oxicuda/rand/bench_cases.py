"""cuRAND benchmark cases (issue 17's figures): 2^28 values per call, ours through
``oxicuda.cuda.curand`` and cuRAND through ``cupy.cuda.curand`` in the same process, GB/s of
output written. ``write_bandwidth`` (a driver memset of the same 1 GiB) is the store-bound floor
each generator case is a fraction of. On the emulator every case shrinks to 4096 values.

The check compares the first 2^20 of our values with cuRAND's (bits: the fraction that differ;
double normals: the largest relative difference) when CuPy is importable, else with nothing.
MRG32k3a runs under CURAND_ORDERING_PSEUDO_LEGACY on both sides (its DEFAULT ordering is not
reproduced: oxicuda raises for it).
"""

from __future__ import annotations

import numpy as np

from oxicuda.bench.case import Case, Prepared, register_case

N_VALUES = 1 << 28
CHECK = 1 << 20


def _cupy():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:
        return None


def vendor_set_dimensions(generator: int, dims: int) -> None:
    """curandSetQuasiRandomGeneratorDimensions on a cupy.cuda.curand generator (CuPy does not
    wrap it): through ctypes on the libcurand CuPy has loaded."""
    import ctypes

    path = None
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libcurand" in line:
                path = line.split()[-1]
                break
    if path is None:
        raise RuntimeError("libcurand is not loaded in this process (import cupy.cuda.curand first)")
    status = ctypes.CDLL(path).curandSetQuasiRandomGeneratorDimensions(ctypes.c_void_p(generator),
                                                                         ctypes.c_uint(dims))
    if status:
        raise RuntimeError(f"curandSetQuasiRandomGeneratorDimensions({dims}) returned status {status}")


def _on_gpu() -> bool:
    import oxicuda

    return oxicuda.get_backend() == "cuda"


def _generator_case(rng_type: int, call: str, dtype, args: tuple = (), ordering: int | None = None):
    """``ordering``: set on both generators (timed and checked) when not None; MRG32k3a's cases
    use PSEUDO_LEGACY, the one of its orderings oxicuda reproduces."""

    def setup(lib, g) -> None:
        lib.setPseudoRandomGeneratorSeed(g, 1234)
        if ordering is not None:
            lib.setGeneratorOrdering(g, ordering)

    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda.cuda import curand as ox

        n = N_VALUES if _on_gpu() and not quick else (1 << 22 if _on_gpu() else 4096)
        out = oxicuda.empty(n, dtype)
        gen = ox.createGenerator(rng_type)
        setup(ox, gen)
        fn = getattr(ox, call)

        def ours(i: int) -> None:
            fn(gen, out.ptr, n, *args)

        prepared = Prepared(ours=ours, bytes=float(n * np.dtype(dtype).itemsize), problem=f"{n} values",
                            cleanup=lambda: ox.destroyGenerator(gen))
        cp = _cupy()
        if cp is not None:
            from cupy.cuda import curand as vendor

            vout = cp.empty(n, dtype=dtype)
            vgen = vendor.createGenerator(rng_type)
            setup(vendor, vgen)
            vfn = getattr(vendor, call)

            def theirs(i: int) -> None:
                vfn(vgen, vout.data.ptr, n, *args)

            def check() -> float:
                # fresh generators: the timed ones have moved on along their streams
                for lib, ptr in ((ox, out.ptr), (vendor, vout.data.ptr)):
                    g = lib.createGenerator(rng_type)
                    setup(lib, g)
                    getattr(lib, call)(g, ptr, n, *args)
                    lib.destroyGenerator(g)
                a, b = out.get()[:CHECK], cp.asnumpy(vout[:CHECK])
                if call in ("generateNormalDouble", "generateLogNormalDouble"):
                    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))
                return float(np.mean(a != b))

            prepared.vendor, prepared.vendor_name, prepared.check = theirs, "cuRAND (CuPy)", check
            prepared.tolerance = 1e-14 if "Double" in call and "Normal" in call else 0.0
            prepared.cleanup = lambda: (ox.destroyGenerator(gen), vendor.destroyGenerator(vgen))
        return prepared

    return prepare


def _sobol_case(dims: int):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        from oxicuda.cuda import curand as ox

        n = (N_VALUES if _on_gpu() and not quick else (1 << 22 if _on_gpu() else 4096)) // dims * dims
        out = oxicuda.empty(n, np.float32)
        gen = ox.createGenerator(SOBOL32)
        ox.setQuasiRandomGeneratorDimensions(gen, dims)

        def ours(i: int) -> None:
            ox.generateUniform(gen, out.ptr, n)

        prepared = Prepared(ours=ours, bytes=float(n * 4), problem=f"{dims} x {n // dims} points",
                            cleanup=lambda: ox.destroyGenerator(gen))
        cp = _cupy()
        if cp is not None:
            from cupy.cuda import curand as vendor

            vout = cp.empty(n, dtype=np.float32)
            vgen = vendor.createGenerator(SOBOL32)
            vendor_set_dimensions(vgen, dims)

            def theirs(i: int) -> None:
                vendor.generateUniform(vgen, vout.data.ptr, n)

            def check() -> float:
                # both generators continue at the next points: fresh ones for the check
                g1, g2 = ox.createGenerator(SOBOL32), vendor.createGenerator(SOBOL32)
                ox.setQuasiRandomGeneratorDimensions(g1, dims)
                vendor_set_dimensions(g2, dims)
                ox.generateUniform(g1, out.ptr, n)
                vendor.generateUniform(g2, vout.data.ptr, n)
                ox.destroyGenerator(g1)
                vendor.destroyGenerator(g2)
                return float(np.mean(out.get()[:CHECK] != cp.asnumpy(vout[:CHECK])))

            prepared.vendor, prepared.vendor_name, prepared.check = theirs, "cuRAND (CuPy)", check
            prepared.tolerance = 0.0
            prepared.cleanup = lambda: (ox.destroyGenerator(gen), vendor.destroyGenerator(vgen))
        return prepared

    return prepare


def _write_bandwidth(quick: bool) -> Prepared:
    import oxicuda

    n = N_VALUES if _on_gpu() and not quick else 4096
    out = oxicuda.empty(n, np.float32)

    def ours(i: int) -> None:
        out.fill(float(i & 1))

    return Prepared(ours=ours, bytes=float(n * 4), problem=f"{n * 4} bytes memset")


PHILOX = 161
XORWOW = 101
MRG32K3A = 121
LEGACY = 103
_CASES = [
    ("mrg32k3a_uniform_f32", MRG32K3A, "generateUniform", np.float32, (), LEGACY),
    ("xorwow_uniform_f32", XORWOW, "generateUniform", np.float32, ()),
    ("xorwow_uniform_f64", XORWOW, "generateUniformDouble", np.float64, ()),
    ("philox_uniform_f32", PHILOX, "generateUniform", np.float32, ()),
    ("philox_normal_f32", PHILOX, "generateNormal", np.float32, (0.0, 1.0)),
    ("philox_uniform_f64", PHILOX, "generateUniformDouble", np.float64, ()),
    ("philox_normal_f64", PHILOX, "generateNormalDouble", np.float64, (0.0, 1.0)),
    ("philox_raw_u32", PHILOX, "generate", np.uint32, ()),
]
for _name, _rng, _call, _dtype, _args, *_ordering in _CASES:
    register_case(Case("rand", _name, _generator_case(_rng, _call, _dtype, _args, *_ordering),
                       bytes=float(N_VALUES * np.dtype(_dtype).itemsize), unit="GB/s",
                       note="2^28 values; ratio = ours / cuRAND; compare with rand/write_bandwidth"))
SOBOL32 = 201
for _dims in (1, 8):
    register_case(Case("rand", f"sobol32_uniform_f32_{_dims}d", _sobol_case(_dims), bytes=float(N_VALUES * 4),
                       unit="GB/s", note="2^28 values; ratio = ours / cuRAND"))
register_case(Case("rand", "write_bandwidth", _write_bandwidth, bytes=float(N_VALUES * 4), unit="GB/s",
                   note="driver memset of 1 GiB: the store-bound floor of the generator cases"))
