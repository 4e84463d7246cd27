"""The opt-in disk cache of driver-linked binaries (OXICUDA_CUBIN_CACHE=1): link_ptx, Module(image=),
the .bin entries beside the .ptx ones (write, hit, corruption, device tag, fallback), and the
cuLink* binding of LibCudaAPI checked without a driver."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import ptx_test_family as fam
import pytest

import oxicuda
from oxicuda.driver import libcuda
from oxicuda.driver.backend import api
from oxicuda.driver.errors import ModuleLoadError
from oxicuda.driver.module import Module
from oxicuda.ptx import cache

TESTS = Path(__file__).resolve().parent


@pytest.fixture
def cubin_env(tmp_path, monkeypatch):
    monkeypatch.setenv("OXICUDA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("OXICUDA_CUBIN_CACHE", "1")
    monkeypatch.delenv("OXICUDA_CACHE", raising=False)
    fam.register()
    cache.clear_memory_cache()
    yield tmp_path
    cache.clear_memory_cache()
    fam.unregister()


def _bins(root: Path) -> list[Path]:
    return sorted(root.rglob("*.bin"))


def _check_computes(fn, factor: float, rng, n: int = 333) -> None:
    """Launch y = x * factor + offset and compare every element with numpy in float64."""
    x = rng.standard_normal(n).astype(np.float32)
    offset = float(rng.standard_normal())
    dx, dy = oxicuda.asarray(x), oxicuda.full((n,), np.nan, np.float32)
    fn(((n + 127) // 128, 1, 1), (128, 1, 1), [dx, dy, n, np.float32(offset)])
    expected = x.astype(np.float64) * factor + np.float64(np.float32(offset))
    np.testing.assert_allclose(oxicuda.asnumpy(dy), expected, rtol=1e-6, atol=1e-7)


def _count_links(monkeypatch) -> list[int]:
    drv, calls = api(), []
    real = drv.link_ptx

    def counting(ptx):
        calls.append(len(ptx))
        return real(ptx)

    monkeypatch.setattr(drv, "link_ptx", counting)
    return calls


def test_first_load_writes_the_binary_and_a_cleared_cache_loads_it(cubin_env, rng, monkeypatch):
    links = _count_links(monkeypatch)
    spec = fam.ScaleSpec(arch="sm_86", factor=-0.5)
    fn = cache.load(spec)
    _check_computes(fn, -0.5, rng)
    (path,) = _bins(cubin_env)
    key, tag = cache.cache_key(spec), cache.device_tag()
    assert path == cache.cubin_path(key, tag) and path.name == f"{key}-{tag}.bin"
    assert tag.startswith(f"{oxicuda.get_backend()}-sm") and "-drv" in tag
    raw = path.read_bytes()
    assert raw.startswith(f"// oxicuda-cubin-cache key={key} tag={tag} sha256=".encode())
    assert not list(cubin_env.rglob("*.tmp"))
    info = cache.cache_info()["disk"]
    assert (info["cubin_misses"], info["cubin_hits"], info["cubin_writes"]) == (1, 0, 1)
    assert info["cubin_errors"] == 0 and len(links) == 1

    cache.clear_memory_cache()
    fn2 = cache.load(spec)
    assert fn2 is not fn
    _check_computes(fn2, -0.5, rng)
    info = cache.cache_info()["disk"]
    assert (info["cubin_hits"], info["cubin_misses"], info["cubin_errors"]) == (1, 0, 0)
    assert len(links) == 1  # the hit linked nothing
    assert path.read_bytes() == raw


@pytest.mark.slow
def test_a_fresh_process_loads_from_the_binary(cubin_env, rng):
    spec = fam.ScaleSpec(arch="sm_86", factor=2.0)
    _check_computes(cache.load(spec), 2.0, rng)
    assert len(_bins(cubin_env)) == 1
    script = (
        "import sys, numpy as np; sys.path.insert(0, sys.argv[1]);"
        "import ptx_test_family as fam, oxicuda; from oxicuda.ptx import cache; fam.register();"
        "fn = cache.load(fam.ScaleSpec(arch='sm_86', factor=2.0));"
        "x = np.arange(200, dtype=np.float32) - 50; dy = oxicuda.full((200,), np.nan, np.float32);"
        "fn((2, 1, 1), (128, 1, 1), [oxicuda.asarray(x), dy, 200, np.float32(1.5)]);"
        "assert np.array_equal(dy.get(), x * 2 + 1.5), dy.get();"
        "d = cache.cache_info()['disk']; print(d['cubin_hits'], d['cubin_misses'], d['cubin_errors'])"
    )
    env = dict(os.environ, OXICUDA_CACHE_DIR=str(cubin_env), OXICUDA_CUBIN_CACHE="1")
    done = subprocess.run(
        [sys.executable, "-c", script, str(TESTS)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["1", "0", "0"]


@pytest.mark.parametrize("damage", ["truncate", "flip", "header", "empty", "tag"])
def test_a_corrupted_binary_is_detected_deleted_and_rebuilt(cubin_env, rng, damage, monkeypatch):
    spec = fam.ScaleSpec(arch="sm_90", factor=-0.5)
    cache.load(spec)
    (path,) = _bins(cubin_env)
    raw = path.read_bytes()
    header_end = raw.index(b"\n") + 1
    broken = {
        "truncate": raw[: header_end + (len(raw) - header_end) // 2],
        "flip": raw[:-10] + bytes([raw[-10] ^ 0x01]) + raw[-9:],
        "header": raw.replace(b"sha256=", b"sha257=", 1),
        "empty": b"",
        "tag": raw.replace(b"tag=", b"tag=x", 1),
    }[damage]
    path.write_bytes(broken)
    cache.clear_memory_cache()
    links = _count_links(monkeypatch)
    fn = cache.load(spec)
    _check_computes(fn, -0.5, rng)
    info = cache.cache_info()["disk"]
    assert info["cubin_corrupt"] == 1 and info["cubin_hits"] == 0 and info["cubin_misses"] == 1
    assert info["cubin_writes"] == 1 and len(links) == 1
    assert path.read_bytes() == raw


def test_a_binary_the_driver_refuses_is_deleted_and_rebuilt(cubin_env, rng):
    spec = fam.ScaleSpec(arch="sm_86", dtype="f64", factor=2.0)
    cache.load(spec)
    (path,) = _bins(cubin_env)
    good = path.read_bytes()
    # a well-formed entry (header and checksum right) whose image does not load
    cache._write_binary(cache.cache_key(spec), cache.device_tag(), b"this is no loadable image\n")
    assert path.read_bytes() != good
    x = rng.standard_normal(100)
    # made before the counters are cleared: oxicuda.full loads (and counts) its own fill kernel
    dx, dy = oxicuda.asarray(x), oxicuda.full((100,), np.nan, np.float64)
    cache.clear_memory_cache()
    fn = cache.load(spec)
    fn((1, 1, 1), (128, 1, 1), [dx, dy, 100, np.float64(0.125)])
    np.testing.assert_allclose(dy.get(), x * 2.0 + 0.125, rtol=1e-15, atol=0)
    info = cache.cache_info()["disk"]
    assert info["cubin_errors"] == 1 and info["cubin_hits"] == 0 and info["cubin_misses"] == 1
    assert path.read_bytes() == good


def test_another_device_tag_misses_and_keeps_its_own_binary(cubin_env, rng, monkeypatch):
    spec = fam.ScaleSpec(arch="sm_86", math="fast", factor=-0.5)
    cache.load(spec)
    (first,) = _bins(cubin_env)
    real_tag = cache.device_tag()
    monkeypatch.setattr(cache, "device_tag", lambda: real_tag.replace("-drv", "-drv9"))
    cache.clear_memory_cache()
    links = _count_links(monkeypatch)
    _check_computes(cache.load(spec), -0.5, rng)
    info = cache.cache_info()["disk"]
    assert info["cubin_hits"] == 0 and info["cubin_misses"] == 1 and len(links) == 1
    assert len(_bins(cubin_env)) == 2 and first.exists()
    monkeypatch.undo()


def test_device_tag_reads_capability_driver_and_backend(cubin_env):
    drv = api()
    dev = drv.ctx_get_device()
    cc = oxicuda.Device(dev).compute_capability
    assert cache.device_tag() == (
        f"{oxicuda.get_backend()}-sm{cc[0]}{cc[1]}-drv{drv.driver_get_version()}"
    )


def test_concurrent_first_loads_link_and_write_once(cubin_env, rng, monkeypatch):
    import threading

    links = _count_links(monkeypatch)
    spec = fam.ScaleSpec(arch="sm_80", dtype="f32", factor=2.0)
    results, barrier = [], threading.Barrier(6)

    def worker():
        barrier.wait()
        results.append(cache.load(spec))

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6 and len({id(f) for f in results}) == 1
    assert len(links) == 1 and len(_bins(cubin_env)) == 1
    assert cache.cache_info()["disk"]["cubin_writes"] == 1
    _check_computes(results[0], 2.0, rng)


@pytest.mark.parametrize("env", [{}, {"OXICUDA_CUBIN_CACHE": "0"}, {"OXICUDA_CACHE": "off"}])
def test_switched_off_no_binary_is_written(cubin_env, rng, monkeypatch, env):
    # unset, the binary cache is on for the real driver only (the test with {} then checks the
    # emulator's default; on a GPU the default is on, checked below)
    monkeypatch.delenv("OXICUDA_CUBIN_CACHE")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if "OXICUDA_CACHE" in env:
        monkeypatch.setenv("OXICUDA_CUBIN_CACHE", "1")  # the disk switch wins
    if not env and oxicuda.get_backend() == "cuda":
        assert cache.cubin_cache_enabled()
        return
    links = _count_links(monkeypatch)
    _check_computes(cache.load(fam.ScaleSpec(arch="sm_86", factor=2.0)), 2.0, rng)
    assert _bins(cubin_env) == [] and links == []
    info = cache.cache_info()["disk"]
    assert info["cubin_enabled"] is False and info["cubin_misses"] == 0 and info["cubin_writes"] == 0


def test_a_failing_link_falls_back_to_ptx_and_is_counted(cubin_env, rng, monkeypatch):
    def broken(ptx):
        raise ModuleLoadError(218, "cuLinkComplete", "simulated linker failure")

    monkeypatch.setattr(api(), "link_ptx", broken)
    _check_computes(cache.load(fam.ScaleSpec(arch="sm_80", factor=-0.5)), -0.5, rng)
    info = cache.cache_info()["disk"]
    assert info["cubin_errors"] == 1 and info["cubin_writes"] == 0 and _bins(cubin_env) == []


def test_bad_ptx_still_fails_loudly_through_the_binary_path(cubin_env, monkeypatch):
    monkeypatch.setattr(cache, "ptx_for", lambda spec: BAD_PTX)
    with pytest.raises(ModuleLoadError):
        cache.load(fam.ScaleSpec(arch="sm_86", block=64))
    assert cache.cache_info()["disk"]["cubin_errors"] == 1 and _bins(cubin_env) == []


BAD_PTX = """.version 7.8
.target sm_86
.address_size 64
.visible .entry broken(.param .u64 p)
{
    .reg .b32 %r<2>;
    frobnicate.b32 %r1, %r1;
    ret;
}
"""


def test_emulator_link_ptx_validates_like_module_load(cubin_env):
    if oxicuda.get_backend() != "emulator":
        pytest.skip("emulator-specific: its image is the PTX itself")
    drv = api()
    with pytest.raises(ModuleLoadError) as linked:
        drv.link_ptx(BAD_PTX.encode())
    with pytest.raises(ModuleLoadError) as loaded:
        drv.module_load_data(BAD_PTX.encode())
    assert type(linked.value) is type(loaded.value) and linked.value.code == loaded.value.code
    text = cache.ptx_for(fam.ScaleSpec(arch="sm_86"))
    assert drv.link_ptx(text.encode() + b"\0") == text.encode()


def test_module_with_an_image_computes_and_rejects_a_non_image(cubin_env, rng):
    spec = fam.ScaleSpec(arch="sm_86", factor=-0.5)
    text = cache.ptx_for(spec)
    module = Module(text, image=api().link_ptx(text.encode()))
    assert module.entries == [spec.kernel_name()]
    _check_computes(module.get_function(spec.kernel_name()), -0.5, rng)
    with pytest.raises(TypeError, match="image must be non-empty bytes"):
        Module(text, image=b"")
    with pytest.raises(TypeError, match="image must be non-empty bytes"):
        Module(text, image="not bytes")  # type: ignore[arg-type]


# -- LibCudaAPI's cuLink* binding, without a driver --------------------------------------------

EXPECTED_LINK_SIGNATURES = {
    "cuLinkCreate_v2": "int(*)(unsigned int, int *, void * *, uintptr_t *)",
    "cuLinkAddData_v2": "int(*)(uintptr_t, int, void *, size_t, char const *, unsigned int, int *, void * *)",
    "cuLinkComplete": "int(*)(uintptr_t, void * *, size_t *)",
    "cuLinkDestroy": "int(*)(uintptr_t)",
}


def test_cdef_declares_the_culink_symbols_with_the_checked_signatures():
    ffi = libcuda._make_ffi()
    declarations = ffi._parser._declarations
    for name, expected in EXPECTED_LINK_SIGNATURES.items():
        ftype = declarations[f"function {name}"][0]
        assert ftype.get_c_name() == expected, (name, ftype.get_c_name())
    assert libcuda.CU_JIT_INPUT_PTX == 1
    assert (libcuda.CU_JIT_ERROR_LOG_BUFFER, libcuda.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) == (5, 6)
    assert ffi.sizeof("CUlinkState") == ffi.sizeof("void *")


class _FakeLinker:
    """Stands in for libcuda's cuLink* entry points: checks the arguments, returns an image that
    cuLinkDestroy poisons (so a copy made after destroy would be caught)."""

    def __init__(self, ffi, image: bytes, fail_code: int = 0) -> None:
        self.ffi, self.image, self.fail_code = ffi, image, fail_code
        self.calls: list[str] = []
        self.buffer = None

    def cuLinkCreate_v2(self, n, options, values, state_out):
        self.calls.append("create")
        assert n == 4 and [options[i] for i in range(4)] == [5, 6, 3, 4]
        self.error_log = self.ffi.cast("char *", values[0])
        assert int(self.ffi.cast("uintptr_t", values[1])) >= 1024
        state_out[0] = 0x5EED
        return 0

    def cuLinkAddData_v2(self, state, kind, data, size, name, n, options, values):
        self.calls.append("add")
        assert state == 0x5EED and kind == 1 and n == 0 and options == self.ffi.NULL
        text = self.ffi.buffer(self.ffi.cast("char *", data), size)[:]
        assert text.endswith(b"\0") and text.count(b"\0") == 1 and b".entry" in text
        if self.fail_code:
            msg = b"ptxas fatal: simulated error\0"
            self.ffi.memmove(self.error_log, msg, len(msg))
            return self.fail_code
        return 0

    def cuLinkComplete(self, state, cubin_out, size_out):
        self.calls.append("complete")
        self.buffer = self.ffi.new("char[]", self.image)
        cubin_out[0] = self.ffi.cast("void *", self.buffer)
        size_out[0] = len(self.image)
        return 0

    def cuLinkDestroy(self, state):
        self.calls.append("destroy")
        assert state == 0x5EED
        if self.buffer is not None:
            self.ffi.memmove(self.buffer, b"\xff" * len(self.image), len(self.image))
        return 0


def _driverless_api(image: bytes, fail_code: int = 0):
    drv = object.__new__(libcuda.LibCudaAPI)
    drv.ffi = libcuda._make_ffi()
    drv.lib = _FakeLinker(drv.ffi, image, fail_code)
    return drv


def test_link_ptx_copies_the_image_before_destroying_the_link_state():
    image = bytes(range(256)) * 3
    drv = _driverless_api(image)
    assert drv.link_ptx(BAD_PTX.encode()) == image
    assert drv.lib.calls == ["create", "add", "complete", "destroy"]


def test_link_ptx_failure_raises_module_load_error_with_the_log_and_destroys():
    drv = _driverless_api(b"unused", fail_code=218)
    with pytest.raises(ModuleLoadError, match="simulated error") as info:
        drv.link_ptx(BAD_PTX)
    assert info.value.code == 218 and info.value.call == "cuLinkAddData_v2"
    assert drv.lib.calls == ["create", "add", "destroy"]


# -- the real driver ----------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_linked_cubin_loads_computes_and_a_warm_load_beats_the_jit(cubin_env, rng):
    from oxicuda.blas.gemm_tiled import GemmTiledSpec
    from oxicuda.ptx.target import device_arch

    arch = device_arch()
    spec = fam.ScaleSpec(arch=arch, factor=-0.5)
    text = cache.ptx_for(spec)
    image = api().link_ptx(text.encode())
    assert image[:4] == b"\x7fELF", image[:16]  # a cubin, not PTX
    _check_computes(Module(text, image=image).get_function(spec.kernel_name()), -0.5, rng)

    big = cache.ptx_for(GemmTiledSpec(arch=arch, dtype="float32", vec_a=4, vec_b=4))
    # a unique comment defeats the driver's own JIT cache (~/.nv/ComputeCache): a real JIT
    big += f"\n// oxicuda test nonce {os.getpid()}-{time.time_ns()}\n"
    # get_function included in both: with CUDA_MODULE_LOADING=LAZY the driver defers work there
    t0 = time.perf_counter()
    jitted = Module(big)
    jitted.get_function(jitted.entries[0])
    jit = time.perf_counter() - t0
    cubin = api().link_ptx(big.encode())
    t0 = time.perf_counter()
    warmed = Module(big, image=cubin)
    warmed.get_function(warmed.entries[0])
    warm = time.perf_counter() - t0
    assert warm * 10 <= jit, f"cubin load {warm * 1e3:.2f} ms vs PTX JIT {jit * 1e3:.2f} ms"

    cache.clear_memory_cache()
    fn = cache.load(spec)
    cache.clear_memory_cache()
    fn = cache.load(spec)
    assert cache.cache_info()["disk"]["cubin_hits"] == 1
    _check_computes(fn, -0.5, rng)
