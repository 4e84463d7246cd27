"""Driver errors: CUresult codes become the right exception with a useful message; the cffi
binding declares valid C; a missing driver library fails with the override hint."""

from __future__ import annotations

import sys

import pytest

from oxicuda.driver import errors
from oxicuda.driver.errors import (
    CUDA_RESULTS,
    CudaError,
    DriverNotFoundError,
    LaunchError,
    ModuleLoadError,
    OutOfMemoryError,
    raise_for,
)


def test_success_code_does_not_raise():
    assert raise_for(0, "cuInit") is None


@pytest.mark.parametrize(
    "code, cls",
    [(2, OutOfMemoryError), (700, LaunchError), (701, LaunchError), (719, LaunchError),
     (218, ModuleLoadError), (200, ModuleLoadError), (1, CudaError), (400, CudaError)],
)
def test_each_code_raises_its_exception_class(code, cls):
    with pytest.raises(cls) as info:
        raise_for(code, "cuSomething")
    exc = info.value
    assert type(exc) is cls
    assert exc.code == code
    assert exc.name == CUDA_RESULTS[code][0]
    assert exc.description == CUDA_RESULTS[code][1]
    assert exc.call == "cuSomething"
    text = str(exc)
    assert text.startswith("cuSomething: ") and CUDA_RESULTS[code][0] in text and f"({code})" in text


def test_out_of_memory_is_also_a_memory_error():
    with pytest.raises(MemoryError):
        raise_for(2, "cuMemAlloc_v2", "requested 10 bytes")


def test_module_load_error_carries_the_jit_log():
    log = "ptxas application ptx input, line 7; error   : Unknown symbol 'foo'"
    with pytest.raises(ModuleLoadError) as info:
        raise_for(218, "cuModuleLoadDataEx", log)
    assert info.value.detail == log
    assert log in str(info.value)


def test_unknown_code_still_raises_with_its_number():
    with pytest.raises(CudaError) as info:
        raise_for(12345, "cuX")
    assert "12345" in str(info.value)


def test_error_class_only_maps_codes_it_knows():
    assert errors.error_class(2) is OutOfMemoryError
    assert errors.error_class(100) is CudaError


# -- the libcuda binding, without a driver ----------------------------------------------------
cffi = pytest.importorskip("cffi")


def test_cdef_parses_and_structs_have_the_driver_sizes():
    from oxicuda.driver.libcuda import CDEF, _make_ffi

    ffi = _make_ffi()
    if ffi.sizeof("void *") != 8:
        pytest.skip("the driver binding targets 64-bit hosts only")
    assert ffi.sizeof("CUDA_MEMCPY2D") == 128  # 16 fields, as in cuda.h on 64-bit hosts
    assert ffi.offsetof("CUDA_MEMCPY2D", "dstXInBytes") == 56
    assert ffi.offsetof("CUDA_MEMCPY2D", "WidthInBytes") == 112
    assert ffi.sizeof("CUuuid") == 16
    assert ffi.sizeof("CUdeviceptr") == 8
    # the declared functions carry the real exported (versioned) names
    for name in ("cuMemAlloc_v2", "cuMemcpy2DAsync_v2", "cuLaunchKernel", "cuModuleLoadDataEx",
                 "cuEventElapsedTime", "cuTensorMapEncodeTiled", "cuDevicePrimaryCtxRelease_v2",
                 "cuMemsetD8Async", "cuStreamDestroy_v2", "cuDeviceTotalMem_v2"):
        assert f" {name}(" in CDEF, name


def test_missing_library_raises_driver_not_found_with_override_hint(monkeypatch):
    from oxicuda.driver.libcuda import LibCudaAPI

    monkeypatch.setenv("OXICUDA_LIBCUDA", "/nonexistent/libcuda.so.1")
    with pytest.raises(DriverNotFoundError) as info:
        LibCudaAPI()
    text = str(info.value)
    assert "/nonexistent/libcuda.so.1" in text
    assert "OXICUDA_LIBCUDA" in text
    assert "OXICUDA_BACKEND=emulator" in text


def test_library_candidates_follow_the_platform(monkeypatch):
    from oxicuda.driver.libcuda import library_candidates

    monkeypatch.delenv("OXICUDA_LIBCUDA", raising=False)
    names = library_candidates()
    if sys.platform.startswith("linux"):
        assert names[0] == "libcuda.so.1"
    monkeypatch.setenv("OXICUDA_LIBCUDA", "/opt/x/libcuda.so")
    assert library_candidates() == ["/opt/x/libcuda.so"]


def test_libcuda_param_buffer_points_each_slot_into_one_storage():
    import struct

    from oxicuda.driver.libcuda import LibCudaParamBuffer, _make_ffi
    from oxicuda.driver.params import entry_layouts

    ffi = _make_ffi()
    layout = entry_layouts(
        ".visible .entry k(.param .u32 n, .param .u64 p, .param .f32 a, "
        ".param .align 64 .b8 tmap[128])"
    )["k"]
    buf = LibCudaParamBuffer(ffi, layout)
    data = memoryview(buf.data)
    assert len(data) == layout.total_size == 192
    base = int(ffi.cast("uintptr_t", ffi.from_buffer(buf.data)))
    assert base % 64 == 0
    for i, slot in enumerate(layout.slots):
        assert int(ffi.cast("uintptr_t", buf.handle[i])) == base + slot.offset
    struct.pack_into("<I", buf.data, 0, 0xDEADBEEF)
    assert ffi.cast("unsigned int *", buf.handle[0])[0] == 0xDEADBEEF
