"""Host-side costs of the PTX path: generation, driver JIT, cubin load, first call vs cached call.

For one representative spec of every registered kernel family, and for two kernels this script
builds itself (a naive sgemm with a GEMM-shaped parameter list, and an saxpy), it measures:

- ``generate_us``: spec -> PTX (``registry.generate_ptx``), median of N;
- ``jit_load_us``: ``api().module_load_data(ptx)`` plus ``module_get_function`` on a fresh
  module each time (unloaded after, outside the timer), median of N; the driver's own JIT cache
  is disabled unless ``--driver-jit-cache`` is given, so this is a real compile;
- ``ptxas_ms`` and ``cubin_load_us``: the same PTX assembled by ``ptxas -arch=<device arch>``
  (``sm_90a`` when the PTX targets it) into a cubin, and ``module_load_data(cubin)``;
- ``first_load_us`` (``OXICUDA_CACHE=off``, memory cache cleared: generate + JIT + get_function),
  ``disk_warm_load_us`` (memory cleared, disk cache populated: read + JIT) and
  ``cached_load_us`` (``cache.load`` hit);
- for the two own kernels, whose arguments are known, the same three with a launch included:
  ``first_call_us``, ``disk_warm_call_us``, ``cached_call_us`` (host time until the launch call
  returns; launches are asynchronous on a GPU, so kernel run time is not in the figure), and
  ``launch_only_us`` (the launch on the held function, without the cache lookup).

Registered families are not launched: the registry does not say what arguments their kernels
take, and a guessed argument list could fault the context.

On the GPU (by the lead): ``python3 benches/ptx_costs.py --json $OUT/ptx_costs.json``.
It also runs on the emulator (``--quick`` for tests); there every figure is labelled as an
emulator figure (JIT means parsing PTX, a launch runs the interpreter) and the cubin cannot be
loaded, so only the ptxas time is reported for it.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np

from oxicuda.driver.params import entry_layouts
from oxicuda.ptx import cache, registry
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.spec import KernelSpec

SAMPLE_CONFIGS = 8  # configurations sampled per family; the largest PTX of them is measured
LOAD_FIELDS = ("generate_us", "jit_load_us", "first_load_us", "disk_warm_load_us", "cached_load_us")
CALL_FIELDS = ("first_call_us", "disk_warm_call_us", "cached_call_us", "launch_only_us")
CUBIN_FIELDS = ("ptxas_ms", "cubin_bytes", "cubin_load_us")


# -- the script's own kernels (arguments known, so they can be launched) ------------------------
@dataclass(frozen=True)
class HostCostGemmSpec(KernelSpec):
    """``c = alpha * a @ b`` row-major fp32, one thread per element of c (a naive sgemm)."""

    family: ClassVar[str] = "bench_host_gemm"
    block: int = 16


@dataclass(frozen=True)
class HostCostAxpySpec(KernelSpec):
    """``out = alpha * x + y`` fp32, one thread per element (out apart from y: repeatable)."""

    family: ClassVar[str] = "bench_host_axpy"
    block: int = 256


def generate_gemm(spec: HostCostGemmSpec) -> str:
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    a, b, c = kb.param_ptr("a"), kb.param_ptr("b"), kb.param_ptr("c")
    m, n, k = kb.param("m", "u32"), kb.param("n", "u32"), kb.param("k", "u32")
    lda, ldb, ldc = kb.param("lda", "u32"), kb.param("ldb", "u32"), kb.param("ldc", "u32")
    alpha = kb.param("alpha", "f32")
    kb.maxntid(spec.block, spec.block)
    col = kb.mad(kb.ctaid("x"), kb.ntid("x"), kb.tid("x"))
    row = kb.mad(kb.ctaid("y"), kb.ntid("y"), kb.tid("y"))
    with kb.if_(kb.setp("lt", row, m)), kb.if_(kb.setp("lt", col, n)):
        acc = kb.mov(0.0, "f32")
        a_row = kb.mul(row, lda)
        with kb.loop(0, k, 1, type_="u32") as p:
            x = kb.ld("global", "f32", kb.addr(a, kb.add(a_row, p), 4))
            y = kb.ld("global", "f32", kb.addr(b, kb.mad(p, ldb, col), 4))
            kb.fma(x, y, acc, out=acc)
        kb.st("global", kb.addr(c, kb.mad(row, ldc, col), 4), kb.mul(acc, alpha))
    return kb.ptx()


def generate_axpy(spec: HostCostAxpySpec) -> str:
    kb = KernelBuilder(spec.kernel_name(), arch=spec.arch, math=spec.math)
    x, y, out = kb.param_ptr("x"), kb.param_ptr("y"), kb.param_ptr("out")
    n = kb.param("n", "u32")
    alpha = kb.param("alpha", "f32")
    kb.maxntid(spec.block)
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lt", i, n)):
        xi, yi = kb.ld("global", "f32", kb.addr(x, i, 4)), kb.ld("global", "f32", kb.addr(y, i, 4))
        kb.st("global", kb.addr(out, i, 4), kb.fma(xi, alpha, yi))
    return kb.ptx()


def register_own_families(archs: tuple[str, ...]) -> None:
    """Register the script's two kernels (idempotent)."""
    registry.register_family(
        HostCostGemmSpec.family, HostCostGemmSpec, generate_gemm,
        lambda arch: [HostCostGemmSpec(arch=arch)], archs,
    )
    registry.register_family(
        HostCostAxpySpec.family, HostCostAxpySpec, generate_axpy,
        lambda arch: [HostCostAxpySpec(arch=arch)], archs,
    )


class OwnLaunch:
    """Inputs, launch geometry and a result check for one of the script's own kernels."""

    def __init__(self, spec: KernelSpec, rng: np.random.Generator) -> None:
        import oxicuda

        self.spec = spec
        if isinstance(spec, HostCostGemmSpec):
            m, n, k = 48, 40, 24  # not multiples of the block: the bounds checks run
            a = rng.standard_normal((m, k)).astype(np.float32)
            b = rng.standard_normal((k, n)).astype(np.float32)
            self.alpha = np.float32(0.5)
            self.expected = 0.5 * (a.astype(np.float64) @ b.astype(np.float64))
            self.a, self.b = oxicuda.asarray(a), oxicuda.asarray(b)
            self.out = oxicuda.full((m, n), np.nan, np.float32)
            bs = spec.block
            self.grid = ((n + bs - 1) // bs, (m + bs - 1) // bs)
            self.block = (bs, bs)
            self.args = (self.a, self.b, self.out, m, n, k, k, n, n, self.alpha)
        else:
            n = 1000
            x = rng.standard_normal(n).astype(np.float32)
            y = rng.standard_normal(n).astype(np.float32)
            self.alpha = np.float32(-1.5)
            self.expected = -1.5 * x.astype(np.float64) + y
            self.x, self.y = oxicuda.asarray(x), oxicuda.asarray(y)
            self.out = oxicuda.full((n,), np.nan, np.float32)
            self.grid, self.block = ((n + spec.block - 1) // spec.block,), (spec.block,)
            self.args = (self.x, self.y, self.out, n, self.alpha)

    def call(self) -> None:
        """One call as a library makes it: cache lookup, then launch."""
        cache.load(self.spec)(self.grid, self.block, self.args)

    def launch_only(self) -> None:
        """The launch alone, on the function the cache holds (no lookup)."""
        self.fn(self.grid, self.block, self.args)

    def check(self) -> float:
        """The largest error of the output against float64 numpy, relative to the largest
        expected magnitude (raises if > 1e-5 or anything is not finite)."""
        got = self.out.get().astype(np.float64)
        err = float(np.max(np.abs(got - self.expected)) / np.max(np.abs(self.expected)))
        if not np.all(np.isfinite(got)) or err > 1e-5:
            raise AssertionError(f"{self.spec.family}: output off by {err:.3g} (relative)")
        return err


# -- measurement ---------------------------------------------------------------------------------
def median_us(fn, repeats: int, setup=None, teardown=None) -> float:
    """Median wall time of ``fn()`` in microseconds; ``setup`` and ``teardown`` run untimed."""
    times = []
    for _ in range(repeats):
        if setup is not None:
            setup()
        t0 = time.perf_counter_ns()
        result = fn()
        t1 = time.perf_counter_ns()
        times.append((t1 - t0) / 1000.0)
        if teardown is not None:
            teardown(result)
        result = None  # drop it here, not inside the next timed window (a module unload)
    return statistics.median(times)


class QueueDrain:
    """A ``setup`` that synchronizes every ``every`` calls, so that thousands of asynchronous
    launches never fill the driver's queue (a full queue would make the launch call wait for
    the GPU and time the kernels instead of the host)."""

    def __init__(self, drv, every: int = 128) -> None:
        self.drv, self.every, self.count = drv, every, 0

    def __call__(self) -> None:
        self.count += 1
        if self.count % self.every == 0:
            self.drv.ctx_synchronize()


class DiskCacheSwitch:
    """Sets ``OXICUDA_CACHE`` for a block and restores it after."""

    def __init__(self, enabled: bool) -> None:
        self.value = "on" if enabled else "off"

    def __enter__(self) -> None:
        self.saved = os.environ.get("OXICUDA_CACHE")
        os.environ["OXICUDA_CACHE"] = self.value

    def __exit__(self, *exc) -> None:
        if self.saved is None:
            os.environ.pop("OXICUDA_CACHE", None)
        else:
            os.environ["OXICUDA_CACHE"] = self.saved


def pick_arch(archs: tuple[str, ...], device_arch: str) -> str | None:
    """The arch to measure a family at: the device's, then its ``a`` variant, then the newest
    older one; None if the family only targets newer devices."""
    if device_arch in archs:
        return device_arch
    if device_arch + "a" in archs:
        return device_arch + "a"
    sm = int(device_arch[3:].rstrip("a"))
    older = [a for a in archs if int(a[3:].rstrip("a")) <= sm and not a.endswith("a")]
    return max(older, key=lambda a: int(a[3:])) if older else None


def representative_spec(
    name: str, device_arch: str, first_only: bool = False
) -> tuple[KernelSpec | None, str]:
    """The family's configuration with the largest PTX among up to SAMPLE_CONFIGS evenly spaced
    ones at the chosen arch (``first_only``: its first configuration), and how it was chosen
    (or None and why not)."""
    fam = registry.family(name)
    arch = pick_arch(fam.archs, device_arch)
    if arch is None:
        return None, f"no configuration for {device_arch} or older (archs {list(fam.archs)})"
    configs = list(fam.configurations(arch))
    if not configs:
        return None, f"no configurations at {arch}"
    if first_only:
        return configs[0], f"first of {len(configs)} configurations at {arch} (--quick)"
    step = max(1, len(configs) // SAMPLE_CONFIGS)
    sample = configs[::step][:SAMPLE_CONFIGS]
    spec = max(sample, key=lambda s: len(registry.generate_ptx(s)))
    return spec, f"largest PTX of {len(sample)} of {len(configs)} configurations at {arch}"


def cubin_arch(ptx: str, device_arch: str) -> str:
    """``sm_90a`` when the PTX targets an ``a`` arch, else the device's arch."""
    m = re.search(r"^\.target\s+(sm_\d+a)\b", ptx, re.MULTILINE)
    return m.group(1) if m else device_arch


def assemble_cubin(ptx: str, arch: str, ptxas: str, workdir: str) -> tuple[bytes, float]:
    """The cubin of ``ptx`` and the ptxas wall time in milliseconds (RuntimeError with its log)."""
    src, dst = Path(workdir) / "k.ptx", Path(workdir) / "k.cubin"
    src.write_text(ptx, encoding="ascii")
    t0 = time.perf_counter()
    proc = subprocess.run(
        [ptxas, f"-arch={arch}", "-o", str(dst), str(src)],
        capture_output=True, text=True, check=False,
    )
    elapsed = (time.perf_counter() - t0) * 1000.0
    if proc.returncode != 0:
        raise RuntimeError(f"ptxas -arch={arch} failed: {(proc.stderr or proc.stdout)[:500]}")
    return dst.read_bytes(), elapsed


def measure_kernel(spec, opts, device_arch: str, ptxas: str | None, launch: OwnLaunch | None):
    """Every figure for one spec, as a dict (see the module docstring for the names)."""
    from oxicuda.driver.backend import api

    drv = api()
    ptx = registry.generate_ptx(spec)
    row: dict = {"spec": spec.key(), "kernel": spec.kernel_name(), "arch": spec.arch,
                 "ptx_bytes": len(ptx), "ptx_lines": ptx.count("\n")}
    row["generate_us"] = median_us(lambda: registry.generate_ptx(spec), opts.repeats)
    image = ptx.encode("ascii")
    entries = list(entry_layouts(ptx))
    entry = spec.kernel_name() if spec.kernel_name() in entries else entries[0]

    def load_and_get(data: bytes):
        # with CUDA_MODULE_LOADING=LAZY (the default since CUDA 12.2) the driver defers part of
        # the work of a load to the first cuModuleGetFunction, so both are in the figure
        handle = drv.module_load_data(data)
        drv.module_get_function(handle, entry)
        return handle

    row["jit_load_us"] = median_us(
        lambda: load_and_get(image), opts.repeats, teardown=drv.module_unload
    )
    if ptxas is None:
        row["cubin_skipped"] = "ptxas not found (pip install nvidia-cuda-nvcc or set OXICUDA_PTXAS)"
    else:
        with tempfile.TemporaryDirectory(prefix="oxicuda-ptx-costs-") as tmp:
            arch = cubin_arch(ptx, device_arch)
            cubin, row["ptxas_ms"] = assemble_cubin(ptx, arch, ptxas, tmp)
        row["cubin_arch"], row["cubin_bytes"] = arch, len(cubin)
        if drv.name == "cuda":
            row["cubin_load_us"] = median_us(
                lambda: load_and_get(cubin), opts.repeats, teardown=drv.module_unload
            )
        else:
            row["cubin_load_skipped"] = "the emulator loads PTX only; cubin load is a GPU figure"

    def fresh() -> None:
        drv.ctx_synchronize()  # nothing of an old module may still run when it is unloaded
        cache.clear_memory_cache()

    with DiskCacheSwitch(False):
        row["first_load_us"] = median_us(lambda: cache.load(spec), opts.repeats, setup=fresh)
    with DiskCacheSwitch(True):
        cache.clear_memory_cache()
        cache.ptx_for(spec)  # populates the disk level
        row["disk_warm_load_us"] = median_us(lambda: cache.load(spec), opts.repeats, setup=fresh)
        assert cache.cache_info()["disk"]["hits"] >= 1, "disk warm start did not read the disk"
        fn = cache.load(spec)
        row["cached_load_us"] = median_us(lambda: cache.load(spec), opts.hot_repeats)
        assert cache.load(spec) is fn
    if launch is not None:
        with DiskCacheSwitch(False):
            row["first_call_us"] = median_us(launch.call, opts.repeats, setup=fresh)
        with DiskCacheSwitch(True):
            row["disk_warm_call_us"] = median_us(launch.call, opts.repeats, setup=fresh)
            launch.call()
            hot = opts.hot_repeats if drv.name == "cuda" else opts.repeats
            drain = QueueDrain(drv)  # keeps the launch queue from filling up inside the timer
            row["cached_call_us"] = median_us(launch.call, hot, setup=drain)
            launch.fn = cache.load(spec)
            row["launch_only_us"] = median_us(launch.launch_only, hot, setup=drain)
        drv.ctx_synchronize()
        row["max_rel_error"] = launch.check()
    return row


# -- report --------------------------------------------------------------------------------------
def _fmt(value, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}" if isinstance(value, float) else str(value)


def print_table(record: dict) -> None:
    """The figures as two aligned tables on stdout."""
    print(record["label"])
    head = ("kernel", "PTX KB", "gen us", "JIT us", "ptxas ms", "cubin us",
            "first ld us", "disk ld us", "hit us")
    rows = []
    for k in record["kernels"]:
        rows.append((k["family"], _fmt(k.get("ptx_bytes", 0) / 1024.0), _fmt(k.get("generate_us")),
                     _fmt(k.get("jit_load_us")), _fmt(k.get("ptxas_ms")),
                     _fmt(k.get("cubin_load_us")), _fmt(k.get("first_load_us")),
                     _fmt(k.get("disk_warm_load_us")), _fmt(k.get("cached_load_us"), 2)))
    calls = [(k["family"], _fmt(k["first_call_us"]), _fmt(k["disk_warm_call_us"]),
              _fmt(k["cached_call_us"], 2), _fmt(k["launch_only_us"], 2))
             for k in record["kernels"] if "cached_call_us" in k]
    for header, body in ((head, rows), (("kernel (with launch)", "first call us",
                                         "disk warm call us", "cached call us",
                                         "launch only us"), calls)):
        widths = [max(len(str(r[i])) for r in (header, *body)) for i in range(len(header))]
        print("  ".join(h.ljust(w) if i == 0 else h.rjust(w)
                        for i, (h, w) in enumerate(zip(header, widths))))
        for r in body:
            print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                            for i, (c, w) in enumerate(zip(r, widths))))
        print()
    for name, why in record["skipped_families"].items():
        print(f"skipped {name}: {why}")
    for name, why in record["errors"].items():
        print(f"ERROR {name}: {why}")
    for name, why in record["package_errors"].items():
        print(f"NOT MEASURED (import of {name} failed): {why}")


def ptxas_version(ptxas: str) -> str:
    out = subprocess.run([ptxas, "--version"], capture_output=True, text=True, check=False).stdout
    lines = [line for line in out.splitlines() if line.strip()]
    return lines[-1] if lines else "unknown"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", help="write the record here")
    p.add_argument("--quick", action="store_true", help="few repeats (tests, the emulator)")
    p.add_argument("--repeats", type=int, help="repeats of the costly figures (default 20)")
    p.add_argument("--hot-repeats", type=int, help="repeats of cache hits (default 2000)")
    p.add_argument("--families", help="comma-separated families to measure (default all)")
    p.add_argument("--own-only", action="store_true",
                   help="only the script's own two kernels (no registered family)")
    p.add_argument("--driver-jit-cache", action="store_true",
                   help="leave the driver's JIT cache on (default: CUDA_CACHE_DISABLE=1)")
    p.add_argument("--cache-dir", help="OXICUDA_CACHE_DIR for the disk figures (default: temp)")
    opts = p.parse_args(argv)
    opts.repeats = opts.repeats or (3 if opts.quick else 20)
    opts.hot_repeats = opts.hot_repeats or (50 if opts.quick else 2000)
    if opts.repeats < 1 or opts.hot_repeats < 1:
        p.error(f"--repeats {opts.repeats} and --hot-repeats {opts.hot_repeats} must be >= 1")
    return opts


def main(argv: list[str] | None = None) -> int:
    """Measure, print the tables, write the JSON. Returns 1 if a kernel could not be measured
    (a library package that fails to import is reported under ``package_errors`` only)."""
    opts = parse_args(argv)
    if not opts.driver_jit_cache:
        os.environ["CUDA_CACHE_DISABLE"] = "1"  # read by cuInit: set before the driver loads
    tmp_cache = None
    if opts.cache_dir:
        os.environ["OXICUDA_CACHE_DIR"] = opts.cache_dir
    else:
        tmp_cache = tempfile.TemporaryDirectory(prefix="oxicuda-ptx-costs-cache-")
        os.environ["OXICUDA_CACHE_DIR"] = tmp_cache.name

    from oxicuda.bench.record import environment, write_json
    from oxicuda.driver.backend import api
    from oxicuda.driver.context import ensure_context
    from oxicuda.ptx.target import device_arch as live_device_arch
    from oxicuda.ptx.validate import PtxasNotFound, find_ptxas

    drv = api()
    ensure_context()
    device_arch = live_device_arch()
    gpu = drv.name == "cuda"
    try:
        ptxas = find_ptxas()
    except PtxasNotFound:
        ptxas = None
    env = environment()
    env.update(
        device_arch=device_arch,
        driver_jit_cache="on" if opts.driver_jit_cache else "disabled (CUDA_CACHE_DISABLE=1)",
        ptxas=ptxas or "not found", ptxas_version=ptxas_version(ptxas) if ptxas else "",
        repeats=opts.repeats, hot_repeats=opts.hot_repeats, statistic="median",
        cuda_module_loading=os.environ.get("CUDA_MODULE_LOADING", "unset (driver default)"),
        load_figures="cuModuleLoadData + cuModuleGetFunction of the kernel's entry",
    )
    record: dict = {
        "benchmark": "ptx_costs",
        "gpu_figures": gpu,
        "label": (f"GPU figures ({env['gpu']}, {device_arch}), host microseconds" if gpu else
                  "EMULATOR figures, NOT GPU figures: JIT = parsing PTX, a launch runs the "
                  "interpreter; run on a GPU for real numbers"),
        "environment": env,
        "fields": {"load": LOAD_FIELDS, "launch (own kernels)": CALL_FIELDS, "cubin": CUBIN_FIELDS,
                   "units": "*_us: microseconds, *_ms: milliseconds, host wall time, medians"},
        "kernels": [],
        "skipped_families": {},
        "errors": {},
        "package_errors": {},
    }

    for package in () if opts.own_only else registry.LIBRARY_PACKAGES:
        try:  # one at a time, so that one broken package does not hide the others
            registry.load_all_families((package,))
        except Exception as exc:
            record["package_errors"][package] = f"{type(exc).__name__}: {exc}"[:1000]
    own = (HostCostGemmSpec.family, HostCostAxpySpec.family)
    wanted = None if not opts.families else {f.strip() for f in opts.families.split(",")}
    names = [] if opts.own_only else [n for n in sorted(registry.families()) if n not in own]
    if wanted is not None:
        unknown = wanted - set(names)
        if unknown:
            print(f"unknown families {sorted(unknown)}; registered: {names}", file=sys.stderr)
            return 2
        names = [n for n in names if n in wanted]
    register_own_families((device_arch,))
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    jobs: list[tuple[str, KernelSpec | None, str, OwnLaunch | None]] = []
    for cls in (HostCostGemmSpec, HostCostAxpySpec):
        spec = cls(arch=device_arch)
        jobs.append((cls.family, spec, "the script's own kernel (launched)", OwnLaunch(spec, rng)))
    for name in names:
        try:
            spec, how = representative_spec(name, device_arch, first_only=opts.quick)
        except Exception as exc:  # a broken generator is reported, the others still measured
            record["errors"][name] = f"choosing a spec: {type(exc).__name__}: {exc}"
            continue
        if spec is None:
            record["skipped_families"][name] = how
            continue
        jobs.append((name, spec, how, None))
    if not names and not opts.own_only:
        record["note"] = "no library family registered yet; only the script's own kernels"

    for name, spec, how, launch in jobs:
        print(f"measuring {name} ...", file=sys.stderr, flush=True)
        try:
            row = measure_kernel(spec, opts, device_arch, ptxas, launch)
        except Exception as exc:
            record["errors"][name] = f"{type(exc).__name__}: {exc}"[:1000]
            continue
        record["kernels"].append({"family": name, "selection": how, **row})

    print_table(record)
    if opts.json:
        write_json(opts.json, record)
        print(f"wrote {opts.json}")
    if tmp_cache is not None:
        tmp_cache.cleanup()
    return 1 if record["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
