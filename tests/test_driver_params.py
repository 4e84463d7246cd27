"""Kernel parameter layouts and argument packing: the exact bytes a launch hands the driver.

No driver is needed: layouts come from PTX text and ArgPacker packs into a bytearray.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from oxicuda.driver.module import ArgPacker, _dim3
from oxicuda.driver.params import entry_layouts
from oxicuda.driver.stream import Stream, as_stream_handle


def _layout(params: str, name: str = "k"):
    return entry_layouts(f".visible .entry {name}(\n{params}\n)\n{{\n ret;\n}}")[name]


# -- layouts ----------------------------------------------------------------------------------
def test_layout_applies_natural_alignment_and_keeps_declaration_order():
    lay = _layout(".param .u32 n, .param .u64 p, .param .u8 flag, .param .f64 x, .param .u16 h")
    assert [(s.name, s.offset, s.size) for s in lay.slots] == [
        ("n", 0, 4), ("p", 8, 8), ("flag", 16, 1), ("x", 24, 8), ("h", 32, 2)
    ]
    assert lay.total_size == 34


def test_layout_of_b8_array_with_explicit_alignment_like_a_tensor_map():
    lay = _layout(".param .u32 n, .param .align 64 .b8 tmap[128], .param .f32 a")
    assert [(s.name, s.offset, s.size, s.align, s.ptx_type) for s in lay.slots] == [
        ("n", 0, 4, 4, ".u32"), ("tmap", 64, 128, 64, ".b8"), ("a", 192, 4, 4, ".f32")
    ]


def test_layout_reads_nvcc_style_pointer_parameters():
    lay = _layout(
        ".param .u64 .ptr .global .align 16 k_param_0,\n"
        ".param .u64 .ptr .align 1 k_param_1,\n"
        ".param .u32 k_param_2"
    )
    assert [(s.name, s.offset, s.ptx_type) for s in lay.slots] == [
        ("k_param_0", 0, ".u64"), ("k_param_1", 8, ".u64"), ("k_param_2", 16, ".u32")
    ]


def test_layouts_of_several_entries_ignore_comments():
    ptx = (
        "// .entry fake(.param .u32 x)\n"
        ".visible .entry a(.param .u64 p /* .param .u32 hidden */, .param .s32 n)\n{ ret; }\n"
        ".visible .entry b()\n{ ret; }\n"
    )
    lays = entry_layouts(ptx)
    assert sorted(lays) == ["a", "b"]
    assert [s.name for s in lays["a"].slots] == ["p", "n"]
    assert lays["b"].slots == () and lays["b"].total_size == 0


# -- packing ----------------------------------------------------------------------------------
class _Ptr:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class _CAI:
    def __init__(self, ptr: int) -> None:
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (4,), "typestr": "<f4",
                                         "version": 3}


def test_packed_bytes_match_struct_unpack_for_every_scalar_type(rng):
    lay = _layout(
        ".param .u64 p, .param .u8 a, .param .s16 b, .param .u32 c, .param .s32 d, "
        ".param .f64 e, .param .f32 f, .param .s64 g, .param .b32 h"
    )
    packer = ArgPacker("k", lay)
    p = int(rng.integers(1, 2**48))
    values = [p, int(rng.integers(0, 256)), int(rng.integers(-2**15, 2**15)),
              int(rng.integers(0, 2**32)), int(rng.integers(-2**31, 2**31)),
              float(rng.standard_normal()), float(rng.standard_normal()),
              int(rng.integers(-2**62, 2**62)), int(rng.integers(0, 2**32))]
    raw = packer.pack(values)
    assert len(raw) == lay.total_size
    offsets = {s.name: s.offset for s in lay.slots}
    got = [
        struct.unpack_from("<Q", raw, offsets["p"])[0],
        struct.unpack_from("<B", raw, offsets["a"])[0],
        struct.unpack_from("<h", raw, offsets["b"])[0],
        struct.unpack_from("<I", raw, offsets["c"])[0],
        struct.unpack_from("<i", raw, offsets["d"])[0],
        struct.unpack_from("<d", raw, offsets["e"])[0],
        struct.unpack_from("<f", raw, offsets["f"])[0],
        struct.unpack_from("<q", raw, offsets["g"])[0],
        struct.unpack_from("<I", raw, offsets["h"])[0],
    ]
    expected = list(values)
    expected[6] = float(np.float32(values[6]))
    assert got == expected


def test_padding_bytes_are_zero():
    packer = ArgPacker("k", _layout(".param .u8 a, .param .u64 p"))
    raw = packer.pack([0xFF, 2**64 - 1])
    assert raw == b"\xff" + b"\0" * 7 + b"\xff" * 8


def test_pointer_parameters_accept_arrays_cai_numpy_ints_and_ints():
    packer = ArgPacker("k", _layout(".param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d"))
    raw = packer.pack([_Ptr(0x7F0000001000), _CAI(0x7F0000002000), np.uint64(0x3000), 0x4000])
    assert struct.unpack("<4Q", raw) == (0x7F0000001000, 0x7F0000002000, 0x3000, 0x4000)


def test_numpy_scalars_pack_like_python_numbers():
    packer = ArgPacker("k", _layout(".param .u32 n, .param .f32 a, .param .f64 b, .param .s64 m"))
    raw = packer.pack([np.int32(7), np.float32(1.5), np.float64(-2.25), np.int64(-9)])
    assert struct.unpack("<Ifdq", raw) == (7, 1.5, -2.25, -9)


def test_half_and_bfloat16_parameters_pack_their_bit_patterns():
    packer = ArgPacker("k", _layout(".param .f16 h, .param .bf16 b"))
    raw = packer.pack([1.5, 1.5])
    assert raw[0:2] == np.float16(1.5).tobytes()
    assert struct.unpack_from("<H", raw, 2)[0] == 0x3FC0  # bf16(1.5)


def test_b8_array_parameter_takes_bytes_of_the_exact_size(rng):
    packer = ArgPacker("k", _layout(".param .u32 n, .param .align 64 .b8 tmap[128]"))
    blob = rng.integers(0, 256, 128, dtype=np.uint8).tobytes()
    raw = packer.pack([3, blob])
    assert raw[64:192] == blob and struct.unpack_from("<I", raw, 0)[0] == 3
    with pytest.raises(TypeError, match=r"argument 1 \(tmap, \.b8\).*bytes of length 128"):
        packer.pack([3, blob[:64]])


def test_wrong_argument_count_names_every_parameter():
    packer = ArgPacker("add_one", _layout(".param .u64 ptr, .param .u32 n"))
    with pytest.raises(TypeError, match=r"add_one: got 1 argument\(s\), the kernel takes 2: "
                                        r"ptr \(\.u64\), n \(\.u32\)"):
        packer.pack([0x1000])


@pytest.mark.parametrize(
    "args, fragment",
    [
        ([0x1000, 2.5], r"argument 1 \(n, \.u32\) expects an int"),
        ([0x1000, 2**32], r"argument 1 \(n, \.u32\)"),
        ([0x1000, -1], r"argument 1 \(n, \.u32\)"),
        (["0x1000", 3], r"argument 0 \(ptr, \.u64\) expects a device pointer"),
        ([1.0, 3], r"argument 0 \(ptr, \.u64\)"),
        ([0x1000, 3, "x"], None),
    ],
)
def test_bad_arguments_raise_type_error_naming_the_parameter(args, fragment):
    packer = ArgPacker("add_one", _layout(".param .u64 ptr, .param .u32 n"))
    buf = bytearray(b"\xaa" * packer.layout.total_size)
    with pytest.raises(TypeError, match=fragment or r"got 3 argument"):
        packer.pack_into(buf, args)
    # the scratch buffer is reused: the next good launch writes every byte again
    packer.pack_into(buf, [0x1234, 5])
    assert struct.unpack("<QI", buf) == (0x1234, 5)


def test_float_parameter_rejects_strings_and_pointers():
    packer = ArgPacker("k", _layout(".param .f32 a"))
    for bad in ("1.0", _Ptr(16), None):
        with pytest.raises(TypeError, match=r"argument 0 \(a, \.f32\) expects a float"):
            packer.pack([bad])


# -- geometry ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value, expected",
    [(5, (5, 1, 1)), ((5,), (5, 1, 1)), ((5, 6), (5, 6, 1)), ((5, 6, 7), (5, 6, 7)),
     (np.int64(4), (4, 1, 1)), ([2, 3], (2, 3, 1))],
)
def test_dim3_normalises_ints_and_tuples(value, expected):
    assert _dim3(value, "grid") == expected


@pytest.mark.parametrize("value, exc", [(0, ValueError), ((1, 2, 3, 4), ValueError), ((), ValueError),
                                        ((2, -1), ValueError), (2.0, TypeError), ("ab", TypeError)])
def test_dim3_rejects_bad_geometry(value, exc):
    with pytest.raises(exc, match="block"):
        _dim3(value, "block")


# -- stream handles ---------------------------------------------------------------------------
def test_as_stream_handle_accepts_every_stream_spelling():
    class Proto:
        def __cuda_stream__(self):
            return (0, 0xABC)

    class Torch:
        cuda_stream = 0xDEF

    class CuPy:
        ptr = 0x123

    assert as_stream_handle(None) == 0
    assert as_stream_handle(77) == 77
    assert as_stream_handle(Proto()) == 0xABC
    assert as_stream_handle(Torch()) == 0xDEF
    assert as_stream_handle(CuPy()) == 0x123
    assert as_stream_handle(Stream.null()) == 0
    assert Stream.null().__cuda_stream__() == (0, 0)


@pytest.mark.parametrize("bad", [True, "0", 1.5, object()])
def test_as_stream_handle_rejects_non_streams(bad):
    with pytest.raises(TypeError, match="stream"):
        as_stream_handle(bad)
