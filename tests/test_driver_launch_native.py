"""The real-driver launch path (``LibCudaAPI.launch_plan`` + ``cuLaunchKernelEx`` through cffi)
without a GPU: the binding calls a compiled stand-in for libcuda's launch entry points
(``libcuda_stub``) that records what it receives.

Module loading and device limits come from the recording fake driver of test_driver_launch;
only the launch plan is the real ``LibCudaAPI`` one, so these tests check the bytes the real
binding hands the driver: the ``CUlaunchConfig`` fields, the function, and the parameters.
"""

from __future__ import annotations

import struct
import threading

import libcuda_stub
import numpy as np
import pytest
from test_driver_launch import ADD_ONE_PTX, AXPB_PTX, FakeDriver

from oxicuda.driver import backend, context, device
from oxicuda.driver.errors import CudaError
from oxicuda.driver.libcuda import FFI_TYPES
from oxicuda.driver.module import Module
from oxicuda.driver.stream import Stream
from oxicuda.driver.trace import LaunchRecord, trace

if libcuda_stub.compiler() is None:
    pytest.skip("no C compiler to build the libcuda stub", allow_module_level=True)

NO_PARAMS_PTX = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry no_params()
{
    ret;
}
"""


@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    return libcuda_stub.StubDriver(libcuda_stub.build(str(tmp_path_factory.mktemp("stub"))))


class NativeFakeDriver(FakeDriver):
    """The fake driver, but launches go through the real binding's plan into the stub."""

    def __init__(self, stub_api) -> None:
        super().__init__()
        self._stub_api = stub_api

    def launch_plan(self, func, layout):
        return self._stub_api.launch_plan(func, layout)

    def ctx_get_current(self) -> int:
        self.on_context_query()
        return super().ctx_get_current()

    def on_context_query(self) -> None:
        pass


@pytest.fixture
def native(monkeypatch, stub):
    drv = NativeFakeDriver(stub.api)
    monkeypatch.setattr(backend, "_api", drv)
    monkeypatch.setattr(context, "_primary", {})
    monkeypatch.setattr(context, "_local", threading.local())
    monkeypatch.setattr(device, "_devices", {})
    stub.state.stub_result = 0
    return drv


def _calls(stub) -> int:
    return int(stub.state.stub_calls)


def test_launch_hands_the_driver_exact_geometry_stream_function_and_parameter_bytes(native, stub, rng):
    fn = Module(AXPB_PTX).get_function("axpb")
    for grid, block, smem, stream in (((8, 2), 128, 0, 0x77), (5, (4, 2, 3), 512, 0), (9, 256, 0, None)):
        out, x = int(rng.integers(1, 2**40)) * 256, int(rng.integers(1, 2**40)) * 256
        a, b = float(np.float32(rng.standard_normal())), float(rng.standard_normal())
        c, n = int(rng.integers(-2**31, 2**31)), int(rng.integers(0, 2**32))
        before = _calls(stub)
        fn(grid, block, [out, x, a, b, c, n], shared_mem=smem, stream=stream)
        assert _calls(stub) == before + 1 and stub.state.stub_used_ex == 1
        g3 = tuple(grid) + (1,) * (3 - len(grid)) if isinstance(grid, tuple) else (grid, 1, 1)
        b3 = tuple(block) + (1,) * (3 - len(block)) if isinstance(block, tuple) else (block, 1, 1)
        assert stub.last_geometry() == (g3, b3, smem)
        assert stub.state.stub_stream == (stream or 0)
        assert stub.state.stub_function == fn.handle
        assert stub.state.stub_attrs == stub._ffi.NULL and stub.state.stub_num_attrs == 0
        raw = stub.last_param_bytes(fn.layout)
        assert struct.unpack("<QQf4xdiI", raw) == (out, x, a, b, c, n)
        assert raw == fn.packer.pack([out, x, a, b, c, n])


def test_numpy_scalars_arrays_and_streams_take_the_same_bytes_as_plain_values(native, stub, rng):
    fn = Module(ADD_ONE_PTX).get_function("add_one")

    class Array:  # anything with an int .ptr, like DeviceArray
        def __init__(self, ptr: int) -> None:
            self.ptr = ptr

    class CAI:  # no .ptr: the checked path reads __cuda_array_interface__
        def __init__(self, ptr: int) -> None:
            self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (4,), "typestr": "<f4",
                                             "version": 3}

    s = Stream()
    ptr, n = int(rng.integers(1, 2**47)), int(rng.integers(0, 2**32))
    for arg in (ptr, Array(ptr), CAI(ptr), np.uint64(ptr)):
        for count in (n, np.uint32(n), np.int64(n)):
            fn(3, 64, (arg, count), stream=s)
            assert stub.last_param_bytes(fn.layout) == struct.pack("<QI4x", ptr, n)[:12]
            assert stub.state.stub_stream == s.handle
            assert stub.last_geometry() == ((3, 1, 1), (64, 1, 1), 0)


def test_bad_arguments_and_geometry_raise_before_the_driver_is_called(native, stub):
    fn = Module(ADD_ONE_PTX).get_function("add_one")
    before = _calls(stub)
    bad_calls = [
        (TypeError, r"add_one: got 1 argument", lambda: fn(1, 32, [0x1000])),
        (TypeError, r"argument 1 \(add_one_param_n, \.u32\)", lambda: fn(1, 32, [0x1000, 1.5])),
        (TypeError, r"argument 1 \(add_one_param_n, \.u32\).*in range", lambda: fn(1, 32, [0x1000, 2**32])),
        (TypeError, r"argument 1 \(add_one_param_n, \.u32\)", lambda: fn(1, 32, [0x1000, -1])),
        (TypeError, r"argument 0 \(add_one_param_ptr, \.u64\)", lambda: fn(1, 32, ["x", 4])),
        (TypeError, r"argument 0 \(add_one_param_ptr, \.u64\)", lambda: fn(1, 32, [2.5, 4])),
        (ValueError, r"block \(32, 32, 1\) has 1024 threads", lambda: fn(1, (32, 32), [0x1000, 4])),
        (ValueError, r"grid dimensions must all be >= 1", lambda: fn(0, 32, [0x1000, 4])),
        (ValueError, r"grid.y = 70000 exceeds", lambda: fn((1, 70000), 32, [0x1000, 4])),
        (ValueError, r"set_max_dynamic_shared_memory\(60000\)", lambda: fn(1, 32, [0x1000, 4], shared_mem=60000)),
        (TypeError, r"shared_mem must be an int", lambda: fn(1, 32, [0x1000, 4], shared_mem=0.5)),
        (TypeError, r"grid must be an int or a tuple", lambda: fn(1.0, 32, [0x1000, 4])),
        (ValueError, r"stream handle must be >= 0", lambda: fn(1, 32, [0x1000, 4], stream=-1)),
    ]
    for exc, pattern, call in bad_calls:
        with pytest.raises(exc, match=pattern):
            call()
    assert _calls(stub) == before
    fn(1, 32, [0x1000, 4])  # and the function still launches, with its own bytes
    assert stub.last_param_bytes(fn.layout) == struct.pack("<QI", 0x1000, 4)


def test_a_failed_launch_raises_the_driver_error_and_the_next_launch_works(native, stub):
    fn = Module(ADD_ONE_PTX).get_function("add_one")
    stub.state.stub_result = 701  # CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    before = _calls(stub)
    try:
        with pytest.raises(CudaError, match=r"(?s)cuLaunchKernelEx.*grid=\(2, 1, 1\) block=\(64, 1, 1\)") as info:
            fn(2, 64, [0x1000, 4])
        assert info.value.code == 701
    finally:
        stub.state.stub_result = 0
    assert _calls(stub) == before + 1  # this thread has a context: no second attempt
    fn(3, 32, [0x2000, 5])
    assert stub.last_geometry() == ((3, 1, 1), (32, 1, 1), 0)
    assert stub.last_param_bytes(fn.layout) == struct.pack("<QI", 0x2000, 5)


def test_a_launch_made_while_packing_another_gets_its_own_buffer(native, stub):
    """A second launch of the same function that starts while the first one is being packed
    (here from inside an argument's ``.ptr``; another thread can do the same) must neither wait
    forever nor overwrite the first launch's parameters."""
    fn = Module(ADD_ONE_PTX).get_function("add_one")

    class Reentrant:
        @property
        def ptr(self) -> int:
            fn(7, 32, [0xBBBB00, 22])
            return 0xAAAA00

    stub.start_log(fn.layout.total_size)
    fn(1, 32, [Reentrant(), 11])
    assert stub.logged_params() == [struct.pack("<QI", 0xBBBB00, 22), struct.pack("<QI", 0xAAAA00, 11)]
    stub.start_log(0)


def test_prepared_launch_and_kernels_without_parameters_use_the_native_plan(native, stub):
    fn = Module(ADD_ONE_PTX).get_function("add_one")
    launch = fn.prepared_launch((4, 2), (32, 2), shared_mem=128)
    launch((0x3000, 6), 0x55)
    assert stub.last_geometry() == ((4, 2, 1), (32, 2, 1), 128)
    assert stub.state.stub_stream == 0x55
    assert stub.last_param_bytes(fn.layout) == struct.pack("<QI", 0x3000, 6)
    empty = Module(NO_PARAMS_PTX).get_function("no_params")
    before = _calls(stub)
    empty(2, 32, ())
    assert _calls(stub) == before + 1 and stub.last_geometry() == ((2, 1, 1), (32, 1, 1), 0)
    with pytest.raises(TypeError, match=r"no_params: got 1 argument"):
        empty(2, 32, (1,))


def test_trace_records_native_launches(native, stub):
    fn = Module(ADD_ONE_PTX).get_function("add_one")
    fn.spec = ("a", "spec")
    launch = fn.prepared_launch(6, 64)
    with trace() as t:
        fn(2, 64, [0x1000, 4], stream=5)
        fn((3, 2), (8, 4), [0x1000, 4])
        launch([0x1000, 4])
    fn(1, 32, [0x1000, 4])
    assert t.launches == [
        LaunchRecord("add_one", ("a", "spec"), (2, 1, 1), (64, 1, 1), 0, 5),
        LaunchRecord("add_one", ("a", "spec"), (3, 2, 1), (8, 4, 1), 0, 0),
        LaunchRecord("add_one", ("a", "spec"), (6, 1, 1), (64, 1, 1), 0, 0),
    ]


def test_launch_plan_steps_aside_when_launch_kernel_is_replaced_on_the_instance(stub):
    from oxicuda.driver.params import entry_layouts

    api = libcuda_stub.StubDriver(stub.path).api  # not the shared one: this test patches it
    layout = entry_layouts(ADD_ONE_PTX)["add_one"]
    assert api.launch_plan(0x600, layout) is not None
    original = api.launch_kernel
    api.launch_kernel = lambda *a: None
    assert api.launch_plan(0x600, layout) is None
    api.launch_kernel = original  # what monkeypatch's undo leaves: the bound original
    assert api.launch_plan(0x600, layout) is not None


def test_driver_api_launch_kernel_sends_the_same_bytes_through_cuLaunchKernel(stub, rng):
    from oxicuda.driver.params import ArgPacker, entry_layouts

    layout = entry_layouts(AXPB_PTX)["axpb"]
    params = stub.api.param_buffer(layout)
    values = [int(rng.integers(1, 2**40)), int(rng.integers(1, 2**40)), 0.5, -2.25, -3, 77]
    ArgPacker("axpb", layout).pack_into(params.data, values)
    stub.api.launch_kernel(0x1234, (3, 2, 1), (64, 2, 1), 256, 0x99, params)
    assert stub.state.stub_used_ex == 0 and stub.state.stub_function == 0x1234
    assert stub.last_geometry() == ((3, 2, 1), (64, 2, 1), 256) and stub.state.stub_stream == 0x99
    assert struct.unpack("<QQf4xdiI", stub.last_param_bytes(layout)) == tuple(values)


def test_a_thread_without_a_current_context_gets_one_and_its_launch_goes_through(native, stub):
    """The launch path calls the driver without checking for a current context first; the
    driver refuses (CUDA_ERROR_INVALID_CONTEXT) in a thread that has none, and the launch then
    makes the primary context current and launches again."""
    fn = Module(ADD_ONE_PTX).get_function("add_one")
    seen = {}

    def worker() -> None:
        stub.state.stub_result = 201  # refused until a context is made current in this thread
        native.on_context_query = lambda: setattr(stub.state, "stub_result", 0)
        before = _calls(stub)
        fn(4, 32, [0x5000, 9])
        seen["attempts"] = _calls(stub) - before
        seen["params"] = stub.last_param_bytes(fn.layout)
        seen["context"] = getattr(context._local, "ctx", None)

    th = threading.Thread(target=worker)
    th.start()
    th.join()
    assert seen == {"attempts": 2, "params": struct.pack("<QI", 0x5000, 9), "context": 0xC0 + 100}
    assert stub.state.stub_result == 0


def _general_geometry(fn, grid, block, shared_mem):
    """The general conversion and check, without the short path for tuples."""
    from oxicuda.driver.module import _dim3, _shared_bytes

    grid3, block3 = _dim3(grid, "grid"), _dim3(block, "block")
    shared_mem = _shared_bytes(shared_mem)
    fn._check_geometry(grid3, block3, shared_mem)
    return (*grid3, *block3, shared_mem)


def test_tuple_geometry_short_path_agrees_with_the_general_checks(native, rng):
    fn = Module(ADD_ONE_PTX).get_function("add_one")
    fn(1, 32, [0x1000, 4])  # the limits are read on the first launch
    values = [1, 2, 7, 64, 65, 512, 513, 1024, 65535, 70000, 2**31 - 1, 2**31, 0, -1, 2.0,
              np.int64(3), True, None]
    for _ in range(400):
        def dims():
            if rng.random() < 0.1:
                return tuple(values[int(i)] for i in rng.integers(0, len(values), int(rng.integers(0, 5))))
            return tuple(values[int(rng.integers(0, len(values)))] if rng.random() < 0.3
                         else int(rng.integers(1, 40)) for _ in range(int(rng.integers(1, 4))))
        grid, block = dims(), dims()
        smem = [0, 128, 48 * 1024 - 1024, 48 * 1024, -4, 1.5][int(rng.integers(0, 6))]
        try:
            expected = _general_geometry(fn, grid, block, smem)
        except (TypeError, ValueError) as exc:
            with pytest.raises(type(exc)) as info:
                fn._geometry(grid, block, smem)
            assert str(info.value) == str(exc), (grid, block, smem)
        else:
            got = fn._geometry(grid, block, smem)
            assert got == expected and all(type(v) is int for v in got), (grid, block, smem)


def test_every_call_spelling_launches_what_the_general_checks_give_or_raises_their_error(native, stub, rng):
    """A call goes through one of three paths: ints, CuPy's 1-tuples (the same 1-D path), and
    everything else (``_geometry``). Whichever it takes, the driver must receive the geometry the
    general conversion gives, or the call must raise that conversion's exact error and not launch."""
    fn = Module(ADD_ONE_PTX).get_function("add_one")
    fn(1, 32, [0x1000, 4])  # the limits are read on the first launch
    values = [1, 2, 32, 1024, 1025, 65535, 70000, 2**31 - 1, 2**31, 0, -1, 2.0, np.int64(3), True, None]

    def one():
        v = values[int(rng.integers(0, len(values)))] if rng.random() < 0.3 else int(rng.integers(1, 300))
        kind = rng.random()
        if kind < 0.4:
            return v
        if kind < 0.8:
            return (v,)
        return (v, int(rng.integers(1, 3)))
    for _ in range(600):
        grid, block = one(), one()
        smem = [0, 0, 128, 48 * 1024, -4, 1.5][int(rng.integers(0, 6))]
        before = _calls(stub)
        try:
            expected = _general_geometry(fn, grid, block, smem)
        except (TypeError, ValueError) as exc:
            with pytest.raises(type(exc)) as info:
                fn(grid, block, [0x1000, 4], shared_mem=smem)
            assert str(info.value) == str(exc), (grid, block, smem)
            assert _calls(stub) == before
        else:
            fn(grid, block, [0x1000, 4], shared_mem=smem)
            assert _calls(stub) == before + 1
            assert stub.last_geometry() == (expected[:3], expected[3:6], expected[6]), (grid, block, smem)


def test_the_binding_needs_no_cffi_lock_after_it_is_made(stub):
    """A finalizer can run while cffi holds its (non-reentrant) lock, in the middle of parsing a
    type: then any first lookup of a function or first parse of a type string in the binding would
    wait forever on the lock its own thread holds. On the H200 a suite worker hung so, in
    ``cuModuleUnload`` inside a ``ffi.cast``. With the lock held, every function the library
    exports and every type string the binding uses must still be reachable."""
    api = stub.api
    done = []

    def use_everything():
        for name in sorted(api.exported):
            getattr(api.lib, name)
        for ctype in FFI_TYPES:
            api.ffi.typeof(ctype)
        done.append(True)

    assert {"cuLaunchKernel", "cuLaunchKernelEx"} <= api.exported
    with api.ffi._lock:  # what cffi holds while it parses a type or resolves a function
        worker = threading.Thread(target=use_everything, daemon=True)
        worker.start()
        worker.join(10)
    assert done, "a function lookup or type parse in the binding waited on cffi's lock"


def test_every_type_string_the_binding_uses_is_parsed_up_front():
    import re

    from oxicuda.driver import libcuda

    with open(libcuda.__file__) as f:
        source = f.read()
    used = set(re.findall(r'ffi\.(?:new|cast|typeof|sizeof)\("([^"]+)"', source))
    assert used and used <= set(FFI_TYPES), sorted(used - set(FFI_TYPES))
    declared = set(re.findall(r"\blib\.(cu\w+)", source))
    assert declared <= set(libcuda.FUNCTION_NAMES), sorted(declared - set(libcuda.FUNCTION_NAMES))
