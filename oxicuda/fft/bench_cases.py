"""FFT benchmark cases (issue 16's figures) beside cuFFT through cupy.fft (its plan cached by
CuPy's plan cache after the warm-up), in the same process.

Bytes are the read plus the write of the data (what a single-pass transform moves); GB/s against
the measured copy bandwidth (4257 GB/s on the H200) says how near copy speed a case runs. Inputs
are random normal. On the emulator every case shrinks to a small problem of the same kind.
"""

from __future__ import annotations

import math

import numpy as np

from oxicuda.bench.case import Case, Prepared, register_case

#: figure name -> (function, shape, dtype, axes, emulator shape)
CASES = {
    "c2c_c64_64x2^20": ("fft", (64, 1 << 20), "complex64", (-1,), (2, 1 << 10)),
    "c2c_c64_1x2^26": ("fft", (1, 1 << 26), "complex64", (-1,), (1, 1 << 13)),
    "c2c_c64_2d_4096x4096": ("fft2", (4096, 4096), "complex64", (-2, -1), (32, 64)),
    "c2c_c64_16384x1024": ("fft", (16384, 1024), "complex64", (-1,), (4, 1024)),
    "c2c_c64_1024x4099_bluestein": ("fft", (1024, 4099), "complex64", (-1,), (2, 4099)),
    "c2c_c128_1x2^24": ("fft", (1, 1 << 24), "complex128", (-1,), (1, 1 << 13)),
    "r2c_f32_2d_4096x4096": ("rfft2", (4096, 4096), "float32", (-2, -1), (32, 64)),
    "r2c_f32_256x2^16": ("rfft", (256, 1 << 16), "float32", (-1,), (2, 1 << 12)),
}
#: the issue's accuracy bound per precision (relative L2 per log2 n), Bluestein 4x
BOUND = {"complex64": 3e-7, "float32": 3e-7, "complex128": 1e-15}


def _on_gpu() -> bool:
    import oxicuda

    return oxicuda.get_backend() == "cuda"


def _cupy():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:
        return None


def _random(rng, shape, dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    x = rng.standard_normal(shape, dtype=np.float32)
    if dt.kind == "c":
        x = x + 1j * rng.standard_normal(shape, dtype=np.float32)
    return x.astype(dt)


def _out_shape(func: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape[:-1] + (shape[-1] // 2 + 1,) if func.startswith("r") else shape


def _data_bytes(func: str, shape: tuple[int, ...], dtype: str) -> float:
    item = np.dtype(dtype).itemsize
    out_item = 2 * item if func.startswith("r") else item
    return float(math.prod(shape) * item + math.prod(_out_shape(func, shape)) * out_item)


def _fft_case(func: str, shape: tuple[int, ...], dtype: str, axes: tuple[int, ...], emu: tuple[int, ...]):
    def prepare(quick: bool) -> Prepared:
        import oxicuda
        import oxicuda.fft as F

        shp = shape if _on_gpu() else emu
        rng = np.random.default_rng(0)
        host = _random(rng, shp, dtype)
        x = oxicuda.asarray(host)
        cdt = np.complex64 if dtype in ("complex64", "float32") else np.complex128
        out = oxicuda.empty(_out_shape(func, shp), cdt)
        fn = getattr(F, func)
        kw = {"axes": axes} if func.endswith("2") else {"axis": axes[0]}

        def ours(i: int) -> None:
            fn(x, out=out, **kw)

        def check() -> float:
            ours(0)
            got = out.get()
            ref_fn = getattr(np.fft, func)
            # 2-D cases: the whole array; batched 1-D cases: the first row (a float64 reference
            # of 64 x 2^20 points would take a minute on the host)
            if func.endswith("2"):
                ref = ref_fn(host.astype(np.complex128 if host.dtype.kind == "c" else np.float64), axes=axes)
                g = got
            else:
                ref = ref_fn(host[:1].astype(np.complex128 if host.dtype.kind == "c" else np.float64))
                g = got[:1]
            return float(np.linalg.norm(g - ref) / np.linalg.norm(ref))

        n = shp[-1] if not func.endswith("2") else max(shp)
        logn = sum(math.log2(shp[a]) for a in axes)
        tol = BOUND[dtype] * logn * (4 if n == 4099 else 1)
        prepared = Prepared(ours=ours, check=check, tolerance=tol, bytes=_data_bytes(func, shp, dtype),
                            problem="x".join(map(str, shp)))
        cupy = _cupy()
        if cupy is not None and _on_gpu():
            cx = cupy.asarray(host)
            cfn = getattr(cupy.fft, func)

            def vendor(i: int) -> None:
                cfn(cx, **kw)

            prepared.vendor, prepared.vendor_name = vendor, "cuFFT (cupy.fft, plan cached)"
        return prepared

    return prepare


for _name, (_func, _shape, _dtype, _axes, _emu) in CASES.items():
    register_case(Case("fft", _name, _fft_case(_func, _shape, _dtype, _axes, _emu),
                       bytes=_data_bytes(_func, _shape, _dtype), unit="GB/s",
                       quick=_name in ("c2c_c64_16384x1024", "c2c_c64_2d_4096x4096"),
                       note="bytes = read + write of the data; cuFFT through cupy.fft"))


def _host_cost_prepare(quick: bool) -> Prepared:
    import oxicuda
    import oxicuda.fft as F

    host = _random(np.random.default_rng(0), (1024,), "complex64")
    x = oxicuda.asarray(host)

    def ours(i: int) -> None:
        F.fft(x)

    def check() -> float:
        ref = np.fft.fft(host.astype(np.complex128))
        return float(np.linalg.norm(F.fft(x).get() - ref) / np.linalg.norm(ref))

    prepared = Prepared(ours=ours, check=check, tolerance=3e-6)
    cupy = _cupy()
    if cupy is not None:
        cx = cupy.asarray(host)
        prepared.vendor, prepared.vendor_name = (lambda i: cupy.fft.fft(cx)), "cupy.fft.fft"
    return prepared


register_case(Case("fft", "fft_1024_host_cost", _host_cost_prepare, unit="us", timing="host", gpu_only=True,
                   note="host microseconds of one cached 1024-point complex64 fft (result allocated per call, "
                        "as cupy.fft.fft does) vs cupy.fft.fft"))
